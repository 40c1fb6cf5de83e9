"""The files of a run folder (`run_files`) and how the recipes write and read them:
results JSON (`tidy`, `write_json`, `read_json`, atomically through
`kerasrnn.callbacks.atomic_path`), the stored config (`saved_config`), the best model
and a vocabulary file given as an option (`read_vocabulary`)."""

import json
import math
import os

from recipes.config import (
    ConfigError,
    RecipeError,
    _check_choice,
    _convert,
    defaults_of,
    load_config,
)


def tidy(value, digits=8):
    """`value` with every float rounded to `digits` significant digits (BLEU
    100.00000000000004 reads 100.0) and non-finite ones None (JSON has no NaN)."""
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
    """Writes `data` (through `tidy`) as indented JSON, atomically."""
    from kerasrnn.callbacks import write_json_atomically

    write_json_atomically(path, tidy(data), default=jsonable)


def jsonable(value):
    """`json.dump`'s `default`: numpy scalars and arrays as lists."""
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def read_json(path, keys=(), kind=(dict, list)):
    """A run's JSON file, of the types `kind` (an object: with its `keys`); a damaged
    one is a one-line `RecipeError` naming it."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"not found: {path} (did `train` run with this output_dir?)")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (ValueError, UnicodeDecodeError) as error:  # JSONDecodeError is a ValueError
        raise RecipeError(f"{path} is damaged: not valid JSON ({error}).") from None
    if not isinstance(data, kind):
        raise RecipeError(
            f"{path} is damaged: a JSON {type(data).__name__}, not "
            f"{'an object' if kind is dict else 'an object or array'}."
        )
    missing = [key for key in keys if not isinstance(data, dict) or key not in data]
    if missing:
        raise RecipeError(f"{path} is damaged: it lacks {missing}.")
    return data


# Options stored under an earlier name in the config.json of older runs: old -> new.
RENAMED_OPTIONS = {"wordpiece_vocab_size": "subword_vocab_size"}


def saved_config(defaults, output_dir, overrides=None):
    """The config a `train` run stored in `output_dir`, with `overrides` on top (used by
    evaluate / predict / export, which must rebuild exactly the trained pipeline)."""
    path = os.path.join(output_dir, "config.json")
    stored = read_json(path, kind=dict)
    known = getattr(defaults, "options", defaults)
    plain = defaults_of(known)
    for old, new in RENAMED_OPTIONS.items():  # a run trained before the rename
        if old in stored and new in known:
            stored[new] = stored.pop(old)
    for key, value in stored.items():  # a damaged file is the file's error, not a flag's
        if key not in known:
            raise RecipeError(f"{path} is damaged or from another version: unknown option {key!r}.")
        if key not in (overrides or {}):
            try:
                _check_choice(key, _convert(key, value, plain[key]), known[key])
            except ConfigError as error:
                raise RecipeError(f"{path} is damaged: {error}") from None
    stored.update(overrides or {})
    stored["output_dir"] = output_dir
    return load_config(defaults, overrides=stored)


def run_files(config):
    """The run folder's files: config.json and results.json beside `TrainingRun`'s."""
    from kerasrnn.callbacks.run import FILES

    out = config["output_dir"]
    files = {name: os.path.join(out, file) for name, file in FILES.items()}
    return dict(
        files, config=os.path.join(out, "config.json"), results=os.path.join(out, "results.json")
    )


def read_vocabulary(path):
    """`kerasrnn.data.Vocabulary.load`, a damaged file (not UTF-8, not a vocabulary,
    repeated tokens) a `RecipeError` naming it."""
    from kerasrnn.data import Vocabulary

    try:
        return Vocabulary.load(path)
    except UnicodeDecodeError as error:
        raise RecipeError(f"{path} is damaged: not UTF-8 text ({error}).") from None
    except ValueError as error:
        raise RecipeError(f"{path} is damaged: {str(error).removeprefix(path + ': ')}") from None
