"""Run folders (recipes/run_folder.py): a finished run is never replaced without
`--overwrite`, an interrupted one resumes only with its own options, a folder of other
files is never written into, one writer at a time (an OS lock that a SIGKILLed holder
does not leave behind)."""

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from recipes import classifier, run_folder

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fcntl locks are POSIX")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXTS = ["good film", "bad film", "great fun", "dull plot", "fine acting", "poor script"] * 4
LABELS = ["pos", "neg"] * 12
TINY = ["--embedding-dim", "4", "--units", "4", "--batch-size", "8", "--epochs", "1"]
TINY += ["--verbose", "0", "--bucket-boundaries", "[]", "--patience", "0"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A classifier run trained one epoch from the command line (its data file beside
    it); each test works on a copy of it (`_copy`)."""
    folder = tmp_path_factory.mktemp("finished")
    data = folder / "d.tsv"
    data.write_text("".join(f"{label}\t{t}\n" for t, label in zip(TEXTS, LABELS)))
    args = ["train", "--train", str(data), "--output-dir", str(folder / "run")]
    assert classifier.main(args + TINY) == 0
    return folder


def _copy(finished, tmp_path):
    """A copy of the finished run in tmp_path/run (its config names the module's data
    file, which the commands here train on too)."""
    return shutil.copytree(finished / "run", tmp_path / "run")


def _train(run, data, *extra):
    return classifier.main(
        ["train", "--train", str(data), "--output-dir", str(run)] + TINY + list(extra)
    )


def _digest(folder):
    """{relative path: sha256} of a run folder's files (the lock file aside)."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            if name != run_folder.LOCK:
                found[os.path.relpath(path, folder)] = hashlib.sha256(
                    open(path, "rb").read()
                ).hexdigest()
    return found


def _last_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    return err[-1] if err else ""


@pytest.mark.large
def test_a_finished_run_is_refused_then_continued_or_overwritten(finished, tmp_path, capsys):
    run, data = _copy(finished, tmp_path), finished / "d.tsv"
    before = _digest(run)
    capsys.readouterr()
    # The same command again: refused in one line, the run untouched.
    assert _train(run, data, "--epochs", "2") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"{run} holds a finished run" in err and "--continue" in err and "--overwrite" in err
    assert _digest(run) == before
    # --continue trains it on; --overwrite starts over and leaves no old run behind.
    assert (
        classifier.main(
            ["train", "--continue", "--output-dir", str(run), "--epochs", "2", "--verbose", "0"]
        )
        == 0
    )
    assert len(classifier.common.read_json(str(run / "history.json"))["rows"]) == 2
    assert _train(run, data, "--overwrite") == 0
    assert len(classifier.common.read_json(str(run / "history.json"))["rows"]) == 1
    assert not (run / run_folder.PREVIOUS).exists()
    assert _train(run, data, "--overwrite", "--continue") == 2
    assert "exclude each other" in _last_line(capsys)


@pytest.mark.large
def test_an_interrupted_run_resumes_only_with_its_own_options(finished, tmp_path, capsys):
    run, data = _copy(finished, tmp_path), finished / "d.tsv"
    os.remove(run / "results.json")  # as if killed before the end
    capsys.readouterr()
    assert _train(run, data, "--units", "6") == 2
    line = _last_line(capsys)
    assert "holds an interrupted run trained with other options (units)" in line, line
    assert _train(run, data, "--verbose", "0") == 0  # the same options: it resumes
    assert (run / "results.json").exists()


def test_files_that_are_not_a_run_are_never_written(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text("mine")
    data = tmp_path / "d.tsv"
    data.write_text("pos\tgood\nneg\tbad\n")
    for extra in ((), ("--overwrite",)):
        assert _train(run, data, *extra) == 2
        assert "holds files that are not a run's" in _last_line(capsys)
    assert sorted(os.listdir(run)) == [".lock", "notes.txt"]
    assert (
        classifier.main(
            ["train", "--continue", "--output-dir", str(tmp_path / "none"), "--verbose", "0"]
        )
        == 2
    )
    assert "none/config.json (did `train` run with this output_dir?)" in _last_line(capsys)


HOLD = """
import sys, time
from recipes import run_folder
with run_folder.lock(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(600)
"""


def _holder(folder):
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=REPO),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "locked"
    return process


@pytest.mark.large
def test_one_writer_per_folder_and_a_killed_holder_leaves_no_lock(finished, tmp_path, capsys):
    run, data = _copy(finished, tmp_path), finished / "d.tsv"
    holder = _holder(run)
    try:
        capsys.readouterr()
        assert _train(run, data, "--overwrite") == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert f"{run} is being written by another process (pid {holder.pid})" in err
        # export into the run folder writes there too; a reader is not stopped
        args = ["--output-dir", str(run), "--verbose", "0"]
        assert classifier.main(["export", *args]) == 2
        assert f"(pid {holder.pid})" in _last_line(capsys)
        assert classifier.main(["predict", "good film", *args]) == 0
        out = tmp_path / "elsewhere"
        assert classifier.main(["export", "--export-dir", str(out), *args]) == 0
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with run_folder.lock(str(run)):  # the OS dropped the dead holder's lock
        assert open(run / run_folder.LOCK).read().strip() == str(os.getpid())


def test_the_lock_is_reentrant_in_a_process(tmp_path):
    with run_folder.lock(str(tmp_path)), run_folder.lock(str(tmp_path)):
        pass
    start = time.time()
    with run_folder.lock(str(tmp_path)):  # released: taken again at once
        assert time.time() - start < 5
