"""The files of a run folder (`run_files`) and how the recipes write and read them:
results JSON (`tidy`, `write_json`, `read_json`, atomically through
`kerasrnn.callbacks.atomic_path`), the best model and the vocabularies."""

import hashlib
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
    from kerasrnn.callbacks import write_json_atomically

    write_json_atomically(path, tidy(data), default=jsonable)


def jsonable(value):
    """`json.dump`'s `default`: numpy scalars and arrays as lists."""
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def read_json(path, keys=(), kind=(dict, list)):
    """A JSON file of a run: an object or array of the types `kind`, an object with its
    `keys`; a missing one says to run `train` first.

    Raises:
        RecipeError: a damaged file (not JSON, truncated, not of `kind`, a key of `keys`
            missing): one line naming the file and what is wrong.
    """
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


def save_model(model, path):
    """`model.save(path)` (a ``.keras`` file), atomically."""
    from kerasrnn.callbacks import save_model_atomically

    save_model_atomically(model, path)


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


def load_vocabulary(config, filename):
    """A vocabulary file that `train` saved in the run folder."""
    return read_vocabulary(os.path.join(config["output_dir"], filename))


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


def load_best_model(config, former=()):
    """The best checkpoint of a run (custom kerasrnn layers are registered). A file that
    does not load and was saved from a model class in `former` (a recipe's earlier
    layout) is a `RecipeError` that says to retrain."""
    path = run_files(config)["best"]
    if not os.path.exists(path):
        raise FileNotFoundError(f"no trained model at {path}; run `train` first.")
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            broken = archive.testzip()
            saved = json.loads(archive.read("config.json")).get("class_name")
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, AttributeError) as error:
        raise RecipeError(
            f"{path} is damaged: not a complete .keras archive ({error}); train the run "
            "again (or --continue it, which writes a new one)."
        ) from None
    if broken is not None:
        raise RecipeError(f"{path} is damaged: {broken} fails its checksum; train the run again.")
    try:
        import warnings

        import keras

        with warnings.catch_warnings():
            if config.get("freeze_embeddings"):
                # the rebuilt model's embedding is trainable again (its frozen state is
                # the recipe's, not the layer config's), so Keras finds more optimizer
                # slots than were saved; a loaded best model only predicts
                warnings.filterwarnings("ignore", "Skipping variable loading for optimizer")
            return keras.saving.load_model(path)
    except Exception:
        if saved not in former:
            raise
    raise RecipeError(
        f"{path} was saved by an earlier version of this recipe (a {saved}) and cannot "
        f"be loaded by this one: retrain it with the same options, e.g. `train --config "
        f"{run_files(config)['config']} --output-dir NEW_FOLDER`."
    )


# What the training flow rewrites as it goes (checked otherwise: a .keras archive's own
# checksums, JSON parsing); every other file in the run folder after `prepare` (the
# vocabularies, labels, tag lists) is fixed for the run and goes into manifest.json.
_CHANGING = {"config.json", "manifest.json", "best.keras", "last.weights.h5", "history.json"}
_CHANGING |= {"results.json", "training_curves.png", "evaluation.json", "demo.json", ".lock"}


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_manifest(config):
    """Writes ``manifest.json``: the size and SHA-256 of each file that `prepare` left
    in the run folder (the vocabularies, subword models, labels, tag lists), so that a
    reader tells a truncated or edited one (`check_manifest`) from a good one."""
    out = config["output_dir"]
    files = {}
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        if (
            name in _CHANGING
            or name.startswith(".")
            or ".partial" in name  # a checkpoint write a kill cut short
            or not name.endswith((".txt", ".json", ".model"))
            or not os.path.isfile(path)
        ):
            continue
        files[name] = {"bytes": os.path.getsize(path), "sha256": _digest(path)}
    write_json(os.path.join(out, "manifest.json"), {"files": files})


def check_manifest(output_dir):
    """Raises a `RecipeError` naming the first file of ``manifest.json`` that is
    missing or differs from what training wrote (a run without a manifest passes)."""
    path = os.path.join(output_dir, "manifest.json")
    if not os.path.exists(path):
        return
    files = read_json(path, keys=("files",), kind=dict)["files"]
    if not isinstance(files, dict):
        raise RecipeError(f"{path} is damaged: 'files' is not an object.")
    for name, expected in files.items():
        target = os.path.join(output_dir, name)
        if not isinstance(expected, dict) or not {"bytes", "sha256"} <= set(expected):
            raise RecipeError(f"{path} is damaged: the entry of {name!r} lacks bytes / sha256.")
        if not os.path.isfile(target):
            raise RecipeError(f"{target} is missing from the run (train the run again).")
        size = os.path.getsize(target)
        if size != expected["bytes"] or _digest(target) != expected["sha256"]:
            change = "truncated" if size < expected["bytes"] else "changed"
            raise RecipeError(
                f"{target} is damaged: {change} since training ({size} bytes, training "
                f"wrote {expected['bytes']}); restore it or train the run again."
            )
