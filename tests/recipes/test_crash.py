"""Crash safety: a recipe training killed with SIGKILL (also inside a checkpoint write)
resumes from its last completed epoch when the same command is re-run, and every file it
left is loadable."""

import json
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import keras
import pytest

import kerasrnn  # noqa: F401  (registers the layers best.keras needs)
from kerasrnn.callbacks import save_model_atomically
from recipes import common

REPO = pathlib.Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

# Runs in the training process: when KILL_IN names a file (``best`` or ``latest``, the
# backup's weights) and KILL_AT a count, the KILL_AT-th Keras save whose file name starts
# with it writes the file, cuts it to half its size and SIGKILLs the process, as if the
# kill came mid-write. Production code has no hook: this wraps keras.Model's own methods.
HOOK = """
import os, signal, sys, keras
target, count = os.environ["KILL_IN"], int(os.environ["KILL_AT"])
calls = []
def wrap(original):
    def save(self, filepath, *args, **kwargs):
        result = original(self, filepath, *args, **kwargs)
        if os.path.basename(str(filepath)).startswith(target):
            calls.append(filepath)
            if len(calls) == count:
                size = os.path.getsize(filepath)
                with open(filepath, "r+b") as f:
                    f.truncate(size // 2)
                os.kill(os.getpid(), signal.SIGKILL)
        return result
    return save
keras.Model.save = wrap(keras.Model.save)
keras.Model.save_weights = wrap(keras.Model.save_weights)
from recipes import classifier
sys.exit(classifier.main(sys.argv[1:]))
"""


def _data(folder):
    rng = random.Random(0)
    good, bad = ["good", "great", "fine", "nice"], ["bad", "awful", "poor", "dull"]
    lines = []
    for _ in range(160):
        label = rng.choice(["pos", "neg"])
        words = [rng.choice(good if label == "pos" else bad)] + rng.choices(
            ["film", "plot", "the", "a", "was", "very"], k=rng.randint(2, 6)
        )
        rng.shuffle(words)
        lines.append(f"{label}\t{' '.join(words)}\n")
    path = folder / "train.tsv"
    path.write_text("".join(lines))
    return path


def _command(tmp_path, epochs):
    return [
        "train",
        "--train",
        str(tmp_path / "train.tsv"),
        "--output-dir",
        str(tmp_path / "run"),
        "--epochs",
        str(epochs),
        "--embedding-dim",
        "8",
        "--units",
        "8",
        "--batch-size",
        "16",
        "--patience",
        "0",
        "--verbose",
        "2",
        "--valid-fraction",
        "0.2",
        "--bucket-boundaries",
        "[]",
    ]


def _start(tmp_path, epochs, kill_in=None, kill_at=0, extra=()):
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        TF_CPP_MIN_LOG_LEVEL="3",
        CUDA_VISIBLE_DEVICES="",
        KILL_IN=kill_in or "-",
        KILL_AT=str(kill_at),
    )
    return subprocess.Popen(
        [sys.executable, "-c", HOOK, *_command(tmp_path, epochs), *extra],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finish(process, timeout=120):
    output, _ = process.communicate(timeout=timeout)
    return process.returncode, output


def _epochs_run(output):
    """The epochs a run trained, from Keras' "Epoch i/n" lines."""
    return [int(e) for e in re.findall(r"Epoch (\d+)/\d+", output)]


def _backup_epoch(run):
    path = run / "backup" / "training_metadata.json"
    return json.loads(path.read_text())["epoch"] if path.exists() else 0


def _check_loadable(run):
    """Every file a killed run left behind can be read; no temporary files remain
    as the only copy."""
    if (run / "best.keras").exists():
        model = keras.saving.load_model(run / "best.keras")
        assert model.output.shape[-1] == 2
    for name in ("last.weights.h5", os.path.join("backup", "latest.weights.h5")):
        if (run / name).exists():  # the --continue checkpoint and the backup
            import h5py

            with h5py.File(run / name, "r") as f:
                assert len(f.keys()) > 0
    for name in ("config.json", "results.json", os.path.join("backup", "epochs.json")):
        if (run / name).exists():
            json.loads((run / name).read_text())


@pytest.mark.large
def test_sigkill_anywhere_resumes_from_the_last_completed_epoch(tmp_path):
    _data(tmp_path)
    run = tmp_path / "run"

    # 1. Killed while writing best.keras at the end of epoch 1 (the first epoch always
    #    improves on nothing): the checkpoints come before the backup (a backup never
    #    claims an epoch whose best.keras or last.weights.h5 was not written), so there
    #    is no backup yet; no half-written best.keras may be left.
    code, output = _finish(_start(tmp_path, 5, kill_in="best", kill_at=1))
    assert code == -signal.SIGKILL, output
    assert _epochs_run(output) == [1]
    _check_loadable(run)
    assert not (run / "best.keras").exists()
    assert _backup_epoch(run) == 0

    # 2. Re-run (from the start), killed while writing the backup at the end of epoch 2.
    code, output = _finish(_start(tmp_path, 5, kill_in="latest", kill_at=2))
    assert code == -signal.SIGKILL, output
    assert _epochs_run(output) == [1, 2]
    _check_loadable(run)
    assert _backup_epoch(run) == 1  # the interrupted backup never replaced epoch 1's

    # 3. Re-run, SIGKILLed from outside at a random moment after epoch 2's backup.
    process = _start(tmp_path, 5)
    deadline = time.time() + 120
    while _backup_epoch(run) < 2 and time.time() < deadline and process.poll() is None:
        time.sleep(0.02)
    time.sleep(random.Random().uniform(0.0, 0.3))
    process.kill()
    code, output = _finish(process)
    assert _epochs_run(output)[0] == 2, output  # resumed from epoch 1's backup
    _check_loadable(run)
    assert (run / "best.keras").exists()
    done = _backup_epoch(run) if code != 0 else 5

    # 4. Killed in the next best.keras write (if an epoch improves; else it finishes),
    #    then re-run to the end: only the remaining epochs train, results are written.
    if done < 5:
        code, output = _finish(_start(tmp_path, 5, kill_in="best", kill_at=1))
        _check_loadable(run)
        assert _epochs_run(output)[0] == done + 1, output
        if code != 0:
            assert code == -signal.SIGKILL, output
            done = _backup_epoch(run)
            code, output = _finish(_start(tmp_path, 5))
            assert _epochs_run(output) == list(range(done + 1, 6)), output
    assert code == 0, output
    _check_loadable(run)
    results = json.loads((run / "results.json").read_text())
    assert results["valid"]["examples"] == 32
    assert not list(run.rglob("*.partial*"))


@pytest.mark.large
def test_sigkill_in_the_last_epoch_checkpoint_keeps_continue_working(tmp_path):
    # last.weights.h5 (what `train --continue` extends) goes through the same atomic
    # checkpoint as best.keras: killed inside its write at epoch 2, the epoch-1 file is
    # intact; the re-run finishes, and --continue extends the finished run.
    _data(tmp_path)
    run = tmp_path / "run"
    code, output = _finish(_start(tmp_path, 2, kill_in="last", kill_at=2))
    assert code == -signal.SIGKILL, output
    assert _epochs_run(output) == [1, 2]
    assert (run / "last.partial.weights.h5").exists()  # the half-written one
    _check_loadable(run)
    assert _backup_epoch(run) == 1
    code, output = _finish(_start(tmp_path, 2))
    assert code == 0 and _epochs_run(output) == [2], output
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "recipes.classifier",
            "train",
            "--continue",
            "--output-dir",
            str(run),
            "--epochs",
            "3",
            "--verbose",
            "2",
        ],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    code, output = _finish(process)
    assert code == 0 and _epochs_run(output) == [3], output
    _check_loadable(run)
    assert len(json.loads((run / "history.json").read_text())["rows"]) == 3
    assert not list(run.rglob("*.partial*"))


@pytest.mark.large
def test_overwrite_killed_before_its_first_checkpoint_leaves_the_old_run(tiny_classifier, tmp_path):
    # `train --overwrite` moves the old run aside and removes it only once the new run
    # has written its first epoch's checkpoints: killed inside the first best.keras
    # write, the old run (a copy of the shared one) comes back, file for file, for the
    # next command on the folder.
    _data(tmp_path)
    run = shutil.copytree(tiny_classifier, tmp_path / "run")
    old = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != ".lock"}
    code, output = _finish(_start(tmp_path, 2, kill_in="best", kill_at=1, extra=["--overwrite"]))
    assert code == -signal.SIGKILL, output
    assert (run / ".previous-run" / "results.json").exists()  # moved aside, not removed
    code, output = _finish(_start(tmp_path, 1))  # the plain command again: refused
    assert code == 2 and "holds a finished run" in output.strip().splitlines()[-1], output
    now = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != ".lock"}
    assert now == old and not (run / ".previous-run").exists()
    _check_loadable(run)


def test_write_json_and_save_model_never_leave_half_a_file(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    common.write_json(path, {"accuracy": 0.5})

    def broken_dump(data, f, **kwargs):
        f.write('{"accuracy": ')  # half written, then the process "dies"
        raise KeyboardInterrupt

    monkeypatch.setattr(json, "dump", broken_dump)
    with pytest.raises(KeyboardInterrupt):
        common.write_json(path, {"accuracy": 0.9})
    monkeypatch.undo()
    assert json.loads(path.read_text()) == {"accuracy": 0.5}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    save_model_atomically(model, tmp_path / "best.keras")
    assert keras.saving.load_model(tmp_path / "best.keras").count_params() == 8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.keras", "results.json"]
