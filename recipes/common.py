"""Plumbing shared by the recipes (classifier, tagger, language model, translator).

Every recipe is a `Recipe` (the skeleton): it declares its options once, as a table of
`Option` (default, help, allowed values), and fills in a few hooks; the skeleton gives
it the same flow and command line as every other recipe:

* **configuration** -- `load_config(options, path, overrides)`: defaults <- a YAML or
  JSON file <- command-line flags, each key checked against the table (an unknown key
  is an error that lists the valid ones), converted to the default's type and checked
  against its allowed values;
* **a command line** -- `Recipe.main`: ``python -m recipes.X {train,evaluate,predict,
  export,...}`` with ``--config FILE``, one ``--some-key VALUE`` flag per option (its
  help text from the table), ``--version``, ``train --continue``; the command's result
  is JSON on stdout, logs and progress on stderr (`main`);
* **the training flow** -- `Recipe.train`: strategy, seed, data, vocabularies, model,
  `fit`, evaluation, ``results.json`` and ``training_curves.png``;
* **distribution** -- `distribution_strategy(name)`: the default strategy,
  ``mirrored`` (`tf.distribute.MirroredStrategy`; on a machine without GPUs the CPU is
  split into logical devices so the replicas are real) or ``multi_worker``
  (`tf.distribute.MultiWorkerMirroredStrategy`, one process per machine, configured by
  ``TF_CONFIG``; `for_worker` gives the non-chief workers their own output folder);
* **model parts** -- `make_cell` (a kerasrnn cell by name) and `rnn_stack` (stacked,
  optionally bidirectional `keras.layers.RNN` layers);
* **training** -- `optimizer` (Adam + `clipnorm`), `training_callbacks`: best-model
  `ModelCheckpoint`, a last-epoch checkpoint with the optimizer state (what
  ``--continue`` resumes from), `EarlyStopping`, `BackupAndRestore` (re-running a killed
  command resumes it), optional `TensorBoard`; `fit` runs `model.fit` with them and
  returns the history of every epoch; `load_best_model` reloads the best checkpoint;
* **evaluation** -- `per_class_scores` (precision/recall/F1), `check_labels` (labels of a
  test set that training never saw are an error);
* **results and stored runs** -- `write_json` / `read_json` (numbers rounded by
  `tidy`), `saved_config` (the config a run was trained with, for evaluate/predict/
  export), `plot_training_curves`.

A new recipe: subclass `Recipe`, set `name`, `options` (``data_options(...)`` or
``dict(COMMON_OPTIONS, ...)``), `predictor` (a class with ``from_run(config)``,
``evaluate(...)``, ``export(path)``) and write the hooks `load_examples`, `prepare` and
`build`; `Recipe.main` is then its whole command line (see recipes/classifier.py).
"""
import argparse
import contextlib
import json
import math
import os
import sys
from typing import Any, NamedTuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402


class Option(NamedTuple):
    """One option of a recipe: its default, what it does, and (when the option takes one
    of a few values) the allowed values. The command line's ``--help``, the checks of
    `load_config` and the options reference in docs/cli.md all read it."""

    default: Any
    help: str
    choices: tuple = None


STRATEGIES = ("default", "mirrored", "multi_worker")

COMMON_OPTIONS = {
    "output_dir": Option("runs/model", "folder of the run: config, vocabularies, "
                         "checkpoints, results.json, training_curves.png, backups"),
    "seed": Option(1234, "random seed of weights, shuffling, dropout and held-out splits"),
    "batch_size": Option(32, "examples per training batch (the global batch, over all "
                         "replicas)"),
    "epochs": Option(10, "epochs to train at most (with --continue: the new total)"),
    "learning_rate": Option(1e-3, "the optimizer's learning rate"),
    "clipnorm": Option(5.0, "clip each gradient to this norm; 0 disables clipping"),
    "patience": Option(3, "early stopping: epochs without improvement of the validation "
                       "metric before training stops (the best weights are kept); 0 "
                       "disables it"),
    "tensorboard": Option(False, "write TensorBoard logs to <output_dir>/logs"),
    "strategy": Option("default", "tf.distribute strategy: default (one device), "
                       "mirrored (all GPUs; without GPUs, `mirrored_cpus` CPU replicas) "
                       "or multi_worker (MultiWorkerMirroredStrategy over the workers of "
                       "the TF_CONFIG environment variable; see docs/distributed.md)",
                       STRATEGIES),
    "mirrored_cpus": Option(2, "logical CPU devices for `strategy: mirrored` on a machine "
                            "without GPUs"),
    "verbose": Option(1, "Keras progress output on stderr: 0 silent, 1 progress bar, 2 "
                      "one line per epoch", (0, 1, 2)),
}


def data_options(output_dir, train, holdouts=(), **more):
    """A recipe's options table: `COMMON_OPTIONS`, `output_dir` (its default folder),
    the `train` / `valid` / `test` data specs (`train`: what a training data spec may
    be; valid and test take the same forms, and the splits in `holdouts` are held out
    of the training data when not given), the local files' `encoding`, the
    `tfds_data_dir`, then the recipe's own options (`more`)."""
    def other(split, name):
        absent = f"hold out `{split}_fraction` of `train`" if split in holdouts else "none"
        return Option(None, f"{name} data, in the forms of `train`; null: {absent}")

    return {
        **COMMON_OPTIONS,
        "output_dir": Option(output_dir, COMMON_OPTIONS["output_dir"].help),
        "train": Option(None, f"training data: {train}; any file may be a "
                        "corpus:NAME/FILE of kerasrnn.datasets (fetched on first use)"),
        "valid": other("valid", "validation"),
        "test": other("test", "test"),
        "encoding": Option("utf-8", "text encoding of local files"),
        "tfds_data_dir": Option(None, "tensorflow-datasets data folder; null: its default"),
        **more,
    }


class Defaults(dict):
    """``{name: default}`` of an options table, which remembers the table (`options`),
    so that `load_config` given the defaults still checks the allowed values."""

    def __init__(self, options):
        super().__init__((k, v.default if isinstance(v, Option) else v)
                         for k, v in options.items())
        self.options = options


def defaults_of(options):
    """``{name: default}`` of an options table (plain values pass through): a
    `Defaults`."""
    return Defaults(options)


COMMON_DEFAULTS = defaults_of(COMMON_OPTIONS)


class ConfigError(ValueError):
    """An invalid configuration: unknown key, wrong type or bad value."""


class RecipeError(ValueError):
    """Data that cannot be used as configured (e.g. test labels unseen in training)."""


# --------------------------------------------------------------------------- config


def _read_config_file(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"config file not found: {path}")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        if path.endswith(".json"):
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as error:
        raise ConfigError(f"{path}: cannot parse the config file: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file must hold a mapping of options.")
    return data


def _convert(key, value, default):
    """Checks `value` against the type of `default` (str values from the command line
    are parsed as YAML scalars/collections)."""
    if isinstance(value, str) and not isinstance(default, str):
        import yaml

        try:
            value = yaml.safe_load(value)
        except Exception:
            raise ConfigError(f"option {key!r}: cannot parse {value!r}.") from None
    if default is None or value is None:
        return value
    kind = type(default)
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"option {key!r} must be true or false, got {value!r}.")
        return value
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if kind is list and isinstance(value, tuple):
        return list(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(
            f"option {key!r} must be of type {kind.__name__} (like its default "
            f"{default!r}), got {value!r}."
        )
    return value


def _check_choice(key, value, option):
    if isinstance(option, Option) and option.choices is not None and value not in option.choices:
        raise ConfigError(
            f"`{key}` must be one of {list(option.choices)}, got {value!r}."
        )
    return value


def load_config(defaults, path=None, overrides=None):
    """Defaults <- config file (YAML or JSON) <- overrides (e.g. command-line flags).

    Args:
        defaults: the recipe's options: a table of `Option` (or a plain dict of default
            values). Every key of the file and of `overrides` must be one of them;
            values must have the default's type (an int is accepted for a float; a
            default of None accepts anything) and be one of the option's `choices`.
        path: a ``.json`` file, or YAML for any other extension; None for none.
        overrides: a dict of options that win over the file.

    Returns:
        A new dict with every key of `defaults`.

    Raises:
        ConfigError: an unknown key (the message lists the valid ones), a bad type or a
            value outside the allowed ones (the message lists them).
    """
    defaults = getattr(defaults, "options", defaults)
    plain = dict(defaults_of(defaults))
    config = dict(plain)
    for source, values in (
        (path, _read_config_file(path) if path else {}),
        ("command line", overrides or {}),
    ):
        unknown = sorted(set(values) - set(plain))
        if unknown:
            raise ConfigError(
                f"unknown config key(s) {unknown} in {source}; valid keys: "
                f"{sorted(plain)}."
            )
        for key, value in values.items():
            config[key] = _check_choice(key, _convert(key, value, plain[key]), defaults[key])
    for key, value in config.items():  # defaults are checked too (a subclass's table)
        _check_choice(key, value, defaults[key])
    return config


def tidy(value, digits=8):
    """`value` (nested dicts, lists, numbers, numpy scalars) with every float rounded
    to `digits` significant digits, for results people read: BLEU 100.00000000000004
    is shown as 100.0. Non-finite floats become None (JSON has no NaN)."""
    if hasattr(value, "tolist") and not isinstance(value, (list, dict, str)):
        value = value.tolist()  # numpy scalars and arrays
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {k: tidy(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [tidy(v, digits) for v in value]
    return value


def write_json(path, data):
    """Writes `data` as indented JSON (creating the folder; numbers through `tidy`),
    atomically (`atomic_path`): a reader, or a re-run after a kill, sees the old file or
    the new one, never half of one."""
    path = os.fspath(path)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with atomic_path(path) as partial:
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(tidy(data), f, indent=2, ensure_ascii=False, default=_jsonable)
            f.write("\n")


def _jsonable(value):
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


# ------------------------------------------------------------------- atomic writes
# A run killed at any moment (SIGKILL, a pre-empted machine) must leave every file it had
# written loadable: each is written under a temporary name in the same folder and renamed
# over the old one (os.replace is atomic on POSIX and Windows). tests/recipes/test_crash.py
# kills training inside these writes.


def _partial_name(path):
    """`path` with ``.partial`` before its Keras suffix (Keras picks the format by
    suffix: ``best.keras`` -> ``best.partial.keras``, ``x.weights.h5`` ->
    ``x.partial.weights.h5``)."""
    path = os.fspath(path)
    folder, name = os.path.split(path)
    for suffix in (".weights.h5", ".keras", ".json", ".h5", ".png"):
        if name.endswith(suffix):
            return os.path.join(folder, name[: -len(suffix)] + ".partial" + suffix)
    return path + ".partial"


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path`; when the block finishes, the file written
    there replaces `path` in one step (on an error it is removed, `path` untouched)."""
    partial = _partial_name(path)
    if os.path.exists(partial):  # left by a killed process: never let it through
        os.remove(partial)
    try:
        yield partial
        if os.path.exists(partial):
            os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def save_model(model, path):
    """`model.save(path)` (a ``.keras`` file), atomically."""
    with atomic_path(path) as partial:
        model.save(partial)


class AtomicModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """`keras.callbacks.ModelCheckpoint` (same arguments) that never leaves a
    half-written file: Keras writes to the path in place, so the file is written under
    a temporary name (by pointing the public `filepath` there) and renamed after the
    save. Both checkpoints of `training_callbacks` (``best.keras`` and
    ``last.weights.h5``) are these."""

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
        stale = _partial_name(self.filepath)
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
    """`keras.callbacks.BackupAndRestore` (same arguments) whose backup (weights +
    optimizer state, and the epoch reached) is replaced atomically. Keras overwrites
    ``latest.weights.h5`` and ``training_metadata.json`` in place, so a kill during the
    write leaves a file the re-run cannot load. The two private paths are the only
    Keras internals used (no public API names them); the weights are renamed into
    place first, so a kill between the two renames resumes one epoch early with the
    newer weights, never with unreadable ones."""

    def _save_model(self):
        os.makedirs(self.backup_dir, exist_ok=True)
        with atomic_path(self._weights_path) as weights:
            self.model.save_weights(weights, overwrite=True)
        write_json(self._training_metadata_path,
                   {"epoch": self._current_epoch, "batch": self._last_batch_seen})


def read_json(path):
    if not os.path.exists(path):
        raise FileNotFoundError(f"not found: {path} (did `train` run with this output_dir?)")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def saved_config(defaults, output_dir, overrides=None):
    """The config a `train` run stored in `output_dir`, with `overrides` on top (used by
    evaluate / predict / export, which must rebuild exactly the trained pipeline)."""
    stored = read_json(os.path.join(output_dir, "config.json"))
    stored.update(overrides or {})
    stored["output_dir"] = output_dir
    return load_config(defaults, overrides=stored)


# ---------------------------------------------------------------------- distribution


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
    ``output_dir/workers/<index>`` (see `for_worker`).
    """
    import tensorflow as tf

    if name == "default":
        return tf.distribute.get_strategy()
    if name == "multi_worker":
        return _multi_worker_strategy()
    if name != "mirrored":
        raise ConfigError(f"`strategy` must be one of {list(STRATEGIES)}, got {name!r}.")
    if tf.config.list_physical_devices("GPU"):
        return tf.distribute.MirroredStrategy()
    cpu = tf.config.list_physical_devices("CPU")[0]
    wanted = [tf.config.LogicalDeviceConfiguration()] * int(mirrored_cpus)
    current = tf.config.get_logical_device_configuration(cpu)
    if mirrored_cpus > 1 and (current is None or len(current) != mirrored_cpus):
        try:
            tf.config.set_logical_device_configuration(cpu, wanted)
        except RuntimeError:
            raise RecipeError(
                "--strategy mirrored on CPU needs to split the CPU into "
                f"{mirrored_cpus} logical devices, but TensorFlow has already "
                "initialised its devices in this process; start a fresh process (e.g. "
                "the command line) or call distribution_strategy() first."
            ) from None
    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices)


_MULTI_WORKER = None


def _multi_worker_strategy():
    import tensorflow as tf

    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise ConfigError(
            "--strategy multi_worker needs the TF_CONFIG environment variable (the "
            "cluster's workers and this process' task), e.g. TF_CONFIG='{\"cluster\": "
            "{\"worker\": [\"host1:12345\", \"host2:12345\"]}, \"task\": {\"type\": "
            "\"worker\", \"index\": 0}}'."
        )
    try:
        tf_config = json.loads(raw)
        workers = tf_config["cluster"]["worker"]
        task = tf_config["task"]
        index = int(task["index"])
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigError(
            f"TF_CONFIG is not a valid cluster spec ({error}): need "
            '{"cluster": {"worker": [...]}, "task": {"type": "worker", "index": i}}, '
            f"got {raw!r}."
        ) from None
    if task.get("type") not in ("worker", "chief") or not 0 <= index < len(workers):
        raise ConfigError(
            f"TF_CONFIG task {task} does not name one of the {len(workers)} workers."
        )
    global _MULTI_WORKER
    if _MULTI_WORKER is not None:  # one per process: TensorFlow's collectives are global
        return _MULTI_WORKER
    try:
        strategy = _MULTI_WORKER = tf.distribute.MultiWorkerMirroredStrategy()
    except RuntimeError as error:  # devices initialised already, as for "mirrored"
        raise RecipeError(f"--strategy multi_worker: {error}; start a fresh process.") from None
    _fix_keras_multi_worker_fit()
    return strategy


def _fix_keras_multi_worker_fit():
    """Makes Keras 3's `model.fit` work under `MultiWorkerMirroredStrategy`.

    Keras 3 (up to at least 3.15; keras-team/keras#20585) fails there twice: building the
    model from the first batch reduces the per-replica batch with
    ``strategy.reduce("MEAN", batch, axis=None)``, and the per-step logs (scalars) are
    reduced with ``axis=0``; both raise with more than one worker. This replaces the two
    Keras internals, only for the multi-worker case: the first batch is taken from the
    local replica (only its shapes matter), and scalar logs are averaged over replicas
    with ``axis=None``. The only keras.src use of the recipes; no public API exists.
    Remove it when Keras' own multi-worker test passes."""
    import tensorflow as tf
    from keras.src.backend.tensorflow import trainer as tf_trainer

    if getattr(tf_trainer, "_kerasrnn_multi_worker_fix", False):
        return
    multi_worker = tf_trainer._collective_all_reduce_multi_worker
    reduce_per_replica = tf_trainer.reduce_per_replica

    def reduce_logs(values, strategy, reduction):
        if reduction in ("auto", "mean") and multi_worker(strategy):
            return tf.nest.map_structure(
                lambda v: strategy.reduce("MEAN", v, axis=None)
                if isinstance(v, tf.distribute.DistributedValues) else v,
                values,
            )
        return reduce_per_replica(values, strategy, reduction)

    symbolic_build = tf_trainer.TensorFlowTrainer._maybe_symbolic_build

    def build_from_local_batch(self, iterator=None, data_batch=None):
        strategy = self._distribute_strategy
        if iterator is None or strategy is None or not multi_worker(strategy):
            return symbolic_build(self, iterator, data_batch)
        for _, _, batches in iterator:
            data_batch = tf.nest.map_structure(
                lambda v: strategy.experimental_local_results(v)[0], next(batches)
            )
            break
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    tf_trainer.reduce_per_replica = reduce_logs
    tf_trainer.TensorFlowTrainer._maybe_symbolic_build = build_from_local_batch
    tf_trainer._kerasrnn_multi_worker_fix = True


def for_worker(config, strategy):
    """`config` for this process of a multi-worker run: unchanged on the chief (and for
    the other strategies); on the other workers `output_dir` becomes
    ``<output_dir>/workers/<task index>``, so that workers sharing a file system never
    write the same checkpoint (every worker saves, as TensorFlow requires)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not getattr(strategy.extended, "_in_multi_worker_mode", lambda: False)():
        return config
    if resolver.task_type == "chief" or (resolver.task_type == "worker" and resolver.task_id == 0
                                         and "chief" not in resolver.cluster_spec().jobs):
        return config
    folder = os.path.join(config["output_dir"], "workers", str(resolver.task_id))
    return {**config, "output_dir": folder}


# ----------------------------------------------------------------------- model parts

CELLS = {
    "lstm": "LSTMCell",
    "gru": "GRUCell",
    "simple": "SimpleRNNCell",
    "layer_norm_lstm": "LayerNormLSTMCell",
    "layer_norm_simple": "LayerNormSimpleRNNCell",
}


def cell_options(default):
    """The `cell` (with `default`) and `cell_options` options of a recipe."""
    return {
        "cell": Option(default, "the recurrent cell: lstm, gru, simple (Elman), or the "
                       "layer-normalised LSTM / Elman cell", tuple(CELLS)),
        "cell_options": Option({}, "extra arguments of the cell's constructor, e.g. "
                               "{recurrent_dropout: 0.1} or {peephole: true}"),
    }


def make_cell(name, units, **options):
    """A kerasrnn cell by its config name (``lstm``, ``gru``, ``simple``,
    ``layer_norm_lstm``, ``layer_norm_simple``); `options` go to the cell's constructor
    (e.g. ``peephole=True``, ``reset_after=False``, ``recurrent_dropout=0.1``)."""
    import kerasrnn

    if name not in CELLS:
        raise ConfigError(f"`cell` must be one of {sorted(CELLS)}, got {name!r}.")
    try:
        return getattr(kerasrnn, CELLS[name])(units, **options)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"`cell_options` {options} do not fit {CELLS[name]}: {error}") from None


def rnn_stack(x, cell, units, num_layers=1, bidirectional=True, dropout=0.0,
              cell_options=None, return_sequences=True, name="rnn"):
    """Applies `num_layers` recurrent layers of kerasrnn cells to `x` (batch, time, d).

    Each layer is ``kerasrnn.RNN(cell)`` (`keras.layers.RNN` that projects the whole
    input sequence before the time loop), wrapped in ``Bidirectional`` (outputs
    concatenated) when `bidirectional`; `dropout` is applied between layers. The Keras
    mask of `x` flows through, so padded steps never change a state. With
    ``return_sequences=False`` the last layer returns its final state: for a
    bidirectional layer that is [h_fwd_T ; h_bwd_1], the two states that have seen the
    whole (unpadded) sequence.
    """
    import keras

    import kerasrnn

    if num_layers < 1:
        raise ConfigError(f"`num_layers` must be >= 1, got {num_layers}.")
    for i in range(num_layers):
        last = i == num_layers - 1
        layer = kerasrnn.RNN(
            make_cell(cell, units, **(cell_options or {})),
            return_sequences=return_sequences or not last,
            name=f"{name}_{i}",
        )
        if bidirectional:
            layer = keras.layers.Bidirectional(layer, name=f"bi{name}_{i}")
        x = layer(x)
        if dropout and not last:
            x = keras.layers.Dropout(dropout, name=f"{name}_dropout_{i}")(x)
    return x


def optimizer(config):
    """Adam with the configured learning rate and gradient-norm clipping."""
    import keras

    clipnorm = config["clipnorm"] or None
    return keras.optimizers.Adam(config["learning_rate"], clipnorm=clipnorm)


# -------------------------------------------------------------------------- training


def run_files(config):
    """The files of a run folder that the training flow writes."""
    out = config["output_dir"]
    return {
        "config": os.path.join(out, "config.json"),
        "best": os.path.join(out, "best.keras"),
        # The last finished epoch, weights and optimizer state (`model.save_weights`
        # holds both): BackupAndRestore deletes its backup when a run completes, so
        # this is what `train --continue` resumes from.
        "last": os.path.join(out, "last.weights.h5"),
        "history": os.path.join(out, "history.json"),
        "results": os.path.join(out, "results.json"),
        "curves": os.path.join(out, "training_curves.png"),
        "backup": os.path.join(out, "backup"),
        "epochs": os.path.join(out, "backup", "epochs.json"),
    }


class EpochLog(keras.callbacks.Callback):
    """Keeps every epoch's logs as rows ``{"epoch": n, **logs}``, written after each
    epoch to `path` (``backup/epochs.json``, atomically), so that a run resumed by
    `BackupAndRestore` still knows the epochs before the interruption; an epoch run
    again replaces its row. `rows`: those of the earlier epochs."""

    def __init__(self, path, rows=()):
        super().__init__()
        self.path, self.rows = path, [dict(r) for r in rows]

    def on_epoch_end(self, epoch, logs=None):
        row = {"epoch": epoch + 1}
        row.update({k: _number(v) for k, v in (logs or {}).items()})
        self.rows = [r for r in self.rows if r["epoch"] < row["epoch"]] + [row]
        write_json(self.path, {"rows": self.rows})


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def training_callbacks(config, monitor="val_loss", mode="min", extra=(), best=None,
                       rows=(), before=(), save_best=True):
    """The standard callbacks, writing under ``config["output_dir"]``, in this order:

    * `before` (callbacks that put the monitored value into the logs);
    * ``ModelCheckpoint`` -> ``best.keras``, the model with the best `monitor` value
      (`best`: the best value of earlier epochs, after a resume or a continue);
    * ``ModelCheckpoint`` -> ``last.weights.h5``: the last epoch's weights and
      optimizer state, for ``train --continue``;
    * ``EarlyStopping`` on `monitor` (``patience`` epochs; restores the best weights);
    * `EpochLog` -> ``backup/epochs.json`` (`rows`: the earlier epochs);
    * ``BackupAndRestore`` -> ``backup/``: a run that is killed resumes, when re-run
      with the same command, from the last finished epoch (the backup is deleted when
      training completes);
    * ``TerminateOnNaN``; ``TensorBoard`` -> ``logs/`` when ``config["tensorboard"]``;
    * `extra`.

    With ``save_best=False`` there is no ``best.keras`` checkpoint (a recipe that
    saves its best model itself).
    """
    import keras

    files = run_files(config)
    callbacks = list(before)
    if save_best:
        callbacks.append(AtomicModelCheckpoint(
            files["best"], monitor=monitor, mode=mode, save_best_only=True,
            initial_value_threshold=best,
        ))
    callbacks.append(AtomicModelCheckpoint(files["last"], save_weights_only=True))
    if config["patience"]:
        callbacks.append(keras.callbacks.EarlyStopping(
            monitor=monitor, mode=mode, patience=config["patience"],
            restore_best_weights=True,
        ))
    callbacks += [
        EpochLog(files["epochs"], rows),
        AtomicBackupAndRestore(files["backup"]),
        keras.callbacks.TerminateOnNaN(),
    ]
    if config["tensorboard"]:
        callbacks.append(keras.callbacks.TensorBoard(os.path.join(config["output_dir"], "logs")))
    return callbacks + list(extra)


def earlier_epochs(config, continue_run=False):
    """The epoch rows a `fit` starts from: those of an interrupted run (its backup), of
    the finished run that `continue_run` extends, or none."""
    files = run_files(config)
    if os.path.exists(files["epochs"]) and os.path.exists(files["backup"]):
        return read_json(files["epochs"])["rows"]
    if continue_run:
        return read_json(files["history"])["rows"]
    return []


def restore_last_epoch(model, config):
    """Loads the last finished epoch's weights and optimizer state into `model` (built
    and compiled as the run was), for ``train --continue``."""
    path = run_files(config)["last"]
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no last-epoch checkpoint at {path}: `--continue` extends a run trained "
            "by this version; train it again without --continue."
        )
    model.optimizer.build(model.trainable_variables)
    model.load_weights(path)


def fit(model, config, train_data, valid_data, monitor="val_loss", mode="min",
        callbacks=(), continue_run=False, before=(), save_best=True, metric=None):
    """`model.fit` with the standard callbacks (`training_callbacks`).

    `train_data` is a `tf.data.Dataset` or an ``(x, y)`` pair of arrays (batched by
    ``config["batch_size"]``, not shuffled). With `continue_run` training starts after
    the run's last finished epoch (the model must hold its state: `restore_last_epoch`)
    and goes on to ``config["epochs"]``. Writes ``history.json`` (the rows of every
    epoch) and ``training_curves.png`` (`plot_training_curves`, loss and `metric`).

    Returns the history of every epoch of the run as a dict of lists, plus
    ``epochs_run`` (the epochs this call trained: fewer than ``epochs`` after a resume,
    a continue or an early stop) and ``first_epoch`` (the first of them, 1-based).
    """
    files = run_files(config)
    rows = earlier_epochs(config, continue_run)
    initial_epoch = 0
    if continue_run:
        initial_epoch = max((r["epoch"] for r in rows), default=0)
        if config["epochs"] <= initial_epoch:
            raise ConfigError(
                f"the run in {config['output_dir']} has trained {initial_epoch} epoch(s); "
                f"--continue needs `epochs` above that, got {config['epochs']}."
            )
    scores = [r[monitor] for r in rows if isinstance(r.get(monitor), float)]
    best = (min if mode == "min" else max)(scores) if scores else None
    all_callbacks = training_callbacks(config, monitor, mode, callbacks, best, rows,
                                       before, save_best)
    log = next(c for c in all_callbacks if isinstance(c, EpochLog))
    if isinstance(train_data, tuple):
        x, y = train_data
        data = dict(x=x, y=y, batch_size=config["batch_size"])
    else:
        data = dict(x=train_data)
    history = model.fit(
        **data,
        validation_data=valid_data,
        epochs=config["epochs"],
        initial_epoch=initial_epoch,
        shuffle=False,  # the tf.data pipeline shuffles (Keras can't shuffle a Dataset)
        callbacks=all_callbacks,
        verbose=config["verbose"],
    )
    write_json(files["history"], {"rows": log.rows})
    result = {}
    for row in log.rows:
        for key in row:
            if key != "epoch":
                result.setdefault(key, [])
    for key in result:
        result[key] = [row.get(key) for row in log.rows]
    result["epochs_run"] = len(history.epoch)
    result["first_epoch"] = history.epoch[0] + 1 if history.epoch else None
    plot_training_curves(log.rows, files["curves"], metric or _metric_of(monitor))
    return result


def _metric_of(monitor):
    for prefix in ("val_", "valid_"):
        monitor = monitor.removeprefix(prefix)
    return monitor


def plot_training_curves(rows, path, metric="accuracy"):
    """Writes a PNG of the per-epoch curves of a run (matplotlib, Agg): the loss and
    `metric`, each on the training data and (when logged) the validation data
    (``val_<name>`` or ``valid_<name>``), against the epoch. `rows`: one dict of logs
    per epoch, with its ``epoch``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["loss"] + ([metric] if metric and metric != "loss" else [])
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.6), squeeze=False)
    epochs = [r["epoch"] for r in rows]
    for ax, name in zip(axes[0], names):
        for key, label in ((name, "training"), (f"val_{name}", "validation"),
                           (f"valid_{name}", "validation")):
            values = [r.get(key) for r in rows]
            if any(isinstance(v, float) and math.isfinite(v) for v in values):
                ax.plot(epochs, [v if isinstance(v, float) else float("nan") for v in values],
                        marker="o", label=label)
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


def load_vocabulary(config, filename):
    """A vocabulary file that `train` saved in the run folder."""
    from kerasrnn.data import Vocabulary

    return Vocabulary.load(os.path.join(config["output_dir"], filename))


def load_best_model(config, former=()):
    """The best checkpoint of a run (custom kerasrnn layers are registered). A file that
    does not load and was saved from a model class in `former` (a recipe's earlier
    layout) is a `RecipeError` that says to retrain."""
    path = run_files(config)["best"]
    if not os.path.exists(path):
        raise FileNotFoundError(f"no trained model at {path}; run `train` first.")
    try:
        return keras.saving.load_model(path)
    except Exception:
        import zipfile

        try:
            with zipfile.ZipFile(path) as archive:
                saved = json.loads(archive.read("config.json")).get("class_name")
        except Exception:
            saved = None
        if saved not in former:
            raise
    raise RecipeError(
        f"{path} was saved by an earlier version of this recipe (a {saved}) and cannot "
        f"be loaded by this one: retrain it with the same options, e.g. `train --config "
        f"{run_files(config)['config']} --output-dir NEW_FOLDER`."
    )


def set_seed(seed):
    import keras

    keras.utils.set_random_seed(int(seed))


# ------------------------------------------------------------------------------ data


def load_splits(config, load_examples, holdouts=()):
    """The train / valid / test examples the config describes (None where absent).

    ``load_examples(config, spec, split)`` reads one data spec. A split in `holdouts`
    ("test", "valid") without its own data is held out of the training data when its
    ``<split>_fraction`` option is set (seeded by ``seed`` + 1 for test, + 2 for valid).
    """
    from kerasrnn.data.specs import holdout

    if config["train"] is None:
        raise ConfigError("`train` is required: the training data (see --help).")
    splits = {"train": load_examples(config, config["train"], "train")}
    for name, seed_offset in (("test", 1), ("valid", 2)):
        fraction = config.get(f"{name}_fraction") if name in holdouts else None
        if config[name]:
            splits[name] = load_examples(config, config[name], name)
        elif fraction:
            try:
                splits["train"], splits[name] = holdout(
                    *splits["train"], fraction, config["seed"] + seed_offset,
                    option=f"{name}_fraction")
            except ValueError as error:
                raise ConfigError(str(error)) from None
        else:
            splits[name] = None
    return splits


# ------------------------------------------------------------------------------ CLI


def _flag(key):
    return "--" + key.replace("_", "-")


def version():
    """The installed kerasrnn version (the source tree's when not installed)."""
    try:
        from importlib.metadata import version as installed

        return installed("kerasrnn")
    except Exception:
        import kerasrnn

        return kerasrnn.__version__


def option_help(option):
    """The help text of an option: what it does, the allowed values, the default."""
    text = option.help.rstrip(".")
    if option.choices is not None:
        text += "; one of " + ", ".join(_shown(c) for c in option.choices)
    return f"{text} (default: {_shown(option.default)})"


def _shown(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def _choice_type(key, option):
    """An argparse `type` that converts a flag's text as `load_config` does and rejects
    a value outside `option.choices` at parse time, naming the allowed ones."""

    def convert(text):
        try:
            value = _convert(key, text, option.default)
            return _check_choice(key, value, option)
        except ConfigError:
            raise argparse.ArgumentTypeError(
                f"invalid choice {text!r} (choose from "
                f"{', '.join(_shown(c) for c in option.choices)})"
            ) from None

    return convert


def build_parser(prog, description, options, commands):
    """An argparse parser with ``--version`` and one subcommand per entry of `commands`
    (name -> (help, add_arguments function or None)); each takes ``--config FILE`` and a
    flag per option of `options` (``--batch-size 64``; lists and dicts as YAML/JSON
    text), whose help says what it does, the allowed values and the default."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description,
        epilog="Each command prints its result as JSON on stdout; logs and progress go "
               "to stderr. Errors are one line on stderr, exit status 2.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, add_arguments) in commands.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--config", help="YAML or JSON file of options")
        if add_arguments:
            add_arguments(p)
        group = p.add_argument_group("options (override the config file)")
        for key, option in options.items():
            option = option if isinstance(option, Option) else Option(option, "")
            default = option.default
            extra = {}
            if option.choices is not None:
                extra["type"] = _choice_type(key, option)
            group.add_argument(
                _flag(key), dest=f"opt_{key}", default=argparse.SUPPRESS,
                metavar=type(default).__name__.upper() if default is not None else "VALUE",
                help=option_help(option).replace("%", "%%"), **extra,
            )
    return parser


@contextlib.contextmanager
def _stdout_to_stderr():
    """Everything printed while a command runs (Keras' progress bars, logs) goes to
    stderr, so that stdout holds only the command's JSON result. At the file-descriptor
    level too when stdout is the process' own (native code writes there)."""
    sys.stdout.flush()
    saved = None
    if sys.stdout is sys.__stdout__:
        try:
            saved = os.dup(1)
            os.dup2(2, 1)
        except (OSError, AttributeError, ValueError):
            saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved is not None:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def main(argv, prog, description, options, commands):
    """Runs a recipe's command line. `commands` maps a subcommand to ``(help,
    add_arguments, run)``; ``run(config, args)`` returns a JSON-able result, which is
    printed on stdout, numbers rounded by `tidy` (``args.overrides`` holds the options
    given on the command line). Everything else the command prints goes to stderr.
    Configuration and data errors exit with a one-line message (status 2)."""
    parser = build_parser(
        prog, description, options, {k: v[:2] for k, v in commands.items()}
    )
    args = parser.parse_args(argv)
    overrides = {k[4:]: v for k, v in vars(args).items() if k.startswith("opt_")}
    args.overrides = overrides
    from kerasrnn.data.download import CorpusError
    from kerasrnn.data.loaders import DataFormatError, DatasetUnavailableError

    stdout = sys.stdout
    try:
        with _stdout_to_stderr():
            config = load_config(options, args.config, overrides)
            result = commands[args.command][2](config, args)
    except (ConfigError, RecipeError, DataFormatError, DatasetUnavailableError, CorpusError,
            FileNotFoundError, IsADirectoryError) as error:
        print(f"{prog} {args.command}: error: {error}", file=sys.stderr)
        return 2
    if result is not None:
        print(json.dumps(tidy(result), indent=2, ensure_ascii=False, default=_jsonable),
              file=stdout, flush=True)
    return 0


def options_markdown(recipe):
    """The options reference of a recipe as a Markdown table (docs/cli.md holds it)."""
    lines = [f"### `python -m recipes.{recipe.name}`", "", recipe.description, "",
             "| option | what it does | default |", "| --- | --- | --- |"]
    for key, option in recipe.options.items():
        text = option.help.rstrip(".")
        if option.choices is not None:
            text += "; one of " + ", ".join(f"`{_shown(c)}`" for c in option.choices)
        text = text.replace("|", "\\|")
        lines.append(f"| `{_flag(key)}` | {text} | `{_shown(option.default)}` |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------- the skeleton


class Prepared(NamedTuple):
    """What `Recipe.prepare` returns: the training and validation data for `fit` (a
    `tf.data.Dataset`, an ``(x, y)`` pair or None), what `Recipe.build` needs (`model`:
    e.g. vocabulary sizes) and facts for ``results.json`` (`info`)."""

    train: Any
    valid: Any
    model: dict
    info: dict


class Recipe:
    """The skeleton every recipe fills in: one train / evaluate / predict / export flow
    and one command line.

    Class attributes: `name` (the module ``recipes.<name>``; its docstring's first
    paragraph is the `description`), `options` (``{name: Option}``, including `COMMON_OPTIONS`), `predictor` (the
    trained-model class: ``from_run(config)``, ``evaluate(*split)``, ``export(path)``
    and what `predict_rows` uses), `holdouts` (splits that ``<split>_fraction`` may
    hold out of the training data), `metric` (the task metric of the curves) and
    `test_help` (what ``evaluate --test`` takes), `predict_command` (the name of the
    command that runs the trained model: predict, translate, generate).

    Hooks: `check_config`, `load_examples` (one data spec -> examples), `load_splits`,
    `check_data`, `prepare` (vocabularies -> `Prepared`), `build` (the compiled
    model), `monitor`, `curve_metric`, `fit_callbacks`, `summarize`,
    `after_fit`, `evaluate_splits`, `evaluate_run`, `predict_arguments`, `predict_rows`,
    `extra_commands`.
    """

    name = None
    options = COMMON_OPTIONS
    predictor = None
    holdouts = ()
    metric = "accuracy"
    test_help = "the labelled data"
    predict_command = "predict"

    @property
    def defaults(self):
        return defaults_of(self.options)

    @property
    def description(self):
        """The first paragraph of the recipe module's docstring."""
        doc = sys.modules[type(self).__module__].__doc__ or ""
        return " ".join(doc.split("\n\n")[0].split())

    # ---- hooks ---------------------------------------------------------------------
    def load_examples(self, config, spec, split):
        """One data spec (a file, files, ``tfds:NAME[:SPLIT]``) -> the split's examples
        as aligned columns, e.g. ``(texts, labels)``."""
        raise NotImplementedError

    def load_splits(self, config):
        """``{"train", "valid", "test"}`` examples (None where absent)."""
        return load_splits(config, self.load_examples, self.holdouts)

    def check_config(self, config):
        """Raises a `ConfigError` for options that cannot work together (first thing,
        before any TensorFlow device is set up)."""

    def check_data(self, config, splits):
        """Raises a `RecipeError` for data the recipe cannot use (before training)."""

    def prepare(self, config, splits):
        """Builds (and saves into the run folder) what turns examples into model
        inputs, and the datasets: returns a `Prepared`."""
        raise NotImplementedError

    def build(self, config, prepared):
        """The compiled Keras model (called inside the strategy's scope)."""
        raise NotImplementedError

    def monitor(self, config, prepared):
        """``(logged value, "min" | "max")`` that picks the best epoch."""
        return "val_loss", "min"

    def curve_metric(self, config):
        """The logged metric that ``training_curves.png`` plots beside the loss (where
        it depends on the options; default: `metric`)."""
        return self.metric

    def fit_callbacks(self, config, prepared):
        """Callbacks that run before the checkpoints at each epoch end (e.g. one that
        puts the monitored validation score into the logs)."""
        return []

    def summarize(self, config, prepared, results, rows):
        """The results dict after training (`rows`: the logs of every epoch), before
        the evaluation is added."""
        return results

    def after_fit(self, config, prepared, splits):
        """Runs after training, before the evaluation (e.g. rewrite ``best.keras``)."""

    def evaluate_splits(self, config, splits):
        """The scores of the best model on the valid and test splits."""
        trained, results = None, {}
        for name in ("valid", "test"):
            if splits.get(name):
                trained = trained or self.predictor.from_run(config)
                results[name] = trained.evaluate(*splits[name])
        return results

    # ---- the flow ------------------------------------------------------------------
    def train(self, config, splits=None, callbacks=(), continue_run=False):
        """Trains as configured and writes into ``config["output_dir"]``: config.json,
        the vocabularies, best.keras, last.weights.h5, history.json, results.json and
        training_curves.png.

        Args:
            config: a complete config (`load_config` of the recipe's options).
            splits: optional ``{"train": examples, "valid": ..., "test": ...}`` instead
                of the config's data.
            callbacks: extra Keras callbacks.
            continue_run: extend the finished run in ``output_dir`` from its last epoch
                (weights and optimizer state) to ``config["epochs"]``.

        Returns:
            The results dict (as written to results.json).
        """
        import time

        self.check_config(config)
        # First: "mirrored" on CPU must split the device before any TensorFlow op runs.
        strategy = distribution_strategy(config["strategy"], config["mirrored_cpus"])
        config = for_worker(config, strategy)  # multi_worker: a folder per worker
        set_seed(config["seed"])
        splits = splits or self.load_splits(config)
        self.check_data(config, splits)
        files = run_files(config)
        os.makedirs(config["output_dir"], exist_ok=True)
        write_json(files["config"], config)
        prepared = self.prepare(config, splits)
        with strategy.scope():
            model = self.build(config, prepared)
            if continue_run:
                restore_last_epoch(model, config)
        monitor, mode = self.monitor(config, prepared)
        began = time.perf_counter()
        history = fit(model, config, prepared.train, prepared.valid, monitor, mode,
                      callbacks, continue_run=continue_run,
                      before=self.fit_callbacks(config, prepared),
                      metric=self.curve_metric(config))
        results = dict(prepared.info)
        results.update(
            parameters=int(model.count_params()),
            replicas=int(strategy.num_replicas_in_sync),
            train_seconds=time.perf_counter() - began,
            history=history,
        )
        results = self.summarize(config, prepared, results,
                                 read_json(files["history"])["rows"])
        self.after_fit(config, prepared, splits)
        results.update(self.evaluate_splits(config, splits))
        results = tidy(results)
        write_json(files["results"], results)
        return results

    # ---- the command line ----------------------------------------------------------
    def predict_arguments(self, parser):
        parser.add_argument("texts", nargs="*", help="inputs, one per argument")
        parser.add_argument("--input", help="a file with one input per line")

    def inputs_of(self, config, args):
        """The positional inputs and the lines of ``--input``."""
        from kerasrnn.data.loaders import read_lines

        texts = list(args.texts)
        if args.input:
            texts += [line for _, line in read_lines(args.input, config.get("encoding", "utf-8"))]
        return texts

    def evaluate_run(self, trained, config, examples):
        """``evaluate``'s result: the trained model's scores on the test examples."""
        return trained.evaluate(*examples)

    def predict_rows(self, trained, texts):
        """``predict``'s result: one dict per input."""
        return [{"text": t, **p} for t, p in zip(texts, trained.predict(texts))]

    def stored(self, config, args):
        """The config the run in ``--output-dir`` was trained with, flags on top."""
        return saved_config(self.options, config["output_dir"], args.overrides)

    def _train(self, config, args):
        if args.continue_run:
            return self.train(self.stored(config, args), continue_run=True)
        return self.train(config)

    def _evaluate(self, config, args):
        config = self.stored(config, args)
        if not config["test"]:
            raise ConfigError(f"evaluate needs `--test` ({self.test_help}).")
        results = self.evaluate_run(self.predictor.from_run(config), config,
                                    self.load_examples(config, config["test"], "test"))
        write_json(os.path.join(config["output_dir"], "evaluation.json"), results)
        return results

    def _predict(self, config, args):
        config = self.stored(config, args)
        return self.predict_rows(self.predictor.from_run(config), self.inputs_of(config, args))

    def _export(self, config, args):
        config = self.stored(config, args)
        path = args.export_dir or os.path.join(config["output_dir"], "saved_model")
        self.predictor.from_run(config).export(path)
        return {"saved_model": path}

    def commands(self):
        """``{name: (help, add_arguments, run)}`` of the command line."""
        def train_arguments(parser):
            parser.add_argument(
                "--continue", dest="continue_run", action="store_true",
                help="extend the finished run in --output-dir from its last epoch "
                     "(weights and optimizer state) to --epochs; its stored config is "
                     "used, with the given flags on top")

        def export_arguments(parser):
            parser.add_argument("--export-dir", help="default: <output_dir>/saved_model")

        commands = {
            "train": (f"train a {self.name} and evaluate it", train_arguments, self._train),
            "evaluate": (f"evaluate a trained {self.name} on --test", None, self._evaluate),
            self.predict_command: (f"run a trained {self.name} on inputs",
                                   self.predict_arguments, self._predict),
            "export": ("export a SavedModel taking raw strings", export_arguments,
                       self._export),
        }
        commands.update(self.extra_commands())
        return commands

    def extra_commands(self):
        """More subcommands, or replacements: ``{name: (help, add_arguments, run)}``."""
        return {}

    def main(self, argv=None):
        """The recipe's command line; returns the exit status."""
        return main(sys.argv[1:] if argv is None else argv, f"recipes.{self.name}",
                    self.description, self.options, self.commands())


# --------------------------------------------------------------------------- metrics


def per_class_scores(gold, predicted, labels):
    """Precision, recall, F1 and support of every label (lists of gold and predicted
    labels, aligned), as ``{label: {"precision", "recall", "f1", "support"}}``.
    (Counted here rather than with keras.metrics.F1Score, which needs one-hot arrays of
    the whole set and gives no support counts.)"""
    import collections

    true_pos, gold_count, pred_count = (collections.Counter() for _ in range(3))
    for g, p in zip(gold, predicted):
        gold_count[g] += 1
        pred_count[p] += 1
        true_pos[g] += g == p
    scores = {}
    for label in labels:
        precision = true_pos[label] / pred_count[label] if pred_count[label] else 0.0
        recall = true_pos[label] / gold_count[label] if gold_count[label] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores[label] = {"precision": precision, "recall": recall, "f1": f1,
                         "support": gold_count[label]}
    return scores


def check_labels(train_labels, other_labels, split, source=None):
    """Raises `RecipeError` when `split` (read from `source`, the file or files, if
    given) has labels that training never saw."""
    unseen = sorted(set(other_labels) - set(train_labels))
    if unseen:
        where = f" ({source})" if source else ""
        raise RecipeError(
            f"label set mismatch: the {split} data{where} has label(s) {unseen[:10]} that are "
            f"not in the training data (training labels: {sorted(set(train_labels))[:20]})."
        )
