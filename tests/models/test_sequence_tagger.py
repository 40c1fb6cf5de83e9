"""kerasrnn.models.SequenceTagger: the softmax tagger against Keras' bidirectional LSTM
and a NumPy head, the CRF's `predict_tags` against brute force over every tag path,
`.keras` and SavedModel round trips."""

import itertools

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.metrics import entity_spans
from kerasrnn.models import SequenceTagger, SequenceTaggerBackbone

TAGS = ["B-PER", "I-PER", "O"]
WORDS = np.array([[4, 5, 6, 7], [8, 9, 0, 0]], "int32")
CHARS = np.array([[[5, 6], [7, 0], [8, 9], [5, 5]], [[6, 0], [9, 8], [0, 0], [0, 0]]], "int32")


def _model(crf=False, chars=True, scheme=None):
    keras.utils.set_random_seed(3)
    backbone = SequenceTaggerBackbone(
        12,
        6,
        kerasrnn.LSTMCell(5),
        char_vocabulary_size=10 if chars else 0,
        char_dim=4,
        char_cell=kerasrnn.GRUCell(3),
        dropout=0.1,
        word_dropout=0.2,
        embedding_dropout=0.1,
    )
    model = SequenceTagger(backbone, TAGS, crf=crf, scheme=scheme, dropout=0.1)
    if crf:  # random transitions, so that the best path is not the per-word argmax
        for weight in model.weights:
            if "transition" in weight.path:
                weight.assign(np.random.default_rng(0).normal(size=weight.shape))
    return model


def _inputs(chars=True):
    return {"word_ids": WORDS, "char_ids": CHARS} if chars else {"word_ids": WORDS}


def test_softmax_tagger_equals_keras_bilstm_and_a_numpy_head():
    model = _model(chars=False)
    table = model.backbone.get_layer("word_embedding").get_weights()[0]
    reference = keras.layers.Bidirectional(keras.layers.LSTM(5, return_sequences=True))
    reference.build((None, None, 6))
    reference.set_weights(model.backbone.get_layer("rnn").rnn_layers[0].get_weights())
    h = keras.ops.convert_to_numpy(reference(table[WORDS], mask=WORDS != 0))
    w, b = model.get_layer("tags").get_weights()
    z = np.exp(h @ w + b)
    want = z / z.sum(-1, keepdims=True)
    got = model.predict(_inputs(False), verbose=0)
    real = WORDS != 0
    np.testing.assert_allclose(got[real], want[real], atol=1e-5)


def _brute_force(potentials, length):
    """The best path and each step's tag marginals by enumerating every path:
    score(y) = sum_t psi_t(y_{t-1}, y_t), y_{-1} = 0 (start transitions folded in)."""
    paths = list(itertools.product(range(len(TAGS)), repeat=length))
    scores = np.array(
        [sum(potentials[t, p[t - 1] if t else 0, p[t]] for t in range(length)) for p in paths]
    )
    weights = np.exp(scores - scores.max())
    marginals = np.zeros((length, len(TAGS)))
    for path, weight in zip(paths, weights):
        marginals[np.arange(length), path] += weight
    return paths[int(scores.argmax())], marginals / weights.sum()


def test_crf_predict_tags_equals_brute_force_over_every_path():
    model = _model(crf=True, scheme="BIO")
    potentials = model.predict(_inputs(), verbose=0)
    found = model.predict_tags(_inputs())
    for row, length in enumerate((4, 2)):
        best, marginals = _brute_force(potentials[row], length)
        tags = [TAGS[i] for i in best]
        assert found[row]["tags"] == tags
        np.testing.assert_allclose(
            found[row]["probabilities"], marginals[np.arange(length), best], atol=1e-5
        )
        assert found[row]["entities"] == entity_spans(tags)
        assert tags[0] != "I-PER" and ("O", "I-PER") not in zip(tags, tags[1:])
    assert model.predict_entities(_inputs()) == [f["entities"] for f in found]


@pytest.mark.large
def test_keras_file_loads_with_kerasrnn_alone(tmp_path, load_in_fresh_process):
    model = _model(crf=True, scheme="BIO")
    model.save(tmp_path / "tagger.keras")
    loaded = load_in_fresh_process(tmp_path / "tagger.keras", _inputs(), tmp_path)
    np.testing.assert_allclose(loaded["y"], model.predict(_inputs(), verbose=0), atol=1e-5)
    again = keras.saving.load_model(tmp_path / "tagger.keras")
    assert isinstance(again, SequenceTagger) and again.get_config() == model.get_config()


def test_saved_model_export_gives_the_same_outputs(tmp_path, saved_model_outputs):
    model = _model()
    exported = saved_model_outputs(model, _inputs(), tmp_path)
    np.testing.assert_allclose(exported, model.predict(_inputs(), verbose=0), atol=1e-5)


def test_bad_arguments_are_one_line_errors():
    backbone = SequenceTaggerBackbone(12, 4, kerasrnn.GRUCell(4))
    with pytest.raises(ValueError, match="`scheme`='BIO' constrains a CRF"):
        SequenceTagger(backbone, TAGS, scheme="BIO")
    with pytest.raises(ValueError, match="`scheme` must be one of"):
        SequenceTagger(backbone, TAGS, crf=True, scheme="BILOU")
    with pytest.raises(ValueError, match="`tags` must be distinct"):
        SequenceTagger(backbone, ["O", "O"])
