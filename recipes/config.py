"""Configuration of the recipes: one option (`Option`), the range of each numeric option
(`Range`, `CHECKS`) and `load_config` (defaults <- a YAML or JSON file <- command-line
flags, every key and value checked); the option tables are in `recipes.options`.
Imports neither TensorFlow nor Keras, so that the command line can check its options
before TensorFlow starts."""

import json
import os
from typing import Any, NamedTuple


class Option(NamedTuple):
    """One option: its default, help, allowed `choices`, range `check` (None: `CHECKS`'
    for its name) and ``--help`` `group` (None: `GROUP_OF`'s)."""

    default: Any
    help: str
    choices: Any = None
    check: Any = None
    group: Any = None


class Range:
    """A numeric option's interval (open ends with `low_open` / `high_open`; whole
    numbers with `integer`); `hint` says what such a value is."""

    def __init__(
        self, low=None, high=None, low_open=False, high_open=False, integer=False, hint=""
    ):
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open
        self.integer, self.hint = integer, hint

    def short(self):
        """The interval alone, ``in [0, 1)``, ``>= 1`` ("" for none), for ``--help``."""
        if self.low is not None and self.high is not None:
            low, high = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"in {low}{self.low}, {self.high}{high}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low}"
        return ""

    def describe(self):
        kind = "an integer" if self.integer else "a number"
        text = f"{kind} {self.short()}".rstrip()
        return text + (f" ({self.hint})" if self.hint else "")

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
    **dict.fromkeys(
        "dropout embedding_dropout word_dropout label_smoothing weight_drop locked_dropout".split(),
        rate(),
    ),
    **dict.fromkeys(("valid_fraction", "test_fraction"), rate("a fraction of the training data")),
    "top_p": probability("0: all tokens"),
    "sampling_probability": probability(),
    "learning_rate": positive("a learning rate, e.g. 0.001"),
    "temperature": positive("e.g. 0.7"),
    "lr_decay": Range(0, 1, low_open=True, hint="a factor, e.g. 0.5"),
    "clipnorm": non_negative("0: no clipping"),
    "init_scale": non_negative("0: Keras' initializers"),
    "naive_bayes_scale": non_negative(),
    "max_length_ratio": non_negative("0: off"),
    "lm_weight": non_negative("0: the translator alone"),
    "coverage_weight": non_negative("0: no coverage loss"),
    "beam_diversity": non_negative("0: independent groups"),
    "discriminative_decay": Range(1, hint="1: off, ULMFiT: 2.6"),
    "ar_alpha": non_negative("0: off"),
    "tar_beta": non_negative("0: off"),
    "time_budget": non_negative("minutes; 0: off"),
    "warmup": rate("a fraction of the budget's steps"),
    "ema_momentum": rate("e.g. 0.999"),
    **dict.fromkeys(
        "batch_size epochs units num_layers encoder_units decoder_units attention_units "
        "attention_layer_size hidden_units embedding_dim char_units beam_size n_best "
        "gen_length max_decode_length max_length max_source_length max_target_length "
        "max_chars max_vocab min_freq mirrored_cpus naive_bayes_buckets steps "
        "sampling_steps subword_vocab_size beam_groups extend_vocabulary lm_finetune_epochs "
        "lm_extend_vocabulary embeddings_extend".split(),
        count(),
    ),
    **dict.fromkeys(
        "char_dim lr_decay_after max_sentence_length patience top_k heatmaps naive_bayes "
        "verbose".split(),
        count_or_zero(),
    ),
    "seed": count_or_zero("a random seed"),
    "token_column": count_or_zero("0: the first column"),
    "tag_column": Range(integer=True, hint="negative: from the right"),
    "bucket_boundaries": Boundaries(),
}


def check_of(key, option):
    """An option's range check (its own or `CHECKS`'), or None."""
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


class Defaults(dict):
    """``{name: default}`` of an options table (plain values pass through), remembering
    its `options` (for `load_config`'s checks)."""

    def __init__(self, options):
        super().__init__((k, v.default if isinstance(v, Option) else v) for k, v in options.items())
        self.options = options


defaults_of = Defaults


class ConfigError(ValueError):
    """An invalid configuration: unknown key, wrong type or bad value."""


class RecipeError(ValueError):
    """Data that cannot be used as configured (e.g. test labels unseen in training)."""


# --------------------------------------------------------------------------- config


def check_labels(train_labels, other_labels, split, source=None):
    """A `RecipeError` when `split` (read from `source`) has labels training never saw."""
    unseen = sorted(set(other_labels) - set(train_labels))
    if unseen:
        where = f" ({source})" if source else ""
        raise RecipeError(
            f"label set mismatch: the {split} data{where} has label(s) {unseen[:10]} that are "
            f"not in the training data (training labels: {sorted(set(train_labels))[:20]})."
        )


def _one_line(error):
    """A parser's error in one line (YAML's ``problem`` and where)."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None)
    if mark is not None and problem:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# The configurations shipped with the recipes (package data, `recipes/configs/NAME.yaml`),
# which ``--config NAME`` finds from any folder. Each starts with header comments that
# `shipped_configs` reads: ``# recipe: NAME``, ``# figure: ...`` (what it reproduces)
# and ``# results: NAME ...`` (its sections of docs/results.md, if any).
_HEADER_FIELDS = ("recipe", "figure", "results")


def _shipped_files():
    """``{name: file}`` (importlib.resources traversables) of the shipped configs."""
    from importlib import resources

    folder = resources.files("recipes").joinpath("configs")
    return {
        entry.name.rsplit(".", 1)[0]: entry
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".yaml")
    }


def _header(text):
    """The ``# field: value`` lines of a config's leading comments (`_HEADER_FIELDS`)."""
    fields = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        key, sep, value = line[1:].strip().partition(":")
        if sep and key in _HEADER_FIELDS:
            fields[key] = value.strip()
    return fields


def shipped_configs():
    """``{name: {"recipe", "figure", "results", "command"}}`` of the shipped configs,
    from their header comments."""
    listing = {}
    for name, entry in _shipped_files().items():
        fields = _header(entry.read_text(encoding="utf-8"))
        recipe = fields.get("recipe", "")
        listing[name] = {
            "recipe": recipe,
            "figure": fields.get("figure", ""),
            "results": fields.get("results", "").split(),
            "command": f"kerasrnn {recipe} train --config {name}",
        }
    return listing


def _shipped_name(spec):
    """The shipped config a ``--config`` value names (with or without ``.yaml``), or
    None for a path."""
    if os.sep in spec or "/" in spec:
        return None
    return spec[: -len(".yaml")] if spec.endswith(".yaml") else spec


def _config_text(spec):
    """``(where, text)`` of a ``--config`` value: a file, else a shipped config's."""
    if os.path.isfile(spec):
        with open(spec, encoding="utf-8") as f:
            return spec, f.read()
    shipped = _shipped_files()
    name = _shipped_name(spec)
    if name in shipped:
        return str(shipped[name]), shipped[name].read_text(encoding="utf-8")
    if name is not None:
        raise FileNotFoundError(
            f"config {spec!r} is neither a file nor a shipped config (shipped: "
            f"{', '.join(shipped)}; `kerasrnn configs` lists them with the figure each "
            "reproduces)"
        )
    stem = os.path.basename(spec).rsplit(".", 1)[0]
    hint = f" (the shipped {stem!r} is `--config {stem}`)" if stem in shipped else ""
    raise FileNotFoundError(f"config file not found: {spec}{hint}")


def _read_config_file(path):
    path, text = _config_text(os.fspath(path))
    try:
        if path.endswith(".json"):
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as error:
        raise ConfigError(f"{path}: cannot parse the config file: {_one_line(error)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file must hold a mapping of options.")
    return data


def _convert(key, value, default):
    """`value` checked against `default`'s type (text parsed as YAML)."""
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
    """`value` if it is one of the option's choices and in its range, else a
    `ConfigError` naming both."""
    if isinstance(option, Option) and option.choices is not None and value not in option.choices:
        raise ConfigError(f"`{key}` must be one of {list(option.choices)}, got {value!r}.")
    check = check_of(key, option)
    if check is not None and value is not None:
        problem = check.problem(value)
        if problem:
            raise ConfigError(f"`{key}` {problem}, got {value!r}.")
    return value


def load_config(defaults, path=None, overrides=None):
    """Defaults <- the config file at `path` (JSON, YAML or a shipped config's name)
    <- `overrides`, every key one of `defaults`' and every value of its type, choices
    and range, else a `ConfigError` listing what is allowed. Returns a new dict."""
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
