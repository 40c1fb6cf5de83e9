"""kerasrnn.data.tokenizers: splitting and id encoding as TensorFlow ops."""

import numpy as np
import tensorflow as tf

from kerasrnn.data import Vocabulary
from kerasrnn.data.tokenizers import (
    encode_chars,
    encode_tokens,
    split_chars,
    split_words,
    tokenize,
)


def test_split_words_whitespace_and_unicode_lowercase():
    rows = split_words(["  The CAT\tsat \n", "", "ÉCOLE Ünï"], lowercase=True).to_list()
    assert rows == [[b"the", b"cat", b"sat"], [], ["école".encode(), "ünï".encode()]]
    assert tokenize(["A b", ""]) == [["A", "b"], []]


def test_split_chars_keeps_code_points():
    assert split_chars(tf.constant(["añb", "日本"])).to_list() == [
        [b"a", "ñ".encode(), b"b"],
        ["日".encode(), "本".encode()],
    ]


def test_encode_tokens_pads_and_handles_empty_and_oov():
    vocab = Vocabulary(["the", "cat"])
    ids = encode_tokens(split_words(["the cat the", "zebra", ""]), vocab).numpy()
    np.testing.assert_array_equal(ids, [[4, 5, 4], [1, 0, 0], [0, 0, 0]])
    # A batch of empty strings still gives one (padding) column, never zero.
    assert encode_tokens(split_words(["", " "]), vocab).shape == (2, 1)
    # Dense input: "" is padding, not an unknown word.
    dense = encode_tokens(tf.constant([["cat", ""], ["dog", "the"]]), vocab.lookup())
    np.testing.assert_array_equal(dense.numpy(), [[5, 0], [1, 4]])


def test_encode_chars_three_levels():
    chars = Vocabulary(list("abc"))
    ids = encode_chars(tf.constant([["ab", "cz", ""], ["c", "", ""]]), chars).numpy()
    assert ids.shape == (2, 3, 2)
    np.testing.assert_array_equal(ids[0], [[4, 5], [6, 1], [0, 0]])
    np.testing.assert_array_equal(ids[1], [[6, 0], [0, 0], [0, 0]])


# ---------------------------------------------------------------------- WordPiece

WORDPIECE_CORPUS = [
    f"the {who} {verb} {what} ."
    for who in ("player", "players", "teacher", "teachers")
    for verb in ("plays", "played", "playing", "teaches", "taught")
    for what in ("football", "basketball", "games", "a game")
]


def test_wordpiece_vocabulary_has_the_special_ids_and_subwords(tmp_path):
    from kerasrnn.data import END_ID, PAD_ID, START_ID, UNK_ID
    from kerasrnn.data.tokenizers import learn_wordpiece_vocabulary

    vocab = learn_wordpiece_vocabulary(WORDPIECE_CORPUS, 50)
    assert 4 < len(vocab) <= 50
    assert [vocab.token_to_id(t) for t in ("[PAD]", "[UNK]", "[START]", "[END]")] == [
        PAD_ID,
        UNK_ID,
        START_ID,
        END_ID,
    ]
    assert any(t.startswith("##") for t in vocab.tokens)
    vocab.save(tmp_path / "vocab.txt")
    assert Vocabulary.load(tmp_path / "vocab.txt") == vocab
    import pytest

    with pytest.raises(ValueError, match="vocabulary_size"):
        learn_wordpiece_vocabulary(WORDPIECE_CORPUS, 4)


def test_wordpiece_round_trip_and_unknown_words():
    from keras_hub.tokenizers import WordPieceTokenizer

    from kerasrnn.data.tokenizers import (
        join_wordpieces,
        learn_wordpiece_vocabulary,
        split_wordpieces,
        wordpiece_tokenizer,
    )

    vocab = learn_wordpiece_vocabulary(WORDPIECE_CORPUS, 50)
    tokenizer = wordpiece_tokenizer(vocab)
    texts = ["the teachers playing basketball .", "", "the zebra plays ."]
    pieces = split_wordpieces(texts, tokenizer)
    rows = [[p.decode() for p in row] for row in pieces.to_list()]
    # A 50-piece vocabulary cannot hold every word: some are spelled with ## pieces.
    assert any(p.startswith("##") for p in rows[0])
    assert join_wordpieces(pieces).numpy().tolist() == [
        b"the teachers playing basketball .",
        b"",
        b"the [UNK] plays .",
    ]
    # "zebra" has letters the corpus never shows: one [UNK] for the whole word.
    assert rows[2][:2] == ["the", "[UNK]"] and not rows[2][2].startswith("##")
    assert rows[2].count("[UNK]") == 1
    # The vocabulary's ids are the tokenizer's own ids.
    ids = encode_tokens(pieces, vocab)
    own = WordPieceTokenizer(vocabulary=vocab.tokens, dtype="int32")
    expected = tf.function(own.tokenize)(tf.constant(texts)).to_tensor()
    np.testing.assert_array_equal(ids.numpy()[:, : expected.shape[1]], expected.numpy())
    assert ids.numpy()[2].tolist().count(1) == 1
    # Joining: ## glues to the previous piece, a leading ## piece loses its marker.
    hand = tf.ragged.constant([["play", "##ing", "foot", "##ball", "."], ["##ed", "x"], []])
    assert join_wordpieces(hand).numpy().tolist() == [b"playing football .", b"ed x", b""]
