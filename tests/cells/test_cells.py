"""Every cell and variant against the NumPy reference, inside Keras' RNN machinery."""

import keras
import numpy as np
import pytest

import kerasrnn
from tests.cells import reference

B, T, D, U = 3, 7, 5, 4

# (cell class, constructor kwargs) for every cell and every variant.
VARIANTS = [
    (kerasrnn.SimpleRNNCell, {}),
    (kerasrnn.LSTMCell, {}),
    (kerasrnn.LSTMCell, {"forget_gate": False}),
    (kerasrnn.LSTMCell, {"peephole": True}),
    (kerasrnn.LSTMCell, {"coupled": True}),
    (kerasrnn.LSTMCell, {"coupled": True, "peephole": True}),
    (kerasrnn.LSTMCell, {"forget_gate": False, "peephole": True}),
    (kerasrnn.GRUCell, {"reset_after": True}),
    (kerasrnn.GRUCell, {"reset_after": False}),
    (kerasrnn.LayerNormSimpleRNNCell, {}),
    (kerasrnn.LayerNormLSTMCell, {}),
    (kerasrnn.LayerNormLSTMCell, {"peephole": True}),
    (kerasrnn.LayerNormSimpleRNNCell, {"bias_after_norm": True, "norm_epsilon": 1e-5}),
    (kerasrnn.LayerNormLSTMCell, {"carry_normalized_state": True}),
    (kerasrnn.NASCell, {}),
    (kerasrnn.NASCell, {"projection": 3, "use_bias": True}),
    (kerasrnn.ESNCell, {"leaky": 0.6, "connectivity": 0.5}),
]
IDS = [
    f"{cls.__name__}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}"
    for cls, kw in VARIANTS
]


def randomize(layer, rng, scale=0.5):
    """Non-trivial weights everywhere (peepholes, biases and LN gains included)."""
    layer.set_weights([rng.normal(0, scale, w.shape).astype("float32") for w in layer.weights])


def make_inputs(rng):
    x = rng.normal(size=(B, T, D)).astype("float32")
    mask = np.ones((B, T), bool)
    mask[1, 5:] = False  # right padding
    mask[2, 2] = False  # a hole in the middle
    return x, mask


def initial_states(cell, rng):
    sizes = cell.state_size if isinstance(cell.state_size, list) else [cell.state_size]
    return [rng.normal(0, 0.5, (B, s)).astype("float32") for s in sizes]


@pytest.mark.parametrize("cls,kwargs", VARIANTS, ids=IDS)
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("rnn", [keras.layers.RNN, kerasrnn.RNN], ids=["keras.RNN", "kerasrnn.RNN"])
def test_cell_matches_numpy_reference(cls, kwargs, go_backwards, rnn):
    rng = np.random.default_rng(0)
    cell = cls(U, **kwargs)
    layer = rnn(cell, return_sequences=True, return_state=True, go_backwards=go_backwards)
    x, mask = make_inputs(rng)
    states = initial_states(cell, rng)
    layer(x, initial_state=states, mask=mask)
    randomize(layer, rng)
    outputs, *final = layer(x, initial_state=states, mask=mask)

    want, want_states = reference.run(
        reference.cell_step(cell), x.astype("float64"), states, mask, go_backwards
    )
    outputs = keras.ops.convert_to_numpy(outputs)
    if keras.backend.backend() != "tensorflow":
        # what a masked step *outputs* is backend-specific in Keras (TF repeats the last
        # output, JAX differs where masked steps come first); states are not.
        reading_mask = mask[:, ::-1] if go_backwards else mask
        outputs, want = outputs[reading_mask], want[reading_mask]
    np.testing.assert_allclose(outputs, want, atol=2e-5)
    for got, ref in zip(final, want_states):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(got), ref, atol=2e-5)
    # masked steps leave the states unchanged: sample 1 stops at step 4
    if not go_backwards:
        short, *short_states = layer(x[:, :5], initial_state=states)
        for got, ref in zip(final, short_states):
            np.testing.assert_allclose(
                keras.ops.convert_to_numpy(got)[1],
                keras.ops.convert_to_numpy(ref)[1],
                atol=1e-5,
            )


def test_stacked_cells_match_numpy_reference():
    rng = np.random.default_rng(1)
    cells = [kerasrnn.LSTMCell(U, peephole=True), kerasrnn.GRUCell(U, reset_after=False)]
    layer = kerasrnn.RNN(keras.layers.StackedRNNCells(cells), return_sequences=True)
    x, mask = make_inputs(rng)
    layer(x, mask=mask)
    randomize(layer, rng)
    got = keras.ops.convert_to_numpy(layer(x, mask=mask))

    first, second = (reference.cell_step(c) for c in cells)
    zeros = lambda n: [np.zeros((B, U))] * n  # noqa: E731
    hidden, _ = reference.run(first, x.astype("float64"), zeros(2), mask)
    want, _ = reference.run(second, hidden, zeros(1), mask)
    np.testing.assert_allclose(got, want, atol=2e-5)


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "ave", "mul"])
def test_bidirectional_matches_numpy_reference(merge_mode):
    rng = np.random.default_rng(2)
    layer = keras.layers.Bidirectional(
        kerasrnn.RNN(kerasrnn.GRUCell(U), return_sequences=True), merge_mode=merge_mode
    )
    x, mask = make_inputs(rng)
    layer(x, mask=mask)
    randomize(layer, rng)
    got = keras.ops.convert_to_numpy(layer(x, mask=mask))

    zeros = [np.zeros((B, U))]
    fwd, _ = reference.run(
        reference.cell_step(layer.forward_layer.cell), x, zeros, mask, zero_output_for_mask=True
    )
    bwd, _ = reference.run(
        reference.cell_step(layer.backward_layer.cell),
        x,
        zeros,
        mask,
        go_backwards=True,
        zero_output_for_mask=True,
    )
    bwd = bwd[:, ::-1]  # Bidirectional re-aligns the backward outputs with the inputs
    want = {
        "concat": np.concatenate([fwd, bwd], -1),
        "sum": fwd + bwd,
        "ave": (fwd + bwd) / 2,
        "mul": fwd * bwd,
    }[merge_mode]
    np.testing.assert_allclose(got, want, atol=2e-5)


@pytest.mark.parametrize(
    "ours,theirs",
    [
        (lambda: kerasrnn.SimpleRNNCell(U), lambda **kw: keras.layers.SimpleRNN(U, **kw)),
        (lambda: kerasrnn.LSTMCell(U), lambda **kw: keras.layers.LSTM(U, **kw)),
        (lambda: kerasrnn.GRUCell(U), lambda **kw: keras.layers.GRU(U, **kw)),
        (
            lambda: kerasrnn.GRUCell(U, reset_after=False),
            lambda **kw: keras.layers.GRU(U, reset_after=False, **kw),
        ),
    ],
    ids=["SimpleRNN", "LSTM", "GRU", "GRU-reset_before"],
)
@pytest.mark.parametrize("go_backwards", [False, True])
def test_default_cells_equal_keras_layers(ours, theirs, go_backwards):
    rng = np.random.default_rng(3)
    x, mask = make_inputs(rng)
    keras_layer = theirs(return_sequences=True, go_backwards=go_backwards)
    keras_layer(x, mask=mask)
    randomize(keras_layer, rng)
    layer = kerasrnn.RNN(ours(), return_sequences=True, go_backwards=go_backwards)
    layer(x, mask=mask)
    layer.set_weights(keras_layer.get_weights())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x, mask=mask)),
        keras.ops.convert_to_numpy(keras_layer(x, mask=mask)),
        atol=1e-6,
    )
    # and back: our weights load into Keras' layer
    randomize(layer, rng)
    keras_layer.set_weights(layer.get_weights())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x)),
        keras.ops.convert_to_numpy(keras_layer(x)),
        atol=1e-6,
    )


def test_unit_forget_bias_initialises_forget_block_to_one():
    cell = kerasrnn.LSTMCell(U, peephole=True)
    keras.layers.RNN(cell)(np.zeros((1, 2, D), "float32"))
    bias = keras.ops.convert_to_numpy(cell.bias)
    np.testing.assert_array_equal(bias[U : 2 * U], 1.0)
    np.testing.assert_array_equal(np.delete(bias, np.s_[U : 2 * U]), 0.0)
    coupled = kerasrnn.LSTMCell(U, coupled=True)  # gates f, c, o: forget block first
    keras.layers.RNN(coupled)(np.zeros((1, 2, D), "float32"))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(coupled.bias)[:U], 1.0)


@pytest.mark.parametrize("rnn", [keras.layers.RNN, kerasrnn.RNN], ids=["keras.RNN", "kerasrnn.RNN"])
def test_dropout_masks_are_fixed_across_time_steps(rnn):
    # With V = 0 and b = 0, h_t = tanh(W (x_t * m) + ...); equal inputs at every step
    # give equal outputs at every step exactly when the mask m is the same at each step.
    cell = kerasrnn.SimpleRNNCell(8, dropout=0.5, recurrent_initializer="zeros", seed=7)
    layer = rnn(cell, return_sequences=True)
    x = np.tile(np.random.default_rng(0).normal(size=(4, 1, 6)), (1, 10, 1)).astype("float32")
    out = keras.ops.convert_to_numpy(layer(x, training=True))
    np.testing.assert_allclose(out, np.repeat(out[:, :1], 10, axis=1), atol=1e-6)
    no_dropout = keras.ops.convert_to_numpy(layer(x, training=False))
    assert not np.allclose(out, no_dropout)  # the mask did act
    # a new batch draws a new mask
    assert not np.allclose(out, keras.ops.convert_to_numpy(layer(x, training=True)))


@pytest.mark.parametrize("cls", [kerasrnn.LSTMCell, kerasrnn.GRUCell])
def test_recurrent_dropout_only_in_training(cls):
    layer = kerasrnn.RNN(cls(U, recurrent_dropout=0.5, dropout=0.3, seed=3))
    x = np.random.default_rng(0).normal(size=(B, T, D)).astype("float32")
    a = keras.ops.convert_to_numpy(layer(x))
    np.testing.assert_array_equal(a, keras.ops.convert_to_numpy(layer(x)))
    assert not np.allclose(a, keras.ops.convert_to_numpy(layer(x, training=True)))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("cls", [kerasrnn.LSTMCell, kerasrnn.GRUCell, kerasrnn.LayerNormLSTMCell])
def test_mixed_precision(policy, cls):
    x = np.random.default_rng(0).normal(size=(B, T, D)).astype("float32")
    units = 32  # layer norm over a handful of units magnifies float16 rounding
    full = kerasrnn.RNN(cls(units))
    want = keras.ops.convert_to_numpy(full(x))
    keras.config.set_dtype_policy(policy)
    try:
        mixed = kerasrnn.RNN(cls(units))
        mixed(x)
        mixed.set_weights(full.get_weights())
        got = mixed(x)
        assert mixed.cell.kernel.dtype == "float32"
    finally:
        keras.config.set_dtype_policy("float32")
    assert keras.backend.standardize_dtype(got.dtype) == policy.split("_")[1]
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(keras.ops.cast(got, "float32")), want, atol=0.05
    )


@pytest.mark.parametrize("cls,kwargs", VARIANTS, ids=IDS)
def test_get_config_round_trip(cls, kwargs):
    cell = cls(U, dropout=0.1, recurrent_dropout=0.2, seed=5, kernel_regularizer="l2", **kwargs)
    config = cell.get_config()
    clone = cls.from_config(config)
    assert clone.get_config() == config
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(cell))
    assert type(restored) is cls and restored.get_config() == config


@pytest.mark.parametrize(
    "ours,theirs",
    [
        (kerasrnn.LSTMCell, keras.layers.LSTMCell),
        (kerasrnn.GRUCell, keras.layers.GRUCell),
        (kerasrnn.SimpleRNNCell, keras.layers.SimpleRNNCell),
    ],
    ids=["lstm", "gru", "simple"],
)
def test_initial_state_helper(ours, theirs):
    """Keras' own cell is the reference: the same states (zeros), shapes and dtypes."""
    got = [keras.ops.convert_to_numpy(s) for s in ours(U).get_initial_state(batch_size=2)]
    want = [keras.ops.convert_to_numpy(s) for s in theirs(U).get_initial_state(batch_size=2)]
    assert [(s.shape, s.dtype) for s in got] == [(s.shape, s.dtype) for s in want]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    # a learned initial state: the learned vectors, broadcast over the batch
    cell = ours(U, learn_initial_state=True)
    keras.layers.RNN(cell)(np.zeros((1, 2, D), "float32"))
    for k, weight in enumerate(cell.initial_state_weights):
        weight.assign(np.arange(U, dtype="float32") + 10 * k)
    for k, state in enumerate(cell.get_initial_state(batch_size=2)):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(state), np.tile(np.arange(U) + 10.0 * k, (2, 1))
        )


def test_fast_rnn_equals_plain_rnn_with_dropout():
    """kerasrnn.RNN's sequence-wide projection draws and applies the same masks."""
    x = np.random.default_rng(0).normal(size=(B, T, D)).astype("float32")
    outputs = []
    for rnn in (keras.layers.RNN, kerasrnn.RNN):
        keras.utils.set_random_seed(3)
        layer = rnn(
            kerasrnn.LSTMCell(U, dropout=0.4, recurrent_dropout=0.3, seed=11), return_sequences=True
        )
        layer.build(x.shape)
        layer.set_weights(
            [np.full(w.shape, 0.1, "float32") for w in layer.weights[:3]]
            + [np.asarray(w) for w in layer.weights[3:]]
        )
        outputs.append(keras.ops.convert_to_numpy(layer(x, training=True)))
    np.testing.assert_allclose(outputs[0], outputs[1], atol=1e-6)
