"""The export matrix's models, built once per session and shared by the ONNX and LiteRT
tests: every cell of the package in `keras.layers.RNN`, then the wrappers (`kerasrnn.RNN`
fast path and generic loop, `Bidirectional`, `RNNStack`, `AttentiveRNN`), masks,
`go_backwards` and the CRF's Viterbi decode. Tiny shapes: batch 2, time 5, units 4."""

import functools

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.layers import CRF, crf_decode

BATCH, TIME, FEATURES, UNITS = 2, 5, 3, 4

# Every cell in kerasrnn.cells, each variant that runs different equations.
CELLS = {
    "simple": lambda: kerasrnn.SimpleRNNCell(UNITS),
    "lstm": lambda: kerasrnn.LSTMCell(UNITS),
    # random peephole weights: the default zeros would hide a dropped peephole term
    "lstm_peephole": lambda: kerasrnn.LSTMCell(
        UNITS, peephole=True, peephole_initializer="random_normal"
    ),
    "lstm_coupled": lambda: kerasrnn.LSTMCell(UNITS, coupled=True),
    "lstm_no_forget_gate": lambda: kerasrnn.LSTMCell(UNITS, forget_gate=False),
    "gru_reset_after": lambda: kerasrnn.GRUCell(UNITS, reset_after=True),
    "gru_reset_before": lambda: kerasrnn.GRUCell(UNITS, reset_after=False),
    "layer_norm_lstm": lambda: kerasrnn.LayerNormLSTMCell(UNITS),
    "layer_norm_simple": lambda: kerasrnn.LayerNormSimpleRNNCell(UNITS),
    "nas": lambda: kerasrnn.NASCell(UNITS),
    "esn": lambda: kerasrnn.ESNCell(UNITS),
}


def _float_inputs():
    return keras.Input((None, FEATURES), name="x")


def _ids(length=TIME, seed=0):
    """Right-padded token ids (0 = padding): row 0 full, row 1 three real steps."""
    ids = np.random.default_rng(seed).integers(1, 10, size=(BATCH, length)).astype("int32")
    ids[1, 3:] = 0
    return ids


def _floats(seed=0):
    return np.random.default_rng(seed).normal(size=(BATCH, TIME, FEATURES)).astype("float32")


def _cells_model():
    """Every cell in its own `keras.layers.RNN` over the same input: one model, one
    conversion per format for the eleven cell cases."""
    inputs = _float_inputs()
    outputs = [
        keras.layers.RNN(build(), return_sequences=True, name=name)(inputs)
        for name, build in CELLS.items()
    ]
    return keras.Model(inputs, outputs), [_floats()]


def _wrapped(layer):
    inputs = _float_inputs()
    return keras.Model(inputs, layer(inputs)), [_floats()]


def _masked(layer):
    ids = keras.Input((None,), dtype="int32", name="ids")
    embedded = keras.layers.Embedding(10, FEATURES, mask_zero=True)(ids)
    return keras.Model(ids, layer(embedded)), [_ids()]


@keras.saving.register_keras_serializable(package="kerasrnn_tests")
class Viterbi(keras.layers.Layer):
    """The CRF's inference output: the Viterbi path and its score (`crf_decode`)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True  # takes the mask; its outputs carry none

    def call(self, potentials, mask=None):
        return crf_decode(potentials, mask)

    def compute_mask(self, inputs, mask=None):
        return [None, None]


def _attentive():
    targets = _float_inputs()
    source = keras.Input((None,), dtype="int32", name="source")
    memory = keras.layers.Embedding(10, 5, mask_zero=True)(source)
    cell = kerasrnn.AttentionCell(
        kerasrnn.LSTMCell(UNITS),
        kerasrnn.LuongAttention("general"),
        kerasrnn.RunThenAttend(),
    )
    outputs, alignments = kerasrnn.AttentiveRNN(cell, return_alignments=True)(targets, memory)
    model = keras.Model([targets, source], [outputs, alignments])
    return model, [_floats(), _ids(length=TIME + 1)]


def _crf():
    ids = keras.Input((None,), dtype="int32", name="ids")
    x = keras.layers.Embedding(10, FEATURES, mask_zero=True)(ids)
    x = kerasrnn.RNN(kerasrnn.GRUCell(UNITS), return_sequences=True)(x)
    # random transitions: with the zeros default Viterbi would follow the emissions only
    potentials = CRF(5, transition_initializer="random_normal", boundary_initializer="ones")(x)
    tags, score = Viterbi()(potentials)
    return keras.Model(ids, [tags, score]), [_ids()]


WRAPPERS = {
    "kerasrnn_rnn_fast_lstm": lambda: _wrapped(
        kerasrnn.RNN(kerasrnn.LSTMCell(UNITS), return_sequences=True)
    ),
    "kerasrnn_rnn_fast_gru": lambda: _wrapped(kerasrnn.RNN(kerasrnn.GRUCell(UNITS))),
    "kerasrnn_rnn_generic_loop": lambda: _wrapped(
        kerasrnn.RNN(kerasrnn.LSTMCell(UNITS), fast_path=False, return_sequences=True)
    ),
    "kerasrnn_rnn_hoisted": lambda: _wrapped(
        kerasrnn.RNN(kerasrnn.NASCell(UNITS), hoist_projection=True, return_sequences=True)
    ),
    "bidirectional": lambda: _wrapped(
        keras.Sequential(
            [
                keras.layers.Bidirectional(
                    keras.layers.RNN(kerasrnn.LSTMCell(UNITS, peephole=True), return_sequences=True)
                ),
                keras.layers.RNN(kerasrnn.GRUCell(UNITS)),
            ]
        )
    ),
    "masked_bidirectional": lambda: _masked(
        keras.layers.Bidirectional(
            kerasrnn.RNN(kerasrnn.LayerNormLSTMCell(UNITS), return_sequences=True)
        )
    ),
    "masked_go_backwards": lambda: _masked(
        kerasrnn.RNN(kerasrnn.GRUCell(UNITS), go_backwards=True, return_sequences=True)
    ),
    "masked_rnn_stack_states": lambda: _masked(
        kerasrnn.RNNStack(
            kerasrnn.LSTMCell(UNITS),
            num_layers=2,
            bidirectional=True,
            residual=True,
            return_state=True,
        )
    ),
    "attentive_rnn": _attentive,
    "crf_viterbi": _crf,
}

CASES = [f"cell_{name}" for name in CELLS] + list(WRAPPERS)


def model_key(case):
    """The model a case reads: the shared model of every cell, or its own."""
    return "cells" if case.startswith("cell_") else case


def case_outputs(case, outputs):
    """The outputs of `case` among its model's outputs (a cell's one output)."""
    if case.startswith("cell_"):
        return [outputs[list(CELLS).index(case[len("cell_") :])]]
    return list(outputs)


@functools.cache
def built(key):
    """(model, inputs, Keras' outputs) of a `model_key`, built once."""
    keras.utils.set_random_seed(7)
    model, inputs = _cells_model() if key == "cells" else WRAPPERS[key]()
    expected = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    return model, inputs, [np.asarray(e) for e in keras.tree.flatten(expected)]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """`exported(key, export)`: `export(model, folder)`'s result for a `model_key`, once
    per test module (the cell cases share one file)."""
    folder, results = tmp_path_factory.mktemp("export"), {}

    def get(key, export):
        if key not in results:
            results[key] = export(*built(key)[:2], folder / key)
        return results[key]

    return get


def assert_outputs_equal(actual, expected):
    """Each runtime output equals Keras' within 1e-5 (integer outputs exactly)."""
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape
        if np.issubdtype(want.dtype, np.integer):
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _stateful():
    inputs = keras.Input(batch_shape=(BATCH, TIME, FEATURES))
    layer = keras.layers.RNN(keras.layers.GRUCell(UNITS), stateful=True, name="streaming")
    return keras.Model(inputs, layer(inputs))


def _string_lookup():
    tokens = keras.Input((TIME,), dtype="string")
    ids = keras.layers.StringLookup(vocabulary=["a", "b"], name="vocabulary")(tokens)
    return keras.Model(tokens, keras.layers.Embedding(4, FEATURES)(ids))


# Layers no format holds (checked before conversion): (model builder, "'name' (Class)").
REFUSED = {
    "stateful": (_stateful, "'streaming' (RNN)"),
    "string_lookup": (_string_lookup, "'vocabulary' (StringLookup)"),
}
