"""Alignments out of decoding: every decoder returns each kept hypothesis' attention
weights, and beam search re-orders them with the beams. Checked against a NumPy rerun
of the same attentive decoder on the returned tokens (teacher forcing)."""

import keras
import numpy as np
import pytest
from keras import ops

from kerasrnn import decoding

END, PAD, VOCAB, UNITS, SOURCE = 3, 0, 6, 5, 4


def np_(x):
    return ops.convert_to_numpy(x)


class AttentiveStep:
    """h_t = tanh(h_{t-1} W + E[y_{t-1}]); a_t = softmax(M h_t) (masked);
    logits = (h_t + a_t M) O. States: (h, memory, mask)."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.emb = rng.normal(size=(VOCAB, UNITS)).astype("float32")
        self.w = rng.normal(size=(UNITS, UNITS)).astype("float32")
        self.out = (2 * rng.normal(size=(UNITS, VOCAB))).astype("float32")

    def __call__(self, tokens, states):
        h, memory, mask = states
        memory = ops.convert_to_tensor(memory)  # NumPy * torch tensor is no torch op
        h = ops.tanh(ops.matmul(h, self.w) + ops.take(self.emb, tokens, axis=0))
        scores = ops.sum(memory * h[:, None, :], axis=-1)
        scores = ops.where(mask > 0, scores, -1e9)
        a = ops.softmax(scores, axis=-1)
        context = ops.sum(a[:, :, None] * memory, axis=1)
        return ops.matmul(h + context, self.out), (h, memory, mask), a

    def numpy_rerun(self, tokens, h, memory, mask):
        """Log-probabilities and alignments of each step, fed the given tokens."""
        alignments, log_probs, previous = [], [], 0
        for token in tokens:
            h = np.tanh(h @ self.w + self.emb[previous])
            scores = np.where(mask > 0, memory @ h, -np.inf)
            a = np.exp(scores - scores.max())
            a /= a.sum()
            logits = ((h + a @ memory) @ self.out).astype("float64")
            log_probs.append(logits[token] - np.log(np.exp(logits).sum()))
            alignments.append(a)
            previous = token
        return np.array(alignments), sum(log_probs)


def inputs(batch=3, seed=1):
    rng = np.random.default_rng(seed)
    h = rng.normal(size=(batch, UNITS)).astype("float32")
    memory = rng.normal(size=(batch, SOURCE, UNITS)).astype("float32")
    mask = np.ones((batch, SOURCE), "float32")
    mask[0, 3:] = 0  # a padded source: its last position must never get attention
    return h, memory, mask


def check_against_rerun(step, result, h, memory, mask):
    tokens, lengths, alignments = np_(result.tokens), np_(result.lengths), np_(result.alignments)
    assert alignments.shape == tokens.shape + (SOURCE,)
    for b in range(tokens.shape[0]):
        for n in range(tokens.shape[1]):
            length = lengths[b, n]
            expected, log_prob = step.numpy_rerun(tokens[b, n, :length], h[b], memory[b], mask[b])
            np.testing.assert_allclose(alignments[b, n, :length], expected, atol=1e-5)
            assert (alignments[b, n, length:] == 0).all()
            np.testing.assert_allclose(np_(result.log_probs)[b, n], log_prob, rtol=1e-4, atol=1e-5)
    assert (alignments[0, :, :, 3] == 0).all()


@pytest.mark.parametrize("stop_rule", ["set_aside", "compete"])
def test_beam_alignment_history_follows_the_beams(stop_rule):
    step = AttentiveStep()
    h, memory, mask = inputs()
    strategy = {"set_aside": decoding.BeamSearch, "compete": decoding.CompetingBeamSearch}[
        stop_rule
    ](beam_size=3)
    result = strategy(step, [0, 0, 0], (h, memory, mask), max_length=6, end_token=END)
    # Hypotheses of one example differ in their histories (not one row's copied).
    assert len({tuple(np_(result.tokens)[1, n]) for n in range(3)}) == 3
    check_against_rerun(step, result, h, memory, mask)


def test_greedy_and_sampling_alignments():
    step = AttentiveStep()
    h, memory, mask = inputs()
    greedy = decoding.greedy_search(step, [0, 0, 0], (h, memory, mask), 6, end_token=END)
    sampled = decoding.sample(step, [0, 0, 0], (h, memory, mask), 6, end_token=END, seed=3)
    for result in (greedy, sampled):
        assert np_(result.tokens).shape == (3, 1, 6)
        check_against_rerun(step, result, h, memory, mask)


def test_states_that_change_structure_are_named():
    def step(tokens, states):
        h, c = states
        return ops.zeros((ops.shape(tokens)[0], 4)), (h, (c, c))  # an extra state

    h = np.zeros((2, 3), "float32")
    with pytest.raises(ValueError) as error:
        decoding.greedy_search(step, [0, 0], (h, h), max_length=3)
    message = str(error.value)
    assert "structure" in message
    assert "Expected (<(2, 3) float32>, <(2, 3) float32>)" in message
    assert "received (<(2, 3) float32>, (<(2, 3) float32>, <(2, 3) float32>))" in message
    assert "while" not in message.lower()  # the user's structure, not the loop's

    def wider(tokens, states):
        return ops.zeros((ops.shape(tokens)[0], 4)), [ops.concatenate([states[0]] * 2, 1)]

    with pytest.raises(
        ValueError,
        match=r"shapes differ.*Expected \[<\(4, 3\) float32>\], "
        r"received \[<\(4, 6\) float32>\]",
    ):
        decoding.beam_search(wider, [0, 0], [h], max_length=3, end_token=1, beam_size=2)


def test_lists_and_tuples_of_states_are_interchangeable():
    step = AttentiveStep()
    h, memory, mask = inputs()

    def as_list(tokens, states):
        logits, states, a = step(tokens, tuple(states))
        return logits, list(states), a

    out = decoding.beam_search(as_list, [0, 0, 0], (h, memory, mask), 5, END, beam_size=2)
    ref = decoding.beam_search(step, [0, 0, 0], (h, memory, mask), 5, END, beam_size=2)
    np.testing.assert_array_equal(np_(out.tokens), np_(ref.tokens))


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.function is TF-only")
@pytest.mark.parametrize("jit_compile", [False, True])
def test_alignments_inside_tf_function_and_xla(jit_compile):
    import tensorflow as tf

    step = AttentiveStep()
    h, memory, mask = inputs()

    def run(h, memory, mask):
        start = tf.zeros(tf.shape(h)[:1], tf.int32)
        return decoding.beam_search(
            step,
            start,
            (h, memory, mask),
            6,
            END,
            beam_size=3,
            scorer=decoding.Scorer(coverage_penalty_weight=0.5),
        )

    spec = [
        tf.TensorSpec([None, UNITS]),
        tf.TensorSpec([None, SOURCE, UNITS]),
        tf.TensorSpec([None, SOURCE]),
    ]
    graph = tf.function(run, input_signature=spec, jit_compile=jit_compile)(h, memory, mask)
    eager = run(h, memory, mask)
    np.testing.assert_array_equal(np_(graph.tokens), np_(eager.tokens))
    np.testing.assert_allclose(np_(graph.alignments), np_(eager.alignments), atol=1e-6)
    check_against_rerun(step, graph, h, memory, mask)
