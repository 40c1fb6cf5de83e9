"""The gated recurrent unit (Cho et al. 2014), in both reset-gate placements."""

import keras
from keras import ops

from kerasrnn.cells.base import RecurrentCell, check_gate_bias_options, chrono_bias


@keras.saving.register_keras_serializable(package="kerasrnn")
class GRUCell(RecurrentCell):
    """Gated recurrent unit.

    With update gate z, reset gate r and candidate h~ (sigma = `recurrent_activation`,
    phi = `activation`):

    .. math::

        z_t &= \\sigma(W_z x_t + U_z h_{t-1} + b_z) \\\\
        r_t &= \\sigma(W_r x_t + U_r h_{t-1} + b_r) \\\\
        \\tilde h_t &= \\phi(W_h x_t + U_h (r_t \\odot h_{t-1}) + b_h)
            \\quad\\text{reset\\_after=False (Cho et al. 2014)} \\\\
        \\tilde h_t &= \\phi(W_h x_t + b_h + r_t \\odot (U_h h_{t-1} + b'_h))
            \\quad\\text{reset\\_after=True (cuDNN / PyTorch)} \\\\
        h_t &= (1 - z_t) \\odot \\tilde h_t + z_t \\odot h_{t-1}

    The last line is Keras' convention: z_t is the fraction of the *old* state that is
    kept. The textbook form h_t = (1 - z'_t) h_{t-1} + z'_t h~_t is the same cell with
    z' = 1 - z (negate W_z, U_z and b_z to convert weights).

    Weights use `keras.layers.GRU`'s layout: `kernel` (input_dim x 3 units) and
    `recurrent_kernel` (units x 3 units) hold the blocks in the order z, r, h; `bias` has
    shape (3 units,) when `reset_after=False` and (2, 3 units) when `reset_after=True`
    (row 0 the input bias b, row 1 the recurrent bias b').

    Args:
        units: width of h_t.
        reset_after: where the reset gate acts: before the recurrent matmul (False) or
            after it (True, Keras' default, the cuDNN-compatible form).
        forget_bias: a value added at initialisation to the bias b_z of the update
            gate z, the GRU's analogue of the LSTM's forget gate: in Keras' convention
            z_t is the share of h_{t-1} that is *kept*, so a positive value starts the
            cell remembering longer (None: b_z from `bias_initializer`). With
            `reset_after=True` it goes to the input bias (row 0).
        chrono_init: T_max >= 2 for the chrono initialisation (Tallec & Ollivier
            2018) of the same gate: b_z ~ log(U[1, T_max - 1]). The GRU has no
            separate input gate (its input share is 1 - z_t), so there is no
            b_i = -b_f counterpart. Excludes `forget_bias`.
        learn_initial_state: learn h_0 (the weight `initial_h`); see
            `kerasrnn.cells.base.RecurrentCell`.
        The other arguments are Keras' (see `kerasrnn.cells.base.RecurrentCell`).

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> layer = keras.layers.RNN(kerasrnn.GRUCell(8, reset_after=False))
    >>> tuple(layer(np.zeros((2, 5, 3), "float32")).shape)
    (2, 8)
    """

    gate_count = 3

    def __init__(self, units, reset_after=True, forget_bias=None, chrono_init=None, **kwargs):
        super().__init__(units, **kwargs)
        self.reset_after = bool(reset_after)
        self.forget_bias, self.chrono_init = check_gate_bias_options(
            self, forget_bias, chrono_init, "update"
        )

    def make_bias_initializer(self):
        if self.chrono_init is None and self.forget_bias is None:
            return self.bias_initializer
        units, base, reset_after = self.units, self.bias_initializer, self.reset_after
        chrono_init, forget_bias, seed = self.chrono_init, self.forget_bias, self.seed

        def initializer(shape, dtype=None):
            bias = base(shape, dtype=dtype)
            row = bias[0] if reset_after else bias
            if chrono_init is not None:
                z = chrono_bias(units, chrono_init, seed, dtype)
            else:
                z = row[:units] + forget_bias
            row = ops.concatenate([z, row[units:]])
            return ops.stack([row, bias[1]]) if reset_after else row

        return initializer

    @property
    def state_size(self):
        return self.units

    def bias_shape(self):
        width = 3 * self.units
        return (2, width) if self.reset_after else (width,)

    def input_projection(self, inputs):
        x = ops.matmul(inputs, self.kernel)
        if self.use_bias:
            x = x + (self.bias[0] if self.reset_after else self.bias)
        return x

    def recurrent_step(self, projected, h_tm1, states):
        units = self.units
        # ops.split: one op per matrix where slicing takes one per gate (and TensorFlow's
        # loop pays a fixed cost per op and step)
        x_z, x_r, x_h = ops.split(projected, 3, axis=-1)
        if self.reset_after:
            recurrent = ops.matmul(h_tm1, self.recurrent_kernel)
            if self.use_bias:
                recurrent = recurrent + self.bias[1]
            r_z, r_r, r_h = ops.split(recurrent, 3, axis=-1)
        else:
            # the candidate's recurrent block must see r * h_{t-1}: multiply z, r first
            r_z, r_r = ops.split(
                ops.matmul(h_tm1, self.recurrent_kernel[:, : 2 * units]), 2, axis=-1
            )
        z = self.recurrent_activation(x_z + r_z)
        r = self.recurrent_activation(x_r + r_r)
        if self.reset_after:
            candidate = self.activation(x_h + r * r_h)
        else:
            candidate = self.activation(
                x_h + ops.matmul(r * h_tm1, self.recurrent_kernel[:, 2 * units :])
            )
        # the interpolation uses the undropped h_{t-1}: dropout only feeds the gates
        h = z * states[0] + (1.0 - z) * candidate
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config["reset_after"] = self.reset_after
        config["forget_bias"] = self.forget_bias
        config["chrono_init"] = self.chrono_init
        return config
