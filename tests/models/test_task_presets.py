"""`Task.save_to_preset` / `Task.from_preset`: every task comes back with its
preprocessor and compilation and gives the original's outputs on text; a folder that
holds no loadable preset of the task asked for is a one-line `PresetError`."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasrnn import decoding
from kerasrnn.models import PresetError, SequenceTagger, Task, TextClassifier
from kerasrnn.models.preset import PRESET_FILE, TASK_FILE
from tests.tiny_tasks import BUILDERS, TOKENS

TEXTS = ["a good film", "Zebra dull", ""]
PAIRS = {"sentence_a": TEXTS, "sentence_b": TEXTS[::-1]}


def _outputs(task):
    """The task's text outputs, eagerly (no tracing): what its SavedModel serves."""
    name = type(task).__name__
    if name in ("TextClassifier", "SequenceTagger", "PairClassifier"):
        if name == "SequenceTagger":
            inputs = [tf.constant([s + [""] * (6 - len(s)) for s in TOKENS])]
        elif name == "PairClassifier":
            inputs = [tf.constant(PAIRS["sentence_a"]), tf.constant(PAIRS["sentence_b"])]
        else:
            inputs = [tf.constant(TEXTS)]
        return {k: np.asarray(v) for k, v in task.text_outputs(*inputs).items()}
    settings = dict(
        strategy=decoding.BeamSearch(2),
        max_length=5,
        readout_dtype="float32",
        jit_compile=False,
        fusion=None,
    )
    strings, scores = task.decode_texts(tf.constant(TEXTS), settings)
    return {"strings": np.asarray(strings), "scores": np.asarray(scores)}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_a_preset_round_trip_gives_the_originals_outputs(name, tmp_path):
    task = BUILDERS[name]()
    generative = name in ("Seq2Seq", "LanguageModel")
    sampler = {"sampler": decoding.BeamSearch(3, n_best=1)} if generative else {}
    task.compile(optimizer=keras.optimizers.SGD(0.25), **sampler)
    assert task.save_to_preset(tmp_path / "preset") == str(tmp_path / "preset")
    preset = json.loads((tmp_path / "preset" / PRESET_FILE).read_text())
    assert preset["task"] == f"kerasrnn>{name}" and preset["file"] == TASK_FILE
    assert preset["keras_version"] == keras.__version__
    loaded = type(task).from_preset(tmp_path / "preset")
    assert type(loaded) is type(task)
    assert loaded.preprocessor.get_config() == task.preprocessor.get_config()
    want, got = _outputs(task), _outputs(loaded)
    assert sorted(got) == sorted(want)
    for key in want:
        if want[key].dtype.kind in "SUO":
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)
        else:
            np.testing.assert_allclose(got[key], want[key], atol=1e-6, err_msg=key)
    # the compilation it was saved with, and the default decoding strategy
    assert isinstance(loaded.optimizer, keras.optimizers.SGD)
    np.testing.assert_allclose(float(loaded.optimizer.learning_rate), 0.25)
    if sampler:
        assert loaded.sampler.get_config() == sampler["sampler"].get_config()
    # the base class loads any task; compile=False gives an uncompiled one
    uncompiled = Task.from_preset(tmp_path / "preset", compile=False)
    assert type(uncompiled) is type(task) and loaded.compiled and not uncompiled.compiled


@pytest.fixture(scope="module")
def tagger_preset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("presets") / "tagger"
    BUILDERS["SequenceTagger"]().save_to_preset(folder)
    return folder


def _one_line_error(folder, match, task=TextClassifier):
    with pytest.raises(PresetError, match=match) as error:
        task.from_preset(folder)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_preset_errors_name_the_folder_and_the_fix(tmp_path, tagger_preset):
    _one_line_error(tmp_path / "nowhere", "no preset folder at")
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line_error(empty, "is not a kerasrnn preset .no preset.json.")
    # a run folder of kerasrnn 0.1.0: a config.json, no preset.json
    old = tmp_path / "old_run"
    old.mkdir()
    (old / "config.json").write_text("{}")
    (old / "best.keras").write_text("")
    message = _one_line_error(old, "it is a run folder written by kerasrnn 0.1.0")
    assert "train it again" in message and str(old / "config.json") in message
    # another task's preset
    message = _one_line_error(tagger_preset, "holds a SequenceTagger, not a TextClassifier")
    assert "kerasrnn.models.SequenceTagger.from_preset" in message
    assert isinstance(SequenceTagger.from_preset(tagger_preset), SequenceTagger)


def test_damaged_and_newer_presets_are_one_line_errors(tmp_path, tagger_preset):
    import shutil

    folder = tmp_path / "preset"
    shutil.copytree(tagger_preset, folder)
    index = folder / PRESET_FILE
    good = json.loads(index.read_text())
    index.write_text("{not json")
    _one_line_error(folder, "preset.json is damaged .* write the preset again", SequenceTagger)
    index.write_text(json.dumps({"task": good["task"]}))
    _one_line_error(folder, r"is damaged: it lacks \['file'\]", SequenceTagger)
    index.write_text(json.dumps(dict(good, format=good["format"] + 1, kerasrnn_version="9.0")))
    _one_line_error(folder, "written by kerasrnn 9.0, whose preset format is newer", SequenceTagger)
    for written in ("1", None, 1.5, True):
        index.write_text(json.dumps(dict(good, format=written)))
        _one_line_error(folder, "its format is .*, not a whole number", SequenceTagger)
    index.write_text(json.dumps(dict(good, file="gone.keras")))
    _one_line_error(folder, "names gone.keras, which is missing", SequenceTagger)
    assert issubclass(PresetError, ValueError)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_frozen_layers_stay_frozen_and_nothing_else_does(name, tmp_path):
    from kerasrnn._private import keras_nested_layers

    task = BUILDERS[name]()
    layers = keras_nested_layers(task.backbone)
    frozen = next(layer for layer in layers if "embedding" in layer.name and layer.weights)
    frozen.trainable = False
    trainable = [(type(layer), layer.trainable) for layer in layers]
    count = len(task.trainable_weights)
    task.compile(optimizer="sgd")
    loaded = type(task).from_preset(task.save_to_preset(tmp_path / "preset"))
    got = [(type(layer), layer.trainable) for layer in keras_nested_layers(loaded.backbone)]
    assert got == trainable and not got[layers.index(frozen)][1]
    assert len(loaded.trainable_weights) == count < len(BUILDERS[name]().trainable_weights)
