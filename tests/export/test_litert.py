"""`export_litert`: every case of the matrix (tests/export/conftest.py) exported with
LiteRT builtin ops only and run by the plain `ai_edge_litert` interpreter (no Flex
delegate), equal to Keras' `model.predict` within 1e-5."""

import re

import keras
import pytest

from kerasrnn.export import export_litert
from kerasrnn.export._formats import output_names
from tests.export.conftest import (
    BATCH,
    CASES,
    REFUSED,
    assert_outputs_equal,
    built,
    case_outputs,
    model_key,
)

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="exports a TensorFlow graph"
)
interpreter = pytest.importorskip("ai_edge_litert.interpreter")


# LiteRT's fused LSTM kernels each model's file holds (`native_recurrences`, the
# default): the standard LSTM layers (in "cells": keras.layers.RNN over kerasrnn's
# LSTMCell); the other cells, peepholes and LSTMs with `return_state` keep a WHILE.
FUSED_KERNELS = {"cells": 1, "kerasrnn_rnn_fast_lstm": 1, "kerasrnn_rnn_generic_loop": 1}
LOOPLESS = {"kerasrnn_rnn_fast_lstm", "kerasrnn_rnn_generic_loop"}  # no other loop at all


def _litert_runner(model, inputs, stem):
    lengths = [x.shape[1] for x in inputs]
    path = export_litert(model, stem.with_suffix(".tflite"), BATCH, lengths)
    # the plain interpreter: a Select TensorFlow (Flex) op would fail to load here
    loaded = interpreter.Interpreter(model_path=str(path))
    return loaded.get_signature_runner(), [op["op_name"] for op in loaded._get_ops_details()]


@pytest.mark.large
@pytest.mark.parametrize("case", CASES)
def test_litert_builtins_equal_keras(case, exported):
    model, inputs, expected = built(model_key(case))
    runner, ops = exported(model_key(case), _litert_runner)
    fused = FUSED_KERNELS.get(model_key(case), 0)
    assert ops.count("UNIDIRECTIONAL_SEQUENCE_LSTM") == fused
    assert ("WHILE" in ops) == (model_key(case) not in LOOPLESS)
    feed = {spec.name: x for spec, x in zip(model.inputs, inputs)}
    assert sorted(runner.get_input_details()) == sorted(feed)
    results = runner(**feed)
    actual = [results[name] for name in output_names(len(expected))]
    assert_outputs_equal(case_outputs(case, actual), case_outputs(case, expected))


def test_dynamic_length_needs_sequence_length(tmp_path):
    model = built("masked_go_backwards")[0]
    with pytest.raises(ValueError, match=r"dynamic time dimension.*pass sequence_length=N"):
        export_litert(model, tmp_path / "m.tflite", batch_size=BATCH)


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_unsupported_layer_is_refused(kind, tmp_path):
    build, layer = REFUSED[kind]
    with pytest.raises(
        ValueError, match=rf"^layer {re.escape(layer)} cannot be exported to LiteRT:"
    ):
        export_litert(build(), tmp_path / "model.tflite")
    assert not list(tmp_path.iterdir())  # refused before anything is written
