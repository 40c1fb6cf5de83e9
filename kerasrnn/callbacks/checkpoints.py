"""Crash-safe files and checkpoints: every file is written under a temporary name in the
same folder and renamed over the old one (`os.replace` is atomic on POSIX and Windows),
so a reader, or a re-run after a kill, sees the old file or the new one, never half of
one. tests/callbacks/test_checkpoints.py and tests/recipes/test_crash.py kill training
inside these writes."""

import contextlib
import json
import os

import keras
import numpy as np

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

    Keras' backup holds the model and the optimizer, not the state of other callbacks:
    a weight average (`PolyakAveraging`, `ExponentialAveraging`, `NTASGD`) would start
    again after a resume. `stateful` lists objects with ``get_state()`` (a dict of
    numbers, None, lists of numbers and lists of NumPy arrays) and ``set_state(state)``:
    each one's state is written with the weights (``state_<i>.npz``, before the epoch is
    recorded) and given back when a fit resumes from the backup. List this callback after
    them, so that it restores their state after their own ``on_train_begin``.

    Args:
        backup_dir: the backup folder (deleted when training completes).
        stateful: objects whose state joins the backup (see above).
        **kwargs: `keras.callbacks.BackupAndRestore`'s other arguments.
    """

    def __init__(self, backup_dir, stateful=(), **kwargs):
        super().__init__(backup_dir, **kwargs)
        self.stateful = list(stateful)

    def _state_path(self, index):
        return os.path.join(self.backup_dir, f"state_{index}.npz")

    def on_train_begin(self, logs=None):
        resuming = os.path.exists(backup_files_and_position(self)[0])
        super().on_train_begin(logs)
        for index, holder in enumerate(self.stateful):
            if resuming and os.path.exists(self._state_path(index)):
                holder.set_state(_read_state(self._state_path(index)))

    def _save_model(self):
        # Keras' hook that writes the backup (no public one: kerasrnn._private reads the
        # files and the position it writes).
        weights_path, metadata_path, position = backup_files_and_position(self)
        os.makedirs(self.backup_dir, exist_ok=True)
        with atomic_path(weights_path) as weights:
            self.model.save_weights(weights, overwrite=True)
        for index, holder in enumerate(self.stateful):
            with atomic_path(self._state_path(index)) as partial:
                _write_state(partial, holder.get_state())
        write_json_atomically(metadata_path, position)


def _write_state(path, state):
    """`state` (a dict whose values are numbers, None, lists of numbers or lists of NumPy
    arrays) as one .npz: the arrays under ``key/i``, everything else as JSON."""
    arrays, plain = {}, {}
    for key, value in state.items():
        if isinstance(value, list) and value and isinstance(value[0], np.ndarray):
            arrays.update({f"{key}/{i}": v for i, v in enumerate(value)})
            plain[key] = {"arrays": len(value)}
        else:
            plain[key] = value
    with open(path, "wb") as f:
        np.savez(f, __json__=np.array(json.dumps(plain)), **arrays)


def _read_state(path):
    with np.load(path, allow_pickle=False) as stored:
        plain = json.loads(str(stored["__json__"]))
        return {
            key: (
                [stored[f"{key}/{i}"] for i in range(value["arrays"])]
                if isinstance(value, dict)
                else value
            )
            for key, value in plain.items()
        }
