"""kerasrnn.layers.BiLMFeatures: [e; e] and [forward_k; backward_k] against each stack
run by hand, and `from_model` on a biLM with stateful (stream-training) layers."""

import keras
import numpy as np
import pytest

from kerasrnn.layers import BiLMFeatures, reverse_padded

BOUNDARY = 3


def _bilm(stateful, batch=2):
    keras.utils.set_random_seed(0)
    embedding = keras.layers.Embedding(12, 4, name="embedding")
    inputs = {
        d: keras.Input(batch_shape=(batch, None), dtype="int32", name=d)
        for d in ("forward", "backward")
    }
    outputs = {}
    for direction, prefix in (("forward", ""), ("backward", "backward_")):
        x = embedding(inputs[direction])
        for i in range(2):
            x = keras.layers.RNN(
                keras.layers.GRUCell(4),
                return_sequences=True,
                stateful=stateful,
                name=f"{prefix}rnn_{i}",
            )(x)
        outputs[direction] = x
    return keras.Model(inputs, outputs)


def _by_hand(model, tokens, prefix):
    x = model.get_layer("embedding")(np.asarray([[BOUNDARY] + tokens], "int32"))
    layers = [keras.ops.convert_to_numpy(x)[0, 1:]]
    for i in range(2):
        x = model.get_layer(f"{prefix}rnn_{i}")(x)
        layers.append(keras.ops.convert_to_numpy(x)[0, 1:])
    return layers


@pytest.mark.parametrize("stateful", [False, True])
def test_features_match_each_direction_run_by_hand(stateful):
    model = _bilm(stateful)
    features = BiLMFeatures.from_model(model, BOUNDARY)
    if stateful:  # copies that read each sentence from zero states
        assert not any(layer.stateful for layer in features.forward_layers)
        model = _bilm(False, batch=None)
        model.set_weights(_bilm(True).get_weights())
    sentences = [[5, 6, 7, 8], [9, 4]]
    ids = np.zeros((2, 4), "int32")
    for row, sentence in enumerate(sentences):
        ids[row, : len(sentence)] = sentence
    outputs = [keras.ops.convert_to_numpy(o) for o in features(ids)]
    assert len(outputs) == 3 and all(o.shape == (2, 4, 8) for o in outputs)
    for row, sentence in enumerate(sentences):
        n = len(sentence)
        forward = _by_hand(model, sentence, "")
        backward = _by_hand(model, sentence[::-1], "backward_")
        for k in range(3):
            np.testing.assert_allclose(outputs[k][row, :n, :4], forward[k], atol=1e-5)
            np.testing.assert_allclose(outputs[k][row, :n, 4:], backward[k][::-1], atol=1e-5)


def test_reverse_padded_keeps_padding_in_place():
    x = np.array([[1, 2, 3, 0], [4, 5, 0, 0]])
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(reverse_padded(x, [3, 2])), [[3, 2, 1, 0], [5, 4, 0, 0]]
    )


def test_from_model_needs_a_bidirectional_model():
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(5, 4, name="embedding")(ids)
    x = keras.layers.RNN(keras.layers.GRUCell(4), return_sequences=True, name="rnn_0")(x)
    with pytest.raises(ValueError, match="need a bidirectional language model"):
        BiLMFeatures.from_model(keras.Model(ids, x), BOUNDARY)


def test_serializes():
    features = BiLMFeatures.from_model(_bilm(False), BOUNDARY, trainable=False)
    again = BiLMFeatures.from_config(features.get_config())
    ids = np.array([[5, 6, 0]])
    again(ids)
    again.set_weights(features.get_weights())
    for a, b in zip(features(ids), again(ids)):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b), atol=1e-6
        )
