"""`kerasrnn.RNN.loop_path`: which of the five ways ran the time loop, and the table that
picks it (`loop_paths`) against the nested conditionals it replaced.

Each way is checked where this backend has it, with its outputs against
`keras.layers.RNN` over the same (built) cell.
"""

import itertools

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.cells import rnn as rnn_module
from kerasrnn.cells.rnn import PATHS, PathConditions, loop_paths

BACKEND = keras.backend.backend()
B, T, D, U = 3, 6, 5, 4


def inputs(seed=0):
    return np.random.default_rng(seed).normal(size=(B, T, D)).astype("float32")


def nested_choice(c, fused_declines):
    """The path as kerasrnn.RNN.inner_loop chose it before the table: nested
    conditionals, transcribed."""
    if c.fused:
        if not c.written_out_first and not fused_declines:
            return "fused"
        if c.lstm:
            if c.under_xla:
                if not c.masked:
                    return "written_out"
            elif c.own_cluster:
                return "xla_cluster"
    if c.parallel:  # (added with the parallel cells)
        return "parallel"
    if c.hoist:
        return "hoisted"
    return "keras_loop"


def consistent(c):
    # (the conditions a layer can produce: the LSTM ones only for a fused LSTM, JAX's
    # written-out-first only without a mask, and JAX always compiles with XLA)
    lstm_only = c.written_out_first or c.under_xla or c.own_cluster
    return (
        (c.fused or not c.lstm)
        and (c.lstm or not lstm_only)
        and not (c.written_out_first and (c.masked or not c.under_xla))
        and not (c.under_xla and c.own_cluster)
        # a cell with a parallel form is neither a fused kernel's nor a RecurrentCell
        and not (c.parallel and (c.fused or c.hoist))
    )


def test_the_table_chooses_as_the_nested_conditionals_did():
    cases = 0
    for values in itertools.product([False, True], repeat=len(PathConditions._fields)):
        c = PathConditions(*values)
        if not consistent(c):
            continue
        for declines in (False, True):
            paths = loop_paths(c)
            if declines:
                paths = [p for p in paths if p != "fused"]
            assert paths[0] == nested_choice(c, declines), (c, declines)
            assert paths[-1] == "keras_loop" and set(paths) <= set(PATHS)
            cases += 1
    assert cases > 20


def ran(layer, x, reference_cell=None, **call):
    """The layer's path after calling it on `x`, with its outputs checked against
    keras.layers.RNN over the same cell."""
    got = layer(x, **call)
    if reference_cell is not False:
        reference = keras.layers.RNN(layer.cell, return_sequences=layer.return_sequences)
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(got),
            keras.ops.convert_to_numpy(reference(x, **{k: v for k, v in call.items()})),
            atol=2e-5,
            rtol=1e-5,
        )
    return layer.loop_path


def test_path_is_none_before_the_first_call():
    layer = kerasrnn.RNN(kerasrnn.LSTMCell(U))
    assert layer.loop_path is None
    layer.build((B, T, D))
    assert layer.loop_path is None
    with pytest.raises(AttributeError):
        layer.loop_path = "fused"  # read-only


def test_keras_loop_for_a_cell_without_a_fused_kernel():
    layer = kerasrnn.RNN(kerasrnn.SimpleRNNCell(U), return_sequences=True)
    assert ran(layer, inputs()) == "keras_loop"


def test_hoisted_projection():
    layer = kerasrnn.RNN(kerasrnn.SimpleRNNCell(U), hoist_projection=True, return_sequences=True)
    assert ran(layer, inputs()) == "hoisted"
    # an LSTM the fused kernel declines (inference on a CPU) is hoisted as well
    layer = kerasrnn.RNN(kerasrnn.LSTMCell(U, peephole=True), hoist_projection=True)
    assert ran(layer, inputs()) == "hoisted"


def test_fused_kernel_where_the_backend_runs_it(monkeypatch):
    """torch runs the fused GRU on a CPU, JAX its whole-sequence GRU; TensorFlow's CPU
    declines, so there the call falls through to the loop, and a stand-in kernel shows
    that an accepted one is the path."""
    layer = kerasrnn.RNN(kerasrnn.GRUCell(U), return_sequences=True)
    if BACKEND in ("torch", "jax"):
        assert ran(layer, inputs()) == "fused"
        return
    on_gpu = any("gpu" in str(d).lower() for d in keras.distribution.list_devices())
    assert ran(layer, inputs()) == ("fused" if on_gpu else "keras_loop")
    real = keras.layers.GRU(U, return_sequences=True)

    def fused(sequences, h0, mask, kernel, recurrent_kernel, bias, **options):
        real.build(sequences.shape)
        real.set_weights([kernel, recurrent_kernel, bias])
        outputs = real(sequences)
        return outputs[:, -1], outputs, [outputs[:, -1]]

    monkeypatch.setattr(rnn_module, "backend_gru", fused)
    layer = kerasrnn.RNN(kerasrnn.GRUCell(U), return_sequences=True)
    assert ran(layer, inputs()) == "fused"


@pytest.mark.skipif(BACKEND == "torch", reason="no XLA on torch")
def test_written_out_lstm_under_xla():
    layer = kerasrnn.RNN(kerasrnn.LSTMCell(U), return_sequences=True)
    if BACKEND == "jax":
        assert ran(layer, inputs()) == "written_out"  # (before the fused kernel)
        mask = np.ones((B, T), bool)
        layer(inputs(), mask=mask)
        assert layer.loop_path == "fused" if _gpu() else layer.loop_path == "keras_loop"
        return
    import tensorflow as tf

    layer(inputs())  # build
    compiled = tf.function(lambda x: layer(x), jit_compile=True)
    got = compiled(tf.constant(inputs()))
    assert layer.loop_path == "written_out"
    want = keras.layers.RNN(layer.cell, return_sequences=True)(inputs())
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=2e-5, rtol=1e-5)


@pytest.mark.skipif(BACKEND != "tensorflow", reason="the own XLA cluster is TensorFlow's")
def test_lstm_in_its_own_xla_cluster_in_training():
    layer = kerasrnn.RNN(kerasrnn.LSTMCell(U), return_sequences=True)
    assert ran(layer, inputs(), training=True) == "xla_cluster"
    assert ran(layer, inputs(), training=False) == "keras_loop"  # inference keeps the loop
    layer = kerasrnn.RNN(kerasrnn.LSTMCell(U), jit_compile=False)
    assert ran(layer, inputs(), training=True) == "keras_loop"


def _gpu():
    return any("gpu" in str(d).lower() for d in keras.distribution.list_devices())


@pytest.mark.parametrize(
    "go_backwards, zero_output_for_mask", [(False, False), (True, False), (False, True)]
)
def test_written_out_lstm_with_a_mask_equals_keras_loop(go_backwards, zero_output_for_mask):
    """The written-out pass on this backend with a mask (as TensorFlow's own XLA
    cluster runs it): keras.layers.RNN's outputs at masked steps (the last real step's
    output, zeros before the first, or zeros with `zero_output_for_mask`) and final
    states, for left padding, holes and a row of padding only."""
    cell = kerasrnn.LSTMCell(U)
    options = dict(go_backwards=go_backwards, zero_output_for_mask=zero_output_for_mask)
    reference = keras.layers.RNN(cell, return_sequences=True, return_state=True, **options)
    x = inputs(3)
    mask = np.array([[0, 0, 1, 1, 1, 1], [1, 0, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0]], bool)
    want = reference(x, mask=mask)
    h0 = c0 = np.zeros((B, U), "float32")
    weights = (cell.kernel, cell.recurrent_kernel, cell.bias)
    last, outputs, h, c = rnn_module.written_out_lstm(
        x, *weights, h0, c0, mask, (go_backwards, True, True, zero_output_for_mask)
    )
    for got, expected in zip([last, outputs, h, c], [want[0][:, -1], *want]):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(got), keras.ops.convert_to_numpy(expected), atol=2e-5
        )
