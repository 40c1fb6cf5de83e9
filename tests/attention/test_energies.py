"""The additive energies' recomputing backward pass against automatic differentiation of
the same formula (which stores the tanh block) and against finite differences."""

import numpy as np
import pytest
from keras import ops

import kerasrnn
from kerasrnn.attention import scores
from kerasrnn.attention.energies import additive_energies
from tests.autodiff import gradients

B, TQ, TK, U = 2, 3, 4, 5


def stored(q, keys, v, coverage=None, coverage_kernel=None):
    """e = v^T tanh(q_i + k_j (+ w_c cov_j)) written with plain ops (autodiff stores)."""
    hidden = q[:, :, None, :] + keys[:, None, :, :]
    if coverage is not None:
        hidden = hidden + coverage[:, None, :, None] * coverage_kernel
    return ops.matmul(ops.tanh(hidden), v[:, None])[..., 0]


def numpy_energies(q, keys, v, coverage=None, coverage_kernel=None):
    hidden = q[:, :, None, :] + keys[:, None, :, :]
    if coverage is not None:
        hidden = hidden + coverage[:, None, :, None] * coverage_kernel
    return np.tanh(hidden) @ v


def _inputs(coverage):
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=s).astype("float32") for s in ((B, TQ, U), (B, TK, U), (U,))]
    if coverage:
        xs += [rng.random((B, TK)).astype("float32"), rng.normal(size=U).astype("float32")]
    return xs, rng.normal(size=(B, TQ, TK)).astype("float32")


@pytest.mark.parametrize("coverage", [False, True], ids=["plain", "coverage"])
def test_values_and_gradients_equal_autodiff(coverage):
    xs, weights = _inputs(coverage)
    np.testing.assert_allclose(
        ops.convert_to_numpy(additive_energies(*xs)), numpy_energies(*xs), rtol=1e-5, atol=1e-6
    )
    ours = gradients(lambda t: ops.sum(additive_energies(*t) * ops.convert_to_tensor(weights)), xs)
    reference = gradients(lambda t: ops.sum(stored(*t) * ops.convert_to_tensor(weights)), xs)
    for mine, theirs in zip(ours, reference):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("coverage", [False, True], ids=["plain", "coverage"])
def test_gradients_equal_finite_differences(coverage):
    xs, weights = _inputs(coverage)
    ours = gradients(lambda t: ops.sum(additive_energies(*t) * ops.convert_to_tensor(weights)), xs)
    point = [x.astype("float64") for x in xs]
    eps = 1e-6
    for i, analytic in enumerate(ours):
        numeric = np.zeros_like(point[i])
        for index in np.ndindex(point[i].shape):
            plus, minus = [x.copy() for x in point], [x.copy() for x in point]
            plus[i][index] += eps
            minus[i][index] -= eps
            numeric[index] = (
                (numpy_energies(*plus) * weights).sum() - (numpy_energies(*minus) * weights).sum()
            ) / (2 * eps)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-5)


class StoringAdditiveScore(scores.AdditiveScore):
    def call(self, query, prepared, coverage=None, training=None):
        q = ops.matmul(query, self.query_kernel)
        return stored(q, prepared, self.attention_v[:, 0])


def test_decoder_gradients_equal_the_storing_score():
    """A masked Bahdanau decoder's weight gradients, recomputing against storing."""
    rng = np.random.default_rng(1)
    targets = rng.normal(size=(3, 6, 4)).astype("float32")
    memory = rng.normal(size=(3, 5, 8)).astype("float32")
    memory_mask = np.array([[1] * 5, [1] * 3 + [0] * 2, [1] * 4 + [0]], bool)
    layers = []
    for score in (None, StoringAdditiveScore(7)):
        attention = kerasrnn.BahdanauAttention(7)
        if score is not None:
            attention.score = score
        layer = kerasrnn.AttentiveRNN(kerasrnn.AttentionCell(kerasrnn.LSTMCell(6), attention))
        layer(targets, memory, memory_mask=memory_mask)
        layers.append(layer)
    layers[1].set_weights(layers[0].get_weights())
    grads = []
    for layer in layers:
        fixed = [ops.convert_to_numpy(v) for v in layer.non_trainable_variables]

        def loss(values, layer=layer, fixed=fixed):
            out = layer.stateless_call(
                values,
                fixed,
                *map(ops.convert_to_tensor, (targets, memory)),
                memory_mask=ops.convert_to_tensor(memory_mask),
                training=True,
            )[0]
            return ops.sum(out * ops.arange(1, out.shape[-1] + 1, dtype="float32"))

        grads.append(gradients(loss, [ops.convert_to_numpy(w) for w in layer.trainable_weights]))
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    assert any(np.abs(g).max() > 0 for g in grads[0])
