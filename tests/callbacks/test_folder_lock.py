"""kerasrnn.callbacks.folder_lock: one writer per training folder, across processes."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from kerasrnn.callbacks import FolderLockedError, TrainingRun, folder_lock

HOLD = """
import sys, time
from kerasrnn.callbacks import folder_lock
with folder_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def holder(tmp_path):
    """A child process that holds tmp_path's lock until it is killed."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline().strip() == "held"
    yield child
    child.kill()
    child.wait()


@pytest.mark.large
def test_another_process_holding_the_folder_is_an_error_naming_it(tmp_path, holder):
    with pytest.raises(FolderLockedError, match=f"pid {holder.pid}\\b"):
        with folder_lock(tmp_path):
            pass
    assert (tmp_path / ".lock").read_text().strip() == str(holder.pid)


@pytest.mark.large
def test_a_killed_holder_leaves_no_lock(tmp_path, holder):
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with folder_lock(tmp_path):
        assert (tmp_path / ".lock").read_text().strip() == str(os.getpid())


def test_the_lock_is_reentrant_in_a_process(tmp_path):
    with folder_lock(tmp_path), folder_lock(tmp_path / "."):
        pass
    with folder_lock(tmp_path):  # released after the outer block
        pass


@pytest.mark.large
def test_training_run_fit_holds_the_lock(tmp_path, holder):
    import keras

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = np.zeros((4, 2), "float32"), np.zeros((4, 1), "float32")
    with pytest.raises(FolderLockedError):
        TrainingRun(str(tmp_path), "loss").fit(model, x, y, epochs=1, verbose=0)
    assert not (tmp_path / "best.keras").exists()  # refused before the first epoch
