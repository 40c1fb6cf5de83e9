"""Crash-safe files and checkpoints: every file is written under a temporary name in the
same folder and renamed over the old one (`os.replace` is atomic on POSIX and Windows),
so a reader, or a re-run after a kill, sees the old file or the new one, never half of
one. tests/callbacks/test_checkpoints.py and tests/recipes/test_crash.py kill training
inside these writes."""

import contextlib
import json
import os

import keras

from kerasrnn._private import backup_files_and_position

# Keras picks a file's format by its suffix: the temporary name keeps it.
_SUFFIXES = (".weights.h5", ".keras", ".json", ".h5", ".png")


def partial_name(path):
    """The temporary name `atomic_path` writes `path` under: ``.partial`` before the
    Keras suffix (``best.keras`` -> ``best.partial.keras``, ``x.weights.h5`` ->
    ``x.partial.weights.h5``), else appended."""
    path = os.fspath(path)
    folder, name = os.path.split(path)
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return os.path.join(folder, name[: -len(suffix)] + ".partial" + suffix)
    return path + ".partial"


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path`; when the block finishes, the file written
    there replaces `path` in one step (on an error it is removed, `path` untouched).

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "notes.txt")
    >>> with atomic_path(path) as partial:
    ...     with open(partial, "w") as f:
    ...         _ = f.write("done")
    >>> open(path).read()
    'done'
    """
    partial = partial_name(path)
    if os.path.exists(partial):  # left by a killed process: never let it through
        os.remove(partial)
    try:
        yield partial
        if os.path.exists(partial):
            os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def save_model_atomically(model, path):
    """`model.save(path)` (a ``.keras`` file), atomically."""
    with atomic_path(path) as partial:
        model.save(partial)


def write_json_atomically(path, data, default=None):
    """Writes `data` as indented UTF-8 JSON (creating the folder), atomically.
    `default`: `json.dump`'s hook for values JSON lacks."""
    path = os.fspath(path)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with atomic_path(path) as partial:
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False, default=default)
            f.write("\n")


class AtomicModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """`keras.callbacks.ModelCheckpoint` (same arguments) that never leaves a
    half-written file.

    Keras writes to the path in place, so a kill during the write leaves a file that
    does not load. Here the file is written under a temporary name (by pointing the
    public `filepath` there for the save) and renamed over the old one after it.

    It takes `keras.callbacks.ModelCheckpoint`'s arguments (`filepath` a ``.keras`` or
    ``.weights.h5`` file, ...).

    Example:

    >>> import os, tempfile, keras, numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "best.keras")
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0,
    ...               callbacks=[AtomicModelCheckpoint(path, monitor="loss")])
    >>> os.listdir(os.path.dirname(path))
    ['best.keras']
    """

    def _save_atomically(self, hook, *args):
        final = self.filepath
        with atomic_path(final) as partial:
            self.filepath = partial
            try:
                hook(*args)
            finally:
                self.filepath = final

    def on_train_begin(self, logs=None):
        # A previous process killed mid-write left its temporary file: remove it now,
        # even if this run never saves (no epoch improves on the best).
        stale = partial_name(self.filepath)
        if os.path.exists(stale):
            os.remove(stale)
        super().on_train_begin(logs)

    def on_epoch_end(self, epoch, logs=None):
        self._save_atomically(super().on_epoch_end, epoch, logs)

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":  # nothing to save; skip the file checks
            return super().on_train_batch_end(batch, logs)
        self._save_atomically(super().on_train_batch_end, batch, logs)


class AtomicBackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` (same arguments) whose backup (weights and
    optimizer state, and the epoch reached) is replaced atomically.

    Keras overwrites ``latest.weights.h5`` and ``training_metadata.json`` in place, so
    a kill during the write leaves a backup the re-run cannot load. The weights are
    renamed into place first, so a kill between the two renames resumes one epoch early
    with the newer weights, never with unreadable ones.

    It takes `keras.callbacks.BackupAndRestore`'s arguments (`backup_dir`, the backup
    folder, deleted when training completes, ...).
    """

    def _save_model(self):
        # Keras' hook that writes the backup (no public one: kerasrnn._private reads the
        # files and the position it writes).
        weights_path, metadata_path, position = backup_files_and_position(self)
        os.makedirs(self.backup_dir, exist_ok=True)
        with atomic_path(weights_path) as weights:
            self.model.save_weights(weights, overwrite=True)
        write_json_atomically(metadata_path, position)
