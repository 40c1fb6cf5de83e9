"""kerasrnn.models.TextClassifier (and its SentenceEncoder backbone): the forward pass
against Keras' own LSTM with copied weights and a NumPy head, fit, `.keras` and
SavedModel round trips."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.layers import NaiveBayesExpert
from kerasrnn.models import SentenceEncoder, TextClassifier

IDS = np.array([[4, 5, 6, 7, 0], [8, 9, 0, 0, 0], [3, 0, 0, 0, 0]], "int32")


def _model(pooling="mean", expert=None, bidirectional=False):
    keras.utils.set_random_seed(1)
    encoder = SentenceEncoder(
        12, 6, kerasrnn.LSTMCell(5), bidirectional=bidirectional, pooling=pooling
    )
    return TextClassifier(encoder, 3, dropout=0.1, expert=expert)


def _reference(model, ids):
    """Keras' LSTM (weights copied) over the embedded ids, a NumPy masked mean and a
    NumPy softmax head."""
    table = model.backbone.get_layer("embedding").get_weights()[0]
    lstm = keras.layers.LSTM(5, return_sequences=True)
    lstm.build((None, None, 6))
    lstm.set_weights(model.backbone.get_layer("rnn").rnn_layers[0].get_weights())
    mask = ids != 0
    states = keras.ops.convert_to_numpy(lstm(table[ids], mask=mask))
    u = (states * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    w, b = model.get_layer("classes").get_weights()
    z = u @ w + b
    return np.exp(z - z.max(1, keepdims=True)) / np.exp(z - z.max(1, keepdims=True)).sum(
        1, keepdims=True
    )


def test_outputs_equal_keras_lstm_and_a_numpy_head():
    model = _model()
    np.testing.assert_allclose(model.predict(IDS, verbose=0), _reference(model, IDS), atol=1e-5)


def test_naive_bayes_expert_multiplies_the_probabilities():
    model = _model()
    expert = NaiveBayesExpert(12, 3, order=2, buckets=7, scale=0.5)
    expert.estimate([[4, 5], [8, 9, 3], [6]], [0, 1, 2])
    combined = model.with_expert(expert)
    scores = keras.ops.convert_to_numpy(expert.scores(IDS))
    product = _reference(model, IDS) * np.exp(0.5 * scores)
    want = product / product.sum(1, keepdims=True)
    np.testing.assert_allclose(combined.predict(IDS, verbose=0), want, rtol=1e-4, atol=1e-6)


@pytest.mark.large
def test_fit_learns_a_toy_task():
    keras.utils.set_random_seed(0)
    model = TextClassifier(SentenceEncoder(12, 8, kerasrnn.GRUCell(8), pooling="max"), 2)
    model.compile(keras.optimizers.Adam(0.05))
    x = np.array([[4, 5, 0], [4, 6, 0], [7, 8, 0], [7, 9, 0]] * 4, "int32")
    y = np.array([0, 0, 1, 1] * 4)
    model.fit(x, y, epochs=15, verbose=0)
    assert (model.predict(x, verbose=0).argmax(1) == y).all()


@pytest.mark.large
def test_keras_file_loads_with_kerasrnn_alone(tmp_path, load_in_fresh_process):
    expert = NaiveBayesExpert(12, 3, order=2, buckets=7)
    expert.estimate([[4, 5], [8, 9, 3], [6]], [0, 1, 2])
    model = _model("concat", bidirectional=True).with_expert(expert)
    model.save(tmp_path / "model.keras")
    loaded = load_in_fresh_process(tmp_path / "model.keras", IDS, tmp_path)
    np.testing.assert_allclose(loaded["y"], model.predict(IDS, verbose=0), atol=1e-6)
    again = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(again, TextClassifier) and again.get_config() == model.get_config()


def test_saved_model_export_gives_the_same_outputs(tmp_path, saved_model_outputs):
    model = _model("last", bidirectional=True)
    exported = saved_model_outputs(model, IDS, tmp_path)
    np.testing.assert_allclose(exported, model.predict(IDS, verbose=0), atol=1e-6)


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(ValueError, match="`pooling` must be one of"):
        SentenceEncoder(12, pooling="median")
    with pytest.raises(ValueError, match="`backbone` must be a kerasrnn.models.SentenceEncoder"):
        TextClassifier(keras.layers.Dense(3), 3)
    with pytest.raises(ValueError, match="`num_classes`"):
        TextClassifier(SentenceEncoder(12, 4, kerasrnn.GRUCell(4)), 1)
