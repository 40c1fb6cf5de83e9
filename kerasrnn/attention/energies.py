"""The additive energies with a backward pass that recomputes instead of storing.

    h_ij = q_i + k_j (+ w_c cov_j),    a_ij = tanh(h_ij),    e_ij = v^T a_ij

for queries q `[b, Tq, u]` (W_a q, already projected), keys k `[b, Tk, u]` (U_a k, already
projected) and v `[u]`. The hidden layer a is `[b, Tq, Tk, u]`: automatic differentiation
keeps it for the backward pass, and inside a decoder's time loop (Tq = 1) it keeps one
`[b, Tk, u]` block for every step, b Tk u T floats in all. Here the backward pass
recomputes a from q, k and v, so a training step holds one block at a time and stores only
the inputs (q is `[b, u]` a step; k and v are the same tensors at every step):

    g_ij = dL/de_ij,   d_ij = g_ij v (1 - a_ij^2)
    dL/dv = sum_ij g_ij a_ij,   dL/dq_i = sum_j d_ij,   dL/dk_j = sum_i d_ij,
    dL/dcov_j = sum_i w_c^T d_ij,   dL/dw_c = sum_ij cov_j d_ij.

The price is one more tanh over the block in the backward pass, which the smaller
working set repays on CPUs and GPUs alike (docs/attention.md has the measurements).
`keras.ops.custom_gradient` carries it to TensorFlow, JAX and PyTorch.
"""

from keras import ops


def _hidden(q, keys, coverage=None, coverage_kernel=None):
    """a = tanh(q_i + k_j (+ w_c cov_j)), `[b, Tq, Tk, u]`."""
    hidden = q[:, :, None, :] + keys[:, None, :, :]
    if coverage is not None:
        hidden = hidden + coverage[:, None, :, None] * coverage_kernel
    return ops.tanh(hidden)


def _upstream(args, upstream):
    # TensorFlow and JAX pass the output's gradient positionally, PyTorch by keyword
    # (with the saved inputs in front): Keras' documented form of a gradient function.
    return args[0] if upstream is None else upstream


def _backward(g, q, keys, v, coverage=None, coverage_kernel=None):
    """The gradients of e = v^T tanh(h) for the upstream gradient g `[b, Tq, Tk]`."""
    g = ops.cast(g, q.dtype)
    # Tie the recomputation to g: TensorFlow's graph executor runs up to 32 iterations of
    # a backward loop at once and would recompute all their blocks as soon as each q is
    # at hand, holding most of what recomputing saves. (0 g adds nothing, in any dtype.)
    q = q + 0.0 * ops.sum(g, axis=-1, keepdims=True)
    a = _hidden(q, keys, coverage, coverage_kernel)  # recomputed, not stored
    d = g[..., None] * v * (1.0 - ops.square(a))  # dL/dh, [b, Tq, Tk, u]
    grads = (
        ops.sum(d, axis=2),  # dL/dq
        ops.sum(d, axis=1),  # dL/dk
        ops.einsum("bqku,bqk->u", a, g),  # dL/dv
    )
    if coverage is None:
        return grads
    return grads + (
        ops.sum(ops.matmul(d, coverage_kernel[:, None])[..., 0], axis=1),  # dL/dcov
        ops.einsum("bqku,bk->u", d, coverage),  # dL/dw_c
    )


@ops.custom_gradient
def _energies(q, keys, v):
    def grad(*args, upstream=None):
        return _backward(_upstream(args, upstream), q, keys, v)

    return ops.matmul(_hidden(q, keys), v[:, None])[..., 0], grad


@ops.custom_gradient
def _energies_with_coverage(q, keys, v, coverage, coverage_kernel):
    def grad(*args, upstream=None):
        return _backward(_upstream(args, upstream), q, keys, v, coverage, coverage_kernel)

    hidden = _hidden(q, keys, coverage, coverage_kernel)
    return ops.matmul(hidden, v[:, None])[..., 0], grad


def stored_additive_energies(q, keys, v, coverage=None, coverage_kernel=None):
    """The same energies differentiated automatically (inference: no custom gradient in
    the exported graphs)."""
    return ops.matmul(_hidden(q, keys, coverage, coverage_kernel), v[:, None])[..., 0]


def additive_energies(q, keys, v, coverage=None, coverage_kernel=None):
    """e_ij = v^T tanh(q_i + k_j (+ w_c cov_j)), `[b, Tq, Tk]`, recomputing tanh(.) in
    the backward pass.

    Args:
        q: the projected queries W_a q, `[b, Tq, u]`.
        keys: the projected keys U_a k (plus any bias), `[b, Tk, u]`.
        v: the score vector v_a, `[u]`.
        coverage: optional coverage cov `[b, Tk]` (See et al. 2017), with
            `coverage_kernel` w_c `[u]`.
    """
    if coverage is None:
        return _energies(q, keys, v)
    return _energies_with_coverage(q, keys, v, coverage, coverage_kernel)
