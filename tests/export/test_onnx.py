"""`export_onnx`: every case of the matrix (tests/export/conftest.py) exported and run by
onnxruntime, equal to Keras' `model.predict` within 1e-5."""

import re

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.export import export_onnx
from tests.export.conftest import (
    BATCH,
    CASES,
    CELLS,
    REFUSED,
    assert_outputs_equal,
    built,
    case_outputs,
    model_key,
)

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="exports a TensorFlow graph"
)
onnxruntime = pytest.importorskip("onnxruntime")


def _onnx_session(model, inputs, stem):
    lengths = [x.shape[1] for x in inputs]  # the fixed shape, if the LiteRT route runs
    path = export_onnx(model, stem.with_suffix(".onnx"), batch_size=BATCH, sequence_length=lengths)
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.mark.large
@pytest.mark.parametrize("case", CASES)
def test_onnxruntime_equals_keras(case, exported):
    model, inputs, expected = built(model_key(case))
    session = exported(model_key(case), _onnx_session)
    feed = {spec.name: x for spec, x in zip(session.get_inputs(), inputs)}
    actual = session.run(None, feed)
    assert_outputs_equal(case_outputs(case, actual), case_outputs(case, expected))
    if case == "masked_go_backwards":
        # the batch and time dimensions stay dynamic: another shape, same file
        ids = np.array([[3, 1, 4, 1, 5, 9, 2], [6, 5, 0, 0, 0, 0, 0], [2, 7, 1, 0, 0, 0, 0]])
        ids = ids.astype("int32")
        feed = {session.get_inputs()[0].name: ids}
        (got,) = session.run(None, feed)
        np.testing.assert_allclose(got, model.predict(ids, verbose=0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_unsupported_layer_is_refused(kind, tmp_path):
    build, layer = REFUSED[kind]
    with pytest.raises(ValueError, match=rf"^layer {re.escape(layer)} cannot be exported to ONNX:"):
        export_onnx(build(), tmp_path / "model.onnx")
    assert not list(tmp_path.iterdir())  # refused before anything is written


class RunningSum(keras.layers.Layer):
    """A running sum over time by `keras.ops.scan`, whose carry TensorFlow keeps in a
    one-element TensorArray that tf2onnx cannot map: a model for the second route."""

    def call(self, x):
        steps = keras.ops.moveaxis(x, 1, 0)
        _, sums = keras.ops.scan(lambda c, x_t: (c + x_t, c + x_t), steps[0] * 0, steps)
        return keras.ops.moveaxis(sums, 0, 1)


def test_a_loop_tf2onnx_cannot_map_goes_through_the_litert_graph(tmp_path, caplog):
    inputs = keras.Input((None, 3), name="x")
    model = keras.Model(inputs, RunningSum(name="sums")(inputs))
    # the route through the LiteRT graph needs the length the model leaves dynamic
    with pytest.raises(ValueError, match=r"dynamic time dimension.*pass sequence_length=N"):
        export_onnx(model, tmp_path / "dynamic.onnx")
    path = export_onnx(model, tmp_path / "sums.onnx", batch_size=2, sequence_length=5)
    notes = [r.getMessage() for r in caplog.records if r.name == "kerasrnn.export"]
    assert len(notes) == 1 and "ONNX through the LiteRT graph (fixed shapes)" in notes[0]
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, np.cumsum(x, axis=1), atol=1e-5)


def _native_model():
    """The standard LSTM and GRU layers ONNX writes as its `LSTM` / `GRU` operators, over
    one masked input: outputs carried over the padding (Keras' default) and zeroed
    (`zero_output_for_mask`), `go_backwards`, states, Keras' and kerasrnn's cells, a
    Bidirectional (one bidirectional operator) and a bidirectional residual stack."""
    ids = keras.Input((None,), dtype="int32", name="ids")
    x = keras.layers.Embedding(10, 3, mask_zero=True)(ids)
    bias = {"bias_initializer": "random_normal"}  # the gate blocks' order shows
    outputs = [
        *kerasrnn.RNN(kerasrnn.LSTMCell(4, **bias), return_sequences=True, return_state=True)(x),
        *kerasrnn.RNN(
            kerasrnn.GRUCell(4, reset_after=False, **bias),
            go_backwards=True,
            return_sequences=True,
            return_state=True,
        )(x),
        keras.layers.LSTM(4, return_sequences=True, zero_output_for_mask=True, **bias)(x),
        keras.layers.Bidirectional(
            kerasrnn.RNN(kerasrnn.LSTMCell(4, **bias), return_sequences=True)
        )(x),
        *keras.layers.Bidirectional(keras.layers.GRU(4, return_state=True, **bias))(x),
        *kerasrnn.RNNStack(
            kerasrnn.GRUCell(4, **bias),
            num_layers=2,
            bidirectional=True,
            residual=True,
            return_state=True,
        )(x),
    ]
    return keras.Model(ids, outputs)


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    """(the native model's ONNX nodes, onnxruntime's outputs, Keras' outputs) on
    right-padded rows: full, one real step, padding only, four real steps."""
    import onnx

    keras.utils.set_random_seed(3)
    model = _native_model()
    ids = np.array([[3, 1, 4, 1, 5, 9, 2], [6, 0, 0, 0, 0, 0, 0], [0] * 7, [2, 7, 1, 8, 0, 0, 0]])
    ids = ids.astype("int32")
    path = str(export_onnx(model, tmp_path_factory.mktemp("native") / "native.onnx"))
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    actual = session.run(None, {session.get_inputs()[0].name: ids})
    expected = [np.asarray(e) for e in keras.tree.flatten(model.predict(ids, verbose=0))]
    return list(onnx.load(path).graph.node), actual, expected


def _counts(nodes):
    types = [node.op_type for node in nodes]
    return {op: types.count(op) for op in ("LSTM", "GRU", "Loop")}


@pytest.mark.large
def test_native_operators_equal_keras(native):
    _, actual, expected = native
    assert_outputs_equal(actual, expected)


def test_standard_cells_become_native_operators(native, exported):
    # the native model: 3 LSTM layers (one a Bidirectional) and 4 GRU layers (a
    # Bidirectional and a 2-layer bidirectional stack), no Loop left
    nodes = native[0]
    assert _counts(nodes) == {"LSTM": 3, "GRU": 4, "Loop": 0}
    directions = sorted(
        next(a.s.decode() for a in node.attribute if a.name == "direction")
        for node in nodes
        if node.op_type in ("LSTM", "GRU")
    )
    assert directions == ["bidirectional"] * 4 + ["forward"] * 2 + ["reverse"]
    # of the cells, the LSTM with and without peepholes and both GRUs; coupling, no
    # forget gate, layer norm, NAS, ESN and the simple RNN keep their Loop
    import onnx

    session = exported("cells", _onnx_session)
    cells = _counts(onnx.load(session._model_path).graph.node)
    assert cells == {"LSTM": 2, "GRU": 2, "Loop": len(CELLS) - 4}


def test_loop_when_native_recurrences_off(tmp_path):
    import onnx

    model, inputs, expected = built("kerasrnn_rnn_fast_lstm")
    path = export_onnx(model, tmp_path / "loop.onnx", native_recurrences=False)
    assert _counts(onnx.load(str(path)).graph.node) == {"LSTM": 0, "GRU": 0, "Loop": 1}
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert_outputs_equal(session.run(None, {session.get_inputs()[0].name: inputs[0]}), expected)


class _OwnRNN(keras.layers.RNN):
    """A subclass of keras.layers.RNN over a standard cell: its loop is Keras'."""


# Which layers become ONNX's operators (`native_spec`: the standard recurrences of
# `kerasrnn.cells.recurrence_spec`, not stateful, float32, the cell held directly).
NATIVE = {
    "lstm": (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(4)), "lstm"),
    "lstm-peephole": (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(4, peephole=True)), "lstm"),
    "lstm-recurrent-dropout": (
        lambda: keras.layers.RNN(kerasrnn.LSTMCell(4, recurrent_dropout=0.3)),
        "lstm",
    ),
    "gru-reset-before": (
        lambda: kerasrnn.RNN(kerasrnn.GRUCell(4, reset_after=False), fast_path=False),
        "gru",
    ),
    "keras-lstm-state": (lambda: keras.layers.LSTM(4, return_state=True), "lstm"),
    "keras-gru": (lambda: keras.layers.GRU(4, go_backwards=True), "gru"),
    "rnn-subclass": (lambda: _OwnRNN(keras.layers.GRUCell(4)), "gru"),
    "stateful": (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(4), stateful=True), None),
    "mixed-precision": (lambda: keras.layers.LSTM(4, dtype="mixed_bfloat16"), None),
    "float64": (lambda: keras.layers.GRU(4, dtype="float64"), None),
    "weight-drop": (
        lambda: kerasrnn.RNN(kerasrnn.layers.WeightDrop(kerasrnn.LSTMCell(4), rate=0.5)),
        None,
    ),
    "coupled": (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(4, coupled=True)), None),
    "layer-norm": (lambda: kerasrnn.RNN(kerasrnn.LayerNormLSTMCell(4)), None),
}


@pytest.mark.parametrize("name", list(NATIVE))
def test_which_layers_become_native_operators(name):
    from kerasrnn.export.onnx_recurrent import native_spec

    make_layer, kind = NATIVE[name]
    spec = native_spec(make_layer())
    assert (None if spec is None else spec.kind) == kind


def test_a_converter_error_names_the_innermost_loop_layer():
    """The last layer named on the op's path, depth first in Keras' order of the layers
    (a Bidirectional's backward layer before its forward one)."""
    from kerasrnn.export._formats import loop_layer_named

    x = keras.Input((None, 3))
    layer = keras.layers.Bidirectional(kerasrnn.RNN(kerasrnn.LSTMCell(4), name="words"))
    model = keras.Model(x, layer(x))
    path = f"model/{layer.name}/forward_words/while/MatMul"
    assert loop_layer_named(model, f"failed at '{path}': no map") is layer.forward_layer
    both = f"{path} and model/{layer.name}/backward_words/while/MatMul"
    assert loop_layer_named(model, both) is layer.forward_layer
    assert loop_layer_named(model, f"'{layer.name}_1/while': no map") is layer
    assert loop_layer_named(model, "nothing named") is None
