"""Ensemble decoding: scores are the mean of the members' log-probabilities (computed
member by member in NumPy), each member's states carried separately."""

import numpy as np
import pytest
from keras import ops

from kerasrnn import decoding
from tests.decoding.reference import RecurrentDecoder, complete_sequences, log_softmax, np_

END = 3


class TableDecoder:
    """A state-free member: log p(y_t | y_{t-1}) from a table; no alignments."""

    def __init__(self, vocab=4, seed=7):
        self.logits = np.random.default_rng(seed).normal(size=(vocab, vocab)).astype("float32")

    def __call__(self, tokens, states):
        return ops.take(self.logits, tokens, axis=0), states

    def score(self, seq, start=0):
        previous = [start] + list(seq[:-1])
        return sum(log_softmax(self.logits[p])[y] for p, y in zip(previous, seq))


def members():
    return [RecurrentDecoder(vocab=4, seed=0), RecurrentDecoder(vocab=4, seed=5), TableDecoder()]


def mean_log_prob(models, states, b, seq):
    (h0, m0), (h1, m1) = states[0], states[1]
    return np.mean(
        [
            models[0].score(seq, h0[b], m0[b])[0],
            models[1].score(seq, h1[b], m1[b])[0],
            models[2].score(seq),
        ]
    )


def test_greedy_ensemble_scores_are_mean_member_log_probs():
    models = members()
    states = (models[0].initial_states(3, seed=1), models[1].initial_states(3, seed=2), ())
    out = decoding.greedy_search(decoding.Ensemble(models), [0, 0, 0], states, 6, END)
    for b in range(3):
        seq = np_(out.tokens)[b, 0, : np_(out.lengths)[b, 0]].tolist()
        np.testing.assert_allclose(
            np_(out.log_probs)[b, 0], mean_log_prob(models, states, b, seq), rtol=1e-4, atol=1e-5
        )
        # ... and each token is the argmax of the mean of the members' log-probabilities.
        (h0, m0), (h1, m1) = states[0], states[1]
        for t, y in enumerate(seq):
            mean = np.mean(
                [
                    models[0].next_log_probs(seq[:t], h0[b], m0[b]),
                    models[1].next_log_probs(seq[:t], h1[b], m1[b]),
                    log_softmax(models[2].logits[([0] + seq)[t]]),
                ],
                axis=0,
            )
            assert y == int(np.argmax(mean))
    # Two members return alignments: the ensemble returns their mean.
    assert np_(out.alignments).shape == (3, 1, 6, 3)


def test_exhaustive_beam_ensemble_equals_brute_force():
    models = members()
    states = (models[0].initial_states(2, seed=1), models[1].initial_states(2, seed=2), ())
    out = decoding.beam_search(
        decoding.Ensemble(models),
        [0, 0],
        states,
        3,
        END,
        beam_size=40,
        scorer=decoding.Scorer("average"),
    )
    for b in range(2):
        expected = sorted(
            (
                mean_log_prob(models, states, b, seq) / len(seq)
                for seq in complete_sequences(4, END, 3)
            ),
            reverse=True,
        )
        np.testing.assert_allclose(np_(out.scores)[b], expected, rtol=1e-4, atol=1e-5)


def test_a_one_member_ensemble_is_the_member():
    model = RecurrentDecoder(vocab=4)
    states = model.initial_states(2)
    alone = decoding.beam_search(model, [0, 0], states, 5, END, beam_size=3)
    ensemble = decoding.beam_search(
        decoding.Ensemble([model]), [0, 0], (states,), 5, END, beam_size=3
    )
    np.testing.assert_array_equal(np_(alone.tokens), np_(ensemble.tokens))
    np.testing.assert_allclose(np_(alone.scores), np_(ensemble.scores), rtol=1e-5)


def test_ensemble_states_must_be_one_per_member():
    models = members()
    with pytest.raises(ValueError, match="3 states, one per member"):
        decoding.greedy_search(decoding.Ensemble(models), [0], models[0].initial_states(1), 3, END)
    with pytest.raises(ValueError, match="step_fns"):
        decoding.Ensemble([])
