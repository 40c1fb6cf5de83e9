"""SentencePiece subwords (`kerasrnn.data.tokenizers`' unigram and BPE models, the
``sentencepiece`` / ``bpe`` kinds of `kerasrnn.data.text.TextSide`): the pieces the
TensorFlow graph splits equal the `sentencepiece` library's own, the special tokens sit
at the project's ids, and joining the pieces gives the text back."""

import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from kerasrnn.data import SPECIAL_TOKENS, Vocabulary
from kerasrnn.data.text import TextSide, detokenize_graph
from kerasrnn.data.tokenizers import (
    join_sentencepieces,
    learn_sentencepiece,
    sentencepiece_tokenizer,
    sentencepiece_vocabulary,
    split_subwords,
)

CORPUS = [
    f"The {who} {verb} {what} near the river."
    for who in ("player", "players", "teacher", "teachers", "girl", "boy")
    for verb in ("plays", "played", "is playing", "teaches", "taught")
    for what in ("football", "basketball", "games", "a game", "the guitar")
]
TEXTS = [
    "The players played football.",
    "A teacher's guitar, near the river!",
    "",
    "unseen Wörter 42 € ok",
    "  spaced   out  ",
]


@pytest.fixture(scope="module", params=["unigram", "bpe"])
def model(request):
    return learn_sentencepiece(CORPUS, 120, request.param)


def test_the_graph_splits_as_the_sentencepiece_library(model):
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    pieces = split_subwords(TEXTS, sentencepiece_tokenizer(model)).to_list()
    assert [[p.decode() for p in row] for row in pieces] == [
        processor.encode(text, out_type=str) for text in TEXTS
    ]
    vocabulary = sentencepiece_vocabulary(model)
    assert vocabulary.tokens[:4] == list(SPECIAL_TOKENS)
    assert vocabulary.tokens == [processor.id_to_piece(i) for i in range(len(vocabulary))]
    assert 4 < len(vocabulary) <= 120
    # the ids a side looks up are the model's own ids
    side = TextSide(vocabulary, "sentencepiece", subword_model=model)
    ids = side.encode_graph(tf.constant(TEXTS[:2])).numpy()
    for row, text in zip(ids, TEXTS[:2]):
        expected = processor.encode(text)
        np.testing.assert_array_equal(row[: len(expected)], expected)


def test_joined_pieces_give_the_text_back(model):
    side = TextSide(sentencepiece_vocabulary(model), "bpe", subword_model=model)
    known = ["The players played football.", "the girl taught games near the river.", TEXTS[-1]]
    back = side.decode_graph(side.encode_graph(tf.constant(known))).numpy()
    # SentencePiece folds runs of spaces into one and trims the ends
    assert [t.decode() for t in back] == [" ".join(t.split()) for t in known]
    hand = tf.ragged.constant([["▁play", "ed", "▁well", "."], [], ["▁a"]])
    assert join_sentencepieces(hand).numpy().tolist() == [b"played well.", b"", b"a"]
    assert detokenize_graph(hand, "sentencepiece").numpy().tolist() == [
        b"played well.",
        b"",
        b"a",
    ]


def test_sides_learn_lower_cased_pieces_and_save_nothing_but_the_model():
    side = TextSide.build(CORPUS, kind="sentencepiece", lowercase=True, subword_vocab_size=80)
    assert not any(t != t.lower() for t in side.vocabulary.tokens[4:])
    assert side.tokenize(["THE PLAYERS"]) == side.tokenize(["the players"])
    again = TextSide(side.vocabulary, "sentencepiece", True, side.subword_model)
    assert again.tokenize(TEXTS) == side.tokenize(TEXTS)


def test_a_saved_side_reads_back_from_its_files(tmp_path):
    side = TextSide.build(CORPUS, kind="bpe", subword_vocab_size=80)
    paths = side.save(str(tmp_path), "target")
    assert [p.rsplit("/", 1)[1] for p in paths] == ["target_vocab.txt", "target_subwords.model"]
    vocabulary = Vocabulary.load(paths[0])
    assert vocabulary.tokens == side.vocabulary.tokens
    with open(paths[1], "rb") as f:
        again = TextSide(vocabulary, "bpe", subword_model=f.read())
    assert again.tokenize(TEXTS) == side.tokenize(TEXTS)
    assert TextSide.build(CORPUS).save(str(tmp_path), "source") == [
        str(tmp_path / "source_vocab.txt")
    ]


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: learn_sentencepiece(CORPUS, 50, "wordpiece"), "`model_type` must be one of"),
        (lambda: learn_sentencepiece(CORPUS, 4), "`vocabulary_size` must be an integer > 4"),
        (lambda: learn_sentencepiece(["", " "], 50), "no non-blank sentence"),
        (lambda: TextSide(Vocabulary([]), "bpe"), "`subword_model` is the learned model"),
        (lambda: TextSide(Vocabulary([]), "word", subword_model=b""), "kind='word' with one"),
    ],
)
def test_bad_arguments_say_what_to_fix(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_vocabulary_of_another_model_is_refused(model):
    other = learn_sentencepiece([t.upper() for t in CORPUS], 60, "bpe")
    with pytest.raises(ValueError, match="does not start with the pieces of `subword_model`"):
        TextSide(sentencepiece_vocabulary(other), "bpe", subword_model=model)
