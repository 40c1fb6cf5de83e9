"""Monotonic attention against a NumPy implementation of Raffel et al. (2017)."""

import keras
import numpy as np
import pytest

from kerasrnn.attention import (
    BahdanauMonotonicAttention,
    LuongMonotonicAttention,
    monotonic_attention,
)

B, TK, DK, DQ, UNITS, STEPS = 3, 7, 5, 4, 6, 5


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), np.float64)


def expected_alignment(p, previous):
    """The paper's eq. 9, written as its double sum: the decoder was at k at step i-1
    (probability alpha_{i-1,k}), passed over k..j-1 (prod (1 - p)) and stopped at j (p_j).
    """
    batch, length = p.shape
    alpha = np.zeros_like(p)
    for b in range(batch):
        for j in range(length):
            alpha[b, j] = p[b, j] * sum(
                previous[b, k] * np.prod(1.0 - p[b, k:j]) for k in range(j + 1)
            )
    return alpha


def hard_alignment(energies, previous):
    """The hard process: from where the decoder stopped last time, move right to the
    first position with e_j > 0 (p_j = 1); stop nowhere if there is none."""
    alpha = np.zeros_like(energies)
    for b in range(energies.shape[0]):
        if previous[b].sum() == 0:  # stopped nowhere before: stays nowhere
            continue
        start = int(np.argmax(previous[b]))
        for j in range(start, energies.shape[1]):
            if energies[b, j] > 0:
                alpha[b, j] = 1.0
                break
    return alpha


@pytest.mark.parametrize("mode", ["parallel", "recursive", "hard"])
def test_monotonic_attention_function_matches_the_recurrence(mode):
    rng = np.random.default_rng(1)
    energies = rng.normal(size=(B, TK)) * 2
    previous = rng.dirichlet(np.ones(TK), size=B)
    if mode == "hard":
        previous = np.eye(TK)[[0, 3, 6]]
        p = (energies > 0).astype("float64")
        expected = hard_alignment(energies, previous)
    else:
        p = 1 / (1 + np.exp(-energies))
        expected = expected_alignment(p, previous)
    got = monotonic_attention(p.astype("float32"), previous.astype("float32"), mode)
    np.testing.assert_allclose(_np(got), expected, atol=2e-6)
    if mode == "hard":
        assert expected.sum() > 0  # the case is not all zeros


def _np_energies(layer, query, memory, kind):
    w = {v.path.split("/")[-1]: _np(v) for v in layer.weights}
    if kind == "bahdanau":
        v = w["attention_g"] * w["attention_v"][:, 0] / np.linalg.norm(w["attention_v"])
        hidden = np.tanh(
            (query @ w["query_kernel"])[:, None] + memory @ w["key_kernel"] + w["attention_b"]
        )
        energies = hidden @ v
    else:
        energies = w["scale"] * np.einsum("bq,bkq->bk", query, memory @ w["kernel"])
    return energies + w["attention_score_bias"]


@pytest.mark.parametrize("kind", ["bahdanau", "luong"])
@pytest.mark.parametrize("mode", ["parallel", "recursive", "hard"])
def test_layer_alignments_over_steps_match_numpy(kind, mode):
    """Several decoder steps, the previous alignment carried as state, a padded memory."""
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(2)
    memory = rng.normal(size=(B, TK, DK)).astype("float32")
    mask = np.ones((B, TK), bool)
    mask[1, 4:] = False
    queries = rng.normal(size=(STEPS, B, DQ)).astype("float32")
    if kind == "bahdanau":
        layer = BahdanauMonotonicAttention(UNITS, normalize=True, mode=mode, score_bias_init=0.3)
    else:
        layer = LuongMonotonicAttention(scale=True, mode=mode, score_bias_init=-0.2)
    layer.build((None, DQ), memory.shape)
    if kind == "bahdanau" and mode == "hard":  # g = sqrt(1 / units): energies near 0
        layer.score.attention_g.assign(3.0)  # sharper ones make the hard process move
    prepared = layer.prepare(memory, mask=mask)
    state = layer.initial_state(prepared)
    np.testing.assert_array_equal(_np(state), np.eye(TK)[[0, 0, 0]])
    previous = np.eye(TK)[[0, 0, 0]]
    moved = False
    for query in queries:
        context, alpha, state = layer.step(query, prepared, state)
        energies = _np_energies(layer, query.astype("float64"), memory, kind)
        energies = np.where(mask, energies, -np.inf)  # masked: never chosen
        if mode == "hard":
            expected = hard_alignment(energies, previous)
        else:
            expected = expected_alignment(1 / (1 + np.exp(-energies)), previous)
        np.testing.assert_allclose(_np(alpha), expected, atol=1e-5)
        np.testing.assert_allclose(_np(state), expected, atol=1e-5)  # carried as state
        np.testing.assert_allclose(
            _np(context), np.einsum("bk,bkd->bd", expected, memory), atol=1e-5
        )
        assert np.all(_np(alpha)[~mask] == 0)
        moved |= bool(np.any(expected.argmax(-1) != previous.argmax(-1)))
        previous = expected
    assert moved  # the alignments went somewhere along the memory


def test_sigmoid_noise_only_in_training_and_seeded():
    memory = np.random.default_rng(0).normal(size=(B, TK, DK)).astype("float32")
    query = np.ones((B, DQ), "float32")

    def alignments(training, seed=7):
        keras.utils.set_random_seed(0)
        layer = BahdanauMonotonicAttention(
            UNITS, sigmoid_noise=1.0, sigmoid_noise_seed=seed, mode="parallel"
        )
        layer.build((None, DQ), memory.shape)
        prepared = layer.prepare(memory)
        return _np(layer.step(query, prepared, training=training)[1])

    clean = alignments(False)
    noisy = alignments(True)
    assert np.abs(noisy - clean).max() > 1e-3
    np.testing.assert_array_equal(noisy, alignments(True))  # same seed, same noise
    keras.utils.set_random_seed(0)
    plain = BahdanauMonotonicAttention(UNITS, mode="parallel")
    plain.build((None, DQ), memory.shape)
    np.testing.assert_allclose(_np(plain.step(query, plain.prepare(memory))[1]), clean)


def test_monotonic_config_round_trip():
    layer = LuongMonotonicAttention(
        "general",
        scale=True,
        sigmoid_noise=0.5,
        sigmoid_noise_seed=3,
        score_bias_init=-1.5,
        mode="recursively",
    )
    config = layer.get_config()
    assert config["mode"] == "recursive" and config["score_bias_init"] == -1.5
    again = LuongMonotonicAttention.from_config(config)
    assert again.get_config() == config
    bahdanau = BahdanauMonotonicAttention(4, normalize=True, mode="hard")
    assert BahdanauMonotonicAttention.from_config(bahdanau.get_config()).normalize


def test_bad_monotonic_options_are_named():
    with pytest.raises(ValueError, match="`mode`.*'soft'"):
        BahdanauMonotonicAttention(4, mode="soft")
    with pytest.raises(ValueError, match="`sigmoid_noise`"):
        LuongMonotonicAttention(sigmoid_noise=-1.0)
    layer = BahdanauMonotonicAttention(4)
    layer.build((None, DQ), (None, TK, DK))
    prepared = layer.prepare(np.ones((B, TK, DK), "float32"))
    with pytest.raises(ValueError, match="one query"):
        layer.attend(np.ones((B, 2, DQ), "float32"), prepared)
