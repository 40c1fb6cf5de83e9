"""Quantised exports: LiteRT dynamic-range int8 and float16, ONNX dynamic int8. Each
quantised file is smaller than the float32 one, runs in its runtime (LiteRT: the plain
interpreter, builtin ops only), and reproduces Keras within the quantisation's error,
without being identical to it.

Units 64 so that the weights, not the graph, make up most of the file: the size ratios
then measure the weights' storage."""

import os

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.export import export_litert, export_onnx

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="exports a TensorFlow graph"
)
interpreter = pytest.importorskip("ai_edge_litert.interpreter")
onnxruntime = pytest.importorskip("onnxruntime")

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


def _onnx(model, x, path, quantization):
    # the float32 file has the graph of the quantised one: the native LSTM operator
    # (quantised as DynamicQuantizeLSTM), a GRU's Loop (onnxruntime has no int8 GRU)
    gru = isinstance(model.layers[-1].cell, kerasrnn.GRUCell)
    export_onnx(model, path, quantization=quantization, native_recurrences=not gru)
    if quantization is not None:
        import onnx

        operators = {node.op_type for node in onnx.load(str(path)).graph.node}
        assert ("DynamicQuantizeLSTM" in operators) is not gru
    session = onnxruntime.InferenceSession(str(path))
    return session.run(None, {session.get_inputs()[0].name: x})[0]


RUNTIMES = {"litert": (_litert, ".tflite"), "onnx": (_onnx, ".onnx")}


@pytest.mark.parametrize(
    "runtime, quantization",
    [("litert", "dynamic_int8"), ("litert", "float16"), ("onnx", "dynamic_int8")],
)
@pytest.mark.parametrize("cell", list(CELLS))
def test_quantized_smaller_and_close(cell, runtime, quantization, models, tmp_path):
    model, x, expected = models[cell]
    run, suffix = RUNTIMES[runtime]
    float32, quantized = tmp_path / f"float32{suffix}", tmp_path / f"quantized{suffix}"
    run(model, x, float32, None)
    outputs = run(model, x, quantized, quantization)
    ratio = os.path.getsize(quantized) / os.path.getsize(float32)
    assert ratio <= RATIOS[quantization]
    error = np.max(np.abs(outputs - expected))
    assert np.max(np.abs(expected)) > 0.2  # outputs large enough for the tolerance to mean it
    assert 1e-6 < error < TOLERANCES[quantization]  # close, but really quantised


@pytest.mark.parametrize(
    "export, quantization, allowed",
    [
        (export_litert, "int8", "None, 'dynamic_int8', 'float16'"),
        (export_litert, True, "None, 'dynamic_int8', 'float16'"),
        # ONNX has no float16 option: onnxruntime's CPU kernels compute in float32
        (export_onnx, "float16", "None, 'dynamic_int8'"),
    ],
)
def test_rejects_unknown_quantization(export, quantization, allowed, models, tmp_path):
    with pytest.raises(ValueError, match=f"quantization={quantization!r}.*{allowed}"):
        export(models["gru"][0], tmp_path / "model", quantization=quantization)
    assert not (tmp_path / "model").exists()
