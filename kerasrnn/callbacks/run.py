"""`TrainingRun`: `model.fit` into a folder that survives being killed: the best and the
last epoch's checkpoints written atomically, a backup a re-run resumes from, the epochs'
rows and the training curves, and ``continue`` of a finished run."""

import collections
import json
import os

import h5py
import keras

from kerasrnn.callbacks.checkpoints import (
    AtomicBackupAndRestore,
    AtomicModelCheckpoint,
    write_json_atomically,
)
from kerasrnn.callbacks.curves import EpochLog, plot_training_curves
from kerasrnn.callbacks.folder_lock import folder_lock

# The files of a run folder (`TrainingRun.path`).
FILES = {
    "best": "best.keras",
    # the last finished epoch, weights and optimizer state: BackupAndRestore deletes
    # its backup when a run completes, so this is what a continued run starts from
    "last": "last.weights.h5",
    "history": "history.json",
    "curves": "training_curves.png",
    "backup": "backup",
    "epochs": os.path.join("backup", "epochs.json"),
}


class TrainingRun:
    """A training run kept in `folder`.

    `fit` is `model.fit` with these callbacks, in order: the caller's `first` ones
    (those that put the monitored value into the logs, a weight average to be
    checkpointed), ``best.keras`` (the model of the best `monitor` value, across a
    resume or a continue too), ``last.weights.h5`` (the last epoch's weights and
    optimizer state), the caller's `then` ones (e.g. early stopping), the epochs' rows
    (`EpochLog`, kept in ``backup/epochs.json`` until the run ends, then in
    ``history.json``), ``backup/`` (`AtomicBackupAndRestore`: a run killed at any moment
    resumes from its last finished epoch when `fit` is called again; the `stateful`
    callbacks' state joins it), `TerminateOnNaN`, then the caller's `last` ones.
    Every file is written atomically. After training ``training_curves.png`` plots the
    loss and a metric per epoch.

    Args:
        folder: the run's folder (created).
        monitor: the logged value whose best epoch ``best.keras`` keeps.
        mode: "min" or "max".

    Example:

    >>> import os, tempfile, keras, numpy as np
    >>> from kerasrnn.callbacks import TrainingRun
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> run = TrainingRun(tempfile.mkdtemp(), monitor="loss")
    >>> summary = run.fit(model, np.ones((8, 3)), np.zeros((8, 1)), epochs=2, verbose=0)
    >>> summary["epochs_run"], sorted(os.listdir(run.folder))
    (2, ['.lock', 'best.keras', 'history.json', 'last.weights.h5', 'training_curves.png'])
    """

    def __init__(self, folder, monitor="val_loss", mode="min"):
        if mode not in ("min", "max"):
            raise ValueError(f'`mode` must be "min" or "max"; got mode={mode!r}.')
        self.folder, self.monitor, self.mode = os.fspath(folder), monitor, mode

    def path(self, name):
        """The path of one of the run's files: "best", "last", "history", "curves",
        "backup" or "epochs"."""
        return os.path.join(self.folder, FILES[name])

    def earlier_epochs(self, continue_run=False):
        """The epoch rows a `fit` starts from: those of an interrupted run (its backup),
        of the finished run that `continue_run` extends, or none."""
        if os.path.exists(self.path("epochs")) and os.path.exists(self.path("backup")):
            return _rows(self.path("epochs"))
        if continue_run:
            return _rows(self.path("history"))
        return []

    def restore_last_epoch(self, model):
        """Loads the last finished epoch's weights and optimizer state into `model`
        (built and compiled as the run was), to continue a finished run."""
        path = self.path("last")
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"no last-epoch checkpoint at {path}: a continued run extends one trained "
                "by this version; train it again from the start."
            )
        _check_matrices(path, model)
        model.optimizer.build(model.trainable_variables)
        model.load_weights(path)

    def callbacks(self, rows=(), first=(), then=(), last=(), stateful=(), save_best=True):
        """The run's callbacks around the caller's (see the class), `rows` the earlier
        epochs' (the best of their monitored values is the one to beat); without
        `save_best` no ``best.keras`` (a caller that saves its best model itself)."""
        callbacks = list(first)
        if save_best:
            scores = [r[self.monitor] for r in rows if isinstance(r.get(self.monitor), float)]
            best = (min if self.mode == "min" else max)(scores) if scores else None
            callbacks.append(
                AtomicModelCheckpoint(
                    self.path("best"),
                    monitor=self.monitor,
                    mode=self.mode,
                    save_best_only=True,
                    initial_value_threshold=best,
                )
            )
        callbacks.append(AtomicModelCheckpoint(self.path("last"), save_weights_only=True))
        callbacks += list(then)
        callbacks += [
            EpochLog(self.path("epochs"), rows),
            AtomicBackupAndRestore(self.path("backup"), stateful=list(stateful)),
            keras.callbacks.TerminateOnNaN(),
        ]
        return callbacks + list(last)

    def fit(
        self,
        model,
        x,
        y=None,
        epochs=1,
        continue_run=False,
        callbacks=None,
        curve_metric=None,
        **fit_options,
    ):
        """`model.fit(x, y, epochs=epochs, **fit_options)` as a run (see the class);
        `callbacks`: ``{"first": [...], "then": [...], "last": [...], "stateful": [...],
        "save_best": bool}`` for `callbacks`. With `continue_run` training starts after
        the run's last finished epoch (the model must hold its state:
        `restore_last_epoch`) and goes on to `epochs`; `curve_metric` is the metric the
        curves plot beside the loss (default: `monitor` without ``val_``).

        Returns the history of every epoch of the run as a dict of lists, plus
        ``epochs_run`` (the epochs this call trained: fewer than `epochs` after a
        resume, a continue or an early stop) and ``first_epoch`` (the first of them,
        1-based). The folder's `folder_lock` is held throughout: another process
        fitting into it is a `FolderLockedError`."""
        with folder_lock(self.folder):
            return self._fit(
                model, x, y, epochs, continue_run, callbacks, curve_metric, fit_options
            )

    def _fit(self, model, x, y, epochs, continue_run, callbacks, curve_metric, fit_options):
        rows = self.earlier_epochs(continue_run)
        initial_epoch = max((r["epoch"] for r in rows), default=0) if continue_run else 0
        if continue_run and epochs <= initial_epoch:
            raise ValueError(
                f"the run in {self.folder} has trained {initial_epoch} epoch(s); "
                f"continuing it needs `epochs` above that, got {epochs}."
            )
        everything = self.callbacks(rows, **(callbacks or {}))
        log = next(c for c in everything if isinstance(c, EpochLog))
        history = model.fit(
            x, y, epochs=epochs, initial_epoch=initial_epoch, callbacks=everything, **fit_options
        )
        write_json_atomically(self.path("history"), {"rows": log.rows})
        keys = dict.fromkeys(key for row in log.rows for key in row if key != "epoch")
        result = {key: [row.get(key) for row in log.rows] for key in keys}
        result["epochs_run"] = len(history.epoch)
        result["first_epoch"] = history.epoch[0] + 1 if history.epoch else None
        metric = curve_metric or self.monitor.removeprefix("val_").removeprefix("valid_")
        plot_training_curves(log.rows, self.path("curves"), metric)
        return result


def _rows(path):
    try:
        with open(path, encoding="utf-8") as file:
            rows = json.load(file)["rows"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is damaged ({error!r}); train the run again.") from None
    return rows


def _check_matrices(path, model):
    """Raises a one-line ValueError when the weights file at `path` holds other kernel
    and embedding shapes than `model` (another vocabulary, other units) before Keras
    loads it, which would warn about each layer left freshly initialised and then fail.
    Only matrices are compared: 1-D states (seed generators, biases) say little."""
    stored = []
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda name, item: (
                stored.append(tuple(item.shape))
                if isinstance(item, h5py.Dataset) and not name.startswith("optimizer/")
                else None
            )
        )
    ours = [tuple(w.shape) for w in model.weights]
    stored_c = collections.Counter(s for s in stored if len(s) >= 2)
    ours_c = collections.Counter(s for s in ours if len(s) >= 2)
    if stored_c != ours_c:
        only_file = sorted((stored_c - ours_c).elements())
        only_model = sorted((ours_c - stored_c).elements())
        raise ValueError(
            f"{path} holds weights of shapes {only_file} where the model has {only_model}"
        )
