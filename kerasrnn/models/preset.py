"""Preset folders: a trained task (its backbone, head and preprocessor) in one folder
that `Task.from_preset` loads and `Task.save_to_preset` writes.

A preset is a folder with ``preset.json``, which names the task class, the package
versions that wrote it and the task's `.keras` file in the folder (``task.keras`` for
`save_to_preset`; a recipe's run folder names its ``best.keras``). The `.keras` file
holds the whole task, the preprocessor's vocabularies included, so loading it needs
nothing else of the folder.

Why not keras-hub's preset layout: it keeps the backbone's config in ``config.json``,
which a recipe's run folder uses for the options it was trained with; and a kerasrnn
task's preprocessor is part of its `.keras` file, so one file and a small index are
all a folder needs.
"""

import importlib.metadata
import json
import os

import keras

PRESET_FILE = "preset.json"
TASK_FILE = "task.keras"
PRESET_FORMAT = 1


def installed_version():
    """The version of the installed kerasrnn distribution ("0+unknown" for a source
    tree that is not installed)."""
    try:
        return importlib.metadata.version("kerasrnn")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def write_preset_file(folder, task_class, model_file=TASK_FILE):
    """Writes `folder`/preset.json for a task of `task_class` saved as `model_file`
    (a `.keras` file in `folder`), atomically."""
    from kerasrnn.callbacks import write_json_atomically

    write_json_atomically(
        os.path.join(os.fspath(folder), PRESET_FILE),
        {
            "format": PRESET_FORMAT,
            "task": keras.saving.get_registered_name(task_class),
            "file": model_file,
            "kerasrnn_version": installed_version(),
            "keras_version": keras.__version__,
        },
    )


def save_preset(task, folder):
    """Writes `task` (`.keras`, with its preprocessor) and preset.json into `folder`."""
    from kerasrnn.callbacks import save_model_atomically

    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    optimizer = getattr(task, "optimizer", None)
    if task.built and optimizer is not None and not optimizer.built:
        # `from_preset` builds the loaded optimizer; an untrained task's unbuilt one
        # would be saved without its slots and Keras would skip loading it, warning.
        optimizer.build(task.trainable_variables)
    save_model_atomically(task, os.path.join(folder, TASK_FILE))
    write_preset_file(folder, type(task), TASK_FILE)
    return folder


class PresetError(ValueError):
    """A folder that holds no loadable preset of the task asked for (one line: the
    folder, what is wrong, the fix)."""


def read_preset(folder):
    """The checked contents of `folder`/preset.json."""
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise PresetError(f"no preset folder at {folder!r}.")
    path = os.path.join(folder, PRESET_FILE)
    if not os.path.exists(path):
        if os.path.exists(os.path.join(folder, "config.json")):
            raise PresetError(
                f"{folder} has no {PRESET_FILE}: it is a run folder written by kerasrnn "
                "0.1.0 (or a run that has not finished training); train it again with "
                f"kerasrnn {installed_version()}, e.g. `kerasrnn RECIPE train --config "
                f"{os.path.join(folder, 'config.json')} --output-dir NEW_FOLDER`."
            )
        raise PresetError(
            f"{folder} is not a kerasrnn preset (no {PRESET_FILE}): give a folder that "
            "Task.save_to_preset or a recipe's train wrote."
        )
    try:
        with open(path, encoding="utf-8") as file:
            preset = json.load(file)
    except ValueError as error:
        raise PresetError(f"{path} is damaged ({error}); write the preset again.") from None
    missing = [key for key in ("task", "file") if not isinstance(preset, dict) or key not in preset]
    if missing:
        raise PresetError(f"{path} is damaged: it lacks {missing}; write the preset again.")
    model_file, written_format = preset["file"], preset.get("format", PRESET_FORMAT)
    if not isinstance(written_format, int) or isinstance(written_format, bool):
        raise PresetError(
            f"{path} is damaged: its format is {written_format!r}, not a whole number; "
            "write the preset again."
        )
    if written_format > PRESET_FORMAT:
        raise PresetError(
            f"{folder} was written by kerasrnn {preset.get('kerasrnn_version')}, whose "
            f"preset format is newer than this kerasrnn {installed_version()} reads: "
            "upgrade kerasrnn."
        )
    if not os.path.exists(os.path.join(folder, model_file)):
        raise PresetError(
            f"{folder}: {PRESET_FILE} names {model_file}, which is missing; write the "
            "preset again (or finish the run's training)."
        )
    return dict(preset, path=os.path.join(folder, model_file))


def load_preset(folder, cls, compile=True):
    """The task saved in preset `folder`, which must be a `cls` (a task class, or
    `kerasrnn.models.Task` for any)."""
    preset = read_preset(folder)
    found = keras.saving.get_registered_object(preset["task"])
    if found is None or not issubclass(found, cls):
        name = preset["task"].split(">")[-1]
        raise PresetError(
            f"{os.fspath(folder)} holds a {name}, not a {cls.__name__}: load it with "
            f"kerasrnn.models.{name}.from_preset."
        )
    return keras.saving.load_model(preset["path"], compile=compile)
