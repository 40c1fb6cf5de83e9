"""The torch backend's thread hint (issue 31): PyTorch's one-thread-per-core default
stalls training steps when other work keeps the cores busy; kerasrnn says so once, in
one line, at import on the torch backend, unless the user set the threads."""

import os
import subprocess
import sys

import pytest

from kerasrnn._startup import torch_threads_hint

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize(
    "threads, cores, load, workers, hinted",
    [
        (2, 2, 0.1, 1, False),  # a quiet machine: the default is right
        (2, 2, 1.3, 1, True),  # another process busy: 2 threads for 1 free core
        (2, 2, 0.0, 2, True),  # two pytest workers of 2 threads on 2 cores
        (1, 2, 4.0, 2, False),  # one thread each: nothing spins
        (8, 16, 3.0, 2, False),  # 16 threads and 3 busy cores still fit 16 + 0.5
        (16, 16, 3.0, 1, True),
    ],
)
def test_hint_fires_only_when_threads_outnumber_the_free_cores(
    threads, cores, load, workers, hinted
):
    hint = torch_threads_hint(threads, cores, load, workers)
    assert (hint is not None) == hinted
    if hint:
        assert "\n" not in hint and "OMP_NUM_THREADS=1" in hint and f"{threads} threads" in hint


def _import_on_torch(**env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    environ.update(KERAS_BACKEND="torch", PYTHONPATH=REPO, PYTEST_XDIST_WORKER_COUNT="4", **env)
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", "import kerasrnn"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.large
def test_import_on_torch_warns_once_unless_the_threads_are_set():
    """Four workers of one thread per core each always oversubscribe (torch's default is
    the core count, at least 1): the import warns once; OMP_NUM_THREADS=1 silences it."""
    warned = _import_on_torch()
    assert warned.returncode == 0, warned.stderr[-2000:]
    threads = int(
        subprocess.run(
            [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
            env={k: v for k, v in os.environ.items() if not k.startswith("OMP_")},
            capture_output=True,
            text=True,
            timeout=300,
        ).stdout
    )
    if threads > 1:
        assert warned.stderr.count("kerasrnn: torch runs") == 1, warned.stderr
    quiet = _import_on_torch(OMP_NUM_THREADS="1")
    assert quiet.returncode == 0 and "kerasrnn: torch runs" not in quiet.stderr, quiet.stderr
