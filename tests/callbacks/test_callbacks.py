"""kerasrnn.callbacks: atomic checkpoints and backups (a write interrupted half-way
leaves the old file), the epoch log and the training curves."""

import json
import os
import warnings

import keras
import numpy as np
import pytest

from kerasrnn.callbacks import (
    AtomicBackupAndRestore,
    AtomicModelCheckpoint,
    EpochLog,
    TrainingCurves,
    atomic_path,
    partial_name,
    plot_training_curves,
    write_json_atomically,
)


def _png(path):
    """(width, height) of a PNG file, read by matplotlib (which fails on a broken one)."""
    import matplotlib.image

    assert open(path, "rb").read(4) == b"\x89PNG", path
    height, width = matplotlib.image.imread(path).shape[:2]
    return width, height


def _model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    return model


def test_partial_names_keep_the_keras_suffix():
    assert partial_name("a/best.keras") == os.path.join("a", "best.partial.keras")
    assert partial_name("x.weights.h5") == "x.partial.weights.h5"
    assert partial_name("notes") == "notes.partial"


def test_atomic_path_keeps_the_old_file_when_the_write_fails(tmp_path):
    path = tmp_path / "data.json"
    write_json_atomically(path, {"a": 1})
    with pytest.raises(RuntimeError):
        with atomic_path(path) as partial:
            with open(partial, "w") as f:
                f.write('{"a": ')  # half written, then the writer dies
            raise RuntimeError("killed")
    assert json.loads(path.read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.json"]


def test_checkpoint_removes_a_stale_partial_file_even_without_saving(tmp_path):
    # A process killed inside the write left best.partial.keras; the next run may never
    # save (no epoch beats the best), and must not leave the stale file behind.
    (tmp_path / "best.partial.keras").write_bytes(b"half a zip")
    model = _model()
    checkpoint = AtomicModelCheckpoint(
        tmp_path / "best.keras", monitor="loss", save_best_only=True, initial_value_threshold=0.0
    )  # nothing beats a loss of 0
    model.fit(np.ones((4, 3)), np.ones((4, 1)), epochs=1, verbose=0, callbacks=[checkpoint])
    assert list(tmp_path.iterdir()) == []


def test_checkpoint_writes_what_keras_model_checkpoint_writes(tmp_path):
    x, y = np.random.default_rng(0).normal(size=(16, 3)), np.ones((16, 1))
    for name, cls in (("ours", AtomicModelCheckpoint), ("keras", keras.callbacks.ModelCheckpoint)):
        model = _model()
        model.fit(
            x,
            y,
            epochs=2,
            verbose=0,
            callbacks=[cls(tmp_path / f"{name}.weights.h5", save_weights_only=True)],
        )
    ours, theirs = _model(), _model()
    ours.load_weights(tmp_path / "ours.weights.h5")
    theirs.load_weights(tmp_path / "keras.weights.h5")
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keras.weights.h5", "ours.weights.h5"]


class _Stop(keras.callbacks.Callback):
    """Interrupts training at the end of epoch `at` (0-based), as a kill would."""

    def __init__(self, at):
        super().__init__()
        self.at = at

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.at:
            raise KeyboardInterrupt


@pytest.mark.large
def test_backup_resumes_an_interrupted_run_where_it_stopped(tmp_path):
    x, y = np.random.default_rng(1).normal(size=(16, 3)), np.ones((16, 1))
    backup = tmp_path / "backup"
    model = _model()
    with pytest.raises(KeyboardInterrupt):
        model.fit(
            x,
            y,
            epochs=4,
            verbose=0,
            shuffle=False,
            callbacks=[AtomicBackupAndRestore(backup), _Stop(1)],
        )
    assert sorted(os.listdir(backup)) == ["latest.weights.h5", "training_metadata.json"]
    resumed = _model()
    history = resumed.fit(
        x, y, epochs=4, verbose=0, shuffle=False, callbacks=[AtomicBackupAndRestore(backup)]
    )
    assert history.epoch == [2, 3]  # the two finished epochs are not run again
    straight = _model()
    straight.fit(x, y, epochs=4, verbose=0, shuffle=False)
    for a, b in zip(resumed.get_weights(), straight.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not backup.exists()  # deleted when training completes, as Keras does


def test_epoch_log_keeps_rows_across_a_resume_and_replaces_a_rerun_epoch(tmp_path):
    path = tmp_path / "epochs.json"
    log = EpochLog(path, rows=[{"epoch": 1, "loss": 9.0}, {"epoch": 2, "loss": 8.0}])
    model = _model()
    model.fit(
        np.ones((4, 3)), np.ones((4, 1)), epochs=3, initial_epoch=1, verbose=0, callbacks=[log]
    )
    rows = json.loads(path.read_text())["rows"]
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert rows[0]["loss"] == 9.0 and rows[1]["loss"] != 8.0  # epoch 2 was run again
    assert sorted(rows[2]) == ["epoch", "loss", "mae"]


def test_training_curves_plot_loss_and_metric(tmp_path):
    rows = [
        {"epoch": 1, "loss": 1.0, "val_loss": 1.2, "accuracy": 0.5, "val_accuracy": 0.4},
        {"epoch": 2, "loss": 0.5, "val_loss": 0.9, "accuracy": 0.8, "val_accuracy": 0.6},
    ]
    two = _png(plot_training_curves(rows, tmp_path / "curves.png", "accuracy"))
    one = _png(plot_training_curves(rows, tmp_path / "loss.png", "loss"))
    assert two[0] > one[0] and two[1] == one[1]  # two panels: loss and accuracy


@pytest.mark.large
def test_training_curves_callback_redraws_after_every_epoch(tmp_path):
    path = tmp_path / "curves.png"
    sizes = []

    class Watch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            sizes.append(_png(path))

    curves = TrainingCurves(path, metric="mae")
    _model().fit(np.ones((4, 3)), np.ones((4, 1)), epochs=2, verbose=0, callbacks=[curves, Watch()])
    assert len(sizes) == 2 and sizes[0] == sizes[1]
    assert [r["epoch"] for r in curves.rows] == [1, 2]
    assert sizes[0] > _png(plot_training_curves(curves.rows, tmp_path / "l.png", None))


def _embedding_model(vocabulary):
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((4,), dtype="int32"),
            keras.layers.Embedding(vocabulary, 3),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", "mse")
    return model


def test_restore_last_epoch_refuses_other_shapes_in_one_line(tmp_path):
    from kerasrnn.callbacks import TrainingRun

    x, y = np.ones((8, 4), "int32"), np.zeros((8, 4, 1), "float32")
    run = TrainingRun(str(tmp_path), "loss")
    trained = _embedding_model(10)
    run.fit(trained, x, y, epochs=1, verbose=0)
    again = _embedding_model(10)
    run.restore_last_epoch(again)
    np.testing.assert_array_equal(again.layers[0].embeddings, trained.layers[0].embeddings)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before Keras warns of skipped layers
        with pytest.raises(
            ValueError, match=r"of shapes \[\(10, 3\)\] where the model has \[\(12, 3\)\]"
        ):
            run.restore_last_epoch(_embedding_model(12))
