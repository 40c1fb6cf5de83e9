"""The bridges (kerasrnn.layers.Bridge and its kinds) against NumPy, their configs, and
their errors; in a backbone, "zeros" against "none"."""

import keras
import numpy as np
import pytest
from keras import ops

import kerasrnn
from kerasrnn.layers import (
    CopyBridge,
    DenseBridge,
    NoBridge,
    ZerosBridge,
    bridge,
    join_directions,
)
from kerasrnn.seq2seq import Seq2SeqBackbone

RNG = np.random.default_rng(0)
# a bidirectional LSTM encoder's final states: h_fw, c_fw, h_bw, c_bw
H_FW, C_FW = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))
H_BW, C_BW = RNG.normal(size=(2, 4)), RNG.normal(size=(2, 4))
STATES = [x.astype("float32") for x in (H_FW, C_FW, H_BW, C_BW)]


def np_(x):
    return ops.convert_to_numpy(x)


def test_join_directions_concatenates_forward_and_backward_pairwise():
    joined = join_directions(STATES, 2)
    np.testing.assert_array_equal(
        np_(joined[0]), np.concatenate([H_FW, H_BW], -1).astype("float32")
    )
    np.testing.assert_array_equal(
        np_(joined[1]), np.concatenate([C_FW, C_BW], -1).astype("float32")
    )
    assert join_directions(STATES, 4) == STATES  # unidirectional: as they are
    assert join_directions([(None, 3), (None, 3), (None, 4), (None, 4)], 2) == [
        (None, 7),
        (None, 7),
    ]
    with pytest.raises(
        ValueError, match="must give 2 final state.*or 4 from a bidirectional encoder.*got 3"
    ):
        join_directions(STATES[:3], 2)


@pytest.mark.parametrize("activation", ["tanh", None])
def test_dense_bridge_matches_numpy(activation):
    layer = DenseBridge(activation=activation, state_sizes=[5, 6])
    out = [np_(s) for s in layer(STATES)]
    expected = []
    for index, z in enumerate([np.concatenate([H_FW, H_BW], -1), np.concatenate([C_FW, C_BW], -1)]):
        kernel, bias = (np_(w) for w in layer.dense[index].weights)
        s = z @ kernel + bias
        expected.append(np.tanh(s) if activation == "tanh" else s)
    for got, want, width in zip(out, expected, (5, 6)):
        assert got.shape == (2, width)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # the kernels see the joined widths: 3 + 4
    assert [tuple(d.kernel.shape) for d in layer.dense] == [(7, 5), (7, 6)]


def test_copy_zeros_and_none():
    copied = CopyBridge(state_sizes=[7, 7])(STATES)
    np.testing.assert_array_equal(
        np_(copied[1]), np.concatenate([C_FW, C_BW], -1).astype("float32")
    )
    zeros = ZerosBridge(state_sizes=[5])(STATES[:1])
    np.testing.assert_array_equal(np_(zeros[0]), np.zeros((2, 5), "float32"))
    assert NoBridge(state_sizes=[5])(STATES[:1]) is None
    with pytest.raises(ValueError, match=r"CopyBridge passes.*widths \[7, 7\].*\[6, 6\]"):
        CopyBridge(state_sizes=[6, 6])(STATES)


def test_get_and_config_round_trip():
    assert isinstance(bridge.get("dense"), DenseBridge)
    assert isinstance(bridge.get("none"), NoBridge)
    layer = DenseBridge(activation=None, state_sizes=[5, 6])
    assert bridge.get(layer) is layer
    expected = [np_(s) for s in layer(STATES)]
    clone = bridge.get(keras.saving.serialize_keras_object(layer))
    assert type(clone) is DenseBridge and clone.state_sizes == [5, 6]
    assert clone.get_config()["activation"] == "linear"
    clone.build([tuple(s.shape) for s in STATES])
    clone.set_weights(layer.get_weights())
    for got, want in zip(clone(STATES), expected):
        np.testing.assert_array_equal(np_(got), want)
    with pytest.raises(
        ValueError,
        match=r"`bridge` must be one of \['copy', 'dense', "
        r"'none', 'zeros'\].*got bridge='learned'",
    ):
        bridge.get("learned")


def test_state_size_errors():
    with pytest.raises(ValueError, match="does not know the decoder's state widths"):
        DenseBridge()(STATES)
    layer = DenseBridge(state_sizes=[5])
    with pytest.raises(
        ValueError,
        match=r"made for decoder states of widths \[5\]; the "
        r"decoder cell's are \[6\]",
    ):
        layer.set_state_sizes([6])
    with pytest.raises(ValueError, match="`state_sizes` must be a non-empty list"):
        DenseBridge(state_sizes=[])


SOURCE = np.array([[5, 6, 7, 8, 0], [9, 4, 0, 0, 0]], "int32")
TARGET_IN = np.array([[2, 4, 5, 6], [2, 7, 0, 0]], "int32")


def test_zeros_and_none_agree_for_a_cell_with_zero_initial_state():
    zeros = Seq2SeqBackbone(12, 10, bridge="zeros", embedding_dim=5, units=6)
    none = Seq2SeqBackbone(12, 10, bridge=NoBridge(), embedding_dim=5, units=6)
    zeros.build()
    none.build()
    none.set_weights(zeros.get_weights())
    a, b = zeros(SOURCE, TARGET_IN)[0], none(SOURCE, TARGET_IN)[0]
    np.testing.assert_allclose(np_(a), np_(b), atol=1e-6)


def test_a_learned_initial_state_shows_under_none_not_under_zeros():
    """ "none" starts from the cell's own initial state (here a learned one)."""
    cell = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(6, learn_initial_state=True), kerasrnn.BahdanauAttention(6)
    )
    backbone = Seq2SeqBackbone(12, 10, decoder_cell=cell, bridge="none", embedding_dim=5)
    backbone.build()
    learned = np.linspace(-1, 1, 6).astype("float32")
    cell.cell.initial_state_weights[0].assign(learned)
    states = np_(backbone.call_encoder(SOURCE).states[0])
    np.testing.assert_allclose(states, np.stack([learned, learned]), atol=1e-7)
    zeros = Seq2SeqBackbone(12, 10, decoder_cell=cell, bridge="zeros", embedding_dim=5)
    np.testing.assert_array_equal(np_(zeros.call_encoder(SOURCE).states[0]), 0.0)


def test_attentive_rnn_takes_a_bridge_object():
    """AttentiveRNN's own `bridge` is the same layer: a CopyBridge there starts the cell
    from the joined directions, and the choice survives get_config."""
    cell = kerasrnn.AttentionCell(kerasrnn.LSTMCell(7), kerasrnn.BahdanauAttention(4))
    decoder = kerasrnn.AttentiveRNN(cell, bridge=CopyBridge())
    states = decoder.initial_state_from(STATES)
    np.testing.assert_array_equal(
        np_(states[0]), np.concatenate([H_FW, H_BW], -1).astype("float32")
    )
    np.testing.assert_array_equal(
        np_(states[1]), np.concatenate([C_FW, C_BW], -1).astype("float32")
    )
    clone = kerasrnn.AttentiveRNN.from_config(decoder.get_config())
    assert type(clone.bridge) is CopyBridge and clone.bridge.state_sizes == [7, 7]
    assert isinstance(kerasrnn.AttentiveRNN(cell, bridge=True).bridge, DenseBridge)
    assert kerasrnn.AttentiveRNN(cell).bridge is None
    # NoBridge: the cell's own (zero) initial state, whatever the encoder's
    none = kerasrnn.AttentiveRNN(cell, bridge="none").initial_state_from(STATES)
    assert all(not np.any(np_(s)) for s in none)
