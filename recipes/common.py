"""Plumbing shared by the recipes (classifier, tagger, language model, translator).

A recipe declares its options once, as a dict of defaults, and gets from here:

* **configuration** -- `load_config(defaults, path, overrides)`: defaults <- a YAML or
  JSON file <- command-line flags, each key checked against the defaults (an unknown key
  is an error that lists the valid ones) and converted to the default's type;
* **a command line** -- `main(...)`: ``python -m recipes.X {train,evaluate,predict,export}``
  with ``--config FILE`` and one ``--some-key VALUE`` flag per option;
* **distribution** -- `distribution_strategy(name)`: the default strategy,
  ``mirrored`` (`tf.distribute.MirroredStrategy`; on a machine without GPUs the CPU is
  split into logical devices so the replicas are real) or ``multi_worker``
  (`tf.distribute.MultiWorkerMirroredStrategy`, one process per machine, configured by
  ``TF_CONFIG``; `for_worker` gives the non-chief workers their own output folder);
* **model parts** -- `make_cell` (a kerasrnn cell by name) and `rnn_stack` (stacked,
  optionally bidirectional `keras.layers.RNN` layers);
* **training** -- `optimizer` (Adam + `clipnorm`), `training_callbacks`: best-model
  `ModelCheckpoint`, `EarlyStopping`, `BackupAndRestore` (re-running a killed command
  resumes it), optional `TensorBoard`; `fit` runs `model.fit` with them and returns the
  history; `load_best_model` reloads the best checkpoint;
* **evaluation** -- `per_class_scores` (precision/recall/F1), `check_labels` (labels of a
  test set that training never saw are an error);
* **results and stored runs** -- `write_json` / `read_json`, `saved_config` (the config a
  run was trained with, for evaluate/predict/export), `export_command`.

Common options every recipe should include via ``COMMON_DEFAULTS``: `output_dir`,
`seed`, `batch_size`, `epochs`, `learning_rate`, `clipnorm`, `patience`, `tensorboard`,
`strategy`, `mirrored_cpus`, `verbose`.
"""
import argparse
import contextlib
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

COMMON_DEFAULTS = {
    "output_dir": "runs/model",  # checkpoints, vocabularies, results.json, backups
    "seed": 1234,
    "batch_size": 32,
    "epochs": 10,
    "learning_rate": 1e-3,
    "clipnorm": 5.0,  # gradient-norm clipping; 0 disables it
    "patience": 3,  # early stopping on the validation metric; 0 disables it
    "tensorboard": False,  # write TensorBoard logs to <output_dir>/logs
    "strategy": "default",  # "default", "mirrored" or "multi_worker" (TF_CONFIG)
    "mirrored_cpus": 2,  # logical CPU devices for "mirrored" on a machine without GPUs
    "verbose": 1,  # Keras progress bar (0: silent, 1: bar, 2: one line per epoch)
}


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


def load_config(defaults, path=None, overrides=None):
    """Defaults <- config file (YAML or JSON) <- overrides (e.g. command-line flags).

    Args:
        defaults: the recipe's options and their default values. Every key of the file
            and of `overrides` must be one of them; values must have the default's type
            (an int is accepted for a float; a default of None accepts anything).
        path: a ``.json`` file, or YAML for any other extension; None for none.
        overrides: a dict of options that win over the file.

    Returns:
        A new dict with every key of `defaults`.

    Raises:
        ConfigError: an unknown key (the message lists the valid ones) or a bad type.
    """
    config = dict(defaults)
    for source, values in (
        (path, _read_config_file(path) if path else {}),
        ("command line", overrides or {}),
    ):
        unknown = sorted(set(values) - set(defaults))
        if unknown:
            raise ConfigError(
                f"unknown config key(s) {unknown} in {source}; valid keys: "
                f"{sorted(defaults)}."
            )
        for key, value in values.items():
            config[key] = _convert(key, value, defaults[key])
    return config


def write_json(path, data):
    """Writes `data` as indented JSON (creating the folder), atomically: a reader (or a
    re-run after a kill) sees the old file or the new one, never half of one."""
    folder = os.path.dirname(os.fspath(path))
    if folder:
        os.makedirs(folder, exist_ok=True)
    with atomic_path(path) as partial:
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False, default=_jsonable)
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
    for suffix in (".weights.h5", ".keras", ".json", ".h5"):
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


def _atomic_callbacks():
    """Keras' checkpoint callbacks, made atomic (built on first use: keras is imported
    lazily so that `--help` stays fast)."""
    import keras

    class AtomicModelCheckpoint(keras.callbacks.ModelCheckpoint):
        """`keras.callbacks.ModelCheckpoint` that never leaves a half-written file:
        Keras writes to the path in place, so the file is written under a temporary
        name (by pointing the public `filepath` there) and renamed after the save."""

        def _save_atomically(self, hook, *args):
            final = self.filepath
            with atomic_path(final) as partial:
                self.filepath = partial
                try:
                    hook(*args)
                finally:
                    self.filepath = final

        def on_train_begin(self, logs=None):
            # A previous process killed mid-write left its temporary file: remove it
            # now, even if this run never saves (no epoch improves on the best).
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
        """`keras.callbacks.BackupAndRestore` whose backup (weights + optimizer state,
        and the epoch reached) is replaced atomically. Keras overwrites
        ``latest.weights.h5`` and ``training_metadata.json`` in place, so a kill during
        the write leaves a file the re-run cannot load. The two private paths are the
        only Keras internals used (no public API names them); the weights are renamed
        into place first, so a kill between the two renames resumes one epoch early
        with the newer weights, never with unreadable ones."""

        def _save_model(self):
            os.makedirs(self.backup_dir, exist_ok=True)
            with atomic_path(self._weights_path) as weights:
                self.model.save_weights(weights, overwrite=True)
            write_json(self._training_metadata_path,
                       {"epoch": self._current_epoch, "batch": self._last_batch_seen})

    return AtomicModelCheckpoint, AtomicBackupAndRestore


def AtomicModelCheckpoint(*args, **kwargs):
    """`keras.callbacks.ModelCheckpoint` (same arguments) writing its file atomically."""
    return _atomic_callbacks()[0](*args, **kwargs)


def AtomicBackupAndRestore(*args, **kwargs):
    """`keras.callbacks.BackupAndRestore` (same arguments) writing its backup atomically."""
    return _atomic_callbacks()[1](*args, **kwargs)


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


def training_callbacks(config, monitor="val_loss", mode="min", extra=()):
    """The standard callbacks, writing under ``config["output_dir"]``:

    * ``ModelCheckpoint`` -> ``best.keras``, the model with the best `monitor` value;
    * ``EarlyStopping`` on `monitor` (``patience`` epochs; restores the best weights);
    * ``BackupAndRestore`` -> ``backup/``: a run that is killed resumes, when re-run
      with the same command, from the last finished epoch (the backup is deleted when
      training completes);
    * ``TensorBoard`` -> ``logs/`` when ``config["tensorboard"]``.
    """
    import keras

    out = config["output_dir"]
    callbacks = [
        AtomicBackupAndRestore(os.path.join(out, "backup")),
        AtomicModelCheckpoint(
            os.path.join(out, "best.keras"), monitor=monitor, mode=mode,
            save_best_only=True,
        ),
        keras.callbacks.TerminateOnNaN(),
    ]
    if config["patience"]:
        callbacks.append(keras.callbacks.EarlyStopping(
            monitor=monitor, mode=mode, patience=config["patience"],
            restore_best_weights=True,
        ))
    if config["tensorboard"]:
        callbacks.append(keras.callbacks.TensorBoard(os.path.join(out, "logs")))
    return callbacks + list(extra)


def fit(model, config, train_data, valid_data, monitor="val_loss", mode="min",
        callbacks=()):
    """`model.fit` with the standard callbacks; returns the history as a dict of lists
    (plus ``epochs_run``, the epochs this call actually trained: fewer than
    ``epochs`` after a resume or an early stop)."""
    history = model.fit(
        train_data,
        validation_data=valid_data,
        epochs=config["epochs"],
        shuffle=False,  # the tf.data pipeline shuffles (Keras can't shuffle a Dataset)
        callbacks=training_callbacks(config, monitor, mode, callbacks),
        verbose=config["verbose"],
    )
    result = {k: [float(v) for v in values] for k, values in history.history.items()}
    result["epochs_run"] = len(history.epoch)
    result["first_epoch"] = history.epoch[0] + 1 if history.epoch else None
    return result


def load_best_model(config):
    """The best checkpoint of a run (custom kerasrnn layers are registered)."""
    import keras

    path = os.path.join(config["output_dir"], "best.keras")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no trained model at {path}; run `train` first.")
    return keras.saving.load_model(path)


def set_seed(seed):
    import keras

    keras.utils.set_random_seed(int(seed))


# ------------------------------------------------------------------------------ CLI


def _flag(key):
    return "--" + key.replace("_", "-")


def build_parser(prog, description, defaults, commands):
    """An argparse parser with one subcommand per entry of `commands` (name -> (help,
    add_arguments function or None)); each takes ``--config FILE`` and a flag per
    option of `defaults` (``--batch-size 64``; lists and dicts as YAML/JSON text)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, add_arguments) in commands.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--config", help="YAML or JSON file of options")
        if add_arguments:
            add_arguments(p)
        group = p.add_argument_group("options (override the config file)")
        for key, default in defaults.items():
            group.add_argument(
                _flag(key), dest=f"opt_{key}", default=argparse.SUPPRESS,
                metavar=type(default).__name__.upper() if default is not None else "VALUE",
                help=f"default: {default!r}",
            )
    return parser


def export_arguments(parser):
    """The `export` subcommand's own argument."""
    parser.add_argument("--export-dir", help="default: <output_dir>/saved_model")


def export_command(defaults, load):
    """The `export` subcommand of a recipe whose ``load(config)`` returns an object with
    ``export(path)`` (e.g. ``Classifier.from_run``)."""

    def run(config, args):
        config = saved_config(defaults, config["output_dir"], args.overrides)
        path = args.export_dir or os.path.join(config["output_dir"], "saved_model")
        load(config).export(path)
        return {"saved_model": path}

    return run


def main(argv, prog, description, defaults, commands):
    """Runs a recipe's command line. `commands` maps a subcommand to ``(help,
    add_arguments, run)``; ``run(config, args)`` returns a JSON-able result, which is
    printed (``args.overrides`` holds the options given on the command line).
    Configuration and data errors exit with a one-line message (status 2)."""
    parser = build_parser(
        prog, description, defaults, {k: v[:2] for k, v in commands.items()}
    )
    args = parser.parse_args(argv)
    overrides = {k[4:]: v for k, v in vars(args).items() if k.startswith("opt_")}
    args.overrides = overrides
    from kerasrnn.data.download import CorpusError
    from kerasrnn.data.loaders import DataFormatError, DatasetUnavailableError

    try:
        config = load_config(defaults, args.config, overrides)
        result = commands[args.command][2](config, args)
    except (ConfigError, RecipeError, DataFormatError, DatasetUnavailableError, CorpusError,
            FileNotFoundError, IsADirectoryError) as error:
        print(f"{prog} {args.command}: error: {error}", file=sys.stderr)
        return 2
    if result is not None:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=_jsonable))
    return 0


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
