"""Layer-normalised recurrent cells (Ba, Kiros & Hinton 2016), with switches for TF Addons' forms.

The defaults are this package's forms (the paper's for the LSTM); `bias_after_norm=True`
and `carry_normalized_state=True` reproduce tfa.rnn's cells exactly (checked against
fixtures written by tensorflow-addons 0.23 in tests/compat).
"""

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
                "norm_gamma_initializer": keras.initializers.serialize(self.norm_gamma_initializer),
                "norm_beta_initializer": keras.initializers.serialize(self.norm_beta_initializer),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="kerasrnn")
class LayerNormSimpleRNNCell(_LayerNormWeights, SimpleRNNCell):
    """Simple recurrent cell with layer normalisation of the pre-activation.

    With LN(a) = (a - mean(a)) / sqrt(var(a) + epsilon) over the units, gain gamma and
    shift beta, the default form (`bias_after_norm=False`) normalises the whole
    pre-activation, bias included:

    .. math::  h_t = \\phi(\\gamma \\odot \\mathrm{LN}(W x_t + V h_{t-1} + b) + \\beta)

    With `bias_after_norm=True` the bias comes after the normalisation and is its shift
    (there is no separate beta):

    .. math::  h_t = \\phi(\\gamma \\odot \\mathrm{LN}(W x_t + V h_{t-1}) + b)

    The second form is Ba, Kiros & Hinton's eq. 4 and TF Addons'
    `tfa.rnn.LayerNormSimpleRNNCell` (which used epsilon 1e-5: pass `norm_epsilon=1e-5`
    to reproduce it exactly). The first is this package's earlier form, kept as the
    default so saved models load unchanged; with b = 0 it is the paper's, beta playing
    the paper's b. Extra weights: `norm_gamma` and (default form only) `norm_beta`,
    units each.

    Args:
        units, activation: as `SimpleRNNCell`.
        bias_after_norm: add the bias after the normalisation and drop beta (the paper's
            and TF Addons' form); default False, the bias inside the normalisation.
        norm_epsilon: epsilon of the normalisation (default 1e-3; TF Addons' cell used
            1e-5).
        norm_gamma_initializer, norm_beta_initializer: initializers of gamma and beta.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> tuple(keras.layers.RNN(kerasrnn.LayerNormSimpleRNNCell(8))(np.ones((2, 5, 3))).shape)
    (2, 8)
    >>> tfa_cell = kerasrnn.LayerNormSimpleRNNCell(8, bias_after_norm=True, norm_epsilon=1e-5)
    >>> _ = keras.layers.RNN(tfa_cell)(np.ones((2, 5, 3)))
    >>> [w.name for w in tfa_cell.weights]
    ['kernel', 'recurrent_kernel', 'bias', 'norm_gamma']
    """

    def __init__(self, units, bias_after_norm=False, **kwargs):
        super().__init__(units, **kwargs)
        self.bias_after_norm = bool(bias_after_norm)

    def _build_extra(self, input_dim):
        if self.bias_after_norm:
            self.norm_gamma = self.add_weight(
                shape=(self.units,), name="norm_gamma", initializer=self.norm_gamma_initializer
            )
            self.norm_beta = None
        else:
            self.norm_gamma, self.norm_beta = self._add_norm("norm", self.units)

    def input_projection(self, inputs):
        if self.bias_after_norm:  # the bias waits until after the normalisation
            return ops.matmul(inputs, self.kernel)
        return super().input_projection(inputs)

    def recurrent_step(self, projected, h_tm1, states):
        a = projected + ops.matmul(h_tm1, self.recurrent_kernel)
        if self.bias_after_norm:
            z = layer_norm(a, self.norm_gamma, 0.0, self.norm_epsilon)
            if self.use_bias:
                z = z + self.bias
        else:
            z = layer_norm(a, self.norm_gamma, self.norm_beta, self.norm_epsilon)
        h = self.activation(z)
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config["bias_after_norm"] = self.bias_after_norm
        return config


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
    the output, while c_t itself is carried unnormalised, as in the paper (the default).

    With `carry_normalized_state=True` the cell carries (and returns as its state) the
    normalised LN_c(c_t) instead, as TF Addons' `tfa.rnn.LayerNormLSTMCell` did:

    .. math::  c_t = \\mathrm{LN}_c(f_t \\odot c_{t-1} + i_t \\odot \\tilde c_t), \\qquad
        h_t = o_t \\odot \\phi(c_t)

    From the same state both give the same first step and drift apart after it. Extra weights:
    `input_norm_gamma/beta`, `recurrent_norm_gamma/beta` (gates x units each: 4 units,
    3 for the coupled and the 1997 cell) and
    `cell_norm_gamma/beta` (units). The variants of `LSTMCell` (forget_gate, peephole,
    coupled) are available here too; the peephole terms are added after normalisation.

    Args:
        units: width of h_t and c_t.
        carry_normalized_state: carry LN_c(c_t) to the next step instead of c_t (TF
            Addons' form; default False, the paper's).
        norm_epsilon: epsilon of the normalisations (default 1e-3, also TF Addons').
        norm_gamma_initializer, norm_beta_initializer: initializers of the gains/shifts.
        The other arguments are `LSTMCell`'s.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> tuple(keras.layers.RNN(kerasrnn.LayerNormLSTMCell(8))(np.ones((2, 5, 3))).shape)
    (2, 8)
    """

    def __init__(self, units, carry_normalized_state=False, **kwargs):
        super().__init__(units, **kwargs)
        self.carry_normalized_state = bool(carry_normalized_state)

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

    def recurrent_step(self, projected, h_tm1, states):
        h, (h, c) = super().recurrent_step(projected, h_tm1, states)
        if self.carry_normalized_state:
            # the same LN_c(c_t) that h_t was computed from, now also the carried state
            c = layer_norm(c, *self.cell_norm, self.norm_epsilon)
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        config["carry_normalized_state"] = self.carry_normalized_state
        return config
