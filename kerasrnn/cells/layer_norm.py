"""Layer-normalised recurrent cells (Ba, Kiros & Hinton 2016), as TF Addons had them."""
import keras
from keras import ops

from kerasrnn.cells.base import layer_norm
from kerasrnn.cells.lstm import LSTMCell
from kerasrnn.cells.simple import SimpleRNNCell


class _LayerNormWeights:
    """The normalisation arguments, gain/shift pairs named `<name>_gamma`/`_beta` and their
    config, shared by the layer-normalised cells."""

    def __init__(
        self,
        units,
        norm_epsilon=1e-3,
        norm_gamma_initializer="ones",
        norm_beta_initializer="zeros",
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.norm_epsilon = float(norm_epsilon)
        self.norm_gamma_initializer = keras.initializers.get(norm_gamma_initializer)
        self.norm_beta_initializer = keras.initializers.get(norm_beta_initializer)

    def _add_norm(self, name, width):
        gamma = self.add_weight(
            shape=(width,), name=f"{name}_gamma", initializer=self.norm_gamma_initializer
        )
        beta = self.add_weight(
            shape=(width,), name=f"{name}_beta", initializer=self.norm_beta_initializer
        )
        return gamma, beta

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "norm_epsilon": self.norm_epsilon,
                "norm_gamma_initializer": keras.initializers.serialize(
                    self.norm_gamma_initializer
                ),
                "norm_beta_initializer": keras.initializers.serialize(
                    self.norm_beta_initializer
                ),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="kerasrnn")
class LayerNormSimpleRNNCell(_LayerNormWeights, SimpleRNNCell):
    """Simple recurrent cell with layer normalisation of the pre-activation.

    .. math::  h_t = \\phi(\\mathrm{LN}(W x_t + V h_{t-1} + b))

    where LN(a) = gamma * (a - mean(a)) / sqrt(var(a) + epsilon) + beta over the units.
    Extra weights: `norm_gamma`, `norm_beta` (units each).

    Args:
        units, activation: as `SimpleRNNCell`.
        norm_epsilon: epsilon of the normalisation (default 1e-3, as TF Addons).
        norm_gamma_initializer, norm_beta_initializer: initializers of gamma and beta.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> tuple(keras.layers.RNN(kerasrnn.LayerNormSimpleRNNCell(8))(np.ones((2, 5, 3))).shape)
    (2, 8)
    """

    def _build_extra(self, input_dim):
        self.norm_gamma, self.norm_beta = self._add_norm("norm", self.units)

    def recurrent_step(self, projected, h_tm1, states):
        a = projected + ops.matmul(h_tm1, self.recurrent_kernel)
        h = self.activation(layer_norm(a, self.norm_gamma, self.norm_beta, self.norm_epsilon))
        return h, [h]


@keras.saving.register_keras_serializable(package="kerasrnn")
class LayerNormLSTMCell(_LayerNormWeights, LSTMCell):
    """LSTM with layer normalisation (Ba, Kiros & Hinton 2016, eqs. 20-22).

    .. math::

        (i_t, f_t, \\tilde c_t, o_t) &= \\mathrm{LN}_x(W x_t) + \\mathrm{LN}_h(U h_{t-1}) + b
            \\quad\\text{(then } \\sigma, \\sigma, \\phi, \\sigma) \\\\
        c_t &= f_t \\odot c_{t-1} + i_t \\odot \\tilde c_t \\\\
        h_t &= o_t \\odot \\phi(\\mathrm{LN}_c(c_t))

    LN_x and LN_h normalise the fused pre-activation vectors of the input and
    the recurrent projection separately; LN_c normalises the cell state on its way to
    the output, while c_t itself is carried unnormalised, as in the paper. Extra weights:
    `input_norm_gamma/beta`, `recurrent_norm_gamma/beta` (gates x units each: 4 units,
    3 for the coupled and the 1997 cell) and
    `cell_norm_gamma/beta` (units). The variants of `LSTMCell` (forget_gate, peephole,
    coupled) are available here too; the peephole terms are added after normalisation.

    Args:
        units: width of h_t and c_t.
        norm_epsilon: epsilon of the normalisations (default 1e-3, as TF Addons).
        norm_gamma_initializer, norm_beta_initializer: initializers of the gains/shifts.
        The other arguments are `LSTMCell`'s.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> tuple(keras.layers.RNN(kerasrnn.LayerNormLSTMCell(8))(np.ones((2, 5, 3))).shape)
    (2, 8)
    """

    def _build_extra(self, input_dim):
        super()._build_extra(input_dim)
        width = self.gate_count * self.units
        self.input_norm = self._add_norm("input_norm", width)
        self.recurrent_norm = self._add_norm("recurrent_norm", width)
        self.cell_norm = self._add_norm("cell_norm", self.units)

    def input_projection(self, inputs):
        z = layer_norm(ops.matmul(inputs, self.kernel), *self.input_norm, self.norm_epsilon)
        if self.use_bias:
            z = z + self.bias
        return z

    def recurrent_preactivation(self, h_tm1):
        return layer_norm(
            ops.matmul(h_tm1, self.recurrent_kernel), *self.recurrent_norm, self.norm_epsilon
        )

    def output_activation(self, c):
        return self.activation(layer_norm(c, *self.cell_norm, self.norm_epsilon))
