"""`folder_lock`: one process at a time writes a training folder.

Two trainings into one folder would interleave their checkpoints and backups, and a
resumed run would then continue from another run's epoch. The lock is an OS file lock
(`fcntl.flock`) on ``<folder>/.lock``, which holds the writer's process id: the OS
drops it when the process ends, however it ends, so a killed writer leaves no stale
lock behind. Where `fcntl` is missing (Windows) the folder is not locked.
"""

import contextlib
import os

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".lock"
_held: dict = {}  # realpath -> [file object, count]: this process' locks (re-entrant)


class FolderLockedError(RuntimeError):
    """Another process holds the folder's lock (the message names it and its id)."""


def _holder(path):
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().strip() or "unknown"
    except OSError:
        return "unknown"


@contextlib.contextmanager
def folder_lock(folder):
    """Holds `folder`'s write lock for the block (creating the folder); re-entrant
    within a process.

    Raises:
        FolderLockedError: another process holds it.

    Example:

    >>> import tempfile
    >>> from kerasrnn.callbacks import folder_lock
    >>> with folder_lock(tempfile.mkdtemp()), folder_lock(tempfile.mkdtemp()):
    ...     pass
    """
    os.makedirs(folder, exist_ok=True)
    key = os.path.realpath(folder)
    if key in _held:
        _held[key][1] += 1
        try:
            yield
        finally:
            _held[key][1] -= 1
        return
    path = os.path.join(folder, LOCK_FILE)
    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held across the block)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise FolderLockedError(
                    f"{folder} is being written by another process (pid {_holder(path)}): "
                    "wait for it to finish, or use another folder."
                ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        _held[key] = [handle, 1]
        try:
            yield
        finally:
            del _held[key]
    finally:
        handle.close()  # releases the lock
