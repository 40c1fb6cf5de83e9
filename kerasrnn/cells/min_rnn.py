"""minGRU and minLSTM (Feng et al. 2024, "Were RNNs All We Needed?"): gated cells whose
gates read the input x_t alone, never h_{t-1}. Each step is then the linear recurrence

.. math::  h_t = a_t \\odot h_{t-1} + b_t

with a_t and b_t computed from x_t, so a whole sequence needs no step-by-step loop: the
pairs (a_t, b_t) compose associatively, and a parallel scan over time gives every
h_t in log2 T rounds (`linear_recurrence`). `kerasrnn.RNN` runs that scan (its ``"parallel"`` path);
`keras.layers.RNN` runs the same cells one step at a time.
"""

import keras
from keras import ops

from kerasrnn._private import DropoutRNNCell
from kerasrnn.cells.base import check_units
from kerasrnn.validation import check_rate


def _compose_shifted(a, b, offset):
    """Each step composed after the span that ends `offset` steps before it: the step
    (a1, b1) then the step (a2, b2) is one step (a2 a1, a2 b1 + b2), as
    a2 (a1 h + b1) + b2 = a2 a1 h + (a2 b1 + b2); before the start, the identity (1, 0)."""
    before = ops.arange(ops.shape(a)[1])[None, :, None] >= offset
    earlier_a = ops.where(before, ops.roll(a, offset, axis=1), ops.ones_like(a))
    earlier_b = ops.where(before, ops.roll(b, offset, axis=1), ops.zeros_like(b))
    return a * earlier_a, a * earlier_b + b


def linear_recurrence(a, b, h0):
    """Every state of h_t = a_t h_{t-1} + b_t at once, from `h0` (batch, units) and the
    coefficients `a`, `b` (batch, time, units), by a parallel prefix scan (Hillis &
    Steele 1986): after round k each step holds the composition of the 2^k steps
    ending at it, so ceil(log2 T) rounds of element-wise work give A_t = a_t ... a_1
    and B_t, the state from a zero start, and h_t = A_t h_0 + B_t. A length unknown
    when traced (a TensorFlow graph for any length) runs the rounds in a
    `keras.ops.while_loop`. Nothing is divided or exponentiated, so with 0 < a_t < 1 the
    products only shrink (to 0 over long spans, their limit): no length overflows.

    Returns:
        h_1 ... h_T, (batch, time, units).
    """
    a, b, h0 = (ops.convert_to_tensor(x) for x in (a, b, h0))
    length = a.shape[1]
    if length is not None:
        offset = 1
        while offset < length:
            a, b = _compose_shifted(a, b, offset)
            offset *= 2
    else:

        def round_(offset, a, b):
            return (offset * 2, *_compose_shifted(a, b, offset))

        _, a, b = ops.while_loop(
            lambda offset, a, b: offset < ops.shape(a)[1],
            round_,
            (ops.ones((), "int32"), a, b),
        )
    return a * ops.expand_dims(h0, 1) + b


class InputGatedCell(DropoutRNNCell, keras.layers.Layer):
    """Base of the cells of this module: the input projection W x_t + b (`kernel`,
    input_dim x `gate_count` units; `bias`), the step h_t = a_t h_{t-1} + b_t
    (`coefficients`) and its parallel form over a sequence (`parallel_states`).

    Args:
        units: width of h_t, the state and the output.
        activation: the candidate's nonlinearity phi (default None: linear, the
            papers' form).
        use_bias: whether the projection has a bias.
        kernel_initializer, bias_initializer: initializers of W and b.
        kernel_regularizer, bias_regularizer: their regularizers.
        kernel_constraint: the constraint of W.
        dropout: fraction of the input units dropped, one mask per sequence, the same at
            every step (there is no recurrent input to drop).
        seed: seed of the dropout mask.
    """

    gate_count = 2

    def __init__(
        self,
        units,
        activation=None,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        dropout=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = check_units(units)
        self.activation = keras.activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.dropout = check_rate("dropout", dropout)
        self.recurrent_dropout = 0.0  # what DropoutRNNCell reads
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed=seed)

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def build(self, input_shape):
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(
                f"{type(self).__name__} needs a known feature dimension; got inputs of "
                f"shape {tuple(input_shape)}."
            )
        width = self.gate_count * self.units
        self.kernel = self.add_weight(
            shape=(input_dim, width),
            name="kernel",
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(width,),
                name="bias",
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
            )
        self.built = True

    def projection(self, inputs):
        """W x_t + b for one step (batch, features) or a sequence (batch, time,
        features), split into the `gate_count` blocks of `units`."""
        z = ops.matmul(inputs, self.kernel)
        if self.bias is not None:
            z = z + self.bias
        return ops.split(z, self.gate_count, axis=-1)

    def coefficients(self, blocks):
        """(a_t, b_t) of h_t = a_t h_{t-1} + b_t from the projection's blocks."""
        raise NotImplementedError

    def call(self, inputs, states, training=False):
        h_tm1 = states[0] if isinstance(states, (list, tuple)) else states
        if training and self.dropout > 0:
            inputs = inputs * self.get_dropout_mask(inputs)
        a, b = self.coefficients(self.projection(inputs))
        h = a * h_tm1 + b
        return h, [h]

    def parallel_states(self, sequences, h0, mask=None):
        """h_1 ... h_T of the (dropped) `sequences` (batch, time, features) from `h0`
        in one scan (`linear_recurrence`); a step where `mask` (batch, time) is False
        keeps the state (a_t = 1, b_t = 0), as `keras.layers.RNN` keeps it."""
        a, b = self.coefficients(self.projection(sequences))
        if mask is not None:
            real = ops.expand_dims(ops.convert_to_tensor(mask, "bool"), -1)
            a = ops.where(real, a, ops.ones_like(a))
            b = ops.where(real, b, ops.zeros_like(b))
        return linear_recurrence(a, b, h0)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "activation": keras.activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
                "dropout": self.dropout,
                "seed": self.seed,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="kerasrnn")
class MinGRUCell(InputGatedCell):
    """minGRU (Feng et al. 2024): a GRU whose update gate and candidate read x_t alone
    and which has no reset gate.

    .. math::

        z_t &= \\sigma(W_z x_t + b_z) \\\\
        \\tilde h_t &= \\phi(W_h x_t + b_h) \\\\
        h_t &= (1 - z_t) \\odot h_{t-1} + z_t \\odot \\tilde h_t

    (phi = `activation`, linear by default). Here z_t is the share of the *new*
    candidate, the paper's convention (Keras' `GRUCell` keeps z_t of the old state).
    1 - z_t is computed as sigma(-(W_z x_t + b_z)), exact where z_t rounds to 1.
    `kernel` holds the blocks z, h (input_dim x 2 units). Under `kerasrnn.RNN` a
    sequence runs as one parallel scan (`loop_path` "parallel").

    Args:
        units: width of h_t.
        The others: see `InputGatedCell`.

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.RNN(kerasrnn.MinGRUCell(8), return_sequences=True)
    >>> tuple(layer(np.zeros((2, 5, 3), "float32")).shape), layer.loop_path
    ((2, 5, 8), 'parallel')
    """

    gate_count = 2

    def coefficients(self, blocks):
        gate, candidate = blocks
        return ops.sigmoid(-gate), ops.sigmoid(gate) * self.activation(candidate)


@keras.saving.register_keras_serializable(package="kerasrnn")
class MinLSTMCell(InputGatedCell):
    """minLSTM (Feng et al. 2024): an LSTM whose gates read x_t alone, with no output
    gate and no cell state apart from h_t, the forget and input gates normalised to sum
    to 1 (the paper's length independence).

    .. math::

        f_t &= \\sigma(W_f x_t + b_f), \\qquad i_t = \\sigma(W_i x_t + b_i) \\\\
        f'_t &= \\frac{f_t}{f_t + i_t}, \\qquad i'_t = \\frac{i_t}{f_t + i_t} \\\\
        \\tilde h_t &= \\phi(W_h x_t + b_h) \\\\
        h_t &= f'_t \\odot h_{t-1} + i'_t \\odot \\tilde h_t

    (phi = `activation`, linear by default). The normalised gates are computed in log
    space, f'_t = sigma(log sigma(k_f) - log sigma(k_i)) and i'_t = 1 - f'_t likewise
    (k the pre-activations), which is exact where f_t and i_t both underflow. `kernel`
    holds the blocks f, i, h (input_dim x 3 units). Under `kerasrnn.RNN` a sequence
    runs as one parallel scan (`loop_path` "parallel").

    Args:
        units: width of h_t.
        The others: see `InputGatedCell`.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> layer = keras.layers.RNN(kerasrnn.MinLSTMCell(8))  # one step at a time
    >>> tuple(layer(np.zeros((2, 5, 3), "float32")).shape)
    (2, 8)
    """

    gate_count = 3

    def coefficients(self, blocks):
        forget, update, candidate = blocks
        log_forget, log_update = ops.log_sigmoid(forget), ops.log_sigmoid(update)
        keep = ops.sigmoid(log_forget - log_update)
        take = ops.sigmoid(log_update - log_forget)
        return keep, take * self.activation(candidate)
