"""RNNStack's return_state / return_all_layers and RNNEncoder, against Keras' own LSTM
layers with copied weights."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.seq2seq import RNNEncoder


def np_(x):
    return keras.ops.convert_to_numpy(x)


def _reference_layer(rnn, bidirectional, x, mask):
    """Keras' LSTM (Bidirectional) with the weights of one kerasrnn layer of the stack:
    (sequence, [final states])."""
    units = 4
    if bidirectional:
        ref = keras.layers.Bidirectional(
            keras.layers.LSTM(units, return_sequences=True, return_state=True)
        )
    else:
        ref = keras.layers.LSTM(units, return_sequences=True, return_state=True)
    ref(x, mask=mask)
    ref.set_weights(rnn.get_weights())
    out, *states = ref(x, mask=mask)
    return np_(out), [np_(s) for s in states]


@pytest.mark.parametrize("bidirectional", [False, True])
def test_stack_states_and_layers_match_keras_lstm(bidirectional):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 6, 5)).astype("float32")
    mask = np.arange(6)[None, :] < np.array([[6], [3], [1]])
    stack = kerasrnn.RNNStack(
        kerasrnn.LSTMCell(4),
        num_layers=2,
        bidirectional=bidirectional,
        return_sequences=True,
        return_state=True,
        return_all_layers=True,
    )
    outputs, *states = stack(x, mask=mask)
    per_layer = 4 if bidirectional else 2
    assert len(outputs) == 2 and len(states) == 2 * per_layer
    layer_input = x
    for index, rnn in enumerate(stack.rnn_layers):
        expected, expected_states = _reference_layer(rnn, bidirectional, layer_input, mask)
        got = np_(outputs[index])
        np.testing.assert_allclose(got[mask], expected[mask], atol=1e-5)
        for got_state, want in zip(
            states[index * per_layer : (index + 1) * per_layer], expected_states
        ):
            np.testing.assert_allclose(np_(got_state), want, atol=1e-5)
        layer_input = got
    # the final states are those after each row's last real step
    forward_h = np_(states[-per_layer])
    last_real = np_(outputs[-1])[np.arange(3), mask.sum(1) - 1, :4]
    np.testing.assert_allclose(forward_h, last_real, atol=1e-6)


def test_stack_state_shapes_symbolic_and_round_trip(tmp_path):
    inputs = keras.Input((None, 3))
    stack = kerasrnn.RNNStack(
        kerasrnn.GRUCell(4),
        num_layers=3,
        bidirectional=True,
        merge_mode="sum",
        residual=True,
        return_sequences=True,
        return_state=True,
    )
    output, *states = stack(inputs)
    assert tuple(output.shape) == (None, None, 4)
    assert [tuple(s.shape) for s in states] == [(None, 4)] * 6
    model = keras.Model(inputs, [output, *states])
    x = np.random.default_rng(1).normal(size=(2, 5, 3)).astype("float32")
    expected = [np_(t) for t in model(x)]
    model.save(tmp_path / "stack.keras")
    loaded = keras.saving.load_model(tmp_path / "stack.keras")
    for a, b in zip(expected, loaded(x)):
        np.testing.assert_allclose(np_(b), a, atol=1e-6)
    with pytest.raises(ValueError, match="needs `return_sequences=True`"):
        kerasrnn.RNNStack(kerasrnn.GRUCell(4), return_all_layers=True)


def test_encoder_returns_memory_and_top_layer_states(tmp_path):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 5, 3)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    encoder = RNNEncoder(kerasrnn.LSTMCell(4), num_layers=2)
    memory, states = encoder(x, mask=mask)
    stack = kerasrnn.RNNStack(
        kerasrnn.LSTMCell(4),
        num_layers=2,
        bidirectional=True,
        return_sequences=True,
        return_state=True,
    )
    stack(x)
    stack.set_weights(encoder.get_weights())
    expected, *all_states = stack(x, mask=mask)
    np.testing.assert_allclose(np_(memory), np_(expected), atol=1e-6)
    assert len(states) == 4 and encoder.states_per_layer == 4 and encoder.output_width == 8
    for got, want in zip(states, all_states[4:]):
        np.testing.assert_allclose(np_(got), np_(want), atol=1e-6)
    config = encoder.get_config()
    assert "return_state" not in config
    again = RNNEncoder.from_config(config)
    assert again.bidirectional and again.num_layers == 2


def test_encoder_rejects_ids():
    with pytest.raises(ValueError, match=r"\(batch, time, features\); got shape \(2, 5\)"):
        RNNEncoder(kerasrnn.GRUCell(4))(np.zeros((2, 5), "float32"))
