"""kerasrnn's beam search against TensorFlow Addons' BeamSearchDecoder itself.

The fixtures (tests/fixtures/tfa/beam_*.npz, written by tools/tfa_fixtures/decoding.py
with tensorflow-addons 0.23) hold a table decoder (logits and alignments per step and
previous token) and TFA's predicted ids, final scores, log-probabilities and lengths
with a length penalty weight and a coverage penalty weight. TFA is never imported here.
"""

import pathlib

import numpy as np
import pytest
from keras import ops

from kerasrnn import decoding

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tfa"
CASES = sorted(p.stem for p in FIXTURES.glob("beam_*.npz"))
# TFA's rules: finished hypotheses compete in the beam, the end token is not counted
TFA_OPTIONS = dict(competing=True, tfa_scorer=True)


def test_the_fixtures_are_there():
    assert CASES == ["beam_coverage_penalty", "beam_length_penalty", "beam_no_penalty", "beam_wide"]


def load(name):
    with np.load(FIXTURES / f"{name}.npz") as data:
        return {key: data[key] for key in data.files}


def search(fixture, competing=False, tfa_scorer=False):
    logits = ops.convert_to_tensor(fixture["logits"])
    alignments = ops.convert_to_tensor(fixture["alignments"])
    last_step = fixture["logits"].shape[0] - 1

    def step(tokens, t):
        index = ops.stack([ops.minimum(t, last_step), tokens], axis=1)
        picked_logits = ops.take(
            ops.reshape(logits, (-1, logits.shape[-1])),
            index[:, 0] * logits.shape[1] + index[:, 1],
            axis=0,
        )
        picked_align = ops.take(
            ops.reshape(alignments, (-1, alignments.shape[-1])),
            index[:, 0] * alignments.shape[1] + index[:, 1],
            axis=0,
        )
        return picked_logits, t + 1, picked_align

    alpha = float(fixture["length_penalty_weight"])
    start = fixture["start_tokens"]
    k = int(fixture["beam_width"])
    beta = float(fixture["coverage_penalty_weight"])
    if tfa_scorer:
        scorer = decoding.TFAScorer(length_penalty_weight=alpha, coverage_penalty_weight=beta)
    else:
        scorer = decoding.Scorer(
            "gnmt" if alpha else None, alpha=alpha, coverage_penalty_weight=beta
        )
    strategy = (decoding.CompetingBeamSearch if competing else decoding.BeamSearch)(
        beam_size=k, n_best=k, scorer=scorer
    )
    return strategy(
        step,
        start,
        np.zeros(len(start), "int32"),
        int(fixture["max_length"]),
        int(fixture["end_token"]),
    )


def same_as_tfa(fixture, result):
    """Whether ids (up to each length), lengths, scores and log-probs all agree."""
    lengths = ops.convert_to_numpy(result.lengths)
    if not np.array_equal(lengths, fixture["lengths"]):
        return False
    tokens = ops.convert_to_numpy(result.tokens)
    for b, n in np.ndindex(lengths.shape):
        if not np.array_equal(tokens[b, n, : lengths[b, n]], fixture["ids"][b, n, : lengths[b, n]]):
            return False
    return np.allclose(
        ops.convert_to_numpy(result.scores), fixture["scores"], atol=1e-5
    ) and np.allclose(ops.convert_to_numpy(result.log_probs), fixture["log_probs"], atol=1e-5)


@pytest.mark.parametrize("name", CASES)
def test_tfa_options_reproduce_tfa(name):
    fixture = load(name)
    result = search(fixture, **TFA_OPTIONS)
    lengths = ops.convert_to_numpy(result.lengths)
    np.testing.assert_array_equal(lengths, fixture["lengths"])
    tokens = ops.convert_to_numpy(result.tokens)
    for b, n in np.ndindex(lengths.shape):
        np.testing.assert_array_equal(
            tokens[b, n, : lengths[b, n]], fixture["ids"][b, n, : lengths[b, n]]
        )
    np.testing.assert_allclose(ops.convert_to_numpy(result.scores), fixture["scores"], atol=1e-5)
    np.testing.assert_allclose(
        ops.convert_to_numpy(result.log_probs), fixture["log_probs"], atol=1e-5
    )
    assert same_as_tfa(fixture, result)


@pytest.mark.parametrize("name", CASES)
def test_the_default_rules_are_not_tfa(name):
    """The default (lecture notes: finished hypotheses set aside, end token counted)
    and each TFA rule on its own give other beams or scores on every fixture, so the
    fixture test above would fail if either rule were dropped."""
    fixture = load(name)
    assert not same_as_tfa(fixture, search(fixture))
    assert not same_as_tfa(fixture, search(fixture, tfa_scorer=True))
    if name == "beam_no_penalty":
        # Without a length or coverage penalty the length a score counts cannot
        # matter: there the stop rule alone makes the difference.
        assert same_as_tfa(fixture, search(fixture, competing=True))
    else:
        assert not same_as_tfa(fixture, search(fixture, competing=True))


@pytest.mark.parametrize("name", CASES)
def test_compat_beam_search_decoder_is_tfa(name):
    from kerasrnn.compat import tfa

    fixture = load(name)
    strategy = tfa.beam_search_decoder(
        int(fixture["beam_width"]),
        float(fixture["length_penalty_weight"]),
        float(fixture["coverage_penalty_weight"]),
    )
    logits_alignments = search(fixture, competing=True, tfa_scorer=True)
    assert (
        strategy.get_config()
        == decoding.CompetingBeamSearch(
            int(fixture["beam_width"]),
            scorer=decoding.TFAScorer(
                float(fixture["length_penalty_weight"]), float(fixture["coverage_penalty_weight"])
            ),
        ).get_config()
    )
    assert same_as_tfa(fixture, logits_alignments)
