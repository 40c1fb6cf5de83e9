"""Each score and attention layer against an independent NumPy computation."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.attention import AttentionMemory, scores
from tests.autodiff import gradient, gradients

B, TQ, TK, DQ, DK = 3, 4, 6, 5, 5


def _np(tensor):
    """A backend tensor as NumPy (torch's tensors that require grad refuse np.asarray)."""
    return keras.ops.convert_to_numpy(tensor)


def np_softmax(e, mask):
    e = np.where(mask, e, -np.inf)
    top = np.max(np.where(mask, e, -1e30), axis=-1, keepdims=True)
    w = np.where(mask, np.exp(e - top), 0.0)
    total = w.sum(-1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0)


def np_energies(name, layer, q, k):
    """The textbook score, from the layer's weights (by name, not by position)."""
    w = {v.path.split("/")[-1]: np.asarray(_np(v), np.float64) for v in layer.weights}
    if name == "dot":
        return np.einsum("bqd,bkd->bqk", q, k)
    if name == "scaled_dot":
        return np.einsum("bqd,bkd->bqk", q, k) / np.sqrt(k.shape[-1])
    if name == "content":
        qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
        kn = k / np.linalg.norm(k, axis=-1, keepdims=True)
        return np.einsum("bqd,bkd->bqk", qn, kn)
    if name == "general":  # q^T W_a k with W_a = kernel^T
        return np.einsum("bqd,de,bke->bqk", q, w["kernel"].T, k)
    if name == "location":
        return (q @ w["kernel"])[:, :, : k.shape[1]]
    if name == "concat":  # one W_a on [q; k]
        W = np.concatenate([w["query_kernel"], w["key_kernel"]], axis=0)
        out = np.zeros((q.shape[0], q.shape[1], k.shape[1]))
        for b in range(q.shape[0]):
            for i in range(q.shape[1]):
                for j in range(k.shape[1]):
                    out[b, i, j] = (
                        np.tanh(np.concatenate([q[b, i], k[b, j]]) @ W) @ w["attention_v"][:, 0]
                    )
        return out
    if name in ("additive", "normalized"):
        v = w["attention_v"][:, 0]
        bias = 0.0
        if name == "normalized":
            v = w["attention_g"] * v / np.linalg.norm(v)
            bias = w["attention_b"]
        hidden = np.tanh(
            (q @ w["query_kernel"])[:, :, None, :] + (k @ w["key_kernel"])[:, None] + bias
        )
        return hidden @ v
    raise AssertionError(name)


CASES = {
    "additive": dict(score="additive", units=7),
    "normalized": dict(score="additive", units=7, normalize=True),
    "dot": dict(score="dot"),
    "general": dict(score="general"),
    "concat": dict(score="concat", units=4),
    "scaled_dot": dict(score="scaled_dot"),
    "content": dict(score="content"),
    "location": dict(score="location", max_length=9),
}


def _data(dq=DQ, dk=DK):
    rng = np.random.default_rng(0)
    q = rng.normal(size=(B, TQ, dq)).astype("float32")
    k = rng.normal(size=(B, TK, dk)).astype("float32")
    v = rng.normal(size=(B, TK, 3)).astype("float32")
    mask = np.ones((B, TK), bool)
    mask[1, 4:] = False
    mask[2, :] = False  # a fully padded source
    return q, k, v, mask


@pytest.mark.parametrize("case", sorted(CASES))
def test_score_and_layer_match_numpy(case):
    dq = 8 if case in ("general", "additive", "normalized", "concat", "location") else DQ
    q, k, v, mask = _data(dq=dq)
    layer = kerasrnn.Attention(**CASES[case])
    context, weights = layer(q, k, v, mask=mask, return_attention_scores=True)
    if case == "normalized":  # move g and b off their initial values
        layer.score.attention_g.assign(1.7)
        layer.score.attention_b.assign(np.linspace(-1, 1, 7).astype("float32"))
        context, weights = layer(q, k, v, mask=mask, return_attention_scores=True)
    e = np_energies(case, layer.score, q.astype(np.float64), k.astype(np.float64))
    expected_w = np_softmax(e, mask[:, None, :])
    np.testing.assert_allclose(_np(weights), expected_w, atol=2e-5)
    np.testing.assert_allclose(_np(context), expected_w @ v, atol=2e-5)
    # masked keys get exactly zero, a fully masked row gives zeros (no NaN)
    assert np.all(_np(weights)[1, :, 4:] == 0.0)
    assert np.all(_np(weights)[2] == 0.0) and np.all(_np(context)[2] == 0.0)
    # one step at a time gives the same as the whole query sequence
    for t in range(TQ):
        c_t, w_t = layer(q[:, t], k, v, mask=mask, return_attention_scores=True)
        np.testing.assert_allclose(_np(w_t), _np(weights)[:, t], atol=1e-6)
        np.testing.assert_allclose(_np(c_t), _np(context)[:, t], atol=1e-6)


def test_values_default_to_keys_and_scale():
    q, k, _, mask = _data()
    layer = kerasrnn.Attention("dot", scale=True)
    layer(q, k, mask=mask)
    layer.scale_weight.assign(0.3)
    context, weights = layer(q, k, mask=mask, return_attention_scores=True)
    expected = np_softmax(0.3 * np.einsum("bqd,bkd->bqk", q, k), mask[:, None, :])
    np.testing.assert_allclose(_np(weights), expected, atol=1e-5)
    np.testing.assert_allclose(_np(context), expected @ k, atol=1e-5)


def test_named_layers_are_the_generic_layer():
    q, k, _, mask = _data(dq=8)
    bahdanau = kerasrnn.BahdanauAttention(6, normalize=True)
    generic = kerasrnn.Attention("additive", units=6, normalize=True)
    luong = kerasrnn.LuongAttention("general", scale=True)
    generic_luong = kerasrnn.Attention("general", scale=True)
    for named, plain in ((bahdanau, generic), (luong, generic_luong)):
        named(q, k, mask=mask)
        plain(q, k, mask=mask)
        plain.set_weights(named.get_weights())
        np.testing.assert_allclose(
            _np(named(q, k, mask=mask)), _np(plain(q, k, mask=mask)), atol=1e-6
        )


@pytest.mark.parametrize("case", sorted(CASES))
def test_config_round_trip(case):
    q, k, v, mask = _data(dq=8 if case not in ("dot", "scaled_dot", "content") else DQ)
    layer = kerasrnn.Attention(**CASES[case])
    out = layer(q, k, v, mask=mask)
    clone = kerasrnn.Attention.from_config(layer.get_config())
    clone(q, k, v, mask=mask)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(_np(clone(q, k, v, mask=mask)), _np(out))
    for cls, kwargs in ((kerasrnn.BahdanauAttention, {"units": 3}), (kerasrnn.LuongAttention, {})):
        named = cls(**kwargs)
        assert type(cls.from_config(named.get_config())) is cls


def test_key_projection_is_prepared_once_per_source(monkeypatch):
    """`prepare` holds U_a k_j; `attend` only adds W_a q, so many queries reuse it."""
    q, k, _, mask = _data(dq=8)
    layer = kerasrnn.BahdanauAttention(6)
    layer(q, k, mask=mask)
    memory = layer.prepare(k, mask=mask)
    assert isinstance(memory, AttentionMemory)
    np.testing.assert_allclose(_np(memory.keys), k @ _np(layer.score.key_kernel), atol=1e-5)
    calls = []
    original = scores.AdditiveScore.prepare_keys
    monkeypatch.setattr(
        scores.AdditiveScore,
        "prepare_keys",
        lambda self, keys: calls.append(1) or original(self, keys),
    )
    steps = [layer.attend(q[:, t], memory)[0] for t in range(TQ)]
    assert calls == []
    np.testing.assert_allclose(
        np.stack([_np(s) for s in steps], 1), _np(layer(q, k, mask=mask)), atol=1e-6
    )


def test_memory_repeat_lines_up_with_beams():
    q, k, _, mask = _data()
    layer = kerasrnn.Attention("dot")
    with pytest.raises(ValueError, match="not built"):
        layer.prepare(k)
    layer(q, k)
    memory = layer.prepare(k, mask=mask).repeat(2)
    assert tuple(memory.keys.shape) == (2 * B, TK, DK)
    context = layer.attend(np.repeat(q[:, 0], 2, axis=0), memory)[0]
    np.testing.assert_allclose(_np(context)[::2], _np(layer(q[:, 0], k, mask=mask)), atol=1e-6)


# (step, tolerance): off TensorFlow, Keras' dtype rules map float64 results to float32
# (keras.src.backend.common.dtypes.result_type, JAX's default): Keras' JAX backend
# computes tanh in float32 even for float64 inputs, and the torch backend's `ops.matmul`
# casts a float64 product to float32 (after which everything runs in float32), so on
# both the differences need a larger step (and tolerance) to rise above float32
# rounding; torch, float32 throughout, the larger ones.
FINITE_DIFFERENCE = {"tensorflow": (1e-6, 1e-5), "jax": (1e-3, 2e-3), "torch": (3e-3, 1e-2)}


def test_gradients_match_finite_differences(float64):
    """d(sum of context * r)/d(query) against central differences, in float64."""
    rng = np.random.default_rng(1)
    q = rng.normal(size=(2, 3, 4))
    k = rng.normal(size=(2, 5, 4))
    r = rng.normal(size=(2, 3, 4))
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    layer = kerasrnn.BahdanauAttention(6, normalize=True, dtype="float64")

    def loss(query):
        # keras.ops, not `*`: NumPy's operator would read a torch tensor that requires grad
        return keras.ops.sum(keras.ops.multiply(layer(query, k, mask=mask), r))

    loss(q)  # build the weights outside the autodiff trace
    analytic = gradient(loss, q)
    numeric = np.zeros_like(q)
    eps, rtol = FINITE_DIFFERENCE[keras.backend.backend()]
    for index in np.ndindex(q.shape):
        step = np.zeros_like(q)
        step[index] = eps
        numeric[index] = (float(_np(loss(q + step))) - float(_np(loss(q - step)))) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=rtol * 1e-2)


GRADIENT_CASES = {
    "additive": dict(score="additive", units=3),
    "normalized": dict(score="additive", units=3, normalize=True),
    "general": dict(score="general", scale=True),
    "concat": dict(score="concat", units=3),
}


@pytest.mark.parametrize("case", sorted(GRADIENT_CASES))
def test_weight_key_and_value_gradients_match_finite_differences(case, float64):
    """d(sum of context * r) wrt every score weight, the keys and the values, in float64.

    Rows: one unmasked, one partly masked, one fully masked (whose gradients must be 0).
    """
    rng = np.random.default_rng(2)
    q = rng.normal(size=(3, 2, 4))
    k = rng.normal(size=(3, 3, 3))
    v = rng.normal(size=(3, 3, 2))
    r = rng.normal(size=(3, 2, 2))
    mask = np.array([[1, 1, 1], [1, 1, 0], [0, 0, 0]], bool)
    layer = kerasrnn.Attention(**GRADIENT_CASES[case])
    layer(q, k, v, mask=mask)
    # move every weight off its initial value (g = sqrt(1/units), b = 0, scale = 1)
    weights = [rng.normal(0, 0.7, w.shape) for w in layer.trainable_weights]
    n = len(weights)

    def loss(values):
        context, _ = layer.stateless_call(values[:n], [], q, values[n], values[n + 1], mask=mask)
        return keras.ops.sum(keras.ops.multiply(context, r))

    point = weights + [k, v]
    analytic = gradients(loss, point)
    eps, rtol = FINITE_DIFFERENCE[keras.backend.backend()]
    names = [w.path for w in layer.trainable_weights] + ["keys", "values"]
    for i, value in enumerate(point):
        numeric = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            plus = [x.copy() for x in point]
            minus = [x.copy() for x in point]
            plus[i][index] += eps
            minus[i][index] -= eps
            numeric[index] = (float(_np(loss(plus))) - float(_np(loss(minus)))) / (2 * eps)
        np.testing.assert_allclose(
            analytic[i], numeric, rtol=rtol, atol=rtol * 1e-2, err_msg=names[i]
        )
    assert np.all(analytic[n][2] == 0.0) and np.all(analytic[n + 1][2] == 0.0)
    assert np.all(analytic[n + 1][1, 2] == 0.0)  # a masked value never reaches the context


@pytest.fixture(params=["float32", "mixed_float16", "mixed_bfloat16"])
def policy(request):
    """A global dtype policy for one test, restored whatever the test does."""
    keras.config.set_dtype_policy(request.param)
    try:
        yield keras.config.dtype_policy()
    finally:
        keras.config.set_dtype_policy("float32")


# float32 is exact up to rounding; float16 keeps ~3 digits, bfloat16 ~2
POLICY_ATOL = {"float32": 2e-5, "float16": 5e-3, "bfloat16": 3e-2}


def _against_float32(case, q, k, v, mask, policy):
    """The layer under `policy`, and a float32 copy of it: (outputs, reference outputs)."""
    layer = kerasrnn.Attention(**CASES[case])
    context, weights = layer(q, k, v, mask=mask, return_attention_scores=True)
    assert keras.backend.standardize_dtype(weights.dtype) == policy.compute_dtype
    reference = kerasrnn.Attention(**CASES[case], dtype="float32")
    reference(q, k, v, mask=mask)
    reference.set_weights(layer.get_weights())
    expected = reference(q, k, v, mask=mask, return_attention_scores=True)
    return (_float32(context), _float32(weights)), tuple(_float32(t) for t in expected)


def _float32(tensor):
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(tensor, "float32")))


@pytest.mark.parametrize("case", ["additive", "dot", "content", "general", "location"])
def test_masking_under_mixed_precision(case, policy):
    """Masked keys get exactly 0 and a fully masked row gives zeros, never NaN."""
    q, k, v, mask = _data(dq=DQ)
    (context, weights), (ref_context, ref_weights) = _against_float32(case, q, k, v, mask, policy)
    assert not np.isnan(weights).any() and not np.isnan(context).any()
    assert np.all(weights[1, :, 4:] == 0.0)
    assert np.all(weights[2] == 0.0) and np.all(context[2] == 0.0)
    atol = POLICY_ATOL[policy.compute_dtype]
    np.testing.assert_allclose(weights, ref_weights, atol=atol)
    np.testing.assert_allclose(context, ref_context, atol=4 * atol)


def test_content_score_of_zero_vectors_under_mixed_precision(policy):
    """cos(q, k) with a zero q or k is 0 (uniform weights over a zero query), not NaN."""
    q, k, v, mask = _data()
    q[0, 1] = 0.0
    k[0, 2] = 0.0
    k[1] = 0.0
    (context, weights), (ref_context, ref_weights) = _against_float32(
        "content", q, k, v, None, policy
    )
    assert not np.isnan(weights).any() and not np.isnan(context).any()
    atol = POLICY_ATOL[policy.compute_dtype]
    np.testing.assert_allclose(weights[0, 1], np.full(TK, 1 / TK), atol=atol)
    np.testing.assert_allclose(weights[1], np.full((TQ, TK), 1 / TK), atol=atol)
    q64, k64 = q.astype(np.float64), k.astype(np.float64)
    with np.errstate(invalid="ignore"):  # 0 / 0 for the zero vectors, read as cos = 0
        qn = q64 / np.linalg.norm(q64, axis=-1, keepdims=True)
        kn = k64 / np.linalg.norm(k64, axis=-1, keepdims=True)
    e = np.nan_to_num(np.einsum("bqd,bkd->bqk", qn, kn))
    np.testing.assert_allclose(weights, np_softmax(e, np.ones(e.shape, bool)), atol=atol)
    np.testing.assert_allclose(weights, ref_weights, atol=atol)
    np.testing.assert_allclose(context, ref_context, atol=4 * atol)


def test_location_score_rejects_sources_longer_than_max_length():
    """Built on a short source, a longer one later gets a clear error, not a shape error."""
    q, k, v, _ = _data(dq=8)
    layer = kerasrnn.Attention("location", max_length=TK + 1)
    layer(q, k, v)  # built on Tk = 6 <= 7
    long_k = np.concatenate([k, k], axis=1)
    with pytest.raises(ValueError, match=f"max_length={TK + 1}.*length {2 * TK}"):
        layer(q, long_k)
    with pytest.raises(ValueError, match=f"max_length={TK + 1}.*length {2 * TK}"):
        layer.prepare(long_k)
    # a memory assembled by hand reaches the score's call unchecked by prepare
    memory = AttentionMemory(keras.ops.convert_to_tensor(long_k), long_k)
    with pytest.raises(ValueError, match=f"max_length={TK + 1}.*length {2 * TK}"):
        layer.attend(q, memory)
    # up to max_length is fine
    assert tuple(layer(q, long_k[:, : TK + 1]).shape) == (B, TQ, DK)


def test_bad_input_names_the_argument():
    q, k, _, mask = _data(dq=7)
    with pytest.raises(ValueError, match="`query`.*`keys`"):
        kerasrnn.Attention("dot")(q, k)
    with pytest.raises(ValueError, match="`score`"):
        kerasrnn.Attention("multiplicative")
    with pytest.raises(ValueError, match="`mask`"):
        kerasrnn.Attention("general")(q, k, mask=mask[:, :3])
    with pytest.raises(ValueError, match="`mask`"):
        kerasrnn.Attention("general")(q, k, mask=mask[:, :, None])
    with pytest.raises(ValueError, match="`values`"):
        kerasrnn.Attention("general")(q, k, values=k[:, :2])
    with pytest.raises(ValueError, match="`query`"):
        kerasrnn.Attention("general")(q[0, 0], k)
    with pytest.raises(ValueError, match="`units`"):
        kerasrnn.Attention("dot", units=3)
    with pytest.raises(ValueError, match="`units`"):
        kerasrnn.BahdanauAttention(None)
    with pytest.raises(ValueError, match="`max_length`"):
        kerasrnn.Attention("location")
    with pytest.raises(ValueError, match="max_length=4"):
        kerasrnn.Attention("location", max_length=4)(q, k)
    with pytest.raises(ValueError, match="`score`"):
        kerasrnn.LuongAttention("additive")
