"""Scale-out: `--strategy multi_worker` (two local worker processes, TF_CONFIG) trains the
classifier and the translator to the loss of one process on the same global batch;
`kerasrnn.distribute`'s strategies by name and each worker's output folder; on JAX, a
keras.ops core model trains data-parallel over 2 CPU devices with Keras' distribution
API."""

import json
import os
import socket
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKER = """
import json, sys
from recipes import classifier, translator
for recipe, argv in zip((classifier, translator), json.loads(sys.argv[1])):
    assert recipe.main(argv) == 0
"""


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _classifier_data(folder):
    import random

    rng = random.Random(0)
    lines = []
    for i in range(160):
        label = ("pos", "neg")[i % 2]
        words = [
            rng.choice(["good", "great", "fine"] if label == "pos" else ["bad", "awful", "dull"])
        ]
        words += rng.choices(["film", "plot", "the", "a", "was", "very"], k=rng.randint(2, 6))
        rng.shuffle(words)
        lines.append(f"{label}\t{' '.join(words)}\n")
    (folder / "train.tsv").write_text("".join(lines))


def _flags(tmp_path):
    from tests.recipes.test_translator import _date_corpus

    _classifier_data(tmp_path)
    files = _date_corpus(tmp_path, {"train": (64, 1), "valid": (32, 2)})
    split_flags = [a for split in files for a in (f"--{split}", json.dumps(files[split]))]
    # One batch per epoch (the whole training set): tf.data shuffles differently once
    # the dataset is split over workers, and with one batch the order cannot matter.
    # No dropout (its masks are drawn per replica); no clipping (applied per replica).
    classifier = [
        "train",
        "--train",
        str(tmp_path / "train.tsv"),
        "--valid-fraction",
        "0.2",
        "--batch-size",
        "128",
        "--epochs",
        "2",
        "--embedding-dim",
        "8",
        "--units",
        "8",
        "--dropout",
        "0",
        "--embedding-dropout",
        "0",
        "--clipnorm",
        "0",
        "--learning-rate",
        "0.05",
        "--patience",
        "0",
        "--bucket-boundaries",
        "[]",
        "--verbose",
        "0",
    ]
    translator = [
        "train",
        *split_flags,
        "--batch-size",
        "64",
        "--epochs",
        "1",
        "--embedding-dim",
        "8",
        "--encoder-units",
        "8",
        "--decoder-units",
        "16",
        "--attention-units",
        "8",
        "--dropout",
        "0",
        "--clipnorm",
        "0",
        "--learning-rate",
        "0.05",
        "--bucket-boundaries",
        "[]",
        "--heatmaps",
        "0",
        "--max-decode-length",
        "4",
        "--beam-size",
        "1",
        "--verbose",
        "0",
    ]
    return classifier, translator


def _with_output(flags, folder):
    return [*flags, "--output-dir", str(folder)]


@pytest.mark.large
def test_two_local_workers_train_to_the_single_process_loss(tmp_path):
    from recipes import classifier, translator

    classifier_flags, translator_flags = _flags(tmp_path)
    workers = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    argv = [
        _with_output(classifier_flags, tmp_path / "c-multi"),
        _with_output(translator_flags, tmp_path / "t-multi"),
    ]
    processes = []
    for index in range(2):
        tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        env = dict(
            os.environ,
            PYTHONPATH=REPO,
            TF_CPP_MIN_LOG_LEVEL="3",
            CUDA_VISIBLE_DEVICES="",
            TF_CONFIG=json.dumps(tf_config),
        )
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    WORKER,
                    json.dumps([a + ["--strategy", "multi_worker"] for a in argv]),
                ],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    # Meanwhile, the single-process reference runs here.
    single = {}
    for key, recipe, flags in (
        ("c", classifier, classifier_flags),
        ("t", translator, translator_flags),
    ):
        assert recipe.main(_with_output(flags, tmp_path / f"{key}-one")) == 0
        single[key] = json.loads((tmp_path / f"{key}-one" / "results.json").read_text())
    for p in processes:
        _, err = p.communicate(timeout=400)
        assert p.returncode == 0, err[-3000:]

    for key, folder in (("c", "c-multi"), ("t", "t-multi")):
        chief = json.loads((tmp_path / folder / "results.json").read_text())
        other = json.loads((tmp_path / folder / "workers" / "1" / "results.json").read_text())
        assert chief["replicas"] == 2 and single[key]["replicas"] == 1
        assert other["history"]["loss"] == chief["history"]["loss"]  # one synchronous run
        if key == "c":  # Keras' loss: the mean over the global batch, exactly
            for name in ("loss", "val_loss"):
                assert chief["history"][name] == pytest.approx(
                    single[key]["history"][name], rel=1e-4
                ), name
        else:  # the translator's token-mean loss: each replica averages its own half
            for name in ("loss", "val_loss"):
                assert chief["history"][name] == pytest.approx(
                    single[key]["history"][name], rel=0.02
                ), name
    # The second epoch (after one synchronous update) still matches.
    assert len(single["c"]["history"]["loss"]) == 2


def test_multi_worker_needs_tf_config(monkeypatch):
    """kerasrnn.distribute's checks of TF_CONFIG, each one line; the recipes' `--strategy`
    names the option before it."""
    from kerasrnn.distribute import distribution_strategy
    from recipes import common
    from recipes.training import distribution

    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="needs the TF_CONFIG environment variable"):
        distribution_strategy("multi_worker")
    config = {"strategy": "multi_worker", "mirrored_cpus": 2, "output_dir": "unused"}
    with pytest.raises(common.ConfigError, match="^--strategy multi_worker: .*TF_CONFIG"):
        distribution(config)
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {}}')
    with pytest.raises(ValueError, match="not a valid cluster spec"):
        distribution_strategy("multi_worker")
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}),
    )
    with pytest.raises(ValueError, match="does not name one of the 1 workers"):
        distribution_strategy("multi_worker")
    with pytest.raises(ValueError, match="`strategy` must be one of .*multi_worker"):
        distribution_strategy("parameter_server")


class _Resolver:
    """A cluster resolver's task (what `worker_output_dir` reads)."""

    def __init__(self, task_type, task_id, jobs):
        self.task_type, self.task_id, self.jobs = task_type, task_id, jobs

    def cluster_spec(self):
        import types

        return types.SimpleNamespace(jobs=self.jobs)


class _Extended:
    def __init__(self, multi_worker):
        self.multi_worker = multi_worker

    def _in_multi_worker_mode(self):
        return self.multi_worker


class _Strategy:
    def __init__(self, resolver, multi_worker=True):
        self.cluster_resolver, self.extended = resolver, _Extended(multi_worker)


@pytest.mark.parametrize(
    "task_type,task_id,jobs,multi_worker,folder",
    [
        ("worker", 0, ["worker"], True, "run"),  # worker 0 is the chief without one
        ("worker", 1, ["worker"], True, "run/workers/1"),
        ("chief", 0, ["chief", "worker"], True, "run"),
        ("worker", 0, ["chief", "worker"], True, "run/workers/0"),  # a chief is named
        ("worker", 1, ["worker"], False, "run"),  # one worker: not multi-worker mode
    ],
)
def test_each_worker_writes_to_its_own_folder(task_type, task_id, jobs, multi_worker, folder):
    from kerasrnn.distribute import worker_output_dir

    strategy = _Strategy(_Resolver(task_type, task_id, jobs), multi_worker)
    assert worker_output_dir("run", strategy) == os.path.join(*folder.split("/"))


def test_the_default_and_mirrored_strategies_write_to_the_run_folder():
    import tensorflow as tf

    from kerasrnn.distribute import distribution_strategy, worker_output_dir

    strategy = distribution_strategy("default")
    assert strategy is tf.distribute.get_strategy()
    assert worker_output_dir("run", strategy) == "run"
    assert worker_output_dir("run", _Strategy(None)) == "run"


JAX_DATA_PARALLEL = """
import json
import keras
import jax
import numpy as np
import kerasrnn

assert keras.backend.backend() == "jax" and len(jax.devices("cpu")) == 2

def model():
    keras.utils.set_random_seed(7)
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, 8, mask_zero=True)(ids)
    x = kerasrnn.RNN(kerasrnn.LSTMCell(8))(x)
    return keras.Model(ids, keras.layers.Dense(3, activation="softmax")(x))

rng = np.random.default_rng(0)
x = rng.integers(1, 20, size=(64, 6)).astype("int32")
x[::3, 4:] = 0  # padded rows
y = (x[:, 0] % 3).astype("int32")
losses = {}
for name in ("single", "data_parallel"):
    if name == "data_parallel":
        keras.distribution.set_distribution(
            keras.distribution.DataParallel(devices=jax.devices("cpu")))
    m = model()
    m.compile(keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy")
    history = m.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    losses[name] = history.history["loss"]
    kernel = m.layers[-1].kernel.value
    losses[name + "_devices"] = len(kernel.sharding.device_set)
print(json.dumps(losses))
"""


@pytest.mark.large
def test_jax_data_parallel_trains_a_core_model_on_two_cpu_devices(tmp_path):
    env = dict(
        os.environ,
        PYTHONPATH=REPO,
        KERAS_BACKEND="jax",
        CUDA_VISIBLE_DEVICES="",
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        JAX_PLATFORMS="cpu",
    )
    done = subprocess.run(
        [sys.executable, "-c", JAX_DATA_PARALLEL],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    losses = json.loads(done.stdout.strip().splitlines()[-1])
    assert losses["single_devices"] == 1 and losses["data_parallel_devices"] == 2
    # Each device holds half of every batch; the gradient is the whole batch's.
    np_losses = losses["data_parallel"], losses["single"]
    assert np_losses[0] == pytest.approx(np_losses[1], rel=1e-5)
    assert np_losses[1][1] < np_losses[1][0]  # it learns
