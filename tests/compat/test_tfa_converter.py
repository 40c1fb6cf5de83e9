"""kerasrnn.compat.tfa on a model TF Addons built and trained (tools/tfa_fixtures/models.py):
its .h5 weights and its TF checkpoint, loaded into the kerasrnn model, predict what the
TFA model predicted, within 1e-5."""

import h5py
import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.compat.tfa import load_tfa_weights, read_tfa_weights
from tests.compat import tfa_fixtures

H5 = tfa_fixtures.FIXTURES / "model.h5"
CHECKPOINT = tfa_fixtures.FIXTURES / "model_ckpt" / "model"


def kerasrnn_model(carry_normalized_state=True, bias_after_norm=True):
    """The fixture model's architecture, with the options that reproduce TFA."""
    model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(12, 6, mask_zero=True, name="embedding"),
            kerasrnn.RNN(
                kerasrnn.LayerNormLSTMCell(8, carry_normalized_state=carry_normalized_state),
                return_sequences=True,
                name="lstm",
            ),
            kerasrnn.RNN(
                kerasrnn.LayerNormSimpleRNNCell(
                    5, bias_after_norm=bias_after_norm, norm_epsilon=1e-5
                ),
                name="rnn",
            ),
            keras.layers.Dense(3, name="logits"),
        ]
    )
    return model


H5_MAPPING = {"embed": "embedding", "encoder": "lstm", "summary": "rnn", "classify": "logits"}
CHECKPOINT_MAPPING = {
    "layer_with_weights-0": "embedding",
    "layer_with_weights-1": "lstm",
    "layer_with_weights-2": "rnn",
    "layer_with_weights-3": "logits",
}


def test_h5_weights_predict_as_tfa():
    fixture = tfa_fixtures.load("model")
    model = kerasrnn_model()
    load_tfa_weights(model, H5, H5_MAPPING)
    got = model.predict(fixture["tokens"], verbose=0)
    np.testing.assert_allclose(got, fixture["predictions"], atol=1e-5)
    assert fixture["tokens"].min() == 0  # padded sequences, so the mask is exercised


def test_checkpoint_weights_predict_as_tfa():
    pytest.importorskip("tensorflow")  # the checkpoint reader (any TF version)
    fixture = tfa_fixtures.load("model")
    model = kerasrnn_model()
    load_tfa_weights(model, CHECKPOINT, CHECKPOINT_MAPPING)
    got = model.predict(fixture["tokens"], verbose=0)
    np.testing.assert_allclose(got, fixture["predictions"], atol=1e-5)
    # the folder works as well as the prefix, and optimizer slots are left out
    assert read_tfa_weights(CHECKPOINT.parent).keys() == CHECKPOINT_MAPPING.keys()


def test_bidirectional_peephole_and_nas_h5_predict_as_tfa():
    """Embedding -> Bidirectional(RNN(PeepholeLSTMCell)) -> RNN(NASCell(projection, bias))
    -> Dense: each direction mapped on its own; TFA's peephole and projection names."""
    fixture = tfa_fixtures.load("model_bidirectional")
    bidirectional = keras.layers.Bidirectional(
        kerasrnn.RNN(kerasrnn.LSTMCell(8, peephole=True), return_sequences=True)
    )
    model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(12, 6, mask_zero=True, name="embedding"),
            bidirectional,
            kerasrnn.RNN(kerasrnn.NASCell(5, projection=4, use_bias=True), name="nas"),
            keras.layers.Dense(3, name="logits"),
        ]
    )
    load_tfa_weights(
        model,
        tfa_fixtures.FIXTURES / "model_bidirectional.h5",
        {
            "embed": "embedding",
            "encoder/forward_rnn": bidirectional.forward_layer,
            "encoder/backward_rnn": bidirectional.backward_layer,
            "summary": "nas",
            "classify": "logits",
        },
    )
    got = model.predict(fixture["tokens"], verbose=0)
    np.testing.assert_allclose(got, fixture["predictions"], atol=1e-5)
    with pytest.raises(ValueError, match="two weights named 'kernel'"):
        load_tfa_weights(
            model, tfa_fixtures.FIXTURES / "model_bidirectional.h5", {"encoder": bidirectional}
        )
    with pytest.raises(ValueError, match="no weights under 'sideways'"):
        load_tfa_weights(
            model,
            tfa_fixtures.FIXTURES / "model_bidirectional.h5",
            {"encoder/sideways": bidirectional.forward_layer},
        )


def test_paper_form_does_not_predict_as_tfa():
    """With the paper's LSTM (raw c carried) the same weights predict differently."""
    fixture = tfa_fixtures.load("model")
    model = kerasrnn_model(carry_normalized_state=False)
    load_tfa_weights(model, H5, H5_MAPPING, check_options=False)
    got = model.predict(fixture["tokens"], verbose=0)
    assert np.abs(got - fixture["predictions"]).max() > 1e-3


def test_read_h5_names_layers_and_weights():
    weights = read_tfa_weights(H5)
    assert list(weights) == ["embed", "encoder", "summary", "classify"]
    assert sorted(weights["summary"]) == [
        "layer_norm_simple_rnn_cell/bias",
        "layer_norm_simple_rnn_cell/gamma",
        "layer_norm_simple_rnn_cell/kernel",
        "layer_norm_simple_rnn_cell/recurrent_kernel",
    ]
    assert weights["encoder"]["layer_norm_lstm_cell/state_norm/gamma"].shape == (8,)


def test_mismatches_are_named():
    model = kerasrnn_model()
    with pytest.raises(ValueError, match=r"no layer 'decoder'.*'classify'"):
        load_tfa_weights(model, H5, {"decoder": "lstm"})
    with pytest.raises(ValueError, match="carry_normalized_state=True"):
        load_tfa_weights(kerasrnn_model(carry_normalized_state=False), H5, {"encoder": "lstm"})
    with pytest.raises(ValueError, match="bias_after_norm=True"):
        load_tfa_weights(kerasrnn_model(bias_after_norm=False), H5, {"summary": "rnn"})
    with pytest.raises(ValueError, match=r"'embed' -> 'lstm'.*'embeddings' has no counterpart"):
        load_tfa_weights(model, H5, {"embed": "lstm"})
    with pytest.raises(ValueError, match=r"shape \(5, 3\).*\(8, 3\)"):
        other = keras.Sequential([keras.Input((8,)), keras.layers.Dense(3, name="d")])
        load_tfa_weights(other, H5, {"classify": "d"})
    with pytest.raises(ValueError, match="no weights yet"):
        load_tfa_weights(None, H5, {"classify": keras.layers.Dense(3)})
    with pytest.raises(ValueError, match="`path`: no such weights file"):
        read_tfa_weights(H5.with_name("missing.h5"))


def test_keras3_weights_file_is_refused(tmp_path):
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f.create_group("layers")
    with pytest.raises(ValueError, match="not a tf.keras weights file"):
        read_tfa_weights(path)
