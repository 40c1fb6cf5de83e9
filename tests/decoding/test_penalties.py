"""Length and coverage penalties, and the end-token counting rule, against hand-computed
values and an exhaustive search written in NumPy."""

import numpy as np
import pytest

from kerasrnn import decoding
from tests.decoding.reference import RecurrentDecoder, complete_sequences, np_

END = 3


def test_coverage_penalty_by_hand():
    coverage = np.array([[0.5, 1.5, 0.0, 0.2], [1.0, 1.0, 1.0, 1.0]], "float32")
    # log min(c, 1) per position; a position that got no attention at all counts as
    # covered (TFA's convention for padding).
    expected = [0.4 * (np.log(0.5) + 0 + 0 + np.log(0.2)), 0.0]
    np.testing.assert_allclose(np_(decoding.coverage_penalty(coverage, 0.4)), expected, rtol=1e-6)


def test_wu_is_gnmt_by_hand():
    lengths = np.array([1, 3, 10])
    expected = ((5 + lengths) / 6.0) ** 0.7
    for name in ("gnmt", "wu"):
        np.testing.assert_allclose(
            np_(decoding.length_penalty(lengths, name, 0.7)), expected, rtol=1e-6
        )
    np.testing.assert_allclose(np_(decoding.length_penalty(lengths, "average")), lengths)
    with pytest.raises(ValueError, match="'wu'"):
        decoding.length_penalty(lengths, "mean")


def reference_scores(model, h, memory, normalization, alpha, beta, count_end_token, max_length):
    """Every complete hypothesis scored as the set-aside search must rank them."""

    def lp(t):
        return {None: 1.0, "average": max(t, 1), "wu": ((5 + t) / 6) ** alpha}[normalization]

    rows = []
    for seq in complete_sequences(model.vocab, END, max_length):
        log_p, coverage = model.score(seq, h, memory)
        counted = len(seq) if count_end_token or seq[-1] != END else len(seq) - 1
        coverage = np.where(coverage == 0, 1.0, coverage)
        cp = beta * np.log(np.minimum(coverage, 1.0)).sum()
        if not count_end_token and seq[-1] == END:
            cp = 0.0  # TFA scores the step that picks the end token without coverage
        rows.append((seq, log_p, log_p / lp(counted) + cp))
    return sorted(rows, key=lambda r: -r[2])


@pytest.mark.parametrize(
    "normalization, alpha, beta, count_end_token",
    [
        ("wu", 0.8, 0.6, True),
        ("average", 0.6, 2.0, True),
        ("wu", 1.0, 0.5, False),
        (None, 0.6, 1.0, True),
    ],
)
def test_exhaustive_beam_with_coverage_penalty(normalization, alpha, beta, count_end_token):
    model = RecurrentDecoder(vocab=4, source=3)
    h, memory = model.initial_states(2)
    max_length = 3
    if count_end_token:
        scorer = decoding.Scorer(normalization, alpha=alpha, coverage_penalty_weight=beta)
    else:  # TFA's scoring is GNMT's (wu) with the end token not counted
        assert normalization == "wu"
        scorer = decoding.TFAScorer(alpha, coverage_penalty_weight=beta)
    out = decoding.beam_search(
        model,
        [0, 0],
        (h, memory),
        max_length,
        END,
        beam_size=40,
        scorer=scorer,
    )
    for b in range(2):
        expected = reference_scores(
            model, h[b], memory[b], normalization, alpha, beta, count_end_token, max_length
        )
        assert len(expected) == 40
        np.testing.assert_allclose(
            np_(out.scores)[b], [r[2] for r in expected], rtol=1e-4, atol=1e-5
        )
        np.testing.assert_allclose(
            np_(out.log_probs)[b], [r[1] for r in expected], rtol=1e-4, atol=1e-5
        )
        best = expected[0][0]
        assert tuple(np_(out.tokens)[b, 0, : len(best)]) == best


def test_coverage_penalty_changes_the_winner():
    """A strong coverage penalty prefers the hypothesis that attends more of the source."""
    model = RecurrentDecoder(vocab=4, source=3, seed=3)
    h, memory = model.initial_states(4, seed=5)
    kwargs = dict(max_length=5, end_token=END, beam_size=4)
    plain = decoding.beam_search(
        model, [0] * 4, (h, memory), scorer=decoding.Scorer("wu"), **kwargs
    )
    covered = decoding.beam_search(
        model,
        [0] * 4,
        (h, memory),
        **kwargs,
        scorer=decoding.Scorer("wu", coverage_penalty_weight=5.0),
    )

    def cp(result, b):
        length = np_(result.lengths)[b, 0]
        c = np_(result.alignments)[b, 0, :length].sum(0)
        return np.log(np.minimum(c, 1.0)).sum()

    changed = [
        b
        for b in range(4)
        if not np.array_equal(np_(plain.tokens)[b, 0], np_(covered.tokens)[b, 0])
    ]
    assert changed, "the penalty should change some winner on this decoder"
    for b in changed:
        assert cp(covered, b) > cp(plain, b)


def test_coverage_needs_alignments():
    model = RecurrentDecoder(attentive=False)
    with pytest.raises(ValueError, match="coverage_penalty_weight.*alignments"):
        decoding.beam_search(
            model,
            [0],
            model.initial_states(1),
            3,
            END,
            scorer=decoding.Scorer(coverage_penalty_weight=0.2),
        )
    # the stop rule is a class (CompetingBeamSearch), not an argument; the names other
    # libraries give it are explained by kerasrnn.compat.tfa (tests/compat/test_tfa_names.py)
    with pytest.raises(TypeError, match="stop_rule='compete': it takes beam_size, .* groups"):
        decoding.BeamSearch(3, stop_rule="compete")
