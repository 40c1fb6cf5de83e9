"""A run folder's safety: one writer at a time (`lock`, an OS file lock in the folder)
and no trained run replaced by accident (`claim`, which `Recipe.train` calls with the
command line's choice of `policy`: a new run, ``--continue`` or ``--overwrite``).

A folder is in one of four states (`state_of`):

* ``empty`` -- absent, or holding nothing but the lock file: a new run starts;
* ``finished`` -- a run with its ``results.json``;
* ``interrupted`` -- a run's ``config.json`` without ``results.json`` (killed, or
  training now under another process' lock);
* ``foreign`` -- files that are not a run's: never written into, never removed.

A command-line ``train`` into a finished run refuses, naming ``--continue`` (train it
on) and ``--overwrite`` (start over); into an interrupted run it resumes when its options
are the stored ones (the same command re-run after a kill resumes from the last finished
epoch), else refuses the same way. ``--overwrite`` moves the old run into the folder's
``.previous-run/`` and deletes it only once the new run has written its first epoch's
checkpoints: a new run killed before that leaves the old one there, put back by the next
``train`` or ``export`` on the folder. The Python API (`Recipe.train`) keeps its
behaviour (it writes into the folder it is given) and takes the lock.
"""

import contextlib
import contextvars
import json
import os
import shutil

from recipes.config import RecipeError

LOCK = ".lock"  # kerasrnn.callbacks.folder_lock's file
PREVIOUS = ".previous-run"
# Options that do not change what a run computes: a resume may change them.
_NOT_THE_RUN = ("output_dir", "verbose", "tensorboard")

_policy = contextvars.ContextVar("run_folder_policy", default=None)


class RunFolderError(RecipeError):
    """A run folder that cannot be written as asked (locked, or holding a run)."""


@contextlib.contextmanager
def lock(folder):
    """`kerasrnn.callbacks.folder_lock` of the run folder, a holder a `RunFolderError`."""
    from kerasrnn.callbacks import FolderLockedError, folder_lock

    try:
        with folder_lock(folder):
            yield
    except FolderLockedError as error:
        raise RunFolderError(str(error).replace("another folder", "another --output-dir")) from None


def _entries(folder):
    try:
        return [e for e in os.listdir(folder) if e not in (LOCK, PREVIOUS)]
    except FileNotFoundError:
        return []


def state_of(folder):
    """``"empty"``, ``"finished"``, ``"interrupted"`` or ``"foreign"`` (module
    docstring)."""
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            return "foreign"
        return "empty"
    # workers/: the other workers' folders of a multi-worker run (recipes.distribute),
    # which they may create before the chief claims the folder
    entries = [e for e in _entries(folder) if e != "workers"]
    if not entries:
        return "empty"
    if "config.json" not in entries:
        return "foreign"
    return "finished" if "results.json" in entries else "interrupted"


@contextlib.contextmanager
def policy(mode):
    """The command line's choice for the next `claim` in this context: ``"new"``
    (plain ``train``), ``"continue"`` or ``"overwrite"``."""
    token = _policy.set(mode)
    try:
        yield
    finally:
        _policy.reset(token)


def _stored_config(folder):
    path = os.path.join(folder, "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            stored = json.load(f)
    except (OSError, ValueError) as error:
        raise RunFolderError(
            f"{path} is damaged ({error}): use --overwrite to start the run over, or "
            "another --output-dir."
        ) from None
    if not isinstance(stored, dict):
        raise RunFolderError(
            f"{path} is damaged (not a mapping of options): use --overwrite to start the "
            "run over, or another --output-dir."
        )
    return stored


def _differences(stored, config):
    """The options whose values differ between a stored run config and `config`."""
    from recipes.files import jsonable, tidy

    new = json.loads(json.dumps(tidy(config), default=jsonable))
    keys = sorted((set(stored) | set(new)) - set(_NOT_THE_RUN))
    return [k for k in keys if stored.get(k) != new.get(k)]


def _ways_on(folder):
    return (
        f"use --continue to train it on (to more --epochs), --overwrite to start over "
        f"(the old run is removed once the new one has a checkpoint), or another "
        f"--output-dir than {folder}"
    )


def restore_previous(folder):
    """Puts back the run that an ``--overwrite`` killed before its first checkpoint
    moved aside (its own files, which have no checkpoint, are removed). Call under the
    folder's `lock`. Returns whether there was one."""
    previous = os.path.join(folder, PREVIOUS)
    if not os.path.isdir(previous):
        return False
    for entry in _entries(folder):
        _remove(os.path.join(folder, entry))
    for entry in os.listdir(previous):
        os.replace(os.path.join(previous, entry), os.path.join(folder, entry))
    os.rmdir(previous)
    return True


def recover(folder):
    """For a command that reads a run: puts back the run that an ``--overwrite``
    killed before its first checkpoint moved aside, when no process writes the folder
    now (a live writer's new run is left alone)."""
    if not os.path.isdir(os.path.join(folder, PREVIOUS)):
        return
    try:
        with lock(folder):
            restore_previous(folder)
    except RunFolderError:
        pass


def discard_previous(folder):
    """Removes the run that ``--overwrite`` moved aside (once the new run has a
    checkpoint)."""
    shutil.rmtree(os.path.join(folder, PREVIOUS), ignore_errors=True)


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def _move_aside(folder):
    previous = os.path.join(folder, PREVIOUS)
    os.makedirs(previous)
    for entry in _entries(folder):
        os.replace(os.path.join(folder, entry), os.path.join(previous, entry))


def claim(config, continue_run=False, log=None):
    """Makes ``config["output_dir"]`` ready for `Recipe.train` (under its `lock`), as
    the `policy` of this context says (consumed: a nested training claims its own
    folder as the Python API does). Returns ``(continue_run, replacing)``: whether to
    extend a finished run, and whether an old run was moved aside (to discard after the
    first checkpoint).

    Raises:
        RunFolderError: the folder holds a run (or foreign files) that the policy may
            not write into; the message names the ways on.
    """
    folder = config["output_dir"]
    mode = _policy.get()
    _policy.set(None)
    if restore_previous(folder) and log:
        log(f"{folder}: put back the run that an interrupted --overwrite had moved aside")
    if mode is None:  # the Python API: writes where it is told
        return continue_run, False
    state = state_of(folder)
    if state == "foreign":
        raise RunFolderError(
            f"{folder} holds files that are not a run's (no config.json): choose another "
            "--output-dir (train never writes into or removes them)."
        )
    if mode == "overwrite":
        if state == "empty":
            return False, False
        _move_aside(folder)
        return False, True
    if mode == "continue":
        if state == "empty":
            raise RunFolderError(f"{folder} holds no run to continue: train without --continue.")
        # an interrupted run resumes from its backup (BackupAndRestore), a finished one
        # is extended from last.weights.h5
        if state == "finished":
            from recipes.files import read_json

            read_json(os.path.join(folder, "results.json"), kind=dict)  # damaged: one line
        return state == "finished", False
    if state == "empty":
        return False, False
    if state == "finished":
        raise RunFolderError(f"{folder} holds a finished run: {_ways_on(folder)}.")
    changed = _differences(_stored_config(folder), config)
    if changed:
        shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
        raise RunFolderError(
            f"{folder} holds an interrupted run trained with other options ({shown}): "
            f"re-run its own command to resume it, or {_ways_on(folder)}."
        )
    if log:
        log(f"{folder}: resuming the interrupted run with the same options")
    return False, False


def discard_previous_callback(folder):
    """A Keras callback that removes the run ``--overwrite`` moved aside at the end of
    the first epoch (listed after the checkpoints, which have then been written)."""
    import keras

    return keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: discard_previous(folder))
