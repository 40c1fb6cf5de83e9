"""`export_litert`'s fused LSTM (`kerasrnn.export.litert_lstm`): standard LSTM layers
become LiteRT's `UNIDIRECTIONAL_SEQUENCE_LSTM` (no `WHILE` left), equal to Keras'
`model.predict` within 1e-5 on masked input of any padding, `go_backwards`,
`Bidirectional`, `RNNStack`, learned initial states, at every call of the same
interpreter (the kernel's states start from the layer's initial state each time); the
other layers keep the builtin `WHILE`; `native_recurrences=False` keeps it for all."""

import logging
import os

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.export import export_litert, litert_lstm
from tests.export.conftest import BATCH, FEATURES, TIME, UNITS, assert_outputs_equal, built

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="exports a TensorFlow graph"
)
interpreter = pytest.importorskip("ai_edge_litert.interpreter")

FUSED = "UNIDIRECTIONAL_SEQUENCE_LSTM"


def _masked_ids():
    """Token ids, 0 = padding: a full row, right padding, left padding, holes and a row of
    padding only (Keras' masked step keeps the state whatever the pattern)."""
    ids = np.random.default_rng(3).integers(1, 10, size=(5, TIME)).astype("int32")
    ids[1, 3:] = 0
    ids[2, :2] = 0
    ids[3, [1, 3]] = 0
    ids[4] = 0
    return ids


def _masked_model():
    """Every way a standard LSTM layer sits in a model, over one masked input: 8 kernels."""
    ids = keras.Input((None,), dtype="int32", name="ids")
    x = keras.layers.Embedding(10, FEATURES, mask_zero=True)(ids)
    outputs = [
        keras.layers.LSTM(UNITS)(x),  # the final output: after each row's last real step
        kerasrnn.RNN(kerasrnn.LSTMCell(UNITS), go_backwards=True, return_sequences=True)(x),
        keras.layers.Bidirectional(kerasrnn.RNN(kerasrnn.LSTMCell(UNITS), return_sequences=True))(
            x
        ),  # zero_output_for_mask on both directions
        kerasrnn.RNNStack(
            kerasrnn.LSTMCell(UNITS), num_layers=2, bidirectional=True, residual=True
        )(x),
    ]
    return keras.Model(ids, outputs), [_masked_ids()]


def _float_model():
    """Unmasked floats: Keras' own cell without a bias, a learned initial state and two
    layers reading the same input (their kernels' states must stay apart): 3 kernels."""
    x = keras.Input((None, FEATURES), name="x")
    learned = kerasrnn.LSTMCell(
        UNITS, learn_initial_state=True, initial_state_initializer="random_normal"
    )
    outputs = [
        keras.layers.RNN(keras.layers.LSTMCell(UNITS, use_bias=False), return_sequences=True)(x),
        kerasrnn.RNN(learned, return_sequences=True)(x),
        keras.layers.LSTM(UNITS, go_backwards=True)(x),
    ]
    inputs = np.random.default_rng(4).normal(size=(BATCH, TIME, FEATURES)).astype("float32")
    return keras.Model(x, outputs), [inputs]


def _run(model, inputs, path, **options):
    """(op names of the written file, its outputs at two calls, Keras' outputs)."""
    export_litert(model, path, len(inputs[0]), TIME, **options)
    loaded = interpreter.Interpreter(model_path=str(path))
    ops = [op["op_name"] for op in loaded._get_ops_details()]
    runner = loaded.get_signature_runner()
    feed = {spec.name: x for spec, x in zip(model.inputs, inputs)}
    calls = []
    for _ in range(2):
        results = runner(**feed)
        calls.append([results[f"output_{i}"] for i in range(len(model.outputs))])
    expected = model.predict(inputs[0] if len(inputs) == 1 else inputs, verbose=0)
    return ops, calls, [np.asarray(e) for e in keras.tree.flatten(expected)]


@pytest.mark.large
@pytest.mark.parametrize(
    "build, kernels", [(_masked_model, 8), (_float_model, 3)], ids=["masked", "unmasked"]
)
def test_standard_lstms_become_fused_kernels_equal_to_keras(build, kernels, tmp_path):
    keras.utils.set_random_seed(5)
    model, inputs = build()
    ops, calls, expected = _run(model, inputs, tmp_path / "model.tflite")
    assert ops.count(FUSED) == kernels
    assert "WHILE" not in ops
    for outputs in calls:  # the second call starts from the initial state again
        assert_outputs_equal(outputs, expected)


def test_native_recurrences_false_keeps_the_while_loop(tmp_path):
    keras.utils.set_random_seed(5)
    model, inputs = _float_model()
    ops, calls, expected = _run(model, inputs, tmp_path / "m.tflite", native_recurrences=False)
    assert FUSED not in ops and ops.count("WHILE") == 3
    assert_outputs_equal(calls[1], expected)


class _OwnRNN(keras.layers.RNN):
    """A subclass of keras.layers.RNN: it may run its own step, so it keeps its loop."""


# Which layers become the fused kernel (`fusable_lstm_cell`: the standard LSTMs of
# `kerasrnn.cells.recurrence_spec` in keras.layers.RNN / LSTM / kerasrnn.RNN, without
# peepholes, held directly, float32, neither return_state nor stateful).
FUSABLE = {
    "lstm": (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(UNITS), go_backwards=True), True),
    "lstm-unrolled": (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(UNITS), unroll=True), True),
    "lstm-recurrent-dropout": (  # it acts in training only
        lambda: kerasrnn.RNN(kerasrnn.LSTMCell(UNITS, recurrent_dropout=0.3)),
        True,
    ),
    "keras-lstm": (lambda: keras.layers.LSTM(UNITS), True),
    "keras-lstm-cell": (lambda: keras.layers.RNN(keras.layers.LSTMCell(UNITS)), True),
    "gru": (lambda: kerasrnn.RNN(kerasrnn.GRUCell(UNITS)), False),
    "keras-gru": (lambda: keras.layers.GRU(UNITS), False),
    "peephole": (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(UNITS, peephole=True)), False),
    "return-state": (lambda: keras.layers.LSTM(UNITS, return_state=True), False),
    "stateful": (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(UNITS), stateful=True), False),
    "mixed-precision": (lambda: keras.layers.LSTM(UNITS, dtype="mixed_bfloat16"), False),
    "weight-drop": (
        lambda: kerasrnn.RNN(kerasrnn.layers.WeightDrop(kerasrnn.LSTMCell(UNITS), rate=0.5)),
        False,
    ),
    "rnn-subclass": (lambda: _OwnRNN(kerasrnn.LSTMCell(UNITS)), False),
    "coupled": (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(UNITS, coupled=True)), False),
}


@pytest.mark.parametrize("name", list(FUSABLE))
def test_which_layers_become_fused_kernels(name):
    make_layer, fused = FUSABLE[name]
    layer = make_layer()
    cell = litert_lstm.fusable_lstm_cell(layer)
    assert cell is (layer.cell if fused else None)


def test_cell_state_is_not_clipped(tmp_path):
    """The converter writes the kernel with a cell clip of 10; Keras has none. Thirty
    saturated steps take c_t to ~30, then a half-open forget gate halves it: clipped,
    the outputs would be off by up to 0.43."""
    layer = keras.layers.LSTM(1, return_sequences=True)
    x = keras.Input((None, 1), name="x")
    model = keras.Model(x, layer(x))
    # gates i, f, c, o: input x = +1 opens i, f and the candidate; x = -1 closes i and
    # leaves f at sigmoid(0) = 1/2; o stays open
    kernel = np.array([[10.0, 5.0, 10.0, 0.0]], "float32")
    bias = np.array([0.0, 5.0, 0.0, 10.0], "float32")
    layer.cell.set_weights([kernel, np.zeros((1, 4), "float32"), bias])
    inputs = np.ones((1, 40, 1), "float32")
    inputs[:, 30:] = -1.0
    export_litert(model, tmp_path / "m.tflite", 1, 40)
    runner = interpreter.Interpreter(model_path=str(tmp_path / "m.tflite"))
    actual = runner.get_signature_runner()(x=inputs)["output_0"]
    expected = model.predict(inputs, verbose=0)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
    # the same LSTM with c_t clipped to [-10, 10] is far from Keras' here
    assert np.abs(_clipped_lstm(inputs[0, :, 0], kernel[0], bias) - expected[0, :, 0]).max() > 0.1


def _clipped_lstm(x, kernel, bias):
    """A one-unit LSTM without recurrent weights whose cell state is clipped at +-10."""
    sigmoid = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    c, outputs = 0.0, []
    for x_t in x:
        i, f, g, o = x_t * kernel + bias
        c = np.clip(sigmoid(f) * c + sigmoid(i) * np.tanh(g), -10, 10)
        outputs.append(sigmoid(o) * np.tanh(c))
    return np.array(outputs)


def test_dynamic_int8_quantises_the_fused_kernels(tmp_path):
    keras.utils.set_random_seed(5)
    x = keras.Input((None, 8), name="x")
    model = keras.Model(x, kerasrnn.RNN(kerasrnn.LSTMCell(64), return_sequences=True)(x))
    inputs = 2 * np.random.default_rng(0).normal(size=(BATCH, TIME, 8)).astype("float32")
    float32, int8 = tmp_path / "float32.tflite", tmp_path / "int8.tflite"
    ops, calls, expected = _run(model, [inputs], int8, quantization="dynamic_int8")
    export_litert(model, float32, BATCH, TIME)
    assert FUSED in ops and "WHILE" not in ops
    # the four 64 x 64 recurrent matrices as int8: well under half the float32 file
    assert os.path.getsize(int8) < 0.5 * os.path.getsize(float32)
    error = np.abs(calls[0][0] - expected[0]).max()
    assert 1e-6 < error < 0.05  # quantised, within int8's error (test_quantization.py)


def test_a_failed_fusion_falls_back_to_the_loop(monkeypatch, tmp_path, caplog):
    def refuse(flatbuffer, layers):
        raise litert_lstm.FusionError("a fused LSTM's state operand is a constant or shared")

    monkeypatch.setattr("kerasrnn.export.litert.finished_fused_lstms", refuse)
    model, inputs, expected = built("kerasrnn_rnn_fast_lstm")
    with caplog.at_level(logging.WARNING, logger="kerasrnn.export"):
        ops, calls, _ = _run(model, inputs, tmp_path / "m.tflite")
    assert FUSED not in ops and "WHILE" in ops
    assert_outputs_equal(calls[1], expected)
    assert "fused LSTM failed (a fused LSTM's state operand" in caplog.text
