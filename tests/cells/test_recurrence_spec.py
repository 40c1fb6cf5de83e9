"""`kerasrnn.cells.recurrence_spec`: which layers compute a standard LSTM / GRU, every
field of the description, every exclusion; and `kerasrnn.ops.right_padding`, the mask
read as right padding that the fused kernels take, against a NumPy reference."""

import dataclasses

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.cells import RecurrenceSpec, recurrence_spec
from kerasrnn.cells.rnn import fused_kind
from kerasrnn.layers import WeightDrop
from kerasrnn.ops import right_padding

U = 4

# The spec of `kerasrnn.RNN(kerasrnn.LSTMCell(U))`; each case below names what differs.
LSTM = dict(
    kind="lstm",
    units=U,
    reset_after=False,
    peephole=False,
    use_bias=True,
    dropout=0.0,
    recurrent_dropout=0.0,
    keras_cell=False,
    wrapped=False,
    go_backwards=False,
    return_sequences=False,
    return_state=False,
    stateful=False,
    unroll=False,
    dtype="float32",
)
GRU = {**LSTM, "kind": "gru", "reset_after": True}


class OwnLSTMCell(kerasrnn.LSTMCell):
    """A subclass may run other equations: it is never taken for the standard cell."""


class OwnRNN(keras.layers.RNN):
    """A subclass of keras.layers.RNN: the spec describes its cell's recurrence."""


def _attention_cell():
    return kerasrnn.AttentionCell(
        kerasrnn.LSTMCell(U), kerasrnn.LuongAttention("general"), kerasrnn.RunThenAttend()
    )


STANDARD = {
    "lstm": (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U)), LSTM),
    "lstm-options": (
        lambda: kerasrnn.RNN(
            kerasrnn.LSTMCell(U, use_bias=False, dropout=0.25, kernel_regularizer="l2"),
            go_backwards=True,
            return_sequences=True,
            return_state=True,
            unroll=True,
        ),
        {
            **LSTM,
            "use_bias": False,
            "dropout": 0.25,
            "go_backwards": True,
            "return_sequences": True,
            "return_state": True,
            "unroll": True,
        },
    ),
    # options that only choose initial values (biases, h_0 / c_0)
    "lstm-initialisation": (
        lambda: keras.layers.RNN(
            kerasrnn.LSTMCell(U, unit_forget_bias=False, forget_bias=1.0, learn_initial_state=True)
        ),
        LSTM,
    ),
    "lstm-chrono": (lambda: keras.layers.RNN(kerasrnn.LSTMCell(U, chrono_init=50)), LSTM),
    # facts a reader decides on: ONNX's operator has peepholes, the fused loop has no
    # recurrent dropout
    "lstm-peephole": (
        lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U, peephole=True)),
        {**LSTM, "peephole": True},
    ),
    "lstm-recurrent-dropout": (
        lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U, recurrent_dropout=0.1)),
        {**LSTM, "recurrent_dropout": 0.1},
    ),
    "lstm-weight-drop": (
        lambda: kerasrnn.RNN(WeightDrop(kerasrnn.LSTMCell(U), rate=0.5)),
        {**LSTM, "wrapped": True},
    ),
    "lstm-stateful": (
        lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U), stateful=True),
        {**LSTM, "stateful": True},
    ),
    "lstm-mixed-precision": (
        lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U), dtype="mixed_bfloat16"),
        {**LSTM, "dtype": "bfloat16"},
    ),
    "lstm-rnn-subclass": (lambda: OwnRNN(kerasrnn.LSTMCell(U)), LSTM),
    "gru": (lambda: kerasrnn.RNN(kerasrnn.GRUCell(U)), GRU),
    "gru-reset-before": (
        lambda: keras.layers.RNN(
            kerasrnn.GRUCell(U, reset_after=False, learn_initial_state=True, forget_bias=1.0)
        ),
        {**GRU, "reset_after": False},
    ),
    "gru-recurrent-dropout": (
        lambda: kerasrnn.RNN(kerasrnn.GRUCell(U, recurrent_dropout=0.2, dropout=0.1)),
        {**GRU, "recurrent_dropout": 0.2, "dropout": 0.1},
    ),
    "keras-lstm": (
        lambda: keras.layers.LSTM(U, return_sequences=True),
        {**LSTM, "keras_cell": True, "return_sequences": True},
    ),
    "keras-lstm-cell": (
        lambda: keras.layers.RNN(keras.layers.LSTMCell(U, use_bias=False, recurrent_dropout=0.5)),
        {**LSTM, "keras_cell": True, "use_bias": False, "recurrent_dropout": 0.5},
    ),
    "keras-gru": (lambda: keras.layers.GRU(U), {**GRU, "keras_cell": True}),
    "keras-gru-reset-before": (
        lambda: kerasrnn.RNN(keras.layers.GRUCell(U, reset_after=False), go_backwards=True),
        {**GRU, "keras_cell": True, "reset_after": False, "go_backwards": True},
    ),
}


@pytest.mark.parametrize("name", list(STANDARD))
def test_standard_layers_and_their_spec(name):
    make_layer, fields = STANDARD[name]
    spec = recurrence_spec(make_layer())
    assert isinstance(spec, RecurrenceSpec)
    assert dataclasses.asdict(spec) == fields


NOT_STANDARD = {
    "coupled": lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U, coupled=True)),
    "no-forget-gate": lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U, forget_gate=False)),
    "relu": lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U, activation="relu")),
    "hard-sigmoid": lambda: kerasrnn.RNN(kerasrnn.GRUCell(U, recurrent_activation="hard_sigmoid")),
    "keras-relu": lambda: keras.layers.LSTM(U, activation="relu"),
    "keras-hard-sigmoid": lambda: keras.layers.RNN(
        keras.layers.GRUCell(U, recurrent_activation="hard_sigmoid")
    ),
    "layer-norm": lambda: kerasrnn.RNN(kerasrnn.LayerNormLSTMCell(U)),
    "layer-norm-simple": lambda: kerasrnn.RNN(kerasrnn.LayerNormSimpleRNNCell(U)),
    "simple": lambda: kerasrnn.RNN(kerasrnn.SimpleRNNCell(U)),
    "keras-simple": lambda: keras.layers.SimpleRNN(U),
    "nas": lambda: kerasrnn.RNN(kerasrnn.NASCell(U)),
    "esn": lambda: kerasrnn.RNN(kerasrnn.ESNCell(U)),
    "cell-subclass": lambda: kerasrnn.RNN(OwnLSTMCell(U)),
    "weight-drop-coupled": lambda: kerasrnn.RNN(
        WeightDrop(kerasrnn.LSTMCell(U, coupled=True), rate=0.5)
    ),
    "stacked-cells": lambda: keras.layers.RNN(
        keras.layers.StackedRNNCells([kerasrnn.LSTMCell(U), kerasrnn.LSTMCell(U)])
    ),
    "attention-cell": lambda: keras.layers.RNN(_attention_cell()),
    "attentive-rnn": lambda: kerasrnn.AttentiveRNN(_attention_cell()),
    "bidirectional": lambda: keras.layers.Bidirectional(kerasrnn.RNN(kerasrnn.LSTMCell(U))),
    "rnn-stack": lambda: kerasrnn.RNNStack(kerasrnn.LSTMCell(U), num_layers=2),
    "dense": lambda: keras.layers.Dense(U),
}


@pytest.mark.parametrize("name", list(NOT_STANDARD))
def test_other_layers_have_no_spec(name):
    assert recurrence_spec(NOT_STANDARD[name]()) is None


@pytest.mark.parametrize("value, standard", [(0.1, False), (0.0, True), (None, True)])
def test_an_unknown_option_must_be_off(value, standard):
    """A cell option added later (say zoneout) has to opt in explicitly."""
    cell = kerasrnn.LSTMCell(U)
    config = cell.get_config()
    cell.get_config = lambda: {**config, "zoneout": value}
    assert (recurrence_spec(kerasrnn.RNN(cell)) is not None) == standard


def test_the_layers_a_bidirectional_and_a_stack_hold():
    bidirectional = keras.layers.Bidirectional(
        kerasrnn.RNN(kerasrnn.GRUCell(U), return_sequences=True)
    )
    forward = recurrence_spec(bidirectional.forward_layer)
    backward = recurrence_spec(bidirectional.backward_layer)
    assert forward == dataclasses.replace(backward, go_backwards=False)
    assert dataclasses.asdict(backward) == {**GRU, "go_backwards": True, "return_sequences": True}
    stack = kerasrnn.RNNStack(
        kerasrnn.LSTMCell(U), num_layers=2, bidirectional=True, return_state=True
    )
    specs = [
        recurrence_spec(direction)
        for layer in stack.rnn_layers
        for direction in (layer.forward_layer, layer.backward_layer)
    ]
    assert [spec.go_backwards for spec in specs] == [False, True] * 2
    assert [spec.return_sequences for spec in specs] == [True, True, False, False]
    assert all(spec.kind == "lstm" and spec.return_state for spec in specs)


def test_the_spec_is_immutable():
    spec = recurrence_spec(kerasrnn.RNN(kerasrnn.LSTMCell(U)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.units = 8  # type: ignore[misc]


@pytest.mark.parametrize(
    "make_layer, kind",
    [
        (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U)), "lstm"),
        (lambda: kerasrnn.RNN(kerasrnn.GRUCell(U, reset_after=False)), "gru"),
        (lambda: kerasrnn.RNN(WeightDrop(kerasrnn.GRUCell(U), rate=0.5)), "gru"),
        (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U, peephole=True)), None),
        (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U, recurrent_dropout=0.1)), None),
        (lambda: kerasrnn.RNN(keras.layers.LSTMCell(U)), None),
        (lambda: kerasrnn.RNN(kerasrnn.LSTMCell(U, coupled=True)), None),
    ],
    ids=["lstm", "gru", "weight-drop", "peephole", "recurrent-dropout", "keras-cell", "coupled"],
)
def test_the_fast_path_takes_the_spec_without_peepholes_recurrent_dropout_or_keras_cells(
    make_layer, kind
):
    assert fused_kind(make_layer()) == kind


# ---- right padding ----------------------------------------------------------------------
def _numpy_right_padding(mask):
    steps = np.cumsum(mask, axis=1)
    lengths = mask.sum(axis=1)
    right_padded = (mask == (np.arange(mask.shape[1]) < lengths[:, None])).all(axis=1)
    return steps, lengths, right_padded


MASKS = np.array(
    [
        [1, 1, 1, 1, 1],  # full
        [1, 1, 1, 0, 0],  # right padding
        [0, 0, 1, 1, 1],  # left padding
        [1, 0, 1, 0, 0],  # a hole
        [0, 0, 0, 0, 0],  # padding only
        [0, 1, 1, 1, 0],  # both sides
    ],
    bool,
)


def test_right_padding_against_numpy():
    random = np.random.default_rng(0).random((7, 9)) < 0.6
    for mask in (MASKS, random, MASKS.astype("int32"), MASKS.astype("float32")):
        padding = right_padding(mask)
        want = _numpy_right_padding(np.asarray(mask, bool))
        for got, expected in zip(padding, want):
            got = keras.ops.convert_to_numpy(got)
            np.testing.assert_array_equal(got, expected)
        assert keras.backend.standardize_dtype(padding.steps.dtype) == "int32"
        assert keras.backend.standardize_dtype(padding.lengths.dtype) == "int32"
    assert keras.ops.convert_to_numpy(right_padding(MASKS).right_padded).tolist() == [
        True,
        True,
        False,
        False,
        True,
        False,
    ]


def test_right_padding_traced_with_an_unknown_length():
    """As the exporters trace it: a `tf.function` over batches of any length (TensorFlow),
    `jax.jit` (JAX); eagerly on torch."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        run = tf.function(
            lambda m: tuple(right_padding(m)),
            input_signature=[tf.TensorSpec((None, None), tf.bool)],
        )
    elif backend == "jax":
        import jax

        run = jax.jit(lambda m: tuple(right_padding(m)))
    else:

        def run(m):
            return tuple(right_padding(keras.ops.convert_to_tensor(m)))

    for got, expected in zip(run(MASKS), _numpy_right_padding(MASKS)):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(got), expected)
