"""Shallow fusion: the fused scores log p_TM + lambda log p_LM and the chosen sequences
against a NumPy transcription, on a recurrent translator with alignments
(`RecurrentDecoder`) and a trigram-table LM whose state is the token before the last,
so a beam that took another hypothesis' place must carry that hypothesis' LM state."""

import keras
import numpy as np
import pytest
from keras import ops

from kerasrnn import decoding
from tests.decoding.reference import RecurrentDecoder, complete_sequences, log_softmax, np_

V, END, START, LM_BEFORE = 4, 3, 0, 1  # LM_BEFORE: the token the LM's state starts at


class TrigramLM:
    """p_LM(y_t | y_{t-2}, y_{t-1}) from a table; the state is y_{t-2}'s successor, the
    last token read (int32 `(rows,)`)."""

    def __init__(self, seed=3):
        rng = np.random.default_rng(seed)
        self.table = (2 * rng.normal(size=(V, V, V))).astype("float32")

    def step(self, tokens, states):
        logits = ops.take(ops.reshape(self.table, (V * V, V)), states * V + tokens, axis=0)
        return logits, ops.cast(tokens, "int32")

    def initial_states(self, batch_size):
        return ops.full((batch_size,), LM_BEFORE, "int32")

    def log_probs(self, seq, first=START):
        """log p_LM(y_t | ...) of each next token after `seq`'s prefixes, NumPy."""
        read = [LM_BEFORE, first] + list(seq)
        return [log_softmax(self.table[read[t], read[t + 1]]) for t in range(len(seq) + 1)]


TM, LM = RecurrentDecoder(vocab=V, seed=0), TrigramLM()


def tm_states(batch):
    return TM.initial_states(batch, seed=1)


def fused_next(seq, b, weight, first=START):
    """s(. | seq) = log p_TM(. | seq, x_b) + weight log p_LM(. | seq), NumPy."""
    h, memory = tm_states(2)
    return TM.next_log_probs(seq, h[b], memory[b]) + weight * LM.log_probs(seq, first)[-1]


def fused_score(seq, b, weight, first=START):
    return sum(fused_next(list(seq[:t]), b, weight, first)[y] for t, y in enumerate(seq))


def fused(weight, start_token=None):
    fusion = decoding.ShallowFusion((LM.step, LM.initial_states), weight, start_token)
    return fusion.fuse(TM, [START, START], tm_states(2))


def run(strategy, weight=0.7, start_token=None, max_length=3):
    step, states = fused(weight, start_token)
    return strategy(step, [START, START], states, max_length, end_token=END)


def outputs(result):
    tokens, lengths = np_(result.tokens), np_(result.lengths)
    return [
        [tokens[b, i, : lengths[b, i]].tolist() for i in range(tokens.shape[1])]
        for b in range(tokens.shape[0])
    ]


def check_scores(result, weight=0.7, first=START):
    """Every hypothesis' log_probs is the NumPy fused score of its tokens: wrong LM states
    after a re-ordering would score another prefix."""
    for b, hypotheses in enumerate(outputs(result)):
        expected = [fused_score(seq, b, weight, first) for seq in hypotheses]
        np.testing.assert_allclose(np_(result.log_probs)[b], expected, rtol=1e-4, atol=1e-4)


def test_greedy_takes_the_argmax_of_the_fused_scores():
    result = run(decoding.GreedySearch(), max_length=5)
    for b, (seq,) in enumerate(outputs(result)):
        for t, y in enumerate(seq):
            assert y == int(np.argmax(fused_next(seq[:t], b, 0.7)))
    check_scores(result)


def test_a_covering_beam_and_exhaustive_search_rank_every_sequence_by_fused_score():
    scorer = decoding.Scorer(None)
    beam = run(decoding.BeamSearch(40, scorer=scorer))
    exhaustive = run(decoding.ExhaustiveSearch(V, 3, n_best=5, scorer=scorer))
    for b in range(2):
        brute = sorted(
            ((fused_score(s, b, 0.7), list(s)) for s in complete_sequences(V, END, 3)),
            reverse=True,
        )
        np.testing.assert_allclose(np_(beam.scores)[b], [s for s, _ in brute], rtol=1e-4, atol=1e-4)
        assert outputs(exhaustive)[b] == [seq for _, seq in brute[:5]]
        np.testing.assert_allclose(
            np_(exhaustive.scores)[b], [s for s, _ in brute[:5]], rtol=1e-4, atol=1e-4
        )


@pytest.mark.parametrize(
    "strategy",
    [
        decoding.DiverseBeamSearch(4, groups=2, diversity=1.0, scorer=decoding.Scorer(None)),
        decoding.RandomSampling(seed=5),
    ],
    ids=["diverse", "sampling"],
)
def test_every_strategy_scores_its_hypotheses_with_the_lm_states_they_own(strategy):
    check_scores(run(strategy, max_length=5))


def test_small_beam_keeps_the_best_fused_prefixes():
    """Beam 2, NumPy transcription of the set-aside rule: the extensions of the live
    prefixes ranked by fused score, those among the 2 best that end set aside, the 2
    best unfinished ones live on, until 2 are complete."""
    result = run(decoding.BeamSearch(2, scorer=decoding.Scorer(None)), max_length=4)
    for b in range(2):
        live, finished = [((), 0.0)], []
        for t in range(4):
            candidates = sorted(
                (
                    (seq + (y,), score + fused_next(list(seq), b, 0.7)[y])
                    for seq, score in live
                    for y in range(V)
                ),
                key=lambda c: -c[1],
            )
            ends = [c[0][-1] == END or t == 3 for c in candidates]
            finished += [c for c, e in zip(candidates[:2], ends) if e]
            live = [c for c, e in zip(candidates, ends) if not e][:2]
            if len(finished) >= 2:
                break
        best = sorted(finished, key=lambda c: -c[1])[:2]
        assert outputs(result)[b] == [list(seq) for seq, _ in best]
        np.testing.assert_allclose(
            np_(result.scores)[b], [s for _, s in best], rtol=1e-4, atol=1e-4
        )


@pytest.mark.parametrize(
    "strategy",
    [decoding.BeamSearch(3), decoding.RandomSampling(seed=2)],
    ids=["beam", "sampling"],
)
def test_weight_zero_decodes_as_without_the_lm(strategy):
    plain = strategy(TM, [START, START], tm_states(2), 5, end_token=END)
    fused_out = run(strategy, weight=0.0, max_length=5)
    np.testing.assert_array_equal(np_(plain.tokens), np_(fused_out.tokens))
    np.testing.assert_allclose(np_(plain.scores), np_(fused_out.scores), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np_(plain.alignments), np_(fused_out.alignments), atol=1e-6)


def test_the_lm_reads_its_own_start_token_first():
    result = run(decoding.BeamSearch(3, scorer=decoding.Scorer(None)), start_token=2)
    check_scores(result, first=2)


def test_vocabulary_and_argument_errors_are_one_line():
    small = (
        lambda tokens, states: (ops.zeros((ops.shape(tokens)[0], V + 1)), states),
        lambda b: (),
    )
    step, states = decoding.ShallowFusion(small, 0.5).fuse(TM, [START], tm_states(1))
    with pytest.raises(ValueError, match="predicts 5 tokens, the decoder 4; train the LM"):
        decoding.greedy_search(step, [START], states, 3, END)
    with pytest.raises(ValueError, match="`weight` must be"):
        decoding.ShallowFusion((LM.step, LM.initial_states), -1.0)
    with pytest.raises(TypeError, match="LanguageModel or a pair"):
        decoding.ShallowFusion("lm.keras")


# ---- a kerasrnn translator and language model through `Seq2Seq.generate` ------------


@pytest.fixture(scope="module")
def models():
    from kerasrnn.models import LanguageModel, LanguageModelBackbone
    from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

    translator = Seq2Seq(Seq2SeqBackbone(12, 10, embedding_dim=5, units=6), max_target_length=5)
    return translator, LanguageModel(LanguageModelBackbone(10, 6))


SOURCE = np.array([[5, 6, 7, 4], [8, 9, 0, 0]])


def model_log_probs(logits):
    logits = np_(logits).astype("float64")
    logits[..., 0] = -np.inf  # padding is never generated (the step functions' rule)
    return np.stack([[log_softmax(row) for row in rows] for rows in logits])


def test_generate_with_a_language_model_scores_by_the_teacher_forced_models(models):
    translator, lm = models
    # beam search dropping finished examples (on TensorFlow and torch): the decoder's
    # memory narrowed through `take_rows`, the LM's states by the loop
    drop = keras.backend.backend() != "jax"
    strategy = decoding.BeamSearch(3, scorer=decoding.Scorer(None), drop_finished=drop)
    fusion = decoding.ShallowFusion(lm, weight=0.5)
    result = translator.generate(SOURCE, strategy, jit_compile=not drop and "auto", fusion=fusion)
    # every hypothesis rescored by the two models, teacher-forced, in one batch
    hypotheses = [(b, seq) for b, rows in enumerate(outputs(result)) for seq in rows]
    target_in = np.zeros((len(hypotheses), 5), "int32")
    for i, (_, seq) in enumerate(hypotheses):
        target_in[i, : len(seq)] = [translator.start_id] + seq[:-1]
    sources = SOURCE[[b for b, _ in hypotheses]]
    tm = model_log_probs(translator({"source": sources, "target_in": target_in}))
    lm_p = model_log_probs(lm(target_in))
    expected = [
        sum(tm[i, t, y] + 0.5 * lm_p[i, t, y] for t, y in enumerate(seq))
        for i, (_, seq) in enumerate(hypotheses)
    ]
    np.testing.assert_allclose(np_(result.log_probs).reshape(-1), expected, rtol=1e-4, atol=1e-4)


def test_generate_with_weight_zero_is_plain_generate(models):
    """(Compiled where the backend compiles: the fusion joins the cache's key.)"""
    translator, lm = models
    plain = translator.generate(SOURCE, "greedy")
    fused_out = translator.generate(SOURCE, "greedy", fusion=decoding.ShallowFusion(lm, 0.0))
    np.testing.assert_array_equal(np_(plain.tokens), np_(fused_out.tokens))
    np.testing.assert_allclose(np_(plain.scores), np_(fused_out.scores), rtol=1e-5, atol=1e-5)


def test_generate_refuses_a_language_model_of_another_vocabulary(models):
    from kerasrnn.models import LanguageModel, LanguageModelBackbone

    translator, _ = models
    other = decoding.ShallowFusion(LanguageModel(LanguageModelBackbone(11, 4)), 0.3)
    with pytest.raises(ValueError, match="predicts 11 tokens, the decoder 10"):
        translator.generate(SOURCE, "greedy", fusion=other)
    with pytest.raises(TypeError, match="`fusion` must be"):
        translator.generate(SOURCE, "greedy", fusion=0.3)
