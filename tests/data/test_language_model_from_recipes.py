"""`kerasrnn.data.language_model` (moved here from the language-model recipe's tests):
the stateful stream windows, the backward stream of a biLM, reading a corpus at word and
character level, and PTB's token count."""

import numpy as np
import pytest

from kerasrnn.data import language_model as lm_data
from kerasrnn.data.loaders import DataFormatError
from kerasrnn.data.vocabulary import END_ID, Vocabulary


def test_stream_windows_layout_and_errors():
    stream = np.arange(4, 4 + 23)
    x, y = lm_data.stream_windows(stream, batch_size=2, steps=4)
    # rows of length 12 -> 3 windows of 4; batch i = window i of both rows
    assert x.shape == y.shape == (6, 4)
    row0 = np.concatenate([y[0], y[2], y[4]])
    row1 = np.concatenate([y[1], y[3], y[5]])
    assert np.concatenate([row0, row1])[:23].tolist() == stream.tolist()
    assert (np.concatenate([row0, row1])[23:] == 0).all()
    inputs = np.concatenate(
        [np.concatenate([x[0], x[2], x[4]]), np.concatenate([x[1], x[3], x[5]])]
    )
    assert inputs[0] == END_ID and inputs[1:23].tolist() == stream[:-1].tolist()
    with pytest.raises(ValueError, match=r"a batch_size x steps = 4 x 20 window .* only 23 tokens"):
        lm_data.stream_windows(stream, batch_size=4, steps=20)
    with pytest.raises(ValueError, match="empty"):
        lm_data.stream_windows([], batch_size=2, steps=2)


def test_backward_stream_windows_layout():
    stream = np.array([5, 6, END_ID, 7, 8, 9, END_ID], "int32")
    x, y = lm_data.stream_windows(lm_data.backward_stream(stream), 1, 7)
    # reads [END] 9 8 7 [END] 6 5 and predicts each token's predecessor
    assert x[0].tolist() == [END_ID, 9, 8, 7, END_ID, 6, 5]
    assert y[0].tolist() == [9, 8, 7, END_ID, 6, 5, END_ID]


def test_corpus_reading_word_and_char_level(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("a <unk> b\n\nab c\n")
    assert lm_data.read_corpus(str(path)) == [["a", "[UNK]", "b"], ["ab", "c"]]
    chars = lm_data.read_corpus(str(path), level="char", unk_token=None)
    assert chars[2] == ["a", "b", " ", "c"]
    vocabulary = Vocabulary.build(chars)
    stream = lm_data.encode_stream(chars, vocabulary)
    assert len(stream) == sum(len(line) + 1 for line in chars)  # one [END] per line
    path.write_text("\n\n")
    with pytest.raises(DataFormatError, match="empty"):
        lm_data.read_corpus(str(path))


def test_ptb_stream_counts_every_eos(shared_data):
    path = shared_data("ptb", "ptb.valid.txt.gz")
    sentences = lm_data.read_corpus(str(path))
    assert len(sentences) == 3370
    vocabulary = Vocabulary.build(sentences)
    assert "<unk>" not in vocabulary.tokens  # PTB's own marker is our [UNK]
    x, y = lm_data.stream_windows(lm_data.encode_stream(sentences, vocabulary), 20, 20)
    assert int((y != 0).sum()) == 73760  # SOURCE.md: tokens including one <eos> per line
