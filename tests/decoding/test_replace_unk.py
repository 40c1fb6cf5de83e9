"""replace_unk (copy the most attended source word for an unknown output) and the
attention heatmap, on decoder outputs checked against a NumPy argmax."""

import keras
import numpy as np
import pytest

from kerasrnn import decoding
from tests.decoding.reference import RecurrentDecoder, np_

END, UNK = 3, 1


def decoded():
    model = RecurrentDecoder(vocab=4, source=3, seed=0)
    h, memory = model.initial_states(4)
    return decoding.beam_search(model, [0] * 4, (h, memory), 5, END, beam_size=3, n_best=2)


def expected_replacement(result, source, words):
    tokens, alignments = np_(result.tokens), np_(result.alignments)
    out = np.array(words, dtype=object)
    for b, n, t in np.ndindex(tokens.shape):
        if tokens[b, n, t] == UNK:
            out[b, n, t] = source[b][int(np.argmax(alignments[b, n, t]))]
    return out


def test_replace_unk_copies_the_most_attended_source_word():
    result = decoded()
    tokens = np_(result.tokens)
    assert (tokens == UNK).sum() >= 3  # the test decodes unknowns to replace
    source = np.array([[f"s{b}{i}" for i in range(3)] for b in range(4)])
    words = np.vectorize(lambda t: f"t{t}")(tokens)
    got = decoding.replace_unk(result, source, words, unk_id=UNK)
    np.testing.assert_array_equal(got, expected_replacement(result, source, words))
    assert not any(w == f"t{UNK}" for w in got.ravel())
    # Without output words, source ids are copied into the ids (a shared vocabulary).
    ids = decoding.replace_unk(result, np.array([[10, 11, 12]] * 4), unk_id=UNK)
    assert set(ids[tokens == UNK].tolist()) <= {10, 11, 12}
    np.testing.assert_array_equal(ids[tokens != UNK], tokens[tokens != UNK])


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="string tensors are TF's")
def test_replace_unk_in_a_tf_function_on_strings():
    import tensorflow as tf

    result = decoded()
    source = np.array([[f"s{b}{i}" for i in range(3)] for b in range(4)])
    words = np.vectorize(lambda t: f"t{t}")(np_(result.tokens))

    @tf.function
    def serve(source, words):
        return decoding.replace_unk(result, source, words, unk_id=UNK)

    got = serve(tf.constant(source), tf.constant(words)).numpy().astype(str)
    np.testing.assert_array_equal(got, expected_replacement(result, source, words).astype(str))


def test_replace_unk_needs_alignments():
    model = RecurrentDecoder(vocab=4, attentive=False)
    result = decoding.greedy_search(model, [0], model.initial_states(1), 3, END)
    with pytest.raises(ValueError, match="alignments"):
        decoding.replace_unk(result, np.array([["a", "b", "c"]]), unk_id=UNK)


def test_plot_alignments_draws_the_hypothesis_weights():
    import matplotlib

    matplotlib.use("Agg")
    from kerasrnn.visualize import plot_alignments

    result = decoded()
    ax = plot_alignments(
        result, ["ein", "Haus", "[END]"], ["a", "b", "c", "d", "e"], example=2, hypothesis=1
    )
    length = np_(result.lengths)[2, 1]
    np.testing.assert_allclose(ax.images[0].get_array(), np_(result.alignments)[2, 1, :length])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["ein", "Haus", "[END]"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c", "d", "e"][:length]
    with pytest.raises(ValueError, match="hypothesis"):
        plot_alignments(result, hypothesis=2)
    matplotlib.pyplot.close("all")
