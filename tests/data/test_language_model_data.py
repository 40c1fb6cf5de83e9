"""`kerasrnn.data.language_model.language_model_data` and `bidirectional_data` against
streams and sentence batches written out by hand: the forward LM reads [END] w_1 ..
w_n -> w_1 .. w_n [END], the backward LM the mirror, [END] w_n .. w_1 -> w_n .. w_1
[END]."""

import numpy as np

from kerasrnn.data import Vocabulary
from kerasrnn.data.language_model import bidirectional_data, language_model_data
from kerasrnn.special_tokens import END_ID as E
from kerasrnn.special_tokens import START_ID as S

SENTENCES = [["a", "b"], ["c"], ["a", "c", "b"]]
VOCABULARY = Vocabulary(["a", "b", "c"])  # a=4, b=5, c=6
A, B, C = 4, 5, 6


def test_stream_windows_of_both_directions():
    data = language_model_data(SENTENCES, VOCABULARY, batch_size=2, steps=2, bidirectional=True)
    # the stream a b E c E a c b E (9 tokens) in 2 rows of 3 windows of 2 tokens, the
    # inputs [END] then the stream; row 1 goes on where row 0 ends
    targets = [[A, B, E, C, E, A], [C, B, E, 0, 0, 0]]
    inputs = [[E, A, B, E, C, E], [A, C, B, 0, 0, 0]]

    def windows(rows):  # batch i holds window i of each row
        return np.array([row[i : i + 2] for i in (0, 2, 4) for row in rows], "int32")

    x, y = data["forward"]
    np.testing.assert_array_equal(y, windows(targets))
    np.testing.assert_array_equal(x, windows(inputs))
    # backward: the stream read right to left, each token predicting the one before
    # (b c a E c E b a E: the last sentence first, "a c b" read as E b c a -> b c a E)
    back_targets = [[B, C, A, E, C, E], [B, A, E, 0, 0, 0]]
    back_inputs = [[E, B, C, A, E, C], [E, B, A, 0, 0, 0]]
    bx, by = data["backward"]
    np.testing.assert_array_equal(by, windows(back_targets))
    np.testing.assert_array_equal(bx, windows(back_inputs))
    # both directions predict the same number of tokens
    assert (y != 0).sum() == (by != 0).sum() == 9
    assert list(language_model_data(SENTENCES, VOCABULARY, 2, 2)) == ["forward"]
    # a biLM's fit takes them together
    joined_x, joined_y = bidirectional_data(data)
    np.testing.assert_array_equal(joined_x["forward"], x)
    np.testing.assert_array_equal(joined_x["backward"], bx)
    np.testing.assert_array_equal(joined_y["backward"], by)


def test_sentence_batches_of_both_directions():
    data = language_model_data(SENTENCES, VOCABULARY, batch_size=3, bidirectional=True)
    (x, y), *rest = list(data["forward"])
    assert not rest
    np.testing.assert_array_equal(x, [[S, A, B, 0], [S, C, 0, 0], [S, A, C, B]])
    np.testing.assert_array_equal(y, [[A, B, E, 0], [C, E, 0, 0], [A, C, B, E]])
    (bx, by), *_ = list(data["backward"])
    np.testing.assert_array_equal(bx, [[S, B, A, 0], [S, C, 0, 0], [S, B, C, A]])
    np.testing.assert_array_equal(by, [[B, A, E, 0], [C, E, 0, 0], [B, C, A, E]])
    # cut to max_length tokens first
    (cut_x, cut_y), *_ = list(
        language_model_data(SENTENCES, VOCABULARY, 3, max_length=1)["forward"]
    )
    np.testing.assert_array_equal(cut_y, [[A, E], [C, E], [A, E]])
    # zipped for a biLM
    (joined_x, joined_y), *_ = list(bidirectional_data(data))
    np.testing.assert_array_equal(joined_x["forward"], x)
    np.testing.assert_array_equal(joined_x["backward"], bx)
    np.testing.assert_array_equal(joined_y["forward"], y)
    np.testing.assert_array_equal(joined_y["backward"], by)
