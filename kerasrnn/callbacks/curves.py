"""Per-epoch logs kept on disk (`EpochLog`) and the training-curves PNG
(`TrainingCurves`, `plot_training_curves`)."""

import math
import os

import keras

from kerasrnn.callbacks.checkpoints import atomic_path, write_json_atomically


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


class EpochLog(keras.callbacks.Callback):
    """Keeps every epoch's logs as rows ``{"epoch": n, **logs}`` (1-based epochs),
    written after each epoch to `path` as ``{"rows": [...]}`` (atomically), so that a
    run resumed by `BackupAndRestore` still knows the epochs before the interruption;
    an epoch run again replaces its row.

    Args:
        path: the JSON file; None keeps the rows in memory only.
        rows: the rows of earlier epochs (e.g. read back from `path` on a resume).
        write: ``write(path, data)`` writes the file; default
            `write_json_atomically` (the recipes round the numbers first).

    Example:

    >>> import keras, numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> log = EpochLog(None)
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2, verbose=0, callbacks=[log])
    >>> [row["epoch"] for row in log.rows], sorted(log.rows[0])
    ([1, 2], ['epoch', 'loss'])
    """

    def __init__(self, path=None, rows=(), write=write_json_atomically):
        super().__init__()
        self.path, self.rows, self.write = path, [dict(r) for r in rows], write

    def on_epoch_end(self, epoch, logs=None):
        row = {"epoch": epoch + 1}
        row.update({k: _number(v) for k, v in (logs or {}).items()})
        self.rows = [r for r in self.rows if r["epoch"] < row["epoch"]] + [row]
        if self.path is not None:
            self.write(self.path, {"rows": self.rows})


def plot_training_curves(rows, path, metric="accuracy"):
    """Writes a PNG of the per-epoch curves of a run (matplotlib, Agg), atomically: the
    loss and `metric` (None: the loss only), each on the training data and (when
    logged) the validation data (``val_<name>`` or ``valid_<name>``), against the epoch.

    Args:
        rows: one dict of logs per epoch, with its ``epoch`` (as `EpochLog` keeps).
        path: the PNG file.
        metric: the logged metric plotted beside the loss.

    Returns:
        `path`.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["loss"] + ([metric] if metric and metric != "loss" else [])
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.6), squeeze=False)
    epochs = [r["epoch"] for r in rows]
    for ax, name in zip(axes[0], names):
        for key, label in (
            (name, "training"),
            (f"val_{name}", "validation"),
            (f"valid_{name}", "validation"),
        ):
            values = [r.get(key) for r in rows]
            if any(isinstance(v, float) and math.isfinite(v) for v in values):
                ax.plot(
                    epochs,
                    [v if isinstance(v, float) else float("nan") for v in values],
                    marker="o",
                    label=label,
                )
        ax.set_xlabel("epoch")
        ax.set_ylabel(name)
        ax.set_title(name)
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    fig.tight_layout()
    path = os.fspath(path)
    with atomic_path(path) as partial:
        fig.savefig(partial, dpi=80)
    plt.close(fig)
    return path


class TrainingCurves(EpochLog):
    """Redraws the training-curves PNG (`plot_training_curves`) after every epoch, so
    the picture is current while a long run trains and survives a kill.

    Args:
        path: the PNG file.
        metric: the logged metric plotted beside the loss (None: the loss only).
        rows: the rows of earlier epochs (a resumed run's curves start with them).

    Example:

    >>> import os, tempfile, keras, numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "curves.png")
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse", metrics=["mae"])
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2, verbose=0,
    ...               callbacks=[TrainingCurves(path, metric="mae")])
    >>> os.path.getsize(path) > 0
    True
    """

    def __init__(self, path, metric="accuracy", rows=()):
        super().__init__(None, rows)
        self.image, self.metric = path, metric

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        plot_training_curves(self.rows, self.image, self.metric)
