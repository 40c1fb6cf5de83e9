"""Configuration of the recipes: the options tables (`Option`, `COMMON_OPTIONS`) and the
option groups they share, each defined once (`data_options`, `vocabulary_options`,
`cell_options`, `training_options`, `decoding_options`), the ``--help`` group of each
option (`GROUPS`, `group_of`), the range of each numeric option (`Range`, `CHECKS`)
and `load_config` (defaults <- a YAML or JSON file <- command-line flags, every key and
value checked). Imports neither TensorFlow nor Keras, so that the command line can check
its options before TensorFlow starts."""

import json
import os
from typing import Any, NamedTuple


class Option(NamedTuple):
    """One option of a recipe: its default, what it does, (when the option takes one
    of a few values) the allowed values, (for a number or a list of numbers) the
    `check` of its range (None: the one `CHECKS` has for its name) and the ``--help``
    `group` it is listed in (None: the one `GROUP_OF` has for its name, see `group_of`).
    The command line's ``--help`` and parser, the checks of `load_config` and the
    options reference in docs/cli.md all read it."""

    default: Any
    help: str
    choices: Any = None
    check: Any = None
    group: Any = None


class Range:
    """The allowed interval of a numeric option: ``low <= value`` (``<`` when
    `low_open`) and ``value <= high`` (``<`` when `high_open`); `integer`: whole
    numbers only. `hint` says what such a value is (shown in the error)."""

    def __init__(
        self, low=None, high=None, low_open=False, high_open=False, integer=False, hint=""
    ):
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open
        self.integer, self.hint = integer, hint

    def describe(self):
        kind = "an integer" if self.integer else "a number"
        if self.low is not None and self.high is not None:
            text = (
                f"{kind} in {'(' if self.low_open else '['}{self.low}, {self.high}"
                f"{')' if self.high_open else ']'}"
            )
        elif self.low is not None:
            text = f"{kind} {'>' if self.low_open else '>='} {self.low}"
        else:
            text = kind
        return text + (f" ({self.hint})" if self.hint else "")

    def short(self):
        """The interval alone, for ``--help`` (whose metavar says INT or FLOAT and whose
        text says what the special values mean): ``in [0, 1)``, ``>= 1``; "" for none."""
        if self.low is not None and self.high is not None:
            return (
                f"in {'(' if self.low_open else '['}{self.low}, {self.high}"
                f"{')' if self.high_open else ']'}"
            )
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low}"
        return ""

    def problem(self, value):
        """None if `value` is allowed, else what it must be."""
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (self.integer and not isinstance(value, int))
            or value != value
        ):
            return f"must be {self.describe()}"
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return f"must be {self.describe()}"
        if self.high is not None and (value >= self.high if self.high_open else value > self.high):
            return f"must be {self.describe()}"
        return None


class Boundaries:
    """A list of strictly increasing positive integers (length-bucket boundaries)."""

    def describe(self):
        return "a list of increasing integers >= 1"

    def short(self):
        return "increasing integers >= 1"

    def problem(self, value):
        if (
            not isinstance(value, list)
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)
            or any(a >= b for a, b in zip(value, value[1:]))
        ):
            return (
                "must be a list of increasing integers >= 1, e.g. [10, 20, 30] "
                "([] for plain batching)"
            )
        return None


def rate(hint="a rate"):
    """[0, 1): a dropout rate or a fraction held out."""
    return Range(0, 1, high_open=True, hint=hint)


def probability(hint="a probability"):
    """[0, 1]."""
    return Range(0, 1, hint=hint)


def positive(hint=""):
    """> 0 (learning rates, temperatures)."""
    return Range(0, low_open=True, hint=hint)


def non_negative(hint=""):
    """>= 0 (0 usually switches the option off)."""
    return Range(0, hint=hint)


def count(hint=""):
    """An integer >= 1 (sizes, epochs, layers)."""
    return Range(1, integer=True, hint=hint)


def count_or_zero(hint=""):
    """An integer >= 0 (the option's help says what 0 means)."""
    return Range(0, integer=True, hint=hint)


# The range of every numeric option the recipes share, by name (an `Option` may give
# its own `check` instead). A size whose default is 0 accepts 0 (its help says what 0
# means: off, all, the same as another size). tests/recipes/test_cli.py checks that
# every numeric option of every recipe has one.
CHECKS = {
    **{
        name: rate()
        for name in (
            "dropout",
            "embedding_dropout",
            "word_dropout",
            "label_smoothing",
            "weight_drop",
            "locked_dropout",
        )
    },
    **{
        name: rate("a fraction of the training data")
        for name in ("valid_fraction", "test_fraction")
    },
    "top_p": probability("0: all tokens"),
    "sampling_probability": probability(),
    "learning_rate": positive("a learning rate, e.g. 0.001"),
    "temperature": positive("e.g. 0.7"),
    "lr_decay": Range(0, 1, low_open=True, hint="a factor, e.g. 0.5"),
    "clipnorm": non_negative("0: no clipping"),
    "init_scale": non_negative("0: Keras' initializers"),
    "naive_bayes_scale": non_negative(),
    "max_length_ratio": non_negative("0: off"),
    "ar_alpha": non_negative("0: off"),
    "tar_beta": non_negative("0: off"),
    "time_budget": non_negative("minutes; 0: off"),
    "warmup": rate("a fraction of the budget's steps"),
    "ema_momentum": rate("e.g. 0.999"),
    **{
        name: count()
        for name in (
            "batch_size",
            "epochs",
            "units",
            "num_layers",
            "encoder_units",
            "decoder_units",
            "attention_units",
            "attention_layer_size",
            "hidden_units",
            "embedding_dim",
            "char_units",
            "beam_size",
            "n_best",
            "gen_length",
            "max_decode_length",
            "max_length",
            "max_source_length",
            "max_target_length",
            "max_chars",
            "max_vocab",
            "min_freq",
            "mirrored_cpus",
            "naive_bayes_buckets",
            "steps",
            "sampling_steps",
            "wordpiece_vocab_size",
        )
    },
    **{
        name: count_or_zero()
        for name in (
            "char_dim",
            "lr_decay_after",
            "max_sentence_length",
            "patience",
            "top_k",
            "heatmaps",
            "naive_bayes",
            "verbose",
        )
    },
    "seed": count_or_zero("a random seed"),
    "token_column": count_or_zero("0: the first column"),
    "tag_column": Range(integer=True, hint="negative: from the right"),
    "bucket_boundaries": Boundaries(),
}


def check_of(key, option):
    """The range check of an option (its own, or `CHECKS`' for its name), None for a
    non-numeric one."""
    if not isinstance(option, Option):
        return None
    check = option.check if option.check is not None else CHECKS.get(key)
    if (
        isinstance(check, Range)
        and check.integer
        and check.low == 1
        and option.default == 0
        and not isinstance(option.default, bool)
    ):
        return count_or_zero()  # its help says what 0 means
    return check


STRATEGIES = ("default", "mirrored", "multi_worker")

# The ``--help`` groups, in the order ``--help`` lists them, with what each holds.
GROUPS = {
    "data": "where the examples are and how they become tokens",
    "model": "the network: its layers, sizes and regularisers",
    "training": "the optimizer, its schedule, early stopping and averaging",
    "decoding": "how a trained model generates its outputs",
    "export": "the exported model",
    "run": "the run folder, seed, devices and logging",
}

# The group of every option the recipes have, by name (an `Option` may give its own
# `group` instead; an option in neither is a "model" option). tests/recipes/test_cli.py
# checks that every option of every recipe has one here or its own.
GROUP_OF = {
    **dict.fromkeys(
        (
            "train",
            "valid",
            "test",
            "encoding",
            "tfds_data_dir",
            "format",
            "valid_fraction",
            "test_fraction",
            "column",
            "token_column",
            "tag_column",
            "tfds_tags_key",
            "tag_scheme",
            "train_file",
            "valid_file",
            "test_file",
            "level",
            "unk_token",
            "batching",
            "steps",
            "max_sentence_length",
            "source_tokenizer",
            "target_tokenizer",
            "max_source_length",
            "max_target_length",
            "wordpiece_vocab_size",
            "lowercase",
            "max_vocab",
            "min_freq",
            "max_chars",
            "max_length",
            "bucket_boundaries",
            "task",
        ),
        "data",
    ),
    **dict.fromkeys(
        (
            "embedding_dim",
            "embeddings",
            "freeze_embeddings",
            "embedding_dropout",
            "word_dropout",
            "char_dim",
            "char_units",
            "cell",
            "cell_options",
            "units",
            "num_layers",
            "bidirectional",
            "dropout",
            "pooling",
            "naive_bayes",
            "naive_bayes_buckets",
            "naive_bayes_scale",
            "naive_bayes_counts_valid",
            "crf",
            "crf_constraints",
            "contextual_lm",
            "contextual_lm_trainable",
            "tie_embeddings",
            "weight_drop",
            "locked_dropout",
            "init_scale",
            "unroll",
            "encoder_units",
            "decoder_units",
            "attention",
            "attention_units",
            "luong_score",
            "input_feeding",
            "attention_layer_size",
            "relatedness_target",
            "hidden_units",
            "pretrained_lm",
            "init_from",
        ),
        "model",
    ),
    **dict.fromkeys(
        (
            "batch_size",
            "epochs",
            "learning_rate",
            "clipnorm",
            "patience",
            "time_budget",
            "budget_schedule",
            "warmup",
            "averaging",
            "ema_momentum",
            "optimizer",
            "lr_decay",
            "lr_decay_after",
            "loss_reduction",
            "ar_alpha",
            "tar_beta",
            "jit_compile",
            "evaluate_test_each_epoch",
            "extend_vocabulary",
            "label_smoothing",
            "scheduled_sampling",
            "sampling_probability",
            "sampling_steps",
            "sampling_mode",
            "lm_finetune_epochs",
            "lm_extend_vocabulary",
            "lr_schedule",
            "discriminative_decay",
            "gradual_unfreezing",
        ),
        "training",
    ),
    **dict.fromkeys(
        (
            "prompt",
            "method",
            "gen_length",
            "temperature",
            "top_k",
            "top_p",
            "beam_size",
            "length_normalization",
            "max_decode_length",
            "max_length_ratio",
            "readout_dtype",
            "n_best",
            "replace_unk",
        ),
        "decoding",
    ),
    **dict.fromkeys(
        (
            "output_dir",
            "seed",
            "tensorboard",
            "strategy",
            "mirrored_cpus",
            "verbose",
            "heatmaps",
        ),
        "run",
    ),
}


def group_of(key, option):
    """The ``--help`` group of an option: its own `group`, else `GROUP_OF`'s for its
    name, else "model"."""
    group = option.group if isinstance(option, Option) else None
    return group or GROUP_OF.get(key, "model")


def retuned(table, changes):
    """`table` (an option group) with the recipe's `changes`: a plain value replaces an
    option's default (its help stays), an `Option` replaces the option. A name that is
    not in the group is a TypeError (a typo must not add an option)."""
    unknown = sorted(set(changes) - set(table))
    if unknown:
        raise TypeError(f"{unknown} not in the option group {sorted(table)}")
    return {
        key: (
            changes[key]
            if isinstance(changes.get(key), Option)
            else option._replace(default=changes[key])
            if key in changes
            else option
        )
        for key, option in table.items()
    }


def with_defaults(options, defaults):
    """An options table whose defaults are `defaults` where it names them (e.g. a
    command with its own tuned defaults, as the translator's demo): what its ``--help``
    shows."""
    return {
        key: option._replace(default=defaults[key]) if key in defaults else option
        for key, option in options.items()
    }


# The training group every recipe takes: `training_options` gives it with a recipe's
# own defaults.
_TRAINING = {
    "batch_size": Option(32, "examples per training batch (the global batch, over all replicas)"),
    "epochs": Option(10, "epochs to train at most (with --continue: the new total)"),
    "learning_rate": Option(1e-3, "the optimizer's learning rate"),
    "clipnorm": Option(5.0, "clip each gradient to this norm; 0 disables clipping"),
    "patience": Option(
        3,
        "early stopping: epochs without improvement of the validation "
        "metric before training stops (the best weights are kept); 0 "
        "disables it",
    ),
    "time_budget": Option(
        0.0,
        "minutes of training (from the start of fit): the learning rate follows "
        "`budget_schedule` over the steps that fit in them (measured from the first "
        "steps' speed), training stops when they are spent and `epochs` is only a cap; "
        "best.keras is still the best validation epoch; 0: off (a constant rate)",
    ),
    "budget_schedule": Option(
        "cosine",
        "the schedule of `time_budget`, peaking at `learning_rate`: cosine (linear "
        "warmup, then cosine decay to 0) or one_cycle (PyTorch's OneCycleLR)",
        ("cosine", "one_cycle"),
    ),
    "warmup": Option(
        0.05, "with `time_budget`: the fraction of the steps spent rising to `learning_rate`"
    ),
    "averaging": Option(
        "none",
        "weight averaging (kerasrnn.callbacks.PolyakAveraging, ExponentialAveraging): "
        "polyak averages the weights of every step from the second epoch on, ema "
        "keeps their exponential moving average (`ema_momentum`) from the second epoch "
        "on, ntasgd averages them from the epoch the "
        "monitored validation value stops improving (NT-ASGD over `patience` - 2 "
        "epochs, so that early stopping leaves averaged epochs; 5 when `patience` is 0); "
        "validation, best.keras, last.weights.h5 and the final model hold the average "
        "(each epoch's row: averaged_steps); "
        "none: off",
        ("none", "polyak", "ema", "ntasgd"),
    ),
    "ema_momentum": Option(
        0.999,
        "with `averaging: ema`: m, the average's momentum; it is the plain mean of the "
        "first 1 / (1 - m) steps, then an EMA over about that many",
    ),
}


def training_options(**changes):
    """The training group every recipe takes (batch size, epochs, learning rate,
    clipping, early stopping, time budget, weight averaging), with the recipe's
    `changes` (`retuned`: ``training_options(epochs=20)``)."""
    return retuned(_TRAINING, changes)


COMMON_OPTIONS = {
    "output_dir": Option(
        "runs/model",
        "folder of the run: config, vocabularies, "
        "checkpoints, results.json, training_curves.png, backups",
    ),
    "seed": Option(1234, "random seed of weights, shuffling, dropout and held-out splits"),
    **_TRAINING,
    "tensorboard": Option(False, "write TensorBoard logs to <output_dir>/logs"),
    "strategy": Option(
        "default",
        "tf.distribute strategy: default (one device), "
        "mirrored (all GPUs; without GPUs, `mirrored_cpus` CPU replicas) "
        "or multi_worker (MultiWorkerMirroredStrategy over the workers of "
        "the TF_CONFIG environment variable; see docs/distributed.md)",
        STRATEGIES,
    ),
    "mirrored_cpus": Option(
        2, "logical CPU devices for `strategy: mirrored` on a machine without GPUs"
    ),
    "verbose": Option(
        1,
        "Keras progress output on stderr: 0 silent, 1 progress bar, 2 one line per epoch",
        (0, 1, 2),
    ),
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
        "train": Option(
            None,
            f"training data: {train}; any file may be a "
            "corpus:NAME/FILE of kerasrnn.datasets (fetched on first use)",
        ),
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
        super().__init__((k, v.default if isinstance(v, Option) else v) for k, v in options.items())
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
    if kind is float and isinstance(value, str):
        # YAML 1.1 (PyYAML) reads `1e-4` as a string: it wants `1.0e-4`.
        try:
            return float(value)
        except ValueError:
            pass
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
    """`value` if it is one of the option's `choices` and in its range (`check_of`),
    else a `ConfigError` naming the option, the value and what it must be."""
    if isinstance(option, Option) and option.choices is not None and value not in option.choices:
        raise ConfigError(f"`{key}` must be one of {list(option.choices)}, got {value!r}.")
    check = check_of(key, option)
    if check is not None and value is not None:
        problem = check.problem(value)
        if problem:
            raise ConfigError(f"`{key}` {problem}, got {value!r}.")
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
                f"unknown config key(s) {unknown} in {source}; valid keys: {sorted(plain)}."
            )
        for key, value in values.items():
            config[key] = _check_choice(key, _convert(key, value, plain[key]), defaults[key])
    for key, value in config.items():  # defaults are checked too (a subclass's table)
        _check_choice(key, value, defaults[key])
    return config


CELLS = {
    "lstm": "LSTMCell",
    "gru": "GRUCell",
    "simple": "SimpleRNNCell",
    "layer_norm_lstm": "LayerNormLSTMCell",
    "layer_norm_simple": "LayerNormSimpleRNNCell",
}


def _noted(option, note):
    return option._replace(help=f"{option.help}; {note}") if note else option


def _group(options, notes):
    """The options that are not None, each help with the recipe's note on it."""
    notes = notes or {}
    unknown = sorted(set(notes) - {k for k, v in options.items() if v is not None})
    if unknown:
        raise TypeError(f"notes on {unknown}, which are not in the group")
    return {k: _noted(v, notes.get(k)) for k, v in options.items() if v is not None}


def cell_options(default, units=None, num_layers=None, bidirectional=None, notes=None):
    """The recurrent layers' options: `cell` (with `default`) and `cell_options`, and,
    where given (not None), the defaults of `units`, `num_layers` and `bidirectional`;
    `notes` (``{name: text}``) adds what an option means in the recipe to its help."""
    return _group(
        {
            "cell": Option(
                default,
                "the recurrent cell: lstm, gru, simple (Elman), or the "
                "layer-normalised LSTM / Elman cell",
                tuple(CELLS),
            ),
            "cell_options": Option(
                {},
                "extra arguments of the cell's constructor, e.g. "
                "{recurrent_dropout: 0.1} or {peephole: true}",
            ),
            "units": None if units is None else Option(units, "cell units per layer"),
            "num_layers": None
            if num_layers is None
            else Option(num_layers, "stacked recurrent layers"),
            "bidirectional": None
            if bidirectional is None
            else Option(bidirectional, "read the text in both directions"),
        },
        notes,
    )


def vocabulary_options(
    max_vocab, embedding_dim, lowercase=None, min_freq=1, embedding_dropout=None, notes=None
):
    """The vocabulary and embedding options with the recipe's defaults: `lowercase`
    (None: the recipe has no such option), `max_vocab`, `min_freq`, `embedding_dim` and
    `embedding_dropout` (None: none); `notes` (``{name: text}``) adds what an option
    means in the recipe to its help."""
    return _group(
        {
            "lowercase": None
            if lowercase is None
            else Option(lowercase, "lower-case the text before tokenising"),
            "max_vocab": Option(
                max_vocab, "vocabulary size at most, the 4 special tokens included"
            ),
            "min_freq": Option(min_freq, "tokens seen fewer times in training are [UNK]"),
            "embedding_dim": Option(embedding_dim, "token embedding width"),
            "embedding_dropout": None
            if embedding_dropout is None
            else Option(embedding_dropout, "dropout rate on the token embeddings"),
        },
        notes,
    )


LENGTH_NORMALIZATIONS = (None, "average", "gnmt")


def decoding_options(beam_size, length_normalization="average", sampling=False, notes=None):
    """The decoding options with the recipe's defaults: `beam_size`,
    `length_normalization` and, with `sampling`, `temperature`, `top_k` and `top_p`;
    `notes` (``{name: text}``) adds what an option means in the recipe to its help."""
    options = {
        "beam_size": Option(beam_size, "beam width of beam search"),
        "length_normalization": Option(
            length_normalization,
            "beam search length normalisation: null: none, average: score / length, "
            "gnmt: Wu et al.'s penalty",
            LENGTH_NORMALIZATIONS,
        ),
    }
    if sampling:
        options.update(
            temperature=Option(
                1.0, "sampling: divide the logits by this (< 1 sharper, > 1 flatter)"
            ),
            top_k=Option(0, "sampling: only the k most likely tokens; 0: all"),
            top_p=Option(
                0.0, "sampling: the smallest set of tokens with this much probability; 0: all"
            ),
        )
    return _group(options, notes)
