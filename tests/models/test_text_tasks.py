"""Each task's `predict` / `generate` on text against its ids path decoded by hand: the
text encoded by the Python reference (`tests.tiny_tasks.sentence_ids`), the model's
ids-in output, then argmax -> labels, Viterbi tags, generated ids -> words. Batches run
in order of length and come back in the order given; a single example gives a single
result. Tiny untrained tasks: the equalities need no training."""

import itertools

import keras
import numpy as np
import pytest

from kerasrnn.metrics import entity_spans
from kerasrnn.models import SentenceEncoder, TextClassifier
from kerasrnn.special_tokens import END_ID
from tests.tiny_tasks import (
    JUDGMENTS,
    LABELS,
    TAGS,
    language_model,
    padded,
    pair_classifier,
    sentence_ids,
    sequence_tagger,
    text_classifier,
)

# lengths out of order (batches of 2 sorted by length), unknown words, case, empty
TEXTS = ["a good film that was dull and bad", "Good", "", "zebra plot", "the bad film", "a"]


def np_(x):
    return keras.ops.convert_to_numpy(x)


# One task per module and kind: each traces its text functions once (the tests share them).
@pytest.fixture(scope="module")
def taggers():
    return {crf: sequence_tagger(crf=crf) for crf in (True, False)}


# ---- TextClassifier ---------------------------------------------------------------------
def test_classifier_predict_on_text_is_the_argmax_of_predict_on_ids():
    model = text_classifier()
    probabilities = model.predict(sentence_ids(model.preprocessor.vocabulary, TEXTS), verbose=0)
    got = model.predict(TEXTS, batch_size=2)
    assert [r["label"] for r in got] == [LABELS[i] for i in probabilities.argmax(1)]
    for row, p in zip(got, probabilities):
        np.testing.assert_allclose(row["probability"], p.max(), atol=1e-6)
        np.testing.assert_allclose([row["probabilities"][k] for k in LABELS], p, atol=1e-6)
    assert len({r["label"] for r in got}) == 2  # both labels occur: the order shows
    assert model.predict(TEXTS[3]) == got[3]  # one sentence: its result alone
    assert model.predict(np.array(TEXTS)) == got  # a string array is text too
    # ids are still Keras' predict
    assert model.predict(np.array([[4, 5]]), verbose=0).shape == (1, 2)


def test_a_task_without_preprocessor_refuses_text_in_one_line():
    model = TextClassifier(SentenceEncoder(12, 4), 2)
    with pytest.raises(ValueError, match="TextClassifier has no preprocessor, so it takes token"):
        model.predict(["a sentence"])
    with pytest.raises(ValueError, match="has no preprocessor"):
        model.text_outputs(["a sentence"])
    with pytest.raises(ValueError, match="must be None or a kerasrnn TextClassifierPreprocessor"):
        TextClassifier(SentenceEncoder(12, 4), 2, preprocessor=pair_classifier().preprocessor)


# ---- PairClassifier -----------------------------------------------------------------------
PAIRS = list(zip(TEXTS, TEXTS[::-1]))


def _pair_ids(model, pairs):
    vocabulary = model.preprocessor.vocabulary
    return {
        side: sentence_ids(vocabulary, [pair[i] for pair in pairs])
        for i, side in enumerate(("sentence_a", "sentence_b"))
    }


def test_pair_classifier_predict_on_pairs_is_predict_on_ids():
    model = pair_classifier()
    probabilities = model.predict(_pair_ids(model, PAIRS), verbose=0)
    got = model.predict(PAIRS, batch_size=2)
    assert [r["label"] for r in got] == [JUDGMENTS[i] for i in probabilities.argmax(1)]
    for row, p in zip(got, probabilities):
        np.testing.assert_allclose([row["probabilities"][k] for k in JUDGMENTS], p, atol=1e-6)
    as_dict = {"sentence_a": [a for a, _ in PAIRS], "sentence_b": [b for _, b in PAIRS]}
    assert model.predict(as_dict) == got
    assert model.predict(PAIRS[2]) == got[2]


@pytest.mark.parametrize("head", ["score", "distribution"])
def test_pair_classifier_score_heads_give_the_models_score(head):
    model = pair_classifier(head)
    output = model.predict(_pair_ids(model, PAIRS), verbose=0)
    score = output["score"] if head == "distribution" else output
    got = model.predict(PAIRS, batch_size=4)
    assert list(got[0]) == ["score"]
    np.testing.assert_allclose([r["score"] for r in got], np.ravel(score), atol=1e-5)
    assert 1.0 <= min(r["score"] for r in got) and max(r["score"] for r in got) <= 5.0


# ---- SequenceTagger -------------------------------------------------------------------------
SENTENCES = [
    ["Peter", "Blackburn", "flew", "to", "Brussels", "."],
    ["EU"],
    ["zebra", "rejects", "it", "Peter"],
    [],
    ["to", "Brussels"],
]


def _tagger_ids(model, sentences):
    preprocessor = model.preprocessor
    words = [preprocessor.words.encode([t.lower() for t in s]) for s in sentences]
    inputs = {"word_ids": padded(words)}
    if preprocessor.chars is not None:
        width = inputs["word_ids"].shape[1]
        chars = np.zeros((len(sentences), width, preprocessor.max_chars), "int32")
        for i, sentence in enumerate(sentences):
            for j, token in enumerate(sentence):
                ids = preprocessor.chars.encode(list(token)[: preprocessor.max_chars])
                chars[i, j, : len(ids)] = ids
        inputs["char_ids"] = chars
    return inputs


@pytest.mark.parametrize("crf", [True, False], ids=["crf", "softmax"])
def test_tagger_predict_on_sentences_is_predict_tags_on_ids(taggers, crf):
    model = taggers[crf]
    expected = model.predict_tags(_tagger_ids(model, SENTENCES))
    got = model.predict(SENTENCES, batch_size=2)
    for sentence, row, want in zip(SENTENCES, got, expected):
        assert row["tokens"] == sentence
        assert row["tags"] == want["tags"]
        np.testing.assert_allclose(row["probabilities"], want["probabilities"], atol=1e-5)
        assert [(e["start"], e["end"], e["type"]) for e in row["entities"]] == want["entities"]
        assert [e["text"] for e in row["entities"]] == [
            " ".join(sentence[a:b]) for a, b, _ in want["entities"]
        ]
    assert got[3] == {"tokens": [], "tags": [], "probabilities": [], "entities": []}
    assert any(row["entities"] for row in got)
    # a sentence as a string is split on whitespace, and alone gives its result alone
    assert model.predict(" ".join(SENTENCES[2])) == got[2]


def test_tagger_reports_bioes_tags_as_bio():
    tags = ["B-PER", "E-PER", "I-PER", "S-PER", "O"]
    model = sequence_tagger(tags=tags, bio_output=True)
    expected = model.predict_tags(_tagger_ids(model, SENTENCES))
    got = model.predict(SENTENCES)
    as_bio = {"B-PER": "B-PER", "E-PER": "I-PER", "I-PER": "I-PER", "S-PER": "B-PER", "O": "O"}
    for row, want in zip(got, expected):
        assert row["tags"] == [as_bio[t] for t in want["tags"]]
        assert [(e["start"], e["end"], e["type"]) for e in row["entities"]] == entity_spans(
            row["tags"]
        )
    assert any(t in ("S-PER", "E-PER") for want in expected for t in want["tags"])


def test_a_tagger_of_other_tags_gives_no_entities():
    model = sequence_tagger(crf=False, chars=False, tags=["NOUN", "VERB", "DET"])
    got = model.predict(SENTENCES[:2])
    assert "entities" not in got[0] and len(got[0]["tags"]) == 6
    assert set(got[0]["tags"]) <= {"NOUN", "VERB", "DET"}


def _every_path(model, sentence):
    """Every tag path of `sentence` with its score and log-probability, by enumeration:
    a CRF's score sum_t psi_t(y_{t-1}, y_t) (y_{-1} = 0), a softmax's sum_t log p_t(y_t)."""
    outputs = np_(model(_tagger_ids(model, [sentence]), training=False))[0]
    n = len(sentence)
    paths = list(itertools.product(range(len(model.tags)), repeat=n))
    if model.crf:
        scores = np.array(
            [sum(outputs[t, p[t - 1] if t else 0, p[t]] for t in range(n)) for p in paths]
        )
    else:
        log_p = np.log(np.maximum(outputs, 1e-30))
        scores = np.array([sum(log_p[t, p[t]] for t in range(n)) for p in paths])
    log_z = np.log(np.exp(scores - scores.max()).sum()) + scores.max()
    return paths, scores, scores - log_z


@pytest.mark.large
@pytest.mark.parametrize("crf", [True, False], ids=["crf", "softmax"])
def test_tagger_n_best_equals_the_best_of_every_path(taggers, crf):
    model = taggers[crf]
    sentences = [["Peter", "flew", "to"], ["EU", "rejects"]]
    got = model.predict_n_best(sentences, 4)
    for sentence, found in zip(sentences, got):
        paths, scores, log_p = _every_path(model, sentence)
        best = np.argsort(-scores, kind="stable")[:4]
        assert len(found) == 4
        np.testing.assert_allclose([f["score"] for f in found], scores[best], atol=1e-4)
        np.testing.assert_allclose(
            [f["probability"] for f in found], np.exp(log_p[best]), atol=1e-5
        )
        assert found[0]["tags"] == [TAGS[i] for i in paths[best[0]]]
        for f in found:
            assert f["entities"] == [
                {"text": " ".join(sentence[a:b]), "type": kind, "start": a, "end": b}
                for a, b, kind in entity_spans(f["tags"])
            ]
    one = model.predict_n_best(sentences, 1)
    assert [r[0]["tags"] for r in one] == [r["tags"] for r in model.predict(sentences)]


# ---- LanguageModel ----------------------------------------------------------------------------
PROMPTS = ["a good film", "", "zebra the", "good"]


def _continuations(model, tokens):
    """Generated ids (n, length) -> the tokens before the first [END], [PAD] dropped,
    joined (by spaces for words)."""
    vocabulary = model.preprocessor.vocabulary
    texts = []
    for row in np_(tokens):
        row = list(row)
        row = row[: row.index(END_ID)] if END_ID in row else row
        words = [w for w in vocabulary.decode(row) if w != "[PAD]"]
        texts.append(model.preprocessor.joiner.join(words))
    return texts


@pytest.mark.parametrize("level", ["word", "char"])
def test_language_model_generate_on_prompts_is_generate_on_ids_decoded(level):
    import kerasrnn

    model = language_model(level)
    vocabulary = model.preprocessor.vocabulary
    split = (lambda p: list(p)) if level == "char" else (lambda p: p.split())
    ids = padded([[END_ID] + vocabulary.encode(split(p)) for p in PROMPTS])
    for strategy in (kerasrnn.decoding.GreedySearch(), kerasrnn.decoding.BeamSearch(3, 2)):
        expected = model.generate(ids, strategy, jit_compile=False)
        got = model.generate(PROMPTS, strategy, return_scores=True)
        for row, tokens, scores in zip(got, expected.tokens, np_(expected.scores)):
            assert [h["text"] for h in row] == _continuations(model, tokens)
            np.testing.assert_allclose([h["score"] for h in row], scores, atol=1e-5)
        assert model.generate(PROMPTS, strategy) == [row[0]["text"] for row in got]
    assert any(model.generate(PROMPTS))  # something was generated, so compared
    assert model.generate(PROMPTS[0]) == model.generate(PROMPTS)[0]
