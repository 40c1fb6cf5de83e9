"""The files of a run folder (`run_files`) and how the recipes write and read them:
results JSON (`tidy`, `write_json`, `read_json`, atomically through
`kerasrnn.callbacks.atomic_path`), the best model and the vocabularies."""

import json
import math
import os

from recipes.config import RecipeError, load_config


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


def read_json(path):
    """A JSON file of a run; a missing one says to run `train` first."""
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
        import keras

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
