"""Training over several devices and machines with `model.fit`:
`distribution_strategy` (default, mirrored, multi_worker, by name) and
`worker_output_dir` (a folder per non-chief worker of a multi-worker run). The
multi-worker `fit` patch this needs lives, with the package's other uses of Keras
internals, in `kerasrnn._private`."""

import json
import os

from kerasrnn._private import in_multi_worker_mode, patch_keras_multi_worker_fit

STRATEGIES = ("default", "mirrored", "multi_worker")


def distribution_strategy(name="default", mirrored_cpus=2):
    """Returns a `tf.distribute.Strategy`: ``"default"``, ``"mirrored"`` or
    ``"multi_worker"``.

    ``"mirrored"`` mirrors the model over all GPUs; without GPUs it first splits the CPU
    into `mirrored_cpus` logical devices (which is only possible before TensorFlow has
    initialised its devices, i.e. before the first op runs: call this at the start of
    the program, as the recipes' `train` does).

    ``"multi_worker"`` is `tf.distribute.MultiWorkerMirroredStrategy`: synchronous
    data-parallel training over several machines (one process per machine, each on all
    its GPUs or its CPU), configured as TensorFlow documents by the ``TF_CONFIG``
    environment variable of each process, e.g. ``{"cluster": {"worker": ["host1:12345",
    "host2:12345"]}, "task": {"type": "worker", "index": 0}}``. Every worker runs the
    same command; ``batch_size`` is the global batch, split over all replicas. Worker 0
    (the chief) writes the run to `output_dir`, the others to
    ``output_dir/workers/<index>`` (see `worker_output_dir`).

    Raises:
        ValueError: an unknown name, a missing or malformed ``TF_CONFIG`` (one line).
        RuntimeError: TensorFlow has initialised its devices already (one line: start a
            fresh process).
    """
    import tensorflow as tf

    if name == "default":
        return tf.distribute.get_strategy()
    if name == "multi_worker":
        return _multi_worker_strategy()
    if name != "mirrored":
        raise ValueError(f"`strategy` must be one of {list(STRATEGIES)}, got {name!r}.")
    if tf.config.list_physical_devices("GPU"):
        return _mirrored(None)
    cpu = tf.config.list_physical_devices("CPU")[0]
    wanted = [tf.config.LogicalDeviceConfiguration()] * int(mirrored_cpus)
    current = tf.config.get_logical_device_configuration(cpu)
    if mirrored_cpus > 1 and (current is None or len(current) != mirrored_cpus):
        try:
            tf.config.set_logical_device_configuration(cpu, wanted)
        except RuntimeError:
            raise RuntimeError(
                "the mirrored strategy on CPU needs to split the CPU into "
                f"{mirrored_cpus} logical devices, but TensorFlow has already "
                "initialised its devices in this process; start a fresh process (e.g. "
                "the command line) or call distribution_strategy() first."
            ) from None
    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    return _mirrored(tuple(devices))


_MULTI_WORKER = None
# One MirroredStrategy per set of devices and process: a second one numbers its
# collective all-reduces from the first one's keys again, and a second run's fit then
# meets the first run's shapes ("Shape mismatch in the collective instance").
_MIRRORED: dict = {}


def _mirrored(devices):
    import tensorflow as tf

    if devices not in _MIRRORED:
        _MIRRORED[devices] = tf.distribute.MirroredStrategy(
            None if devices is None else list(devices)
        )
    return _MIRRORED[devices]


def _multi_worker_strategy():
    import tensorflow as tf

    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise ValueError(
            "the multi_worker strategy needs the TF_CONFIG environment variable (the "
            "cluster's workers and this process' task), e.g. TF_CONFIG='{\"cluster\": "
            '{"worker": ["host1:12345", "host2:12345"]}, "task": {"type": '
            '"worker", "index": 0}}\'.'
        )
    try:
        tf_config = json.loads(raw)
        workers = tf_config["cluster"]["worker"]
        task = tf_config["task"]
        index = int(task["index"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"TF_CONFIG is not a valid cluster spec ({error}): need "
            '{"cluster": {"worker": [...]}, "task": {"type": "worker", "index": i}}, '
            f"got {raw!r}."
        ) from None
    if task.get("type") not in ("worker", "chief") or not 0 <= index < len(workers):
        raise ValueError(f"TF_CONFIG task {task} does not name one of the {len(workers)} workers.")
    global _MULTI_WORKER
    if _MULTI_WORKER is not None:  # one per process: TensorFlow's collectives are global
        return _MULTI_WORKER
    try:
        strategy = _MULTI_WORKER = tf.distribute.MultiWorkerMirroredStrategy()
    except RuntimeError as error:  # devices initialised already, as for "mirrored"
        raise RuntimeError(f"the multi_worker strategy: {error}; start a fresh process.") from None
    patch_keras_multi_worker_fit()
    return strategy


def worker_output_dir(output_dir, strategy):
    """Where this process of a run writes: `output_dir` on the chief (and for the other
    strategies); ``<output_dir>/workers/<task index>`` on the other workers of a
    multi-worker run, so that workers sharing a file system never write the same
    checkpoint (every worker saves, as TensorFlow requires)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not in_multi_worker_mode(strategy):
        return output_dir
    if resolver.task_type == "chief" or (
        resolver.task_type == "worker"
        and resolver.task_id == 0
        and "chief" not in resolver.cluster_spec().jobs
    ):
        return output_dir
    return os.path.join(output_dir, "workers", str(resolver.task_id))
