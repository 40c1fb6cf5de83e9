"""Bridges: how an encoder's final states become a decoder's initial states.

One layer per rule, chosen by object (or by name through `get`), so the rule lives in
one place: `DenseBridge` (learned, Bahdanau et al. 2015), `CopyBridge` (the states as
they are, Sutskever et al. 2014), `ZerosBridge` and `NoBridge`. Every bridge first joins
a bidirectional encoder's directions (`join_directions`).
"""

import keras
from keras import ops


def join_directions(states, count):
    """An encoder's final states as `count` states, one per decoder state.

    `keras.layers.Bidirectional(..., return_state=True)` and
    `kerasrnn.seq2seq.RNNEncoder` return the forward states, then the backward ones:
    ``[h_fw, c_fw, h_bw, c_bw]``. Given twice `count` states, the two directions are
    concatenated pairwise, ``[[h_fw; h_bw], [c_fw; c_bw]]``; given `count`, they are
    returned as they are.

    Args:
        states: a list of `(batch, width)` tensors, or of shapes (tuples), which are
            joined the same way (the widths added).
        count: how many states the decoder's cell has.

    Example:

    >>> import numpy as np
    >>> from kerasrnn.layers import join_directions
    >>> h_fw, h_bw = np.ones((2, 3), "float32"), np.zeros((2, 4), "float32")
    >>> [tuple(s.shape) for s in join_directions([h_fw, h_bw], 1)]
    [(2, 7)]
    >>> join_directions([(None, 3), (None, 4)], 1)
    [(None, 7)]
    """
    states = list(states)
    if len(states) == 2 * count:
        forward, backward = states[:count], states[count:]
        if all(isinstance(s, (tuple, list)) for s in states):  # shapes
            return [_joined_shape(f, b) for f, b in zip(forward, backward)]
        return [ops.concatenate([f, b], axis=-1) for f, b in zip(forward, backward)]
    if len(states) != count:
        raise ValueError(
            f"The decoder cell has {count} state(s): the encoder must give {count} final "
            f"state(s), or {2 * count} from a bidirectional encoder (forward then "
            f"backward); got {len(states)}."
        )
    return [tuple(s) if isinstance(s, list) else s for s in states]


def _joined_shape(forward, backward):
    width = None if forward[-1] is None or backward[-1] is None else (forward[-1] + backward[-1])
    return tuple(forward[:-1]) + (width,)


@keras.saving.register_keras_serializable(package="kerasrnn")
class Bridge(keras.layers.Layer):
    """Base of the bridges: maps an encoder's final states z_1 ... z_n (after
    `join_directions`) to the decoder cell's initial states s_0^1 ... s_0^n.

    A subclass implements `bridge(states)` (the joined states -> the decoder's states,
    or None for "the decoder's own initial state") and, if it has weights,
    `build_bridge(shapes)`. The decoder's state widths `state_sizes` are given at
    construction or by the model that holds the bridge (`set_state_sizes`), before it is
    built.

    Args:
        state_sizes: the widths of the decoder cell's states (e.g. ``[units]`` for a
            GRU, ``[units, units]`` for an LSTM); default: set by the model
            (`kerasrnn.seq2seq.Seq2SeqBackbone`).

    Call arguments:
        states: the encoder's final states, a list (forward then backward ones when
            bidirectional).

    Returns:
        A list of `len(state_sizes)` tensors `(batch, state_sizes[j])`, or None.
    """

    def __init__(self, state_sizes=None, **kwargs):
        super().__init__(**kwargs)
        self.state_sizes = None
        if state_sizes is not None:
            self.set_state_sizes(state_sizes)

    def set_state_sizes(self, state_sizes):
        """Fixes the decoder's state widths (once; a model calls this with its decoder
        cell's before building the bridge)."""
        sizes = [int(s) for s in state_sizes]
        if not sizes or any(s < 1 for s in sizes):
            raise ValueError(
                f"`state_sizes` must be a non-empty list of positive widths; got "
                f"{list(state_sizes)!r}."
            )
        if self.state_sizes is not None and self.state_sizes != sizes:
            raise ValueError(
                f"This {type(self).__name__} was made for decoder states of widths "
                f"{self.state_sizes}; the decoder cell's are {sizes}. Give each model its "
                "own bridge."
            )
        self.state_sizes = sizes

    def _sizes(self):
        if self.state_sizes is None:
            raise ValueError(
                f"{type(self).__name__} does not know the decoder's state widths: pass "
                "`state_sizes=` or use it inside kerasrnn.seq2seq.Seq2SeqBackbone."
            )
        return self.state_sizes

    def build(self, input_shape):
        if self.built:  # (a loaded model builds from its config, then its parent again)
            return
        shapes = [tuple(s) for s in input_shape]
        self.build_bridge(join_directions(shapes, len(self._sizes())))
        self.built = True

    def build_bridge(self, shapes):
        """Creates the weights from the joined state shapes (none by default)."""

    def call(self, states):
        return self.bridge(join_directions(list(states), len(self._sizes())))

    def bridge(self, states):
        raise NotImplementedError

    def compute_output_shape(self, input_shape):
        batch = tuple(input_shape[0])[0]
        return [(batch, size) for size in self._sizes()]

    def get_config(self):
        return {**super().get_config(), "state_sizes": self.state_sizes}


@keras.saving.register_keras_serializable(package="kerasrnn")
class DenseBridge(Bridge):
    """A learned bridge, one dense layer per decoder state (Bahdanau et al. 2015's
    s_0 = tanh(W_s h_1^<- ), here over the joined final states):

    .. math::

        s_0^j = \\tanh(W_j z_j + b_j)

    so the encoder's states may have any width.

    Args:
        activation: the nonlinearity (default "tanh"; None for a linear map).
        state_sizes: see `Bridge`.

    Example:

    >>> import numpy as np, kerasrnn
    >>> bridge = kerasrnn.layers.DenseBridge(state_sizes=[5])
    >>> forward, backward = np.ones((2, 3), "float32"), np.ones((2, 3), "float32")
    >>> [tuple(s.shape) for s in bridge([forward, backward])]
    [(2, 5)]
    """

    def __init__(self, activation="tanh", state_sizes=None, **kwargs):
        self.activation = keras.activations.get(activation)
        self.dense = None
        super().__init__(state_sizes=state_sizes, **kwargs)

    def set_state_sizes(self, state_sizes):
        super().set_state_sizes(state_sizes)
        if self.dense is None:
            # made as soon as the widths are known (their weights in `build`): Keras
            # draws each initializer's seed when a layer is made, so a model makes its
            # layers in one fixed order
            self.dense = [
                keras.layers.Dense(size, activation=self.activation, name=f"bridge_{index}")
                for index, size in enumerate(self.state_sizes)
            ]

    def build_bridge(self, shapes):
        for layer, shape in zip(self.dense, shapes):
            layer.build(shape)

    def bridge(self, states):
        return [layer(state) for layer, state in zip(self.dense, states)]

    def get_config(self):
        return {**super().get_config(), "activation": keras.activations.serialize(self.activation)}


@keras.saving.register_keras_serializable(package="kerasrnn")
class CopyBridge(Bridge):
    """The encoder's final states as the decoder's initial states, s_0^j = z_j
    (Sutskever et al. 2014): the widths must agree after joining directions (a
    bidirectional encoder of u units per direction feeds a decoder of 2u).

    Example:

    >>> import keras, numpy as np, kerasrnn
    >>> bridge = kerasrnn.layers.CopyBridge(state_sizes=[6])
    >>> forward, backward = np.ones((2, 3), "float32"), np.zeros((2, 3), "float32")
    >>> keras.ops.convert_to_numpy(bridge([forward, backward])[0])[0].tolist()
    [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    """

    def build_bridge(self, shapes):
        widths = [shape[-1] for shape in shapes]
        if any(w is not None and w != s for w, s in zip(widths, self.state_sizes)):
            raise ValueError(
                f"CopyBridge passes the encoder's final states (widths {widths} after "
                f"joining directions) to the decoder, whose states have widths "
                f"{self.state_sizes}; use DenseBridge() (bridge='dense') or matching units."
            )

    def bridge(self, states):
        return states


@keras.saving.register_keras_serializable(package="kerasrnn")
class ZerosBridge(Bridge):
    """Zero initial states, s_0^j = 0, whatever the encoder's: the decoder learns
    from the attention alone.

    Example:

    >>> import keras, numpy as np, kerasrnn
    >>> bridge = kerasrnn.layers.ZerosBridge(state_sizes=[2])
    >>> keras.ops.convert_to_numpy(bridge([np.ones((1, 3), "float32")])[0]).tolist()
    [[0.0, 0.0]]
    """

    def bridge(self, states):
        batch = ops.shape(states[0])[0]
        return [ops.zeros((batch, size), states[0].dtype) for size in self.state_sizes]


@keras.saving.register_keras_serializable(package="kerasrnn")
class NoBridge(Bridge):
    """No bridge: returns None, and the decoder starts from its cell's own initial
    state (`get_initial_state`: zeros, or the learned s_0 of a cell made with
    `learn_initial_state=True`).

    Example:

    >>> import numpy as np, kerasrnn
    >>> print(kerasrnn.layers.NoBridge(state_sizes=[2])([np.ones((1, 3), "float32")]))
    None
    """

    def bridge(self, states):
        return None

    def compute_output_shape(self, input_shape):
        return None


BRIDGES = {"dense": DenseBridge, "copy": CopyBridge, "zeros": ZerosBridge, "none": NoBridge}


def get(identifier):
    """A bridge from a name ("dense", "copy", "zeros", "none"), a config dict
    (`keras.saving.serialize_keras_object`) or a `Bridge` (returned as it is).

    Example:

    >>> import kerasrnn
    >>> type(kerasrnn.layers.bridge.get("copy")).__name__
    'CopyBridge'
    """
    if isinstance(identifier, Bridge):
        return identifier
    if isinstance(identifier, dict):
        bridge = keras.saving.deserialize_keras_object(identifier)
        if isinstance(bridge, Bridge):
            return bridge
    if isinstance(identifier, str) and identifier in BRIDGES:
        return BRIDGES[identifier]()
    raise ValueError(
        f"`bridge` must be one of {sorted(BRIDGES)} or a kerasrnn.layers.Bridge (e.g. "
        f"DenseBridge(activation=None)); got bridge={identifier!r}."
    )
