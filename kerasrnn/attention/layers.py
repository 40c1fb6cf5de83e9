"""Attention layers: a generic `Attention(score=...)`, `BahdanauAttention`, `LuongAttention`."""

from typing import NamedTuple

import keras
from keras import ops

from kerasrnn.attention import probability
from kerasrnn.attention import scores as scores_lib


class AttentionMemory(NamedTuple):
    """What one source sequence offers every query, computed once by `Attention.prepare`.

    Fields: `keys`, the keys as the score needs them (e.g. U_a k_j for the additive score),
    `values` `[batch, Tk, d_v]`, and `mask` (`[batch, Tk]` booleans, or None).
    It is a plain tuple of tensors, so it passes through `jax.jit`, `tf.function` and
    `keras.ops` loops unchanged.
    """

    keys: object
    values: object
    mask: object = None

    def repeat(self, count):
        """Each source repeated `count` times along the batch (beam search's layout:
        rows b * count ... b * count + count - 1 belong to source b)."""
        return AttentionMemory(*(None if t is None else ops.repeat(t, count, axis=0) for t in self))

    def take(self, rows):
        """The memory of the batch rows `rows` (int indices) only."""
        return AttentionMemory(*(None if t is None else ops.take(t, rows, axis=0) for t in self))


def repeat_memory(memory, count):
    """`memory.repeat(count)` for one `AttentionMemory` or a tuple of them (an
    `AttentionCell` with several attention mechanisms): beam search's layout."""
    if isinstance(memory, AttentionMemory):
        return memory.repeat(count)
    return tuple(m.repeat(count) for m in memory)


def masked_softmax(energies, mask=None):
    """softmax over the last axis, with masked positions getting exactly zero weight.

    A row whose positions are all masked gets all-zero weights (never NaN). float16 and
    bfloat16 energies (mixed precision) are normalised in float32 and cast back.
    (`kerasrnn.attention.probability.softmax`; hardmax and sparsemax sit beside it.)
    """
    return probability.softmax(energies, mask)


@keras.saving.register_keras_serializable(package="kerasrnn")
class Attention(keras.layers.Layer):
    """Attention with any of the classic score functions.

    For a query q (a decoder state), keys k_j and values v_j (encoder states; values
    default to the keys), with the mask m_j:

    .. math::

        e_j &= \\text{score}(q, k_j) \\quad (\\times g \\text{ if scale}) \\\\
        \\alpha_j &= \\frac{m_j \\exp(e_j)}{\\sum_{j'} m_{j'} \\exp(e_{j'})} \\\\
        c &= \\sum_j \\alpha_j v_j

    Masked positions get alpha_j = 0 exactly; a fully masked row gives alpha = 0 and
    c = 0. The scores (see `kerasrnn.attention.scores`):

    ============== ====================================================== ===============
    score          e_j                                                    options
    ============== ====================================================== ===============
    "additive"     v_a^T tanh(W_a q + U_a k_j)  (Bahdanau; "bahdanau")    units, normalize
    "dot"          q^T k_j  (Luong; needs d_q = d_k)
    "general"      q^T W_a k_j  (Luong's bilinear; "bilinear")
    "concat"       v_a^T tanh(W_a [q; k_j])  (Luong)                      units
    "scaled_dot"   q^T k_j / sqrt(d_k)  (needs d_q = d_k)
    "content"      cos(q, k_j)  ("cosine"; needs d_q = d_k)
    "location"     (W_a q)_j, ignores the keys; sources of at most        max_length
                   `max_length` positions
    ============== ====================================================== ===============

    The key side of the score (U_a k_j, W_a k_j, ...) depends on the source only: it is
    computed once by `prepare(keys, values, mask)` and reused by `attend(query, memory)`
    for every query, which is how `kerasrnn.AttentionCell` uses the layer at each step.

    Args:
        score: one of the names above.
        units: width of the hidden layer of the additive / concat scores (default
            d_k, the width of the keys; `BahdanauAttention` asks for it explicitly).
        normalize: weight-normalised v_a for the additive score.
        max_length: longest source of the location score (longer keys raise a
            ValueError when their length is known statically).
        scale: multiply the energies by a learned scalar g (initialised to 1), as
            TensorFlow Addons' `LuongAttention(scale=True)`.
        probability_fn: "softmax" (default), "hardmax" (one-hot argmax, TensorFlow
            Addons' option) or "sparsemax" (Martins & Astudillo 2016; exact zeros); see
            `kerasrnn.attention.probability`.
        coverage: coverage attention (See, Liu & Manning 2017; OpenNMT's coverage
            attention), additive and concat scores only: the running sum of the past
            alignments cov_j = sum_{t' < t} alpha_{t',j} enters the score,
            e_j = v_a^T tanh(W_a q + U_a k_j + w_c cov_j). The coverage is state carried
            from step to step, so queries go one step at a time (`AttentionCell` does
            this); `kerasrnn.attention.coverage_loss` is the paper's loss on it.

    Stateful attention (coverage, and the monotonic layers, whose state is the previous
    alignment): `initial_state(memory)` gives the first state and
    `step(query, memory, state)` returns `(context, weights, next_state)`.
    `kerasrnn.AttentionCell` carries the state in its own states.

    Call arguments:
        query: `[batch, d_q]` (one decoder step) or `[batch, Tq, d_q]` (all steps at
            once, for teacher forcing).
        keys: `[batch, Tk, d_k]`.
        values: `[batch, Tk, d_v]`, default `keys`.
        mask: `[batch, Tk]`, true (or 1) at the source positions that may be attended.
        return_attention_scores: also return the weights alpha (`[batch, Tk]` or
            `[batch, Tq, Tk]`), as `keras.layers.Attention` does.

    Returns the context `[batch, d_v]` or `[batch, Tq, d_v]` (and the weights).

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.Attention(score="general")
    >>> query, keys = np.ones((2, 4, 8), "float32"), np.ones((2, 6, 5), "float32")
    >>> context, weights = layer(query, keys, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 4, 5), (2, 4, 6))
    """

    def __init__(
        self,
        score="dot",
        units=None,
        normalize=False,
        max_length=None,
        scale=False,
        kernel_initializer="glorot_uniform",
        probability_fn="softmax",
        coverage=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.score_name = score
        self.units = units
        self.normalize = bool(normalize)
        self.max_length = max_length
        self.scale = bool(scale)
        self.coverage = bool(coverage)
        self.score = scores_lib.get(
            score,
            units=units,
            normalize=normalize,
            max_length=max_length,
            kernel_initializer=kernel_initializer,
            name="score",
            coverage=coverage,
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.probability_fn = probability_fn
        self._probability = self._get_probability(probability_fn)
        self.supports_masking = True

    def _get_probability(self, name):
        return probability.get(name)

    @property
    def stateful_attention(self):
        """Whether the layer carries state from query to query (coverage, monotonic)."""
        return self.coverage

    # ---- shapes --------------------------------------------------------------------
    def build(self, query_shape, keys_shape, values_shape=None):
        _check_rank("query", query_shape, (2, 3), "[batch, d_q] or [batch, Tq, d_q]")
        _check_rank("keys", keys_shape, (3,), "[batch, Tk, d_k]")
        if values_shape is not None:
            _check_rank("values", values_shape, (3,), "[batch, Tk, d_v]")
        self.score.build((None, None, query_shape[-1]), tuple(keys_shape))
        if self.scale:
            self.scale_weight = self.add_weight(name="scale", shape=(), initializer="ones")

    def compute_mask(self, inputs, previous_mask=None):
        # the [batch, Tk] key mask must not travel on to the [batch, (Tq,) d_v] context
        return None

    # ---- the two halves ------------------------------------------------------------
    def prepare(self, keys, values=None, mask=None):
        """The per-source half: keys as the score needs them, values and mask.

        Returns an `AttentionMemory` to pass to `attend` for every query.
        """
        if not self.built:
            raise ValueError(
                f"{type(self).__name__} is not built: call it once, or "
                "`build(query_shape, keys_shape)`, before `prepare`."
            )
        keys = ops.convert_to_tensor(keys)
        values = keys if values is None else ops.convert_to_tensor(values)
        _check_rank("keys", keys.shape, (3,), "[batch, Tk, d_k]")
        _check_rank("values", values.shape, (3,), "[batch, Tk, d_v]")
        _check_match("values", values.shape, keys.shape, 2)
        if keys.shape[-1] is not None and keys.shape[-1] != self.score.key_dim:
            raise ValueError(
                f"{type(self).__name__} {self.name!r} was built for a memory (`keys`) of "
                f"width {self.score.key_dim}; got keys of shape {tuple(keys.shape)}. Its "
                "weights fix the width: pass the encoder outputs it was built with, or "
                "use a new attention layer for this memory."
            )
        if mask is not None:
            mask = ops.convert_to_tensor(mask)
            _check_rank("mask", mask.shape, (2,), "[batch, Tk]")
            _check_match("mask", mask.shape, keys.shape, 2)
            mask = ops.cast(mask, "bool")
        return AttentionMemory(self.score.prepare_keys(keys), values, mask)

    def initial_state(self, memory):
        """The attention state before the first query, `[batch, Tk]` (None if stateless):
        the zero coverage."""
        if not self.stateful_attention:
            return None
        shape = ops.shape(memory.values)
        return self.initial_state_for(shape[0], shape[1])

    def initial_state_for(self, batch_size, length):
        """`initial_state` from the batch size and memory length alone."""
        if not self.stateful_attention:
            return None
        return ops.zeros((batch_size, length), self.compute_dtype)

    def attend(self, query, memory, state=None, training=False):
        """The per-query half: (context, weights) for `query` against a prepared memory.

        Stateful layers (coverage, monotonic) take their `state` (default the initial
        state) and a single query `[batch, d_q]`; `step` also returns the next state.
        """
        context, weights, _ = self.step(query, memory, state, training=training)
        return context, weights

    def step(self, query, memory, state=None, training=False, noise=None):
        """(context, weights, next_state) for one query; next_state is None if stateless.

        `noise` (`[batch, Tk]` standard normal draws) replaces the draws of a monotonic
        layer's sigmoid noise while training (`AttentiveRNN` draws them outside its loop).
        """
        query = ops.convert_to_tensor(query)
        _check_rank("query", query.shape, (2, 3), "[batch, d_q] or [batch, Tq, d_q]")
        if query.shape[-1] is not None and query.shape[-1] != self.score.query_dim:
            raise ValueError(
                f"{type(self).__name__} was built for a `query` of width "
                f"{self.score.query_dim}; got a query of shape {tuple(query.shape)}."
            )
        single = len(query.shape) == 2
        if self.stateful_attention:
            if not single:
                raise ValueError(
                    f"{type(self).__name__} carries state from step to step (coverage or "
                    "monotonic attention), so it takes one query `[batch, d_q]` at a time; "
                    f"got a query of shape {tuple(query.shape)}. Use it in "
                    "kerasrnn.AttentionCell, or call `step` per query."
                )
            if state is None:
                state = self.initial_state(memory)
        if single:
            query = query[:, None, :]
        _check_batch(query, memory)
        weights, next_state = self._weights(query, memory, state, training, noise)
        context = ops.matmul(weights, ops.cast(memory.values, weights.dtype))
        if single:
            return context[:, 0], weights[:, 0], next_state
        return context, weights, next_state

    def _energies(self, query, memory, state):
        if self.coverage:
            energies = self.score(query, memory.keys, coverage=ops.cast(state, query.dtype))
        else:
            energies = self.score(query, memory.keys)
        if self.scale:
            energies = energies * self.scale_weight
        return energies

    def _weights(self, query, memory, state, training, noise=None):
        """(weights [b, Tq, Tk], next_state) from the energies."""
        energies = self._energies(query, memory, state)
        mask = None if memory.mask is None else memory.mask[:, None, :]
        weights = self._probability(energies, mask)
        if self.coverage:
            return weights, state + ops.cast(weights[:, 0], state.dtype)
        return weights, None

    def call(self, query, keys, values=None, mask=None, return_attention_scores=False):
        context, weights = self.attend(query, self.prepare(keys, values, mask))
        if return_attention_scores:
            return context, weights
        return context

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score": self.score_name,
                "units": self.units,
                "normalize": self.normalize,
                "max_length": self.max_length,
                "scale": self.scale,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "probability_fn": self.probability_fn,
                "coverage": self.coverage,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="kerasrnn")
class BahdanauAttention(Attention):
    """Bahdanau et al. (2015) additive attention: e_j = v_a^T tanh(W_a q + U_a k_j).

    `Attention(score="additive", units=units, normalize=normalize)` under its usual name;
    see `Attention` for the call and the weight-normalised form.

    Args:
        units: width of W_a q and U_a k_j.
        normalize: weight-normalised v_a with a learned gain and bias.
        scale: a learned scalar on the energies (rarely wanted with this score).

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.BahdanauAttention(16)
    >>> tuple(layer(np.ones((2, 8), "float32"), np.ones((2, 6, 5), "float32")).shape)
    (2, 5)
    """

    def __init__(self, units, normalize=False, scale=False, **kwargs):
        kwargs.pop("score", None)
        if units is None:
            raise ValueError("BahdanauAttention needs `units` (the width of W_a q).")
        super().__init__("additive", units=units, normalize=normalize, scale=scale, **kwargs)

    def get_config(self):
        config = super().get_config()
        del config["score"], config["max_length"]
        return config


@keras.saving.register_keras_serializable(package="kerasrnn")
class LuongAttention(Attention):
    """Luong et al. (2015) attention with the dot, general or concat score.

    .. math::

        \\text{dot: } e_j = h_t^T \\bar h_j \\qquad
        \\text{general: } e_j = h_t^T W_a \\bar h_j \\qquad
        \\text{concat: } e_j = v_a^T \\tanh(W_a [h_t; \\bar h_j])

    Args:
        score: "dot", "general" or "concat".
        scale: multiply the energies by a learned scalar g (initialised to 1).
        units: hidden width of the concat score (default d_k).

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.LuongAttention("dot", scale=True)
    >>> tuple(layer(np.ones((2, 3, 5), "float32"), np.ones((2, 6, 5), "float32")).shape)
    (2, 3, 5)
    """

    def __init__(self, score="dot", scale=False, units=None, **kwargs):
        if score not in ("dot", "general", "concat"):
            raise ValueError(
                "LuongAttention's `score` must be 'dot', 'general' or 'concat'; got "
                f"score={score!r} (use kerasrnn.Attention for the other scores)."
            )
        kwargs.pop("normalize", None)
        kwargs.pop("max_length", None)
        super().__init__(score, units=units, scale=scale, **kwargs)

    def get_config(self):
        config = super().get_config()
        del config["normalize"], config["max_length"]
        return config


def _check_batch(query, memory):
    """The memory's batch must be the queries' batch (beam search repeats the memory)."""
    rows, sources = query.shape[0], memory.values.shape[0]
    if rows is None or sources is None or rows == sources:
        return
    hint = ""
    if rows % sources == 0:
        hint = (
            f" The decoder has {rows // sources}x the memory's rows: for beam search, "
            f"repeat the memory beam_size times along the batch, "
            f"`memory.repeat({rows // sources})` (or `ops.repeat(encoder_outputs, "
            f"{rows // sources}, axis=0)` and the mask likewise)."
        )
    raise ValueError(
        f"The attention memory has batch size {sources} but the decoder states "
        f"(queries) have batch size {rows}; each decoder row needs its own source row." + hint
    )


def _check_rank(name, shape, ranks, expected):
    if len(shape) not in ranks:
        raise ValueError(f"`{name}` must have shape {expected}; got shape {tuple(shape)}.")


def _check_match(name, shape, keys_shape, axes):
    for axis in range(axes):
        a, b = shape[axis], keys_shape[axis]
        if a is not None and b is not None and a != b:
            raise ValueError(
                f"`{name}` must have shape [batch, Tk{', ...' if len(shape) > 2 else ''}] "
                f"matching `keys` {tuple(keys_shape)}; got shape {tuple(shape)}."
            )
