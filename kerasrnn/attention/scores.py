"""Attention score functions: e_j = score(q, k_j), each split into a per-source part
(`prepare_keys`, run once per source sequence) and a per-query part (`call`).

A score is a small Keras layer. `prepare_keys(keys)` maps the keys `[batch, Tk, d_k]` to
whatever the score needs from them alone (U_a k_j, W_a k_j, k_j / sqrt(d), k_j / |k_j|),
so a decoder that queries the same source at every step pays for it once.
`call(query, prepared)` takes a query `[batch, Tq, d_q]` and returns the energies
`[batch, Tq, Tk]`.
"""

import math

import keras
from keras import ops

from kerasrnn.attention.energies import additive_energies, stored_additive_energies
from kerasrnn.validation import check_int


def _dim(shape, name):
    if shape is None or len(shape) < 2 or shape[-1] is None:
        raise ValueError(
            f"`{name}` needs a known last (feature) dimension; got shape "
            f"{None if shape is None else tuple(shape)}."
        )
    return int(shape[-1])


class Score(keras.layers.Layer):
    """Base of the score layers: `build(query_shape, keys_shape)`, `prepare_keys`, `call`."""

    #: whether `q` and `k_j` must have the same width
    needs_equal_dims = False
    #: the name users pass as `score=` (used in error messages)
    score_name = "score"
    #: whether `call` takes a coverage vector (See et al. 2017)
    supports_coverage = False

    def build(self, query_shape, keys_shape):
        self.query_dim = _dim(query_shape, "query")
        self.key_dim = _dim(keys_shape, "keys")
        if self.needs_equal_dims and self.query_dim != self.key_dim:
            raise ValueError(
                f"The {self.score_name!r} score compares the `query` with each of the "
                f"`keys` directly, so their widths must match; got a query of width "
                f"{self.query_dim} and keys (memory) of width {self.key_dim}. For "
                f"different widths use LuongAttention('general') (e_j = q^T W_a k_j), or "
                f"Attention(score='general') / BahdanauAttention(units)."
            )
        self._build_weights()

    def _build_weights(self):
        pass

    def prepare_keys(self, keys):
        return keys

    def call(self, query, prepared):
        return ops.matmul(query, ops.transpose(prepared, (0, 2, 1)))


@keras.saving.register_keras_serializable(package="kerasrnn")
class DotScore(Score):
    """Luong's dot score: e_j = q^T k_j (needs d_q = d_k)."""

    score_name = "dot"

    needs_equal_dims = True


@keras.saving.register_keras_serializable(package="kerasrnn")
class ScaledDotScore(Score):
    """Scaled dot score (Vaswani et al. 2017): e_j = q^T k_j / sqrt(d_k)."""

    score_name = "scaled_dot"

    needs_equal_dims = True

    def prepare_keys(self, keys):
        return keys * ops.cast(1.0 / math.sqrt(self.key_dim), keys.dtype)


def _unit(x, epsilon=1e-12):
    # float16 flushes epsilon to 0 (so a zero vector gives 0 * inf = NaN) and overflows
    # |x|^2 above 65504: mixed precision normalises in float32 and casts back.
    dtype = keras.backend.standardize_dtype(x.dtype)
    if dtype in ("float16", "bfloat16"):
        return ops.cast(_unit(ops.cast(x, "float32"), epsilon), dtype)
    return x * ops.rsqrt(ops.maximum(ops.sum(ops.square(x), axis=-1, keepdims=True), epsilon))


@keras.saving.register_keras_serializable(package="kerasrnn")
class ContentScore(Score):
    """Content-based score (Graves et al. 2014): e_j = cos(q, k_j) = q.k_j / (|q| |k_j|).

    Zero vectors get a zero score instead of NaN.
    """

    score_name = "content"

    needs_equal_dims = True

    def prepare_keys(self, keys):
        return _unit(keys)

    def call(self, query, prepared):
        return super().call(_unit(query), prepared)


class _Projected(Score):
    """Scores with learned weights; shares the initializer argument and config."""

    def __init__(self, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def _kernel(self, name, shape):
        return self.add_weight(name=name, shape=shape, initializer=self.kernel_initializer)

    def get_config(self):
        config = super().get_config()
        config["kernel_initializer"] = keras.initializers.serialize(self.kernel_initializer)
        return config


@keras.saving.register_keras_serializable(package="kerasrnn")
class GeneralScore(_Projected):
    """Luong's general (bilinear) score: e_j = q^T W_a k_j.

    `kernel` holds W_a^T, shape (d_k, d_q), so W_a k_j is precomputed as `keys @ kernel`.
    """

    score_name = "general"

    def _build_weights(self):
        self.kernel = self._kernel("kernel", (self.key_dim, self.query_dim))

    def prepare_keys(self, keys):
        return ops.matmul(keys, self.kernel)


@keras.saving.register_keras_serializable(package="kerasrnn")
class AdditiveScore(_Projected):
    """Bahdanau's additive score: e_j = v_a^T tanh(W_a q + U_a k_j).

    With `normalize=True` the weight-normalised form (Salimans & Kingma 2016, as used by
    Raffel et al. 2017): e_j = g v_a^T / |v_a| tanh(W_a q + U_a k_j + b), with a learned
    scalar g (initialised to sqrt(1 / units)) and bias b.

    With `coverage=True` (See, Liu & Manning 2017) the coverage cov_j (the sum of the
    alignments of the previous steps, passed to `call`) enters the hidden layer:
    e_j = v_a^T tanh(W_a q + U_a k_j + w_c cov_j).

    Weights: `query_kernel` W_a (d_q, units), `key_kernel` U_a (d_k, units),
    `attention_v` v_a (units, 1), with normalize `attention_g`, `attention_b`, with
    coverage `coverage_kernel` w_c (1, units). `units=None` uses d_k.
    """

    score_name = "additive"
    supports_coverage = True

    def __init__(self, units=None, normalize=False, coverage=False, **kwargs):
        super().__init__(**kwargs)
        self.units = check_int("units", units, allow_none=True)
        self.normalize = bool(normalize)
        self.coverage = bool(coverage)

    def _build_weights(self):
        width = self.units or self.key_dim
        self.query_kernel = self._kernel("query_kernel", (self.query_dim, width))
        self.key_kernel = self._kernel("key_kernel", (self.key_dim, width))
        self.attention_v = self._kernel("attention_v", (width, 1))
        if self.normalize:
            self.attention_g = self.add_weight(
                name="attention_g",
                shape=(),
                initializer=keras.initializers.Constant(math.sqrt(1.0 / width)),
            )
            self.attention_b = self.add_weight(
                name="attention_b", shape=(width,), initializer="zeros"
            )
        if self.coverage:
            # w_c of See et al. (2017): the coverage of position j enters as w_c * cov_j
            self.coverage_kernel = self._kernel("coverage_kernel", (1, width))

    def prepare_keys(self, keys):
        projected = ops.matmul(keys, self.key_kernel)
        if self.normalize:
            projected = projected + self.attention_b
        return projected

    def call(self, query, prepared, coverage=None, training=None):
        q = ops.matmul(query, self.query_kernel)  # [b, Tq, units]
        v = self.attention_v
        if self.normalize:
            v = self.attention_g * v * ops.rsqrt(ops.sum(ops.square(v)))
        v = ops.cast(v, q.dtype)[:, 0]
        w_c = None if coverage is None else ops.cast(self.coverage_kernel[0], q.dtype)
        if training:
            # the backward pass recomputes tanh(.) instead of storing a block per step
            return additive_energies(q, prepared, v, coverage, w_c)
        # inference: the plain formula (a custom gradient would be an extra op in the
        # exported graphs, and LiteRT's converter drops the signature over it)
        return stored_additive_energies(q, prepared, v, coverage, w_c)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "normalize": self.normalize, "coverage": self.coverage})
        return config


@keras.saving.register_keras_serializable(package="kerasrnn")
class ConcatScore(AdditiveScore):
    """Luong's concat score: e_j = v_a^T tanh(W_a [q; k_j]).

    W_a (d_q + d_k, units) acts on the concatenation; it is stored split into its query
    rows (`query_kernel`) and key rows (`key_kernel`), so the key half is computed once per
    source. (The additive score is the same function; Luong writes it with one matrix.)
    `units=None` uses d_k.
    """

    score_name = "concat"

    def __init__(self, units=None, coverage=False, **kwargs):
        kwargs.pop("normalize", None)
        super().__init__(units, normalize=False, coverage=coverage, **kwargs)

    def get_config(self):
        config = super().get_config()
        del config["normalize"]
        return config


@keras.saving.register_keras_serializable(package="kerasrnn")
class LocationScore(_Projected):
    """Location-based score (Luong et al. 2015): e = W_a q, then softmax over positions.

    The score ignores the keys' content: W_a (d_q, max_length) gives one energy per source
    position, so sources may be at most `max_length` long; a shorter source uses the first
    Tk energies.

    Limit: keys longer than `max_length` raise a ValueError naming both lengths whenever
    the length is known statically, at build and at every call (always under JAX, and
    eagerly under TensorFlow). A `tf.function` traced with an unknown time axis cannot
    check it, so pad or cut sources to at most `max_length` positions beforehand.
    """

    score_name = "location"

    def __init__(self, max_length, **kwargs):
        super().__init__(**kwargs)
        # (the longest source the location score can attend)
        self.max_length = check_int("max_length", max_length)

    def _check_length(self, keys_shape):
        length = keys_shape[1] if len(keys_shape) == 3 else None
        if length is not None and length > self.max_length:
            raise ValueError(
                f"The location score attends at most max_length={self.max_length} "
                f"source positions; got `keys` of length {length}."
            )

    def build(self, query_shape, keys_shape):
        self._check_length(keys_shape)
        super().build(query_shape, keys_shape)

    def _build_weights(self):
        self.kernel = self._kernel("kernel", (self.query_dim, self.max_length))

    def prepare_keys(self, keys):
        # the layer is built once, on its first source: later, longer ones are caught
        # here rather than by a backend shape error after the slice below
        self._check_length(keys.shape)
        return keys

    def call(self, query, prepared):
        self._check_length(prepared.shape)
        length = ops.shape(prepared)[1]
        return ops.matmul(query, self.kernel)[:, :, :length]

    def get_config(self):
        config = super().get_config()
        config["max_length"] = self.max_length
        return config


SCORES = {
    "additive": AdditiveScore,
    "bahdanau": AdditiveScore,
    "dot": DotScore,
    "general": GeneralScore,
    "bilinear": GeneralScore,
    "concat": ConcatScore,
    "scaled_dot": ScaledDotScore,
    "content": ContentScore,
    "cosine": ContentScore,
    "location": LocationScore,
}


def get(
    score,
    units=None,
    normalize=False,
    max_length=None,
    kernel_initializer="glorot_uniform",
    name=None,
    coverage=False,
):
    """The score layer for a name in `SCORES`, checking that each option fits the score."""
    if not isinstance(score, str) or score.lower() not in SCORES:
        raise ValueError(f"Unknown `score`={score!r}; expected one of {sorted(SCORES)}.")
    cls = SCORES[score.lower()]
    options = {
        "units": units,
        "normalize": normalize,
        "max_length": max_length,
        "coverage": coverage,
    }
    accepted = {
        AdditiveScore: ("units", "normalize", "coverage"),
        ConcatScore: ("units", "coverage"),
        LocationScore: ("max_length",),
    }.get(cls, ())
    for option, value in options.items():
        if option not in accepted and value not in (None, False):
            raise ValueError(
                f"`{option}` does not apply to score={score!r} (it takes "
                f"{', '.join(accepted) or 'no options'}); got {option}={value!r}."
            )
    kwargs = {k: options[k] for k in accepted}
    if issubclass(cls, _Projected):
        kwargs["kernel_initializer"] = kernel_initializer
    return cls(name=name, **kwargs)
