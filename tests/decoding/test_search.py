"""`kerasrnn.decoding.search`: the strategy a beam width, n-best and groups call for
(what the recipes' ``--beam-size`` / ``--n-best`` / ``--beam-groups`` map to), each
decoding as the strategy built directly."""

import keras
import numpy as np
import pytest

from kerasrnn import decoding


def config(strategy):
    return type(strategy).__name__, strategy.get_config()


@pytest.mark.parametrize(
    "arguments,expected",
    [
        ((1,), decoding.GreedySearch()),
        ((1, 1), decoding.GreedySearch()),
        ((5, 2), decoding.BeamSearch(5, 2)),
        ((1, 3), decoding.BeamSearch(3, 3)),  # n-best wider than the beam: n beams
        ((4, 1), decoding.BeamSearch(4, 1)),
        ((4, 2, None, None, 2, 0.7), decoding.DiverseBeamSearch(4, 2, 0.7, n_best=2)),
    ],
)
def test_the_search_a_width_calls_for(arguments, expected):
    assert config(decoding.search(*arguments)) == config(expected)


def test_scorer_and_constraints_reach_the_strategy():
    rules = decoding.Constraints(min_length=2, forbidden_tokens=[1])
    scorer = decoding.Scorer("wu", alpha=0.8)
    greedy = decoding.search(1, 1, scorer, rules)
    assert isinstance(greedy, decoding.GreedySearch) and greedy.constraints is rules
    beam = decoding.search(3, 2, scorer, rules)
    assert beam.constraints is rules and beam.scorer.get_config() == scorer.get_config()
    diverse = decoding.search(4, 4, scorer, rules, groups=2, diversity=0.3)
    assert isinstance(diverse, decoding.DiverseBeamSearch) and diverse.constraints is rules
    assert diverse.scorer.get_config() == scorer.get_config() and diverse.diversity == 0.3


def test_it_decodes_as_the_strategy_built_directly():
    table = keras.ops.log(
        np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.1, 0.2, 0.2], [0.25] * 4, [0.7, 0.1, 0.1, 0.1]])
    )

    def step(tokens, states):
        return keras.ops.take(table, tokens, axis=0), states

    for found, direct in (
        (decoding.search(3, 2), decoding.BeamSearch(3, 2)),
        (decoding.search(1), decoding.GreedySearch()),
    ):
        a = found(step, [1, 2], (), 4, end_token=0)
        b = direct(step, [1, 2], (), 4, end_token=0)
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(a.tokens), keras.ops.convert_to_numpy(b.tokens)
        )
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(a.scores), keras.ops.convert_to_numpy(b.scores)
        )
