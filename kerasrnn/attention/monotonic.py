"""Monotonic attention (Raffel, Luong, Liu, Weiss & Eck 2017): the expected alignment.

At output step i the decoder scans the memory left to right from where it stopped at
step i - 1, and stops at position j with probability p_{i,j} = sigmoid(e_{i,j}). The
expected alignment alpha_i follows the recurrence (the paper's eq. 9-10)

.. math::

    q_{i,j} &= (1 - p_{i,j-1})\\, q_{i,j-1} + \\alpha_{i-1,j} \\\\
    \\alpha_{i,j} &= p_{i,j}\\, q_{i,j}

with q_{i,0} = alpha_{i-1,0} (the term with j - 1 = -1 is absent) and alpha_0 = (1, 0,
..., 0). The modes compute it the ways TensorFlow Addons did:

* ``"recursive"``: the recurrence itself, a scan over the memory positions (exact);
* ``"parallel"``: its closed form alpha_i = p_i * cumprod(1 - p_i) * cumsum(alpha_{i-1} /
  cumprod(1 - p_i)) with exclusive cumulative products computed in log space and the
  divisor clipped to [1e-10, 1] (fast, approximate when p is near 0 or 1);
* ``"hard"``: p is 0 or 1 (the energies are thresholded at 0); alpha_i is one-hot at the
  first position j >= argmax(alpha_{i-1}) with p_{i,j} = 1 (or zero if there is none).
"""

import keras
import numpy as np
from keras import ops

from kerasrnn.attention.layers import BahdanauAttention, LuongAttention
from kerasrnn.validation import check_number

MODES = ("parallel", "recursive", "hard")


def _exclusive(values, fill):
    """[fill, v_0, ..., v_{n-2}] along the last axis."""
    first = ops.full_like(values[..., :1], fill)
    return ops.concatenate([first, values[..., :-1]], axis=-1)


def safe_cumprod(x, exclusive=False):
    """cumprod over the last axis as exp(cumsum(log x)), x clipped to [tiny, 1]."""
    tiny = float(np.finfo(keras.backend.standardize_dtype(x.dtype)).tiny)
    log_x = ops.log(ops.clip(x, tiny, 1.0))
    cumulative = ops.cumsum(log_x, axis=-1)
    if exclusive:
        cumulative = _exclusive(cumulative, 0.0)
    return ops.exp(cumulative)


def monotonic_attention(p_choose, previous, mode="parallel"):
    """The expected monotonic alignment from choosing probabilities.

    Args:
        p_choose: `[batch, Tk]`, p_{i,j} in [0, 1] (0 or 1 in mode "hard").
        previous: `[batch, Tk]`, alpha_{i-1} (one-hot at position 0 for the first step).
        mode: "parallel", "recursive" or "hard" (see the module docstring).

    Returns:
        alpha_i, `[batch, Tk]`.
    """
    # backend tensors: NumPy input would meet backend tensors in NumPy's operators,
    # which the torch backend refuses (ndarray * Tensor)
    p_choose, previous = ops.convert_to_tensor(p_choose), ops.convert_to_tensor(previous)
    if mode == "recursive":
        shifted = _exclusive(1.0 - p_choose, 1.0)  # (1 - p_{j-1}), 1 at j = 0

        def step(q, inputs):  # inputs [batch, 2]: (1 - p_{j-1}, alpha_{i-1,j})
            q = inputs[:, 0] * q + inputs[:, 1]
            return q, q

        init = ops.zeros_like(p_choose[:, 0])
        # one stacked sequence [Tk, batch, 2], not two: Keras' TensorFlow scan fails on
        # several sequences of unknown length (SavedModel signatures with any Tk)
        sequence = ops.stack([ops.transpose(shifted), ops.transpose(previous)], axis=-1)
        _, q = ops.scan(step, init, sequence)
        return p_choose * ops.transpose(q)
    if mode == "parallel":
        cumprod = safe_cumprod(1.0 - p_choose, exclusive=True)
        return p_choose * cumprod * ops.cumsum(previous / ops.clip(cumprod, 1e-10, 1.0), axis=-1)
    if mode == "hard":
        # no stopping before the previous step's position, then stop at the first 1
        p_choose = p_choose * ops.cumsum(previous, axis=-1)
        return p_choose * _exclusive(ops.cumprod(1.0 - p_choose, axis=-1), 1.0)
    raise ValueError(f"`mode` must be one of {MODES}; got mode={mode!r}.")


class _Monotonic:
    """What the two monotonic layers add to their score: p = sigmoid(e + r + noise)."""

    def _init_monotonic(self, sigmoid_noise, sigmoid_noise_seed, score_bias_init, mode):
        if mode == "recursively":  # the issue's spelling of TensorFlow Addons' "recursive"
            mode = "recursive"
        if mode not in MODES:
            raise ValueError(f"`mode` must be one of {MODES}; got mode={mode!r}.")
        self.mode = mode
        self.sigmoid_noise = check_number("sigmoid_noise", sigmoid_noise)
        self.sigmoid_noise_seed = sigmoid_noise_seed
        self.score_bias_init = float(score_bias_init)
        self.seed_generator = (
            keras.random.SeedGenerator(sigmoid_noise_seed) if self.sigmoid_noise else None
        )

    @property
    def stateful_attention(self):
        return True

    def build(self, query_shape, keys_shape, values_shape=None):
        super().build(query_shape, keys_shape, values_shape)
        self.attention_score_bias = self.add_weight(
            name="attention_score_bias",
            shape=(),
            initializer=keras.initializers.Constant(self.score_bias_init),
        )

    def initial_state_for(self, batch_size, length):
        """alpha_0 = (1, 0, ..., 0): the scan starts at the first memory position."""
        first = ops.zeros((batch_size,), "int32")
        return ops.cast(ops.one_hot(first, length), self.compute_dtype)

    def draw_noise(self, shape):
        """Standard normal draws for the sigmoid noise (drawn outside loops: JAX cannot
        advance a seed generator inside a scan)."""
        return keras.random.normal(shape, seed=self.seed_generator)

    def _weights(self, query, memory, previous, training, noise=None):
        energies = self._energies(query, memory, None)[:, 0] + self.attention_score_bias
        if self.sigmoid_noise and training:
            if noise is None:
                noise = self.draw_noise(ops.shape(energies))
            energies = energies + self.sigmoid_noise * ops.cast(noise, energies.dtype)
        if self.mode == "hard":
            p_choose = ops.cast(energies > 0, energies.dtype)
        else:
            p_choose = ops.sigmoid(energies)
        if memory.mask is not None:
            p_choose = ops.where(memory.mask, p_choose, ops.zeros_like(p_choose))
        weights = monotonic_attention(p_choose, ops.cast(previous, p_choose.dtype), self.mode)
        return weights[:, None, :], ops.cast(weights, previous.dtype)

    def get_config(self):
        config = super().get_config()
        # the probability is the monotonic recurrence's, and the score has no coverage
        del config["coverage"], config["probability_fn"]
        return {
            **config,
            "sigmoid_noise": self.sigmoid_noise,
            "sigmoid_noise_seed": self.sigmoid_noise_seed,
            "score_bias_init": self.score_bias_init,
            "mode": self.mode,
        }


@keras.saving.register_keras_serializable(package="kerasrnn")
class BahdanauMonotonicAttention(_Monotonic, BahdanauAttention):
    """Monotonic attention with Bahdanau's score (TensorFlow Addons'
    `BahdanauMonotonicAttention`): e_j = v_a^T tanh(W_a q + U_a k_j) (normalised with
    `normalize=True`).

    The expected alignment of monotonic attention (Raffel et al. 2017; see
    `kerasrnn.attention.monotonic`): p_j = sigmoid(e_j + r) with the learned score bias r
    (`attention_score_bias`, initialised to `score_bias_init`; a negative value makes the
    decoder start by moving on), then alpha_i from alpha_{i-1} by the recurrence. The
    previous alignment is the layer's state (`initial_state` is one-hot at position 0);
    `kerasrnn.AttentionCell` carries it. Masked positions are never chosen.

    Args:
        sigmoid_noise: standard deviation of Gaussian noise added to the energies before
            the sigmoid while training (pushes p towards 0 / 1; TensorFlow Addons added
            it at every call and told users to set it to 0 at test time).
        sigmoid_noise_seed: seed of that noise.
        score_bias_init: initial value of r.
        mode: "parallel" (default), "recursive" (also spelled "recursively") or "hard".
        units, normalize: as `BahdanauAttention`.

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.attention.BahdanauMonotonicAttention(8, mode="recursive")
    >>> memory = np.ones((2, 6, 5), "float32")
    >>> layer.build((None, 4), memory.shape)
    >>> prepared = layer.prepare(memory)
    >>> context, alpha, state = layer.step(np.ones((2, 4), "float32"), prepared,
    ...                                    layer.initial_state(prepared))
    >>> tuple(alpha.shape)
    (2, 6)
    """

    def __init__(
        self,
        units,
        normalize=False,
        sigmoid_noise=0.0,
        sigmoid_noise_seed=None,
        score_bias_init=0.0,
        mode="parallel",
        **kwargs,
    ):
        kwargs.pop("coverage", None)
        kwargs.pop("probability_fn", None)
        super().__init__(units, normalize=normalize, **kwargs)
        self._init_monotonic(sigmoid_noise, sigmoid_noise_seed, score_bias_init, mode)


@keras.saving.register_keras_serializable(package="kerasrnn")
class LuongMonotonicAttention(_Monotonic, LuongAttention):
    """Monotonic attention with Luong's score (TensorFlow Addons'
    `LuongMonotonicAttention`, whose score is the general one, e_j = q^T W_a k_j, with
    a learned scale g when `scale=True`).

    The expected alignment of monotonic attention (Raffel et al. 2017; see
    `kerasrnn.attention.monotonic`): p_j = sigmoid(e_j + r) with the learned score bias r
    (`attention_score_bias`, initialised to `score_bias_init`; a negative value makes the
    decoder start by moving on), then alpha_i from alpha_{i-1} by the recurrence. The
    previous alignment is the layer's state (`initial_state` is one-hot at position 0);
    `kerasrnn.AttentionCell` carries it. Masked positions are never chosen.

    Args:
        sigmoid_noise: standard deviation of Gaussian noise added to the energies before
            the sigmoid while training (pushes p towards 0 / 1; TensorFlow Addons added
            it at every call and told users to set it to 0 at test time).
        sigmoid_noise_seed: seed of that noise.
        score_bias_init: initial value of r.
        mode: "parallel" (default), "recursive" (also spelled "recursively") or "hard".
        score: "general" (default, TensorFlow Addons'), "dot" or "concat".
        scale: a learned scalar g on the energies (initialised to 1).

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.attention.LuongMonotonicAttention(mode="hard", score_bias_init=-1.0)
    >>> memory = np.ones((2, 6, 5), "float32")
    >>> layer.build((None, 4), memory.shape)
    >>> prepared = layer.prepare(memory)
    >>> context, alpha, state = layer.step(np.ones((2, 4), "float32"), prepared)
    >>> tuple(context.shape)
    (2, 5)
    """

    def __init__(
        self,
        score="general",
        scale=False,
        sigmoid_noise=0.0,
        sigmoid_noise_seed=None,
        score_bias_init=0.0,
        mode="parallel",
        **kwargs,
    ):
        kwargs.pop("coverage", None)
        kwargs.pop("probability_fn", None)
        super().__init__(score, scale=scale, **kwargs)
        self._init_monotonic(sigmoid_noise, sigmoid_noise_seed, score_bias_init, mode)
