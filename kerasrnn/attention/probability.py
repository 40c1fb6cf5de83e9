"""Probability functions: energies e `[..., Tk]` -> attention weights alpha `[..., Tk]`.

Each takes an optional boolean mask (true at the positions that may be attended); masked
positions get exactly zero weight and a fully masked row gets all zeros (never NaN).

=========== =============================================================================
softmax     alpha_j = exp(e_j) / sum_j' exp(e_j')  (the default; every weight > 0)
hardmax     alpha = one_hot(argmax_j e_j)  (TensorFlow Addons' `hardmax`; no gradient)
sparsemax   alpha = argmin_{p in simplex} |p - e|^2 (Martins & Astudillo 2016): the
            Euclidean projection onto the simplex, alpha_j = max(e_j - tau, 0), so
            low-scoring positions get exactly zero weight
=========== =============================================================================
"""

import keras
from keras import ops

from kerasrnn.ops import NEG_INF


def _float32(energies):
    # a backend tensor: NumPy input would otherwise meet backend tensors in NumPy's
    # operators, which the torch backend refuses (ndarray - Tensor)
    energies = ops.convert_to_tensor(energies)
    # float16 / bfloat16 (mixed precision) are normalised in float32 and cast back:
    # float16 cannot hold a small positive floor for the sum, and both lose its precision
    dtype = keras.backend.standardize_dtype(energies.dtype)
    if dtype in ("float16", "bfloat16"):
        return ops.cast(energies, "float32"), dtype
    return energies, dtype


def softmax(energies, mask=None):
    """softmax over the last axis; masked positions get exactly zero weight."""
    energies, dtype = _float32(energies)
    if mask is None:
        weights = ops.softmax(energies, axis=-1)
    else:
        mask = ops.cast(mask, "bool")
        energies = ops.where(mask, energies, ops.cast(NEG_INF, energies.dtype))
        exp = ops.exp(energies - ops.max(energies, axis=-1, keepdims=True))
        exp = exp * ops.cast(mask, exp.dtype)
        total = ops.sum(exp, axis=-1, keepdims=True)
        # a fully masked row has exp == total == 0: divide it by 1 so no 0 / 0 is formed
        weights = exp / ops.where(total > 0, total, ops.ones_like(total))
    return ops.cast(weights, dtype)


def hardmax(energies, mask=None):
    """one_hot(argmax) over the last axis, among the unmasked positions (ties: the first)."""
    energies, dtype = _float32(energies)
    if mask is not None:
        mask = ops.cast(mask, "bool")
        energies = ops.where(mask, energies, ops.cast(NEG_INF, energies.dtype))
    weights = ops.one_hot(ops.argmax(energies, axis=-1), ops.shape(energies)[-1])
    weights = ops.cast(weights, energies.dtype)
    if mask is not None:
        weights = weights * ops.cast(mask, weights.dtype)
    return ops.cast(weights, dtype)


def sparsemax(energies, mask=None):
    """Sparsemax (Martins & Astudillo 2016) over the last axis.

    With z sorted in decreasing order, k(z) = max{k : 1 + k z_(k) > sum_{j<=k} z_(j)},
    tau = (sum_{j<=k(z)} z_(j) - 1) / k(z) and alpha_j = max(z_j - tau, 0). Masked
    positions take no part in the projection and get zero.
    """
    energies, dtype = _float32(energies)
    if mask is not None:
        mask = ops.cast(mask, "bool")
        # far below any real energy: never in the support
        energies = ops.where(mask, energies, ops.cast(NEG_INF, energies.dtype))
    # shift by the maximum (sparsemax is shift invariant) so the cumulative sums stay small
    z = energies - ops.max(energies, axis=-1, keepdims=True)
    z_sorted = ops.flip(ops.sort(z, axis=-1), axis=-1)
    k = ops.cast(ops.arange(1, ops.shape(z)[-1] + 1), z.dtype)
    cumulative = ops.cumsum(z_sorted, axis=-1)
    in_support = ops.cast(1.0 + k * z_sorted > cumulative, z.dtype)
    support = ops.sum(in_support, axis=-1, keepdims=True)  # k(z) >= 1 always
    tau = (ops.sum(z_sorted * in_support, axis=-1, keepdims=True) - 1.0) / support
    weights = ops.maximum(z - tau, 0.0)
    if mask is not None:
        weights = weights * ops.cast(mask, weights.dtype)
    return ops.cast(weights, dtype)


PROBABILITY_FNS = {"softmax": softmax, "hardmax": hardmax, "sparsemax": sparsemax}


def get(name):
    """The probability function for a name in `PROBABILITY_FNS`."""
    if not isinstance(name, str) or name.lower() not in PROBABILITY_FNS:
        raise ValueError(
            f"Unknown `probability_fn`={name!r}; expected one of {sorted(PROBABILITY_FNS)}."
        )
    return PROBABILITY_FNS[name.lower()]
