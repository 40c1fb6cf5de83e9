"""The Elman (simple) recurrent cell."""

import keras
from keras import ops

from kerasrnn.cells.base import RecurrentCell


@keras.saving.register_keras_serializable(package="kerasrnn")
class SimpleRNNCell(RecurrentCell):
    """Elman's simple recurrent cell.

    .. math::  h_t = \\phi(W x_t + V h_{t-1} + b)

    with W = `kernel` (input_dim x units), V = `recurrent_kernel` (units x units),
    b = `bias` (units) and phi = `activation` (tanh by default). The output is h_t.
    The weight layout is `keras.layers.SimpleRNN`'s, so weights copy both ways.

    Args:
        units: width of h_t.
        activation: phi, default "tanh".
        The other arguments are Keras' (see `kerasrnn.cells.base.RecurrentCell`).

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> layer = keras.layers.RNN(kerasrnn.SimpleRNNCell(8), return_sequences=True)
    >>> tuple(layer(np.zeros((2, 5, 3), "float32")).shape)
    (2, 5, 8)
    """

    gate_count = 1

    def __init__(self, units, activation="tanh", **kwargs):
        super().__init__(units, activation=activation, **kwargs)

    @property
    def state_size(self):
        return self.units

    def recurrent_step(self, projected, h_tm1, states):
        h = self.activation(projected + ops.matmul(h_tm1, self.recurrent_kernel))
        return h, [h]

    def get_config(self):
        config = super().get_config()
        del config["recurrent_activation"]
        return config
