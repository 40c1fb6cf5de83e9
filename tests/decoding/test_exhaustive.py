"""`ExhaustiveSearch` against brute force (every complete sequence scored in NumPy), and
beam search equal to it when its beam holds every hypothesis."""

import keras
import numpy as np
import pytest

from kerasrnn import decoding
from tests.decoding.reference import RecurrentDecoder, complete_sequences, np_

END, VOCAB, LENGTH = 3, 4, 3


def brute_force(model, h, memory, start, beta=0.0):
    """Every complete sequence, ranked by (log p / |y|) + beta sum_i log min(c_i, 1)."""
    ranked = []
    for seq in complete_sequences(VOCAB, END, LENGTH):
        log_p, coverage = model.score(seq, h, memory, start)
        penalty = beta * np.log(np.minimum(np.where(coverage == 0, 1, coverage), 1)).sum()
        ranked.append((log_p / len(seq) + penalty, log_p, seq))
    return sorted(ranked, key=lambda r: -r[0])


@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_exhaustive_search_is_brute_force(beta):
    model = RecurrentDecoder(vocab=VOCAB, source=3)
    h, memory = model.initial_states(2)
    scorer = decoding.Scorer(coverage_penalty_weight=beta)
    search = decoding.ExhaustiveSearch(VOCAB, LENGTH, n_best=5, scorer=scorer)
    out = search(model, [0, 1], (h, memory), LENGTH, END)
    for b in range(2):
        expected = brute_force(model, h[b], memory[b], start=b, beta=beta)[:5]
        for n, (score, log_p, seq) in enumerate(expected):
            assert np_(out.tokens)[b, n, : len(seq)].tolist() == list(seq)
            assert np_(out.lengths)[b, n] == len(seq)
            np.testing.assert_allclose(np_(out.scores)[b, n], score, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(np_(out.log_probs)[b, n], log_p, rtol=1e-4, atol=1e-5)


def test_beam_search_covering_every_hypothesis_equals_exhaustive_search():
    """A beam of V (V-1)^(L-1) holds every extension at every step: no search error."""
    model = RecurrentDecoder(vocab=VOCAB, source=3, attentive=False)
    h, memory = model.initial_states(3)
    k = VOCAB * (VOCAB - 1) ** (LENGTH - 1)
    beam = decoding.BeamSearch(k, n_best=6)(model, [0, 1, 2], (h, memory), LENGTH, END)
    exhaustive = decoding.ExhaustiveSearch(VOCAB, LENGTH, n_best=6)(
        lambda tokens, states: model(tokens, states), [0, 1, 2], (h, memory), LENGTH, END
    )
    np.testing.assert_array_equal(np_(beam.tokens), np_(exhaustive.tokens))
    np.testing.assert_array_equal(np_(beam.lengths), np_(exhaustive.lengths))
    np.testing.assert_allclose(np_(beam.scores), np_(exhaustive.scores), rtol=1e-5, atol=1e-6)
    # and a beam too small to hold them does worse on some example (the search error)
    small = decoding.BeamSearch(1, n_best=1)(model, [0, 1, 2], (h, memory), LENGTH, END)
    assert (np_(small.scores)[:, 0] <= np_(exhaustive.scores)[:, 0] + 1e-6).all()


def test_refusals_and_config():
    with pytest.raises(ValueError, match=r"10\^6 = 1000000 sequences .* use a smaller"):
        decoding.ExhaustiveSearch(10, 6)
    search = decoding.ExhaustiveSearch(VOCAB, LENGTH, n_best=2)
    assert decoding.get(decoding.serialize(search)).get_config() == search.get_config()
    model = RecurrentDecoder(vocab=VOCAB, source=3, attentive=False)
    h, memory = model.initial_states(1)
    with pytest.raises(ValueError, match="max_length=3\\) was called with max_length=4"):
        search(model, [0], (h, memory), 4, END)
    with pytest.raises(ValueError, match="pass vocab_size=4"):
        decoding.ExhaustiveSearch(5, 2)(model, [0], (h, memory), 2, END)


@pytest.mark.large
def test_through_seq2seq_generate():
    """`Seq2Seq.generate` with exhaustive search (V^L rows per source) gives the beam that
    holds every hypothesis."""
    from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

    keras.utils.set_random_seed(2)
    model = Seq2Seq(Seq2SeqBackbone(12, 5, embedding_dim=4, units=6), max_target_length=3)
    ids = np.random.default_rng(0).integers(4, 12, (2, 4)).astype("int32")
    exhaustive = model.generate(ids, decoding.ExhaustiveSearch(5, 3, n_best=3))
    beam = model.generate(ids, decoding.BeamSearch(5 * 4**2, n_best=3))
    np.testing.assert_array_equal(np_(exhaustive.tokens), np_(beam.tokens))
    np.testing.assert_allclose(np_(exhaustive.scores), np_(beam.scores), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_(exhaustive.alignments), np_(beam.alignments), atol=1e-6)
