"""Helpers of the library-task tests: a `.keras` file loaded in a fresh process that
imports only kerasrnn, and a SavedModel export reloaded with TensorFlow."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

_LOADER = """
import json, sys
import numpy as np
import keras
import kerasrnn  # noqa: F401 (all a .keras file of a library task needs)
path, inputs, out = sys.argv[1:]
model = keras.saving.load_model(path)
inputs = {k: np.array(v, "int32") for k, v in json.loads(inputs).items()}
outputs = model.predict(inputs if len(inputs) > 1 else inputs["x"], verbose=0)
outputs = outputs if isinstance(outputs, dict) else {"y": outputs}
np.savez(out, **outputs)
"""


def _load_in_fresh_process(path, inputs, tmp_path):
    """`keras.saving.load_model(path)` in a new Python that imports only keras and
    kerasrnn, and its predictions on `inputs` (an array, or a dict of arrays)."""
    named = inputs if isinstance(inputs, dict) else {"x": inputs}
    out = str(tmp_path / "outputs.npz")
    lists = {k: np.asarray(v).tolist() for k, v in named.items()}
    env = dict(os.environ, PYTHONPATH=os.getcwd(), TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run(
        [sys.executable, "-c", _LOADER, str(path), json.dumps(lists), out],
        check=True,
        env=env,
        capture_output=True,
    )
    with np.load(out) as stored:
        return {k: stored[k] for k in stored.files}


def _saved_model_outputs(model, inputs, tmp_path):
    """`model.export` as a TensorFlow SavedModel, reloaded with `tf.saved_model.load`,
    called on `inputs`."""
    import tensorflow as tf

    path = str(tmp_path / "saved_model")
    model.export(path, format="tf_saved_model", verbose=False)
    loaded = tf.saved_model.load(path)  # kept alive: `serve` holds weak references
    served = loaded.serve
    if isinstance(inputs, dict):
        result = served({k: tf.constant(v, tf.int32) for k, v in inputs.items()})
    else:
        result = served(tf.constant(inputs, tf.int32))
    return keras.tree.map_structure(np.asarray, result)


@pytest.fixture
def load_in_fresh_process():
    """`_load_in_fresh_process(path, inputs, tmp_path)` -> {name: array}."""
    return _load_in_fresh_process


@pytest.fixture
def saved_model_outputs():
    """`_saved_model_outputs(model, inputs, tmp_path)` -> the reloaded export's outputs;
    skipped off the TensorFlow backend (a SavedModel is TensorFlow's)."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("SavedModel export needs the TensorFlow backend")
    return _saved_model_outputs
