"""`kerasrnn.models.copy_language_model` and `layer_groups` (ULMFiT's start from a
language model): a classifier's encoder after the copy reads a sentence as the language
model's own step function does; the groups are the embedding, each recurrent layer and
the head; mismatches are one-line errors."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.models import (
    LanguageModel,
    LanguageModelBackbone,
    PairClassifier,
    SentenceEncoder,
    TextClassifier,
    copy_language_model,
    layer_groups,
)

V = 14
IDS = np.array([[4, 7, 9, 5], [6, 8, 0, 0]], "int32")


def np_(x):
    return keras.ops.convert_to_numpy(x)


def _language_model(bidirectional=False, num_layers=2):
    keras.utils.set_random_seed(8)
    backbone = LanguageModelBackbone(
        V,
        6,
        num_layers=num_layers,
        embedding_dim=5,
        bidirectional=bidirectional,
        initializer=keras.initializers.RandomUniform(-0.5, 0.5, seed=8),
    )
    return LanguageModel(backbone)


def _classifier(num_layers=2, vocabulary=V):
    keras.utils.set_random_seed(9)
    encoder = SentenceEncoder(
        vocabulary, 5, kerasrnn.LSTMCell(6), num_layers, bidirectional=False, pooling="last"
    )
    return TextClassifier(encoder, 3)


def _last_states(language_model, ids):
    """Each row's top-layer hidden state after its last real token, by the language
    model's step function (one token at a time)."""
    step, initial_states = language_model.step_fn()
    found = []
    for row in ids:
        states = initial_states(1)
        for token in row[row != 0]:
            _, states = step(np.array([token], "int32"), states)
        found.append(np_(states[-1][0])[0])  # the last layer's h
    return np.array(found)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["lm", "bilm"])
def test_the_encoder_reads_as_the_language_model_after_the_copy(bidirectional):
    language_model, model = _language_model(bidirectional), _classifier()
    before = np_(model.backbone(IDS))
    assert copy_language_model(model, language_model) == 1 + 2 * 3  # embedding, 2 LSTMs
    after = np_(model.backbone(IDS))
    np.testing.assert_allclose(after, _last_states(language_model, IDS), atol=1e-5)
    assert not np.allclose(before, after)
    np.testing.assert_array_equal(
        model.backbone.get_layer("embedding").get_weights()[0],
        language_model.backbone.token_embedding.get_weights()[0],
    )


def test_a_mismatched_encoder_is_a_one_line_error():
    language_model = _language_model()
    with pytest.raises(ValueError, match="has 2 recurrent layers, the encoder 1: build it with"):
        copy_language_model(_classifier(num_layers=1), language_model)
    with pytest.raises(ValueError, match="embedding weights have shapes .* the vocabulary or"):
        copy_language_model(_classifier(vocabulary=V + 1), language_model)


def test_layer_groups_are_the_embedding_each_recurrent_layer_and_the_head():
    model = _classifier()
    groups = layer_groups(model)
    names = [[layer.name for layer in group] for group in groups]
    stack = model.backbone.get_layer("rnn").rnn_layers
    assert names == [["embedding"], [stack[0].name], [stack[1].name], ["classes"]]
    # every trainable weight is in one group
    grouped = sum(len(layer.trainable_weights) for group in groups for layer in group)
    assert grouped == len(model.trainable_weights)
    keras.utils.set_random_seed(9)
    encoder = SentenceEncoder(V, 5, kerasrnn.GRUCell(4), bidirectional=False)
    pair = PairClassifier(encoder, hidden_units=3)
    assert [layer.name for layer in layer_groups(pair)[-1]] == ["hidden", "judgment"]
    assert layer_groups(encoder)[-1] == []  # an encoder alone has no head
