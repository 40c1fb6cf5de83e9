"""Attention projections: how an `AttentionCell` turns the contexts into its attention vector.

After each step an attentive decoder holds the cell output h_t and one context c_t^(k)
per attention mechanism. The projection maps them to the attention vector a_t (the
cell's output, and with input feeding the next step's extra input):

.. math::

    \\text{LuongProjection:}\\quad a_t &= \\tanh(W_c [c_t; h_t]) \\\\
    \\text{LinearProjection:}\\quad a_t &= W [h_t; c_t] \\\\
    \\text{ContextProjection:}\\quad a_t &= c_t \\\\
    \\text{ConcatProjection:}\\quad a_t &= [h_t; c_t] \\\\
    \\text{LayerProjection(f):}\\quad a_t &= f([h_t; c_t])

With several mechanisms each gets its own W_c^(k) (or layer f_k) and the vectors are
concatenated, [a_t^(1); a_t^(2); ...] (`ContextProjection`: [c^(1); c^(2); ...],
`ConcatProjection`: [h; c^(1); c^(2); ...]).

A projection is a Keras layer with `call(contexts, cell_output)` (`contexts` a list,
one `[batch, d_v^(k)]` per mechanism) and `output_width(context_dims, cell_output_dim)`;
any other Keras layer given to `AttentionCell(projection=...)` is wrapped in a
`LayerProjection`, which applies it to [h_t; c_t].
"""

import keras
from keras import ops

from kerasrnn.validation import is_int


def _int_list(units, count, name):
    """`units` as one positive int per mechanism (None stays None)."""
    if units is None:
        return [None] * count
    values = list(units) if isinstance(units, (list, tuple)) else [units] * count
    if len(values) != count or any(not is_int(u) or u <= 0 for u in values):
        raise ValueError(
            f"`{name}` must be a positive integer, one per attention mechanism ({count}), "
            f"or None; got {name}={units!r}."
        )
    return [int(u) for u in values]


class AttentionProjection(keras.layers.Layer):
    """Base class: maps (contexts, cell output) to the attention vector a_t.

    Subclasses implement `call(contexts, cell_output)` and `output_width(context_dims,
    cell_output_dim)` (None where it depends on a context width not known yet, given
    as None), and create their weights in `build(context_dims,
    cell_output_dim)` (the `AttentionCell` builds its projection once the memory's
    width is known). `contexts` is a list with one `[batch, d_v]` context per mechanism.
    """

    def build(self, context_dims, cell_output_dim):
        self.built = True

    def output_width(self, context_dims, cell_output_dim):
        raise NotImplementedError

    def call(self, contexts, cell_output):
        raise NotImplementedError


@keras.saving.register_keras_serializable(package="kerasrnn")
class LuongProjection(AttentionProjection):
    """Luong et al.'s attentional layer: a_t = tanh(W_c [c_t; h_t]).

    Args:
        units: width of a_t (an int, or a list with one per mechanism); default the cell
            output's width (Luong et al.'s choice).
        kernel_initializer: initializer of W_c (`attention_kernel`, (d_v + d_h) x units).

    Example:

    >>> import numpy as np, kerasrnn
    >>> projection = kerasrnn.LuongProjection(4)
    >>> projection.build([3], 2)
    >>> a = projection([np.ones((1, 3), "float32")], np.ones((1, 2), "float32"))
    >>> tuple(a.shape)
    (1, 4)
    """

    activation: str | None = "tanh"
    context_first = True  # [c; h], the paper's order

    def __init__(self, units=None, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if units is not None:
            _int_list(units, len(units) if isinstance(units, (list, tuple)) else 1, "units")
        self.units = units
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self._activation = keras.activations.get(self.activation)

    def _widths(self, context_dims, cell_output_dim):
        return [
            cell_output_dim if u is None else u
            for u in _int_list(self.units, len(context_dims), "units")
        ]

    def output_width(self, context_dims, cell_output_dim):
        return sum(self._widths(context_dims, cell_output_dim))

    def build(self, context_dims, cell_output_dim):
        widths = self._widths(context_dims, cell_output_dim)
        self.kernels = [
            self.add_weight(
                name="attention_kernel" if len(widths) == 1 else f"attention_kernel_{index}",
                shape=(dim + cell_output_dim, width),
                initializer=self.kernel_initializer,
            )
            for index, (dim, width) in enumerate(zip(context_dims, widths))
        ]
        self.built = True

    def call(self, contexts, cell_output):
        vectors = []
        for context, kernel in zip(contexts, self.kernels):
            pair = [context, cell_output] if self.context_first else [cell_output, context]
            vectors.append(self._activation(ops.matmul(ops.concatenate(pair, axis=-1), kernel)))
        return vectors[0] if len(vectors) == 1 else ops.concatenate(vectors, axis=-1)

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        }


@keras.saving.register_keras_serializable(package="kerasrnn")
class LinearProjection(LuongProjection):
    """TensorFlow Addons' attention layer: a_t = W [h_t; c_t], no activation.

    `AttentionWrapper(attention_layer_size=n)`'s layer: the cell output first, then the
    context, and no tanh; its kernel (`attention_kernel`) loads TFA's unchanged.

    Args:
        units: width of a_t (an int, or one per mechanism); default the cell output's.
        kernel_initializer: initializer of W.
    """

    activation = None
    context_first = False  # [h; c], TFA's order


@keras.saving.register_keras_serializable(package="kerasrnn")
class ContextProjection(AttentionProjection):
    """No projection: a_t = c_t (TensorFlow Addons' `attention_layer_size=None`).

    Has no weights; with input feeding, the context itself is fed back.
    """

    def output_width(self, context_dims, cell_output_dim):
        return None if None in context_dims else sum(context_dims)

    def call(self, contexts, cell_output):
        return contexts[0] if len(contexts) == 1 else ops.concatenate(contexts, axis=-1)


@keras.saving.register_keras_serializable(package="kerasrnn")
class ConcatProjection(AttentionProjection):
    """No projection: a_t = [h_t; c_t], Bahdanau et al.'s decoder output [s_i; c_i]
    (the readout sees the state and the context). Has no weights."""

    def output_width(self, context_dims, cell_output_dim):
        return None if None in context_dims else cell_output_dim + sum(context_dims)

    def call(self, contexts, cell_output):
        return ops.concatenate([cell_output, *contexts], axis=-1)


@keras.saving.register_keras_serializable(package="kerasrnn")
class LayerProjection(AttentionProjection):
    """Any Keras layer as the projection: a_t = f([h_t; c_t]).

    TensorFlow Addons' `attention_layer`; also how a user-written projection plugs in
    (`AttentionCell(..., projection=my_layer)` wraps it here).

    Args:
        layers: a Keras layer mapping `[batch, d_h + d_v]` to `[batch, units]`, or a list
            with one per attention mechanism.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> projection = kerasrnn.LayerProjection(keras.layers.Dense(3, activation="relu"))
    >>> projection.build([4], 2)
    >>> tuple(projection([np.ones((1, 4), "float32")], np.ones((1, 2), "float32")).shape)
    (1, 3)
    """

    def __init__(self, layers, **kwargs):
        super().__init__(**kwargs)
        listed = isinstance(layers, (list, tuple))
        for layer in layers if listed else [layers]:
            if not isinstance(layer, keras.layers.Layer):
                raise TypeError(
                    f"`layers` must be a Keras layer or a list of them (one per attention "
                    f"mechanism); got {layer!r}."
                )
        self.layers = list(layers) if listed else layers
        self._listed = listed

    def _checked(self, count):
        layers = self.layers if self._listed else [self.layers]
        if len(layers) != count:
            raise ValueError(
                f"The projection must hold one layer per attention mechanism ({count}); "
                f"got {len(layers)}. Pass `projection=[layer_1, layer_2, ...]`."
            )
        return layers

    def output_width(self, context_dims, cell_output_dim):
        widths = []
        for layer, dim in zip(self._checked(len(context_dims)), context_dims):
            width = getattr(layer, "units", None)
            if width is None and dim is not None:
                width = layer.compute_output_shape((None, cell_output_dim + dim))[-1]
            if width is None:
                return None
            widths.append(int(width))
        return sum(widths)

    def build(self, context_dims, cell_output_dim):
        for layer, dim in zip(self._checked(len(context_dims)), context_dims):
            if not layer.built:
                layer.build((None, cell_output_dim + dim))
        self.built = True

    def call(self, contexts, cell_output):
        layers = self.layers if self._listed else [self.layers]
        vectors = [
            layer(ops.concatenate([cell_output, context], axis=-1))
            for layer, context in zip(layers, contexts)
        ]
        return vectors[0] if len(vectors) == 1 else ops.concatenate(vectors, axis=-1)

    def get_config(self):
        serialize = keras.saving.serialize_keras_object
        layers = (
            [serialize(layer) for layer in self.layers] if self._listed else serialize(self.layers)
        )
        return {**super().get_config(), "layers": layers}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        layers = config.pop("layers")
        deserialize = keras.saving.deserialize_keras_object
        layers = (
            [deserialize(x) for x in layers] if isinstance(layers, list) else deserialize(layers)
        )
        return cls(layers, **config)


def get(projection):
    """An `AttentionProjection` from a projection, any Keras layer (wrapped in a
    `LayerProjection`), a list of Keras layers (one per mechanism) or a config dict."""
    if isinstance(projection, dict):
        projection = keras.saving.deserialize_keras_object(projection)
    if isinstance(projection, AttentionProjection):
        return projection
    if isinstance(projection, keras.layers.Layer) or (
        isinstance(projection, (list, tuple))
        and projection
        and all(isinstance(p, keras.layers.Layer) for p in projection)
    ):
        return LayerProjection(projection)
    raise TypeError(
        "`projection` must be an attention projection (e.g. kerasrnn.LuongProjection(), "
        "LinearProjection(units), ContextProjection(), ConcatProjection()), a Keras layer "
        f"applied to [h; c], or a list of them; got projection={projection!r}."
    )
