"""Quiet start-up of the package's command lines (``python -m recipes.X``,
``python -m kerasrnn.X``, the ``kerasrnn`` console script).

TensorFlow prints its C++ start-up lines (CPU features, CUDA probing, absl's "All log
messages before absl::InitializeLog()"; some through absl's C++ logging, which
``TF_CPP_MIN_LOG_LEVEL`` does not reach) before a command has printed anything, and
error-level lines that are no errors once it runs (oneDNN's "supports DT_BOOL only on
platforms with AVX-512"), so a one-line error would come after eight lines of noise.
When a command line of this package starts, `quiet_command_line` sets
``TF_CPP_MIN_LOG_LEVEL`` to 3 (and absl's / glog's ``GLOG_minloglevel``, which XLA
reads), imports Keras (and TensorFlow) with the process' stderr sent to a temporary
file, replayed only if the import fails, and turns absl's Python logging down to
errors. It does nothing when the user asked for TensorFlow's own logging:
``TF_CPP_MIN_LOG_LEVEL=0``, or ``--verbose 3``. Any other value of the variable (1, 2
or 3, the usual way to silence TensorFlow) gets the same quiet start-up as no value:
the variable alone cannot silence the absl lines, so the capture is needed for those
values too. Plain ``import kerasrnn`` in a user's program changes nothing.

`captured_native_output` does the same around a third-party step (an export
converter): its messages on file descriptors 1 and 2 are shown only if the step
fails, or when `loud` asks for them.
"""

import contextlib
import os
import sys
import tempfile

# The console scripts of pyproject.toml and the module each runs as ``python -m``.
CONSOLE_SCRIPTS = {"kerasrnn": "recipes"}


def command_line_module():
    """The module run by ``python -m MODULE`` in this process (for a console script of
    this package, ``kerasrnn``: the module it stands for), else None."""
    argv = list(getattr(sys, "orig_argv", ()))
    if "-m" in argv[1:]:
        index = argv.index("-m", 1)
        if index + 1 < len(argv):
            return argv[index + 1]
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return CONSOLE_SCRIPTS.get(os.path.splitext(script)[0])


def is_own_command_line(packages=("recipes", "kerasrnn")):
    """Whether this process is ``python -m`` one of `packages`' modules."""
    module = command_line_module() or ""
    return module.split(".")[0] in packages


@contextlib.contextmanager
def native_stderr_silenced():
    """Sends file descriptor 2 (where C++ code logs) to a temporary file for the block;
    its text is written to stderr after all if the block raises."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, AttributeError, ValueError):  # no real stderr: nothing to silence
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            captured.seek(0)
            sys.stderr.write(captured.read().decode("utf-8", "replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def wants_native_logs(argv=None):
    """Whether the user asked for TensorFlow's own logs: ``TF_CPP_MIN_LOG_LEVEL=0``, or
    ``--verbose 3`` on the command line. Unset, 1, 2 or 3 is no: those values ask for
    less logging, and only the quiet start-up removes absl's start-up lines, which the
    variable does not reach."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip() == "0":
        return True
    argv = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(argv):
        if arg == "--verbose=3" or (arg == "--verbose" and argv[i + 1 : i + 2] == ["3"]):
            return True
    return False


@contextlib.contextmanager
def captured_native_output(loud=False):
    """Sends file descriptors 1 and 2 (where C++ code and converters log) to a
    temporary file for the block; its text is written to stderr if the block raises,
    or when `loud`. Python's own ``sys.stdout`` / ``sys.stderr`` writes go the same
    way (they end on those descriptors)."""
    if loud:
        yield
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
    except (OSError, AttributeError, ValueError):  # no real descriptors: nothing to capture
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 1)
        os.dup2(captured.fileno(), 2)
        failed = False
        try:
            yield
        except BaseException:
            failed = True
            raise
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            if failed:
                captured.seek(0)
                sys.stderr.write(captured.read().decode("utf-8", "replace"))
                sys.stderr.flush()


def quiet_command_line():
    """Silences TensorFlow's start-up logs for a command line of this package (see the
    module docstring); nothing when this process is not one, or when the user asked for
    TensorFlow's logs (`wants_native_logs`). Must run before Keras or TensorFlow is imported.

    A recipe imports TensorFlow (and probes its devices, which logs too) whatever the
    Keras backend, as the recipes use tf.data on every backend; the library's own
    command lines import Keras only (and so its backend: the JAX core never imports
    TensorFlow).
    """
    if not is_own_command_line() or wants_native_logs():
        return
    # 3 (a user's 1 or 2 too): errors too; oneDNN logs "supports DT_BOOL only on
    # platforms with AVX-512" at error level on every CPU without AVX-512, and real
    # errors reach Python as exceptions
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    os.environ.setdefault("GLOG_minloglevel", "3")
    import_tensorflow = command_line_module().split(".")[0] == "recipes"
    with native_stderr_silenced():
        import keras

        if import_tensorflow or keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            tf.config.list_physical_devices()  # CUDA probing logs here
    try:
        from absl import logging as absl_logging

        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:
        pass


def torch_threads_hint(threads, cores, load, workers=1):
    """The one-line hint for Keras' torch backend when its CPU threads outnumber the
    cores left to them, else None.

    PyTorch starts one intra-op thread per core, and its OpenMP threads spin while they
    wait for work. When other processes keep the cores busy (a second training, pytest
    workers: `workers` processes like this one, or a load average `load` from the rest
    of the machine), those spinning threads are preempted mid-operation and a training
    step that takes milliseconds can take seconds.

    Args:
        threads: ``torch.get_num_threads()`` of this process.
        cores: ``os.cpu_count()``.
        load: the 1-minute load average of the machine.
        workers: processes of this kind started together (pytest-xdist workers).
    """
    if threads <= 1:
        return None
    busy = max(float(load), float(workers - 1) * threads)
    if threads * workers <= cores and busy + threads <= cores + 0.5:
        return None
    return (
        f"kerasrnn: torch runs {threads} threads on {cores} cores that are already busy "
        f"(load {load:.1f}, {workers} worker(s)): training steps can stall for seconds. "
        "Set OMP_NUM_THREADS=1 (or a share of the cores) before starting Python, or call "
        "torch.set_num_threads(1); see the docs' 'Backends and CPU threads'."
    )


def warn_if_torch_threads_oversubscribed():
    """Warns once (`torch_threads_hint`) on the torch backend, unless the user set the
    threads (``OMP_NUM_THREADS``) themselves."""
    import keras

    if keras.backend.backend() != "torch" or "OMP_NUM_THREADS" in os.environ:
        return
    import warnings

    import torch

    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform
        load = 0.0
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    hint = torch_threads_hint(torch.get_num_threads(), os.cpu_count() or 1, load, workers)
    if hint:
        warnings.warn(hint, RuntimeWarning, stacklevel=3)
