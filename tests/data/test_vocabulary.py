"""kerasrnn.data.Vocabulary: the shared token <-> id contract."""

import numpy as np
import pytest
import tensorflow as tf

from kerasrnn.data import END_ID, PAD_ID, START_ID, UNK_ID, Vocabulary

CORPUS = [["the", "cat", "sat"], ["the", "dog", "sat", "down"], ["the", "cat"]]


def test_special_ids_are_fixed():
    vocab = Vocabulary(["x"])
    assert vocab.tokens[:4] == ["[PAD]", "[UNK]", "[START]", "[END]"]
    assert (PAD_ID, UNK_ID, START_ID, END_ID) == (0, 1, 2, 3)
    assert vocab.token_to_id("x") == 4 and len(vocab) == 5


def test_build_orders_by_count_then_alphabet():
    vocab = Vocabulary.build(CORPUS)
    # the:3, cat:2, sat:2, then singletons alphabetically.
    assert vocab.tokens[4:] == ["the", "cat", "sat", "dog", "down"]


def test_build_limits():
    assert Vocabulary.build(CORPUS, min_freq=2).tokens[4:] == ["the", "cat", "sat"]
    # max_size counts the four special tokens.
    assert Vocabulary.build(CORPUS, max_size=6).tokens[4:] == ["the", "cat"]
    assert len(Vocabulary.build(CORPUS, max_size=4)) == 4
    with pytest.raises(ValueError, match="max_size"):
        Vocabulary.build(CORPUS, max_size=3)
    with pytest.raises(ValueError, match="min_freq"):
        Vocabulary.build(CORPUS, min_freq=0)
    with pytest.raises(TypeError, match="token_lists"):
        Vocabulary.build("the cat")


def test_build_characters_bytes_and_specials_in_data():
    chars = Vocabulary.build(["abca", "b"])
    assert chars.tokens[4:] == ["a", "b", "c"]
    # bytes (as tf.data yields them) count as text; a literal "[PAD]" in the data
    # must not shift the special ids; empty tokens are dropped.
    vocab = Vocabulary.build([[b"caf\xc3\xa9", "[PAD]", "", "x"]])
    assert vocab.tokens[4:] == ["café", "x"]


def test_encode_decode_round_trip_and_oov():
    vocab = Vocabulary.build(CORPUS)
    ids = vocab.encode(["the", "zebra", "sat"], add_start=True, add_end=True)
    assert ids == [START_ID, 4, UNK_ID, 6, END_ID]
    assert vocab.decode(ids) == ["[START]", "the", "[UNK]", "sat", "[END]"]
    assert vocab.decode(ids + [PAD_ID], skip_special=True) == ["the", "[UNK]", "sat"]
    with pytest.raises(IndexError, match="outside the vocabulary"):
        vocab.decode([len(vocab)])
    with pytest.raises(TypeError, match="not a string"):
        vocab.encode("the cat")


def test_constructor_validation():
    with pytest.raises(ValueError, match="more than once"):
        Vocabulary(["a", "a"])
    with pytest.raises(ValueError, match="out of place"):
        Vocabulary(["a", "[UNK]"])
    with pytest.raises(ValueError, match="line breaks"):
        Vocabulary(["a\nb"])
    # The full list as `save` writes it is accepted as well.
    assert Vocabulary(Vocabulary(["a"]).tokens) == Vocabulary(["a"])


def test_save_load(tmp_path):
    vocab = Vocabulary.build(CORPUS + [["naïve", "日本"]])
    path = tmp_path / "sub" / "vocab.txt"
    vocab.save(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines == vocab.tokens
    assert Vocabulary.load(path) == vocab
    with pytest.raises(FileNotFoundError, match="vocab-missing"):
        Vocabulary.load(tmp_path / "vocab-missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("a\nb\n")
    with pytest.raises(ValueError, match="bad.txt.*first lines"):
        Vocabulary.load(bad)


def test_keras_lookup_layers_agree_with_encode():
    vocab = Vocabulary.build(CORPUS)
    tokens = [["[PAD]", "the", "zebra", "[START]", "[END]", "down"]]
    ids = vocab.lookup()(tf.constant(tokens)).numpy()
    expected = [PAD_ID] + vocab.encode(tokens[0][1:])
    np.testing.assert_array_equal(ids[0], expected)
    back = vocab.inverse_lookup()(tf.constant(ids)).numpy()
    assert [t.decode() for t in back[0]] == vocab.decode(expected)
    assert vocab.lookup().vocabulary_size() == len(vocab)
