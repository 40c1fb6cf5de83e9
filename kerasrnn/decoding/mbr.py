"""Minimum Bayes risk selection (Kumar & Byrne 2004) over decoded texts: of several
candidates (an n-best list, or samples), the one that agrees most, in expectation,
with the others."""

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple


class MBRChoice(NamedTuple):
    """What `mbr_select` chose: the candidate's position in the list, its text, and
    the expected utility of every candidate (in the list's order)."""

    position: int
    text: str
    expected_utilities: list


def _value(result):
    """A utility's result as a float: a number, or an object with a ``.score`` (a
    `kerasrnn.metrics.BleuScore`)."""
    return float(getattr(result, "score", result))


def mbr_select(
    candidates: Sequence[str],
    utility: Callable[[str, str], Any],
    weights: Sequence[float] | None = None,
) -> MBRChoice:
    """The candidate of highest expected utility against the candidates themselves as
    pseudo-references:

    .. math::  \\hat h = \\arg\\max_{h \\in H} \\sum_{h' \\in H} w(h')\\, u(h, h')

    with the weights w normalised to sum to 1. For samples, leave `weights` None: each
    draw counts once, so a text drawn k times counts k times, and the sum estimates the
    expectation under the model. For an n-best list, pass the hypotheses'
    probabilities (e.g. the exponentiated, normalised beam scores). The sum includes
    h' = h, as the expectation does. Ties go to the earlier candidate, so an n-best
    list's order breaks them.

    Args:
        candidates: the texts (at least one).
        utility: ``utility(hypothesis, reference)`` -> a float, or an object with a
            ``.score``: `kerasrnn.metrics.sentence_bleu`, `sentence_chrf`, or any
            function of two texts. Evaluated once per pair of distinct texts.
        weights: one non-negative weight per candidate, not all 0; None: uniform.

    Returns:
        An `MBRChoice` (position, text, expected_utilities).

    Raises:
        ValueError: no candidates, a non-callable utility, or weights of the wrong
            length, negative, non-finite or all 0 (one line each).

    Example:

    >>> from kerasrnn.decoding import mbr_select
    >>> from kerasrnn.metrics import sentence_chrf
    >>> samples = ["a man rides a bike", "a man rides a bicycle", "a man is riding a bike",
    ...            "the cat sleeps"]
    >>> mbr_select(samples, sentence_chrf).text
    'a man rides a bicycle'
    """
    candidates = list(candidates)
    if not candidates:
        raise ValueError("mbr_select: no candidates to choose from.")
    if not all(isinstance(c, str) for c in candidates):
        raise ValueError("mbr_select: `candidates` must be texts (str).")
    if not callable(utility):
        raise ValueError(
            f"mbr_select: `utility` must be a function (hypothesis, reference) -> float, "
            f"e.g. kerasrnn.metrics.sentence_bleu; got {utility!r}."
        )
    if weights is None:
        weights = [1.0] * len(candidates)
    weights = [float(w) for w in weights]
    if len(weights) != len(candidates):
        raise ValueError(
            f"mbr_select: {len(weights)} weights for {len(candidates)} candidates; give "
            "one weight per candidate."
        )
    if any(not math.isfinite(w) or w < 0 for w in weights) or not any(weights):
        raise ValueError("mbr_select: weights must be finite, non-negative and not all 0.")
    # each distinct text once, with the weight of all its copies
    mass: dict = {}
    for text, weight in zip(candidates, weights):
        mass[text] = mass.get(text, 0.0) + weight
    total = sum(mass.values())
    expected = {
        hypothesis: sum(
            weight * _value(utility(hypothesis, reference)) for reference, weight in mass.items()
        )
        / total
        for hypothesis in mass
    }
    scores = [expected[text] for text in candidates]
    best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
    return MBRChoice(best, candidates[best], scores)
