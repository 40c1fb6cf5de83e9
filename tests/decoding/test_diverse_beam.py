"""Diverse beam search (Vijayakumar et al. 2018) against a NumPy transcription, on a
table model (the next token's log-probabilities looked up by the previous token): the
library's `DiverseBeamSearch` and the subclass docs/decoding.md writes over
`BeamSearch`'s `group_penalty` hook ("Writing your own strategy"); `BeamSearch`'s
groups and the hook's arguments."""

import keras
import numpy as np
import pytest

from kerasrnn import decoding
from tests.decoding.reference import np_
from tests.test_docs import REPO, collect

END, VOCAB, MAX_LENGTH = 0, 7, 5


def table(seed):
    """log p(y | previous token, step): `(MAX_LENGTH, VOCAB, VOCAB)`. (By the previous
    token alone, sequences with the same transitions in another order tie exactly, and
    float rounding would pick among them.)"""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(MAX_LENGTH, VOCAB, VOCAB)) * 1.5
    logits[:, :, END] -= 1.0  # fewer early ends: longer searches
    return (logits - np.log(np.exp(logits).sum(-1, keepdims=True))).astype("float32")


def table_step(log_p):
    """The step function: looks the log-probabilities up by step (its state) and
    previous token."""
    flat = keras.ops.convert_to_tensor(log_p.reshape(-1, VOCAB))

    def step(tokens, t):
        rows = keras.ops.minimum(t, MAX_LENGTH - 1) * VOCAB + tokens
        return keras.ops.take(flat, rows, axis=0), t + 1

    return step


def numpy_diverse_beam(log_p, start, beam_size, groups, diversity, n_best):
    """The paper's algorithm with the set-aside stop rule, hypothesis by hypothesis:
    groups in turn, each ranking its extensions by log p - diversity * (number of
    earlier groups' m best extensions that took the token at this step); the 2m best
    are candidates, those among the m best that end are set aside (average score
    log p / |y|), the m best that do not end live on."""
    m = beam_size // groups
    pool_size = n_best if groups == 1 else min(n_best, m)
    state = [{"alive": [((), 0.0)], "pool": [], "done": False} for _ in range(groups)]
    for t in range(MAX_LENGTH):
        if all(g["done"] for g in state):
            break
        length, taken = t + 1, np.zeros(VOCAB)
        for g in state:
            candidates = []  # (rank score, log p, tokens), parent-major like the library
            for tokens, logp in g["alive"]:
                previous = tokens[-1] if tokens else start
                for y in range(VOCAB):
                    total = logp + float(log_p[t, previous, y])
                    candidates.append((total - diversity * taken[y], total, tokens + (y,)))
            candidates = sorted(candidates, key=lambda c: -c[0])[: 2 * m]
            ends = [c[2][-1] == END or length >= MAX_LENGTH for c in candidates]
            if not g["done"]:
                done = [c for c, e in zip(candidates[:m], ends) if e]
                g["pool"] += [(c[1] / length, c[1], c[2]) for c in done]
                g["pool"] = sorted(g["pool"], key=lambda h: -h[0])[:pool_size]
            g["alive"] = [(c[2], c[1]) for c, e in zip(candidates, ends) if not e][:m]
            for c in candidates[:m]:
                taken[c[2][-1]] += 1
            g["done"] = g["done"] or len(g["pool"]) >= pool_size or length >= MAX_LENGTH
    return sorted((h for g in state for h in g["pool"]), key=lambda h: -h[0])[:n_best]


def docs_strategy():
    """The class docs/decoding.md defines (its example block run here)."""
    page = REPO / "docs" / "decoding.md"
    (example,) = [
        e for e in collect(page.read_text(encoding="utf-8"), page) if "class DiverseBeam(" in e.code
    ]
    namespace = {}
    exec(compile(example.code.split("# --- usage")[0], str(page), "exec"), namespace)
    return namespace["DiverseBeam"]


@pytest.mark.parametrize(
    "beam_size, groups, diversity, n_best",
    [(4, 2, 0.7, None), (6, 3, 1.5, 4), (4, 2, 0.0, 2), (4, 1, 0.7, None)],
)
@pytest.mark.parametrize("which", ["library", "docs"])
def test_diverse_beam_search_matches_numpy(which, beam_size, groups, diversity, n_best):
    cls = decoding.DiverseBeamSearch if which == "library" else docs_strategy()
    log_p = table(seed=beam_size + groups)
    starts = [1, 3, 5]
    strategy = cls(beam_size, groups=groups, diversity=diversity, n_best=n_best)
    out = strategy(table_step(log_p), starts, np.zeros(3, "int32"), MAX_LENGTH, end_token=END)
    n = beam_size if n_best is None else n_best
    assert np_(out.tokens).shape == (len(starts), n, MAX_LENGTH)
    for b, start in enumerate(starts):
        expected = numpy_diverse_beam(log_p, start, beam_size, groups, diversity, n)
        assert len(expected) == n
        got = []
        for i in range(n):
            length = int(np_(out.lengths)[b, i])
            tokens = np_(out.tokens)[b, i]
            assert (tokens[length:] == 0).all()
            got.append((float(np_(out.scores)[b, i]), float(np_(out.log_probs)[b, i]), tokens))
        for (score, logp, tokens), (got_score, got_logp, got_tokens) in zip(expected, got):
            assert got_tokens[: len(tokens)].tolist() == list(tokens), b
            np.testing.assert_allclose(got_logp, logp, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(got_score, score, rtol=1e-5, atol=1e-5)


def test_diversity_changes_the_n_best():
    """A penalty large enough makes the groups' first tokens differ (a test that the
    penalty is applied at all: without it both groups take the same best token)."""
    log_p = table(seed=4)
    step, t = table_step(log_p), np.zeros(1, "int32")
    plain = decoding.DiverseBeamSearch(2, groups=2, diversity=0.0)(step, [1], t, 5, END)
    diverse = decoding.DiverseBeamSearch(2, groups=2, diversity=50.0)(step, [1], t, 5, END)
    assert np_(plain.tokens)[0, 0, 0] == np_(plain.tokens)[0, 1, 0]
    assert np_(diverse.tokens)[0, 0, 0] != np_(diverse.tokens)[0, 1, 0]


def test_serializes_and_takes_options():
    strategy = decoding.DiverseBeamSearch(6, groups=3, diversity=0.25, n_best=2)
    again = decoding.get(decoding.serialize(strategy))
    assert type(again) is decoding.DiverseBeamSearch
    assert again.get_config() == strategy.get_config()
    wider = strategy.with_options(n_best=None)
    assert (wider.n_best, wider.groups, wider.diversity) == (6, 3, 0.25)
    with pytest.raises(ValueError, match="multiple of `groups`"):
        decoding.DiverseBeamSearch(5, groups=2)
    with pytest.raises(ValueError, match="has no option 'beam'"):
        strategy.with_options(beam=3)


def test_groups_without_a_penalty_are_independent_beam_searches():
    """`BeamSearch(k, groups=G)` with the default hook (no penalty): G beam searches of
    k / G side by side, so with every group alike each hypothesis comes G times."""
    log_p = table(seed=7)
    step, states = table_step(log_p), np.zeros(2, "int32")
    single = decoding.BeamSearch(2)(step, [1, 4], states, MAX_LENGTH, END)
    for strategy in [
        decoding.BeamSearch(6, groups=3),
        decoding.DiverseBeamSearch(6, groups=3, diversity=0.0),
    ]:
        out = strategy(step, [1, 4], states, MAX_LENGTH, END)
        for copy in range(3):
            np.testing.assert_array_equal(np_(out.tokens)[:, copy::3], np_(single.tokens))
            np.testing.assert_allclose(np_(out.scores)[:, copy::3], np_(single.scores))


def test_group_penalty_gets_the_group_its_log_probs_and_the_earlier_tokens():
    """The hook's arguments as documented: group g, the group's `(batch, m, vocab)`
    log-probabilities and the `(batch, g * m)` tokens of the earlier groups' beams at
    this step; a penalty on the first group applies too (a token penalised out of
    every group's reach is never generated), and the scores stay the model's."""
    seen = []

    class Recording(decoding.BeamSearch):
        def group_penalty(self, group, log_p, earlier_tokens):
            seen.append((group, tuple(log_p.shape), tuple(earlier_tokens.shape)))
            return keras.ops.where(keras.ops.arange(VOCAB) == 3, 1e4, 0.0)

    log_p = table(seed=2)
    step = table_step(log_p)
    out = Recording(6, groups=3)(step, [1, 2], np.zeros(2, "int32"), MAX_LENGTH, END)
    assert seen[:3] == [
        (0, (2, 2, VOCAB), (2, 0)),
        (1, (2, 2, VOCAB), (2, 2)),
        (2, (2, 2, VOCAB), (2, 4)),
    ]
    tokens, lengths = np_(out.tokens), np_(out.lengths)
    assert 3 not in tokens
    for b, start in enumerate([1, 2]):  # the log-probabilities of the tokens chosen
        for i in range(6):
            previous, total = start, 0.0
            for t in range(lengths[b, i]):
                total += log_p[t, previous, tokens[b, i, t]]
                previous = tokens[b, i, t]
            np.testing.assert_allclose(np_(out.log_probs)[b, i], total, rtol=1e-5, atol=1e-5)


def test_beam_size_must_be_a_multiple_of_groups():
    """One rule in one place: `BeamSearch`'s constructor, for every strategy with groups;
    one line naming both arguments and a fix."""
    for strategy in (decoding.BeamSearch, decoding.DiverseBeamSearch):
        with pytest.raises(ValueError) as error:
            strategy(5, groups=2)
        message = str(error.value)
        assert "\n" not in message
        assert message.startswith("`beam_size` (5) must be a multiple of `groups` (2)")
        assert "pass beam_size=6 or a `groups` that divides 5" in message
    with pytest.raises(ValueError, match="`groups` must be an integer >= 1, got groups=0"):
        decoding.BeamSearch(4, groups=0)


@pytest.mark.large
def test_through_seq2seq_generate():
    """`Seq2Seq.generate` runs it as any strategy: with no diversity its two groups are
    two copies of a beam search of two (each hypothesis twice), and the compiled decoder
    gives the uncompiled loop's results."""
    from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

    keras.utils.set_random_seed(3)
    model = Seq2Seq(Seq2SeqBackbone(20, 12, embedding_dim=6, units=8), max_target_length=5)
    ids = np.random.default_rng(0).integers(4, 20, (3, 4)).astype("int32")
    # uncompiled: the twins check is about the strategy, not the compiler (two XLA
    # compiles of a beam search cost half a minute of CI)
    twins = model.generate(
        ids, decoding.DiverseBeamSearch(4, groups=2, diversity=0.0), jit_compile=False
    )
    beam = model.generate(ids, decoding.BeamSearch(2), jit_compile=False)
    np.testing.assert_array_equal(np_(twins.tokens)[:, ::2], np_(beam.tokens))
    np.testing.assert_array_equal(np_(twins.tokens)[:, 1::2], np_(beam.tokens))
    np.testing.assert_allclose(np_(twins.scores)[:, ::2], np_(beam.scores), rtol=1e-5)
    diverse = decoding.DiverseBeamSearch(4, groups=2, diversity=2.0, n_best=3)
    compiled = model.generate(ids, diverse)
    eager = model.generate(ids, diverse, jit_compile=False)
    assert np_(compiled.tokens).shape == (3, 3, 5)
    np.testing.assert_array_equal(np_(compiled.tokens), np_(eager.tokens))
    np.testing.assert_allclose(np_(compiled.scores), np_(eager.scores), rtol=1e-5, atol=1e-6)
