"""kerasrnn.data.vectors: word2vec / GloVe text and binary, fastText .vec, aligned to a
vocabulary with coverage, extension and frozen copies into a Keras embedding."""

import gzip
import struct

import numpy as np
import pytest

from kerasrnn.data import Vocabulary
from kerasrnn.data.loaders import DataFormatError
from kerasrnn.data.vectors import load_vectors, write_vectors

# The file's words, most frequent first, and their vectors (the reference).
WORDS = ["the", "Paris", "berlin", "cat", "The", "zebra", "Rome"]
RNG = np.random.default_rng(7)
VECTORS = RNG.normal(size=(len(WORDS), 3)).astype("float32")
FILE = dict(zip(WORDS, VECTORS))
# exact: the, cat, The; lower-cased only: paris (Paris), Berlin (berlin); missing: dog
VOCAB = Vocabulary(["the", "paris", "Berlin", "cat", "The", "dog"])


def _text(path, header, trailing=""):
    lines = [f"{len(WORDS)} 3"] if header else []
    lines += [w + " " + " ".join(repr(float(v)) for v in vec) + trailing for w, vec in FILE.items()]
    data = "\n".join(lines) + "\n"
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def _binary(path):
    with open(path, "wb") as f:
        f.write(f"{len(WORDS)} 3\n".encode())
        for word, vector in FILE.items():  # word2vec.c: word, space, floats, newline
            f.write(word.encode() + b" " + struct.pack("<3f", *vector) + b"\n")
    return path


FORMATS = {
    "word2vec_text_gzip": lambda d: _text(d / "v.txt.gz", header=True),
    "glove_no_header": lambda d: _text(d / "glove.txt", header=False),
    "fasttext_vec": lambda d: _text(d / "v.vec", header=True, trailing=" "),
    "word2vec_binary": lambda d: _binary(d / "v.bin"),
}


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_every_format_gives_the_files_rows_and_coverage(tmp_path, kind):
    vectors = load_vectors(FORMATS[kind](tmp_path), VOCAB)
    tokens = VOCAB.tokens
    expected = {"the": "the", "paris": "Paris", "Berlin": "berlin", "cat": "cat", "The": "The"}
    for token, word in expected.items():
        np.testing.assert_array_equal(vectors.matrix[tokens.index(token)], FILE[word])
    assert vectors.matrix.shape == (len(VOCAB), 3) and vectors.dim == 3
    np.testing.assert_array_equal(vectors.matrix[0], 0.0)  # [PAD]
    coverage = vectors.coverage()
    assert coverage["vocabulary"] == 6 and coverage["found"] == 3
    assert coverage["found_lowercase"] == 2 and coverage["coverage"] == pytest.approx(5 / 6)
    assert coverage["added"] == 0 and vectors.vocabulary == VOCAB
    # a missing word: random on the file's scale, U[-a, a] with a = sqrt(3) std
    found = np.stack([FILE[w] for w in expected.values()])
    scale = np.sqrt(3) * found.std()
    dog = vectors.matrix[tokens.index("dog")]
    assert np.abs(dog).max() <= scale and np.abs(dog).max() > 0


def test_extension_adds_the_most_frequent_missing_words(tmp_path):
    path = _text(tmp_path / "v.txt", header=True)
    vocab = Vocabulary(["the", "cat"])
    vectors = load_vectors(path, vocab, extend=3, lowercase=True)
    # file order: the (in), paris, berlin, cat (in), the, zebra -> lower-cased, unseen
    assert vectors.vocabulary.tokens[4:] == ["the", "cat", "paris", "berlin", "zebra"]
    for token, word in (("paris", "Paris"), ("berlin", "berlin"), ("zebra", "zebra")):
        np.testing.assert_array_equal(
            vectors.matrix[vectors.vocabulary.token_to_id(token)], FILE[word]
        )
    assert vectors.coverage() == {
        "file": str(path),
        "dim": 3,
        "vocabulary": 2,
        "found": 2,
        "found_lowercase": 0,
        "added": 3,
        "coverage": 1.0,
    }
    cased = load_vectors(path, vocab, extend=2)  # lowercase=False keeps the file's forms
    assert cased.vocabulary.tokens[4:] == ["the", "cat", "Paris", "berlin"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("3 2\ncat 1 2\ndog 1\n", r"v.txt, line 3: expected 2 numbers after the word \(as the "),
        ("cat 1 2\ndog 1 2 3\n", r"v.txt, line 2: expected 2 numbers .*as line 1 has.*got 3"),
        ("cat 1 x\n", r"v.txt, line 1: the vector has non-numeric values; fix or drop"),
        ("cat\n", r"v.txt, line 1: expected 'word v1 ... vd'"),
        ("\n\n", r"v.txt: the file contains no vectors"),
    ],
)
def test_malformed_text_files_name_the_file_and_line(tmp_path, content, message):
    path = tmp_path / "v.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=message):
        load_vectors(path, VOCAB)


def test_truncated_binary_and_words_with_spaces(tmp_path):
    path = _binary(tmp_path / "v.bin")
    data = path.read_bytes()
    (tmp_path / "cut.bin").write_bytes(data[:-9])
    with pytest.raises(DataFormatError, match=r"cut.bin: entry 7 \(b'Rome'\) has 1 of its 3"):
        load_vectors(tmp_path / "cut.bin", VOCAB)
    # GloVe 840B has a few tokens with spaces: the last d fields are the vector
    (tmp_path / "s.txt").write_text("cat 1 2\nnew york 3 4\n", encoding="utf-8")
    vectors = load_vectors(tmp_path / "s.txt", Vocabulary(["new york"]))
    np.testing.assert_array_equal(vectors.matrix[4], [3, 4])


def test_write_vectors_round_trip_and_frozen_embedding(tmp_path):
    import keras

    tokens = ["a", "b", "c"]
    matrix = RNG.normal(size=(3, 4)).astype("float32")
    path = write_vectors(tmp_path / "out.vec", tokens, matrix)
    assert open(path).readline() == "3 4\n"
    vectors = load_vectors(path, Vocabulary(tokens))
    np.testing.assert_allclose(vectors.matrix[4:], matrix, rtol=1e-5)
    layer = keras.layers.Embedding(7, 4)
    layer.build((None,))
    vectors.initialize(layer, trainable=False)
    assert not layer.trainable and not layer.trainable_weights
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer.embeddings), vectors.matrix)
    with pytest.raises(ValueError, match=r"out.vec: the vectors form a \(7, 4\) matrix but"):
        small = keras.layers.Embedding(5, 4)
        small.build((None,))
        vectors.initialize(small)
    with pytest.raises(ValueError, match="free of whitespace"):
        write_vectors(tmp_path / "bad.vec", ["a b"], matrix[:1])
