"""softmax, hardmax and sparsemax: closed forms, masking, and inside the layers."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.attention import probability


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), np.float64)


def sparsemax_closed_form(z):
    """Martins & Astudillo (2016), eq. 2-3, one row at a time."""
    out = np.zeros_like(z)
    for row, values in enumerate(z):
        ordered = np.sort(values)[::-1]
        k = np.arange(1, len(values) + 1)
        support = k[1 + k * ordered > np.cumsum(ordered)].max()
        tau = (ordered[:support].sum() - 1) / support
        out[row] = np.maximum(values - tau, 0)
    return out


def test_sparsemax_hand_computed():
    # z = (1, 0.5, -2): support {1, 2}, tau = (1.5 - 1) / 2 = 0.25
    got = _np(kerasrnn.attention.sparsemax(np.array([[1.0, 0.5, -2.0]], "float32")))
    np.testing.assert_allclose(got, [[0.75, 0.25, 0.0]], atol=1e-7)


def test_sparsemax_matches_closed_form_and_is_sparse():
    z = np.random.default_rng(0).normal(size=(50, 9)) * 1.5
    got = _np(kerasrnn.attention.sparsemax(z.astype("float32")))
    np.testing.assert_allclose(got, sparsemax_closed_form(z), atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-6)
    assert (got == 0).any(axis=-1).mean() > 0.5  # exact zeros, unlike softmax


def test_masked_positions_get_zero_and_the_rest_renormalise():
    z = np.random.default_rng(1).normal(size=(6, 8)).astype("float32")
    mask = np.random.default_rng(2).random((6, 8)) > 0.4
    mask[:, 0] = True
    mask[5] = False  # a fully masked row: zeros, never NaN
    got = _np(kerasrnn.attention.sparsemax(z, mask))
    expected = sparsemax_closed_form(z[:5].astype("float64") + np.where(mask[:5], 0, -1e4))
    np.testing.assert_allclose(got[:5], expected, atol=1e-6)
    assert np.all(got[~mask] == 0) and np.all(got[5] == 0)
    hard = _np(kerasrnn.attention.hardmax(z, mask))
    for row in range(5):
        best = np.where(mask[row], z[row], -np.inf).argmax()
        np.testing.assert_array_equal(hard[row], np.eye(8)[best])
    assert np.all(hard[5] == 0)
    soft = _np(probability.softmax(z, mask))
    assert np.all(soft[~mask] == 0) and np.all(soft[5] == 0)


@pytest.mark.parametrize("name", ["softmax", "hardmax", "sparsemax"])
def test_probability_fn_in_the_attention_layer(name):
    rng = np.random.default_rng(3)
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    k = rng.normal(size=(2, 5, 4)).astype("float32") * 2
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    layer = kerasrnn.Attention("dot", probability_fn=name)
    context, weights = layer(q, k, mask=mask, return_attention_scores=True)
    energies = np.einsum("bqd,bkd->bqk", q, k)
    energies = np.where(mask[:, None], energies, -np.inf)
    if name == "softmax":
        expected = np.exp(energies - energies.max(-1, keepdims=True))
        expected /= expected.sum(-1, keepdims=True)
    elif name == "hardmax":
        expected = np.eye(5)[energies.argmax(-1)]
    else:
        expected = sparsemax_closed_form(
            np.where(np.isinf(energies), -1e4, energies).reshape(-1, 5)
        ).reshape(2, 3, 5)
    np.testing.assert_allclose(_np(weights), expected, atol=1e-5)
    np.testing.assert_allclose(_np(context), expected @ k, atol=1e-4)
    assert kerasrnn.Attention.from_config(layer.get_config()).probability_fn == name


def test_unknown_probability_fn_is_named():
    with pytest.raises(ValueError, match="`probability_fn`='entmax'"):
        kerasrnn.BahdanauAttention(4, probability_fn="entmax")
