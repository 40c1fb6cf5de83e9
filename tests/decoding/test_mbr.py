"""mbr_select against a brute-force expected utility (every pair scored by sacreBLEU),
with uniform and given weights, repeated samples, ties and the errors."""

import random

import pytest
import sacrebleu

from kerasrnn.decoding import mbr_select
from kerasrnn.metrics import sentence_bleu, sentence_chrf

WORDS = "a man woman rides bike bicycle the is riding street down .".split()


def brute_force(candidates, weights, utility):
    """sum_j w_j u(h_i, h_j) / sum_j w_j for every i, over the list as it is (repeats
    included), each pair scored afresh."""
    total = sum(weights)
    return [sum(w * utility(h, r) for r, w in zip(candidates, weights)) / total for h in candidates]


UTILITIES = {
    "bleu": (sentence_bleu, lambda h, r: sacrebleu.sentence_bleu(h, [r]).score),
    "chrf": (sentence_chrf, lambda h, r: sacrebleu.sentence_chrf(h, [r]).score),
}


@pytest.mark.parametrize("name", UTILITIES)
@pytest.mark.parametrize("weighted", [False, True])
def test_the_choice_maximises_the_brute_force_expected_utility(name, weighted):
    ours, reference = UTILITIES[name]
    rng = random.Random(0)
    for _ in range(25):
        pool = [" ".join(rng.choices(WORDS, k=rng.randint(1, 6))) for _ in range(4)]
        candidates = rng.choices(pool, k=rng.randint(1, 7))  # samples repeat
        weights = [rng.uniform(0, 1) for _ in candidates] if weighted else None
        choice = mbr_select(candidates, ours, weights)
        expected = brute_force(candidates, weights or [1.0] * len(candidates), reference)
        assert choice.expected_utilities == pytest.approx(expected, abs=1e-9)
        best = max(expected)
        assert expected[choice.position] == pytest.approx(best, abs=1e-9)
        assert choice.position == min(i for i, e in enumerate(expected) if e > best - 1e-9)
        assert choice.text == candidates[choice.position]


def test_the_consensus_wins_and_ties_go_to_the_earlier_candidate():
    samples = ["a man rides a bike", "the cat sleeps", "a man rides a bike .", "a man rides"]
    assert mbr_select(samples, sentence_chrf).position != 1
    # two copies of one text against one other: the copies' text, at its first position
    assert mbr_select(["x y", "a b", "a b"], sentence_chrf).position == 1
    # all equal: the first
    assert mbr_select(["a b", "a b"], sentence_chrf).position == 0
    # a weight can outvote a majority
    assert mbr_select(["p q", "a b", "a b"], sentence_chrf, [10, 1, 1]).text == "p q"


@pytest.mark.parametrize(
    "arguments, message",
    [
        (([], sentence_chrf), "no candidates"),
        ((["a", 3], sentence_chrf), "`candidates` must be texts"),
        ((["a"], "bleu"), "`utility` must be a function"),
        ((["a", "b"], sentence_chrf, [1.0]), "1 weights for 2 candidates"),
        ((["a", "b"], sentence_chrf, [1.0, -1.0]), "non-negative"),
        ((["a", "b"], sentence_chrf, [0, 0]), "not all 0"),
        ((["a", "b"], sentence_chrf, [1.0, float("nan")]), "finite"),
    ],
)
def test_bad_arguments_are_one_line_errors(arguments, message):
    with pytest.raises(ValueError, match=message) as error:
        mbr_select(*arguments)
    assert "\n" not in str(error.value)
