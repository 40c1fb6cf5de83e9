"""Library pieces the recipes' tests used to check through a recipe, now checked here
directly: the Naive Bayes expert's options and large-vocabulary bigrams, the tagger
preprocessor's entity spans (conlleval's reading, as TensorFlow ops), its BIOES -> BIO
reporting and the biLM's word normalisation, InferSent's pair features with Tai et
al.'s expected score, and ULMFiT's vocabulary extension of a language model's weights."""

import numpy as np
import pytest

from kerasrnn.data import Vocabulary
from kerasrnn.layers import ExpectedScore, NaiveBayesExpert, PairFeatures
from kerasrnn.metrics import entity_spans


def test_naive_bayes_expert_takes_orders_1_and_2_and_large_vocabularies():
    with pytest.raises(ValueError, match="`order`"):
        NaiveBayesExpert(9, 2, order=3)
    # bigram codes a * vocab_size + b past int32 (a vocabulary over 46,340 words) still
    # find their hashed row, the one `ngram_rows` names
    big = NaiveBayesExpert(vocab_size=60000, num_classes=2, buckets=7)
    big.estimate([[59998, 59999], [3]], [0, 1])
    table = np.asarray(big.log_likelihood)
    rows = big.ngram_rows([59998, 59999])
    assert len(rows) == 3 and rows[-1] == (59998 * 60000 + 59999) % 7 + 60000
    np.testing.assert_allclose(
        np.asarray(big.scores(np.array([[59998, 59999]])))[0], table[rows].sum(axis=0), rtol=1e-6
    )


def test_entity_outputs_read_spans_as_conlleval():
    """The serving graph's spans against `entity_spans` on hand-made tags, ill-formed
    ones (I- first, E- twice) and BIOES among them."""
    import tensorflow as tf

    from kerasrnn.models.sequence_tagger_preprocessor import entity_outputs

    tags = [
        ["B-PER", "I-PER", "O", "I-LOC", "B-LOC"],
        ["I-ORG", "B-MISC", "I-MISC", "", ""],
        ["O", "O", "O", "O", "O"],
        ["S-LOC", "B-PER", "E-PER", "E-PER", "I-ORG"],
    ]
    tokens = [[f"w{i}{j}" if t else "" for j, t in enumerate(s)] for i, s in enumerate(tags)]
    out = entity_outputs(tf.constant(tokens), tf.constant(tags))
    for i, sentence in enumerate(tags):
        expected = entity_spans([t for t in sentence if t])
        got = [
            (int(s), int(e), k.decode())
            for s, e, k in zip(
                out["entity_start"].numpy()[i],
                out["entity_end"].numpy()[i],
                out["entity_type"].numpy()[i],
            )
            if s >= 0
        ]
        assert got == expected
        texts = [t.decode() for t in out["entity_text"].numpy()[i][: len(got)]]
        assert texts == [" ".join(tokens[i][s:e]) for s, e, _ in expected]


def test_bioes_tags_are_reported_in_bio_with_bio_output():
    from kerasrnn.models import SequenceTaggerPreprocessor

    names = ["B-X", "E-X", "I-X", "O", "S-X"]
    words = Vocabulary(["a"])
    bio = SequenceTaggerPreprocessor(words, bio_output=True)
    assert bio.reported_names(names) == ["B-X", "I-X", "O"]
    assert [bio.reported_tag(t) for t in names] == ["B-X", "I-X", "I-X", "O", "B-X"]
    assert SequenceTaggerPreprocessor(words).reported_names(names) == names  # kept as trained


def test_the_bilm_normalisation_lowercases_and_writes_numbers_as_n():
    from kerasrnn.data.tagging import lm_sentences

    words = [["The", "1,000", "3.5", "12:30", "1/2", "-4", ".5", "A1", "2nd", "Éte", ""], []]
    assert lm_sentences(words) == [
        ["the", "N", "N", "N", "N", "N", "N", "a1", "2nd", "éte", ""],
        [],
    ]


def test_pair_features_are_infersents_and_the_expected_score_tais():
    u = np.array([[1.0, -2.0]], "float32")
    v = np.array([[3.0, 0.5]], "float32")
    np.testing.assert_allclose(PairFeatures()([u, v]), [[1, -2, 3, 0.5, 2, 2.5, 3, -1]])
    p = np.array([[1, 0, 0, 0, 0], [0, 0, 0.8, 0.2, 0], [0, 0, 0, 0.5, 0.5]], "float32")
    np.testing.assert_allclose(ExpectedScore()(p)[:, 0], [1.0, 3.2, 4.5], rtol=1e-6)


def test_extended_weights_start_new_words_at_the_mean_row():
    from kerasrnn.models.language_model import extended_weights

    # old rows kept, the new rows (on the vocabulary's axis) the mean of the old ones
    embedding, kernel, bias = np.arange(12.0).reshape(4, 3), np.ones((3, 4)), np.arange(4.0)
    grown = extended_weights([embedding, kernel, bias], [(6, 3), (3, 6), (6,)], 4)
    np.testing.assert_array_equal(grown[0][:4], embedding)
    np.testing.assert_array_equal(grown[0][4:], [[4.5, 5.5, 6.5]] * 2)
    np.testing.assert_array_equal(grown[1], np.ones((3, 6)))
    np.testing.assert_array_equal(grown[2], [0, 1, 2, 3, 1.5, 1.5])
    for shapes in ([(6, 3), (3, 6)], [(6, 2), (3, 6), (6,)], [(3, 3), (3, 4), (4,)]):
        with pytest.raises(ValueError, match="do not fit this one"):
            extended_weights([embedding, kernel, bias], shapes, 4)
