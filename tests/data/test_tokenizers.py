"""kerasrnn.data.tokenizers: splitting and id encoding as TensorFlow ops."""
import numpy as np
import tensorflow as tf

from kerasrnn.data import Vocabulary
from kerasrnn.data.tokenizers import (
    encode_chars, encode_tokens, split_chars, split_words, tokenize,
)


def test_split_words_whitespace_and_unicode_lowercase():
    rows = split_words(["  The CAT\tsat \n", "", "ÉCOLE Ünï"], lowercase=True).to_list()
    assert rows == [[b"the", b"cat", b"sat"], [], ["école".encode(), "ünï".encode()]]
    assert tokenize(["A b", ""]) == [["A", "b"], []]


def test_split_chars_keeps_code_points():
    assert split_chars(tf.constant(["añb", "日本"])).to_list() == [
        [b"a", "ñ".encode(), b"b"], ["日".encode(), "本".encode()]
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
