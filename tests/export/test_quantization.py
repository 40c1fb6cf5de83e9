"""Quantised exports: LiteRT dynamic-range int8 and float16. Each quantised file is
smaller than the float32 one, runs in the plain interpreter (builtin ops only), and
reproduces Keras within the quantisation's error, without being identical to it.

Units 64 so that the weights, not the graph, make up most of the file: the size ratios
then measure the weights' storage."""

import os

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.export import export_litert

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="exports a TensorFlow graph"
)
interpreter = pytest.importorskip("ai_edge_litert.interpreter")

BATCH, TIME, FEATURES, UNITS = 2, 5, 8, 64

CELLS = {"lstm": kerasrnn.LSTMCell, "gru": kerasrnn.GRUCell}

# Largest output error: int8 weights carry a relative error up to 1/254 of each output
# channel's largest weight, summed over 72 inputs into outputs of magnitude ~1 (measured
# ~3e-3); float16 weights carry 2**-11 relative error (measured ~2e-4).
TOLERANCES = {"dynamic_int8": 0.05, "float16": 1e-2}
# The file's size over the float32 file's: int8 stores a quarter of the weights' bytes,
# float16 half; the graph and the per-channel scales add the rest.
RATIOS = {"dynamic_int8": 0.5, "float16": 0.6}


@pytest.fixture(scope="module")
def models():
    keras.utils.set_random_seed(0)
    x = 2 * np.random.default_rng(0).normal(size=(BATCH, TIME, FEATURES)).astype("float32")
    built = {}
    for name, cell in CELLS.items():
        inputs = keras.Input((None, FEATURES), name="x")
        outputs = keras.layers.RNN(cell(UNITS), return_sequences=True)(inputs)
        model = keras.Model(inputs, outputs)
        built[name] = model, x, model.predict(x, verbose=0)
    return built


def _litert(model, x, path, quantization):
    export_litert(model, path, BATCH, TIME, quantization=quantization)
    # the plain interpreter: a Select TensorFlow (Flex) op would fail to load here
    runner = interpreter.Interpreter(model_path=str(path)).get_signature_runner()
    return runner(x=x)["output_0"]


@pytest.mark.parametrize("quantization", ["dynamic_int8", "float16"])
@pytest.mark.parametrize("cell", list(CELLS))
def test_litert_quantized_smaller_and_close(cell, quantization, models, tmp_path):
    model, x, expected = models[cell]
    _litert(model, x, tmp_path / "float32.tflite", None)
    outputs = _litert(model, x, tmp_path / "quantized.tflite", quantization)
    ratio = os.path.getsize(tmp_path / "quantized.tflite") / os.path.getsize(
        tmp_path / "float32.tflite"
    )
    assert ratio <= RATIOS[quantization]
    error = np.max(np.abs(outputs - expected))
    assert np.max(np.abs(expected)) > 0.2  # outputs large enough for the tolerance to mean it
    assert 1e-6 < error < TOLERANCES[quantization]  # close, but really quantised


@pytest.mark.parametrize("quantization", ["int8", "float32", True])
def test_litert_rejects_unknown_quantization(quantization, models, tmp_path):
    model = models["gru"][0]
    with pytest.raises(ValueError, match=r"quantization=.*'dynamic_int8', 'float16'"):
        export_litert(model, tmp_path / "m.tflite", BATCH, TIME, quantization=quantization)
    assert not (tmp_path / "m.tflite").exists()
