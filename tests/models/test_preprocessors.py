"""The tasks' preprocessors against a Python reference (the vocabulary's own `encode` of
the text tokenized in Python, padded with 0), eagerly and inside `tf.data.Dataset.map`;
their configs round trip, their bad input fails in one line; and `unpadded`."""

import re

import numpy as np
import pytest
import tensorflow as tf

from kerasrnn.data import Vocabulary
from kerasrnn.models import (
    LanguageModelPreprocessor,
    PairClassifierPreprocessor,
    SequenceTaggerPreprocessor,
    TextClassifierPreprocessor,
)
from kerasrnn.models.preprocessor import unpadded
from kerasrnn.special_tokens import END_ID, PAD_ID, START_ID, UNK_ID
from tests.tiny_tasks import (
    SENTENCES,
    TOKENS,
    padded,
    sentence_ids,
    tagger_vocabularies,
    words_vocabulary,
)

# unknown words, case, blank and empty sentences
TEXTS = ["A good film", "dull AND bad zebra", "", "   ", "good"]


def mapped(preprocessor, dataset):
    """`preprocessor` mapped over `dataset` (graph mode), the batches' values."""
    return [tf.nest.map_structure(np.asarray, b) for b in dataset.map(preprocessor)]


# ---- TextClassifierPreprocessor ---------------------------------------------------------
def test_text_classifier_preprocessor_encodes_as_the_vocabulary():
    vocabulary = words_vocabulary()
    preprocessor = TextClassifierPreprocessor(vocabulary, ["neg", "pos"], lowercase=True)
    want = sentence_ids(vocabulary, TEXTS)
    assert UNK_ID in want[1] and (want[2:4] == 0).all()  # the cases the reference covers
    np.testing.assert_array_equal(preprocessor(TEXTS), want)
    np.testing.assert_array_equal(preprocessor.encode(tf.constant(TEXTS)), want)
    # inside Dataset.map, labels passed through; each batch padded to its own longest
    data = tf.data.Dataset.from_tensor_slices((TEXTS, [0, 1, 0, 1, 1])).batch(2)
    batches = mapped(preprocessor, data)
    for i, (ids, labels) in enumerate(batches):
        np.testing.assert_array_equal(ids, sentence_ids(vocabulary, TEXTS[2 * i : 2 * i + 2]))
        np.testing.assert_array_equal(labels, [0, 1, 0, 1, 1][2 * i : 2 * i + 2])
    # cased, and cut to max_length
    cased = TextClassifierPreprocessor(vocabulary, max_length=2)
    np.testing.assert_array_equal(
        cased(TEXTS), sentence_ids(vocabulary, TEXTS, lowercase=False, max_length=2)
    )
    # id_lists: unpadded, an empty sentence one [PAD]
    assert preprocessor.id_lists(TEXTS) == [list(r[r != 0]) or [0] for r in want]


def test_text_classifier_preprocessor_labels_and_outputs():
    preprocessor = TextClassifierPreprocessor(words_vocabulary(), ["neg", "pos"])
    assert preprocessor.label_ids(["pos", "neg", 1]) == [1, 0, 1]
    with pytest.raises(ValueError, match=r"labels \['maybe'\] are not among"):
        preprocessor.label_ids(["pos", "maybe"])
    outputs = preprocessor.outputs(tf.constant([[0.2, 0.8], [0.7, 0.3]]))
    assert outputs["label"].numpy().tolist() == [b"pos", b"neg"]
    assert outputs["labels"].numpy().tolist() == [[b"neg", b"pos"]] * 2
    np.testing.assert_allclose(outputs["probability"], [0.8, 0.7])
    assert preprocessor.results(outputs)[1] == {
        "label": "neg",
        "probability": pytest.approx(0.7),
        "probabilities": {"neg": pytest.approx(0.7), "pos": pytest.approx(0.3)},
    }
    # no labels: the class ids as names; labels that do not fit the model: one line
    unnamed = TextClassifierPreprocessor(words_vocabulary())
    assert unnamed.results(unnamed.outputs(tf.constant([[0.1, 0.2, 0.7]])))[0]["label"] == "2"
    with pytest.raises(ValueError, match="has 2 labels but the model outputs 3 classes"):
        preprocessor.outputs(tf.constant([[0.1, 0.2, 0.7]]))
    # a dataset of sentences and label names
    (ids, labels), *_ = preprocessor.dataset(SENTENCES[:2], ["pos", "neg"], batch_size=2)
    np.testing.assert_array_equal(np.asarray(labels), [1, 0])
    np.testing.assert_array_equal(
        np.asarray(ids), sentence_ids(preprocessor.vocabulary, SENTENCES[:2], lowercase=False)
    )


# ---- PairClassifierPreprocessor ---------------------------------------------------------
def test_pair_classifier_preprocessor_encodes_each_side_as_the_vocabulary():
    vocabulary = words_vocabulary()
    preprocessor = PairClassifierPreprocessor(vocabulary, lowercase=True)
    a, b = TEXTS, TEXTS[::-1]
    pairs = list(zip(a, b))
    for given in ({"sentence_a": a, "sentence_b": b}, pairs):
        ids = preprocessor(given)
        np.testing.assert_array_equal(ids["sentence_a"], sentence_ids(vocabulary, a))
        np.testing.assert_array_equal(ids["sentence_b"], sentence_ids(vocabulary, b))
    data = tf.data.Dataset.from_tensor_slices({"sentence_a": a, "sentence_b": b}).batch(3)
    for i, ids in enumerate(mapped(preprocessor, data)):
        rows = slice(3 * i, 3 * i + 3)
        np.testing.assert_array_equal(ids["sentence_a"], sentence_ids(vocabulary, a[rows]))
        np.testing.assert_array_equal(ids["sentence_b"], sentence_ids(vocabulary, b[rows]))
    assert preprocessor.examples(("a", "b")) == ([("a", "b")], True)
    assert preprocessor.examples(pairs) == (pairs, False)
    # a score head's output: one number per pair
    score = preprocessor.outputs(tf.constant([[1.5], [4.0]]))
    assert preprocessor.results(score) == [{"score": 1.5}, {"score": 4.0}]


def test_pair_classifier_preprocessor_refuses_malformed_pairs():
    preprocessor = PairClassifierPreprocessor(words_vocabulary())
    with pytest.raises(ValueError, match=r"need the keys .*missing \['sentence_b'\]"):
        preprocessor.examples({"sentence_a": ["a"]})
    with pytest.raises(ValueError, match="as many first as second sentences; got 2 and 1"):
        preprocessor.examples({"sentence_a": ["a", "b"], "sentence_b": ["c"]})
    with pytest.raises(TypeError, match="item 1 is not a sentence pair"):
        preprocessor.examples([("a", "b"), ("c", "d", "e")])
    with pytest.raises(TypeError, match="give a sentence pair"):
        preprocessor.examples("a lone sentence")


# ---- SequenceTaggerPreprocessor ---------------------------------------------------------
NUMBER = re.compile(r"^([+-]?[0-9]+([.,:/-][0-9]+)*|[+-]?[.,][0-9]+)$")


def test_sequence_tagger_preprocessor_encodes_words_chars_and_lm_words():
    words, chars = tagger_vocabularies()
    lm_words = Vocabulary.build([["N", "peter", "flew", "to"]])
    preprocessor = SequenceTaggerPreprocessor(words, chars, lm_words, max_chars=3)
    sentences = TOKENS + [["Zqx", "1,000", "Brüssel"], ["3.5"]]
    lengths = [len(s) for s in sentences]
    inputs = preprocessor.encode(sentences)
    want_words = padded([words.encode([t.lower() for t in s]) for s in sentences])
    # the biLM's text: lower-cased, every number "N" (the Penn Treebank LM's)
    lm = [["N" if NUMBER.match(t) else t.lower() for t in s] for s in sentences]
    want_lm = padded([lm_words.encode(s) for s in lm])
    np.testing.assert_array_equal(inputs["word_ids"], want_words)
    np.testing.assert_array_equal(inputs["lm_ids"], want_lm)
    width = max(lengths)
    want_chars = np.zeros((len(sentences), width, 3), "int32")
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            ids = chars.encode(list(token)[:3])  # cased, cut to max_chars
            want_chars[i, j, : len(ids)] = ids
    np.testing.assert_array_equal(inputs["char_ids"], want_chars)
    # id_lists: per sentence without padding
    lists = preprocessor.id_lists(sentences)
    assert lists["word_ids"] == [words.encode([t.lower() for t in s]) for s in sentences]
    assert lists["char_ids"][2][0] == chars.encode(list("Zqx")[:3])
    # inside Dataset.map, on ragged token batches
    data = tf.data.Dataset.from_tensor_slices(tf.ragged.constant(sentences)).ragged_batch(2)
    batches = mapped(preprocessor, data)
    for i, batch in enumerate(batches):
        rows = slice(2 * i, 2 * i + 2)
        for key, want in (("word_ids", want_words), ("lm_ids", want_lm)):
            width = max(lengths[rows])
            np.testing.assert_array_equal(batch[key], want[rows, :width])
    # a sentence as a string is split on whitespace
    np.testing.assert_array_equal(
        preprocessor.encode(preprocessor.examples("Peter flew")[0])["word_ids"],
        [words.encode(["peter", "flew"])],
    )


def test_sequence_tagger_preprocessor_reports_bioes_as_bio():
    words, _ = tagger_vocabularies()
    preprocessor = SequenceTaggerPreprocessor(words, bio_output=True)
    tags = ["S-PER", "B-LOC", "E-LOC", "I-LOC", "O"]
    reported = preprocessor.reported(tf.constant(tags)).numpy().tolist()
    assert reported == [b"B-PER", b"B-LOC", b"I-LOC", b"I-LOC", b"O"]
    assert [preprocessor.reported_tag(t) for t in tags] == [t.decode() for t in reported]
    assert preprocessor.reported_names(tags) == ["B-LOC", "B-PER", "I-LOC", "O"]
    plain = SequenceTaggerPreprocessor(words)
    assert plain.reported_names(tags) == tags
    with pytest.raises(TypeError, match="sentence 1 is neither a string nor a list of tokens"):
        plain.examples([["a"], 3])
    with pytest.raises(ValueError, match="`words` is required"):
        SequenceTaggerPreprocessor(None)


def test_sequence_tagger_outputs_are_tags_probabilities_and_conlleval_entities():
    from kerasrnn.metrics import entity_spans

    words, _ = tagger_vocabularies()
    preprocessor = SequenceTaggerPreprocessor(words)
    names = ["B-PER", "I-PER", "B-LOC", "O"]
    tokens = tf.constant([["Peter", "Blackburn", "in", "Brussels"], ["EU", "it", "", ""]])
    # an I- after O starts an entity, as conlleval reads it
    best = tf.constant([[0, 1, 3, 2], [1, 3, 0, 0]])
    probability = tf.constant([[0.9, 0.8, 0.7, 0.6], [0.5, 0.4, 0.3, 0.2]])
    out = preprocessor.outputs(tokens, best, probability, names)
    tags = [[t.decode() for t in row] for row in out["tags"].numpy()]
    assert tags == [["B-PER", "I-PER", "O", "B-LOC"], ["I-PER", "O", "", ""]]
    np.testing.assert_allclose(out["probability"], [[0.9, 0.8, 0.7, 0.6], [0.5, 0.4, 0, 0]])
    assert out["lengths"].numpy().tolist() == [4, 2]
    results = preprocessor.results(out, [["Peter", "Blackburn", "in", "Brussels"], ["EU", "it"]])
    for row, sentence in zip(results, (tags[0], tags[1][:2])):
        assert [(e["start"], e["end"], e["type"]) for e in row["entities"]] == entity_spans(
            sentence
        )
    assert results[0]["entities"][0] == {
        "text": "Peter Blackburn",
        "type": "PER",
        "start": 0,
        "end": 2,
    }
    assert results[1]["entities"] == [{"text": "EU", "type": "PER", "start": 0, "end": 1}]
    # tags of no entity scheme: no entity outputs
    plain = preprocessor.outputs(tokens, best, probability, ["NOUN", "VERB", "DET", "X"])
    assert (
        "entity_start" not in plain
        and "entities" not in preprocessor.results(plain, [["a"], ["b"]])[0]
    )


# ---- LanguageModelPreprocessor ----------------------------------------------------------
def test_language_model_preprocessor_encodes_and_decodes_as_the_vocabulary():
    vocabulary = words_vocabulary()
    prompts = ["a good film", "zebra good", ""]
    preprocessor = LanguageModelPreprocessor(vocabulary)
    want = padded([[END_ID] + vocabulary.encode(p.split()) for p in prompts])
    np.testing.assert_array_equal(preprocessor(prompts), want)
    data = tf.data.Dataset.from_tensor_slices(prompts).batch(2)
    batches = mapped(preprocessor, data)
    np.testing.assert_array_equal(batches[0], want[:2])
    np.testing.assert_array_equal(batches[1], want[2:, :1])
    assert preprocessor.unknown_tokens("zebra good qq") == 2
    # [START] first for a model of sentence batches
    start = LanguageModelPreprocessor(vocabulary, boundary_id=START_ID)
    assert start(["good"]).numpy().tolist() == [[START_ID, vocabulary.token_to_id("good")]]
    # decoding: the tokens before the first [END], [PAD] dropped ([UNK] kept), joined
    good, film = vocabulary.token_to_id("good"), vocabulary.token_to_id("film")
    ids = [[good, UNK_ID, film, END_ID, good], [PAD_ID, film, PAD_ID, PAD_ID, PAD_ID]]
    assert preprocessor.decode(ids).numpy().tolist() == [b"good [UNK] film", b"film"]
    # characters, spaces included, joined without a separator
    chars = Vocabulary.build([list(t) for t in SENTENCES])
    by_char = LanguageModelPreprocessor(chars, "char")
    np.testing.assert_array_equal(by_char(["a go"]), [[END_ID] + chars.encode(list("a go"))])
    assert by_char.decode([chars.encode(list("a go")) + [END_ID]]).numpy()[0] == b"a go"
    with pytest.raises(ValueError, match="`level` must be one of"):
        LanguageModelPreprocessor(vocabulary, "byte")
    with pytest.raises(ValueError, match="`boundary_id` must be 3"):
        LanguageModelPreprocessor(vocabulary, boundary_id=7)


# ---- every preprocessor -------------------------------------------------------------------
def _every_preprocessor():
    from kerasrnn.seq2seq import Seq2SeqPreprocessor
    from tests.tiny_tasks import seq2seq_sides

    words, chars = tagger_vocabularies()
    vocabulary = words_vocabulary()
    return [
        TextClassifierPreprocessor(vocabulary, ["neg", "pos"], lowercase=True, max_length=3),
        PairClassifierPreprocessor(vocabulary, ["a", "b", "c"], max_length=4),
        SequenceTaggerPreprocessor(words, chars, words, lowercase=False, max_chars=2),
        LanguageModelPreprocessor(vocabulary, "word", START_ID),
        Seq2SeqPreprocessor(*seq2seq_sides(), replace_unk=True),
    ]


def _encoded(preprocessor):
    inputs = {
        "PairClassifierPreprocessor": {"sentence_a": TEXTS, "sentence_b": TEXTS[::-1]},
        "SequenceTaggerPreprocessor": TOKENS,
    }.get(type(preprocessor).__name__, TEXTS)
    return tf.nest.map_structure(np.asarray, preprocessor.encode(inputs))


@pytest.mark.parametrize("index", range(5))
def test_config_round_trip_encodes_the_same(index):
    import keras

    preprocessor = _every_preprocessor()[index]
    again = type(preprocessor).from_config(preprocessor.get_config())
    assert again.get_config() == preprocessor.get_config()
    loaded = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(preprocessor)
    )
    assert type(loaded) is type(preprocessor)
    for copy in (again, loaded):
        tf.nest.map_structure(np.testing.assert_array_equal, _encoded(copy), _encoded(preprocessor))


def test_bad_vocabularies_fail_in_one_line():
    with pytest.raises(ValueError, match=r"`vocabulary` must be .* starting with \['\[PAD\]'"):
        TextClassifierPreprocessor(["a", "b"])
    with pytest.raises(ValueError, match="`vocabulary` is required"):
        TextClassifierPreprocessor(None)
    with pytest.raises(ValueError, match="`labels` must be distinct"):
        TextClassifierPreprocessor(words_vocabulary(), ["pos", "pos"])
    with pytest.raises(ValueError, match="`chars` must be"):
        SequenceTaggerPreprocessor(words_vocabulary(), ["x"])
    with pytest.raises(ValueError, match="`vocabulary` is required"):
        PairClassifierPreprocessor(None)


def test_ids_where_text_is_needed_fail_in_one_line():
    preprocessor = TextClassifierPreprocessor(words_vocabulary())
    with pytest.raises(TypeError, match="item 0 is int"):
        preprocessor.examples([4, 5])
    with pytest.raises(ValueError, match="a 1-d array of them; got shape"):
        preprocessor.examples(np.array([["a", "b"]]))
    with pytest.raises(TypeError, match="expected a sentence or a list of them; got int"):
        preprocessor.examples(4)


def test_what_counts_as_text():
    from kerasrnn.models.preprocessor import is_text

    assert is_text("a") and is_text(["a", "b"]) and is_text(np.array(["a"]))
    assert is_text([["Peter", "flew"], []])  # a tagger's batch with an empty sentence
    assert is_text({"sentence_a": ["a"], "sentence_b": ["b"]}) and is_text(tf.constant(["a"]))
    assert not is_text([[4, 5], []]) and not is_text([[], []]) and not is_text([])
    assert not is_text(np.array([[4, 5]])) and not is_text(np.array([[4, "a"]], dtype=object))


def test_a_preprocessor_is_no_symbolic_layer():
    import keras

    with pytest.raises(NotImplementedError, match="runs on text"):
        TextClassifierPreprocessor(words_vocabulary())(keras.Input((), dtype="string"))


# ---- unpadded -------------------------------------------------------------------------------
def test_unpadded_cuts_rows_to_their_length_or_last_nonzero_id():
    ids = np.array([[4, 0, 5, 0], [0, 0, 0, 0], [6, 7, 8, 9]])
    assert unpadded(ids) == [[4, 0, 5], [0], [6, 7, 8, 9]]
    assert unpadded(ids, [1, 2, 4]) == [[4], [0, 0], [6, 7, 8, 9]]
    chars = np.array([[[5, 6, 0], [7, 0, 0], [0, 0, 0]]])
    assert unpadded(chars, [2]) == [[[5, 6], [7]]]
    assert unpadded(chars, [3]) == [[[5, 6], [7], [0]]]
