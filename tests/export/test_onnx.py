"""`export_onnx`: every case of the matrix (tests/export/conftest.py) exported and run by
onnxruntime, equal to Keras' `model.predict` within 1e-5."""

import re

import keras
import numpy as np
import pytest

from kerasrnn.export import export_onnx
from tests.export.conftest import (
    BATCH,
    CASES,
    REFUSED,
    Viterbi,
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


def test_litert_route_needs_a_fixed_length(tmp_path):
    # Keras' exporter cannot convert the Viterbi decode (keras.ops.scan); the route
    # through the LiteRT graph needs the length the model leaves dynamic
    potentials = keras.Input((None, 3, 3), name="potentials")
    tags, _ = Viterbi()(potentials)
    model = keras.Model(potentials, tags)
    with pytest.raises(ValueError, match=r"dynamic time dimension.*pass sequence_length=N"):
        export_onnx(model, tmp_path / "viterbi.onnx")
