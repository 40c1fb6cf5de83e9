"""The recurrent cell found by Neural Architecture Search (Zoph & Le 2017)."""

import keras
from keras import ops

from kerasrnn.cells.base import RecurrentCell
from kerasrnn.validation import check_int


@keras.saving.register_keras_serializable(package="kerasrnn")
class NASCell(RecurrentCell):
    """The NAS cell of Zoph & Le (2017), "Neural Architecture Search with Reinforcement
    Learning", found by a controller RNN searching over cell graphs on Penn Treebank.

    The input and recurrent projections are split into eight blocks,
    W x_t = (x^0 .. x^7) and U h_{t-1} + b = (m^0 .. m^7), which a fixed two-level tree
    combines (sigma the sigmoid; the activations are part of the architecture):

    .. math::

        a_0 &= \\sigma(x^0 + m^0), \\quad a_1 = \\mathrm{relu}(x^1 + m^1), \\quad
        a_2 = \\sigma(x^2 + m^2), \\quad a_3 = \\mathrm{relu}(x^3 \\odot m^3) \\\\
        a_4 &= \\tanh(x^4 + m^4), \\quad a_5 = \\sigma(x^5 + m^5), \\quad
        a_6 = \\tanh(x^6 + m^6), \\quad a_7 = \\sigma(x^7 + m^7) \\\\
        c_t &= \\tanh\\big(\\tanh(a_0 \\odot a_1) + c_{t-1}\\big) \\odot \\tanh(a_2 + a_3) \\\\
        h_t &= \\tanh\\Big(c_t \\odot \\tanh\\big(\\tanh(a_4 \\odot a_5)
            + \\sigma(a_6 + a_7)\\big)\\Big) \\; [P]

    The bias belongs to the recurrent part (it matters in the product x^3 * m^3). With
    `projection=p`, h_t is further multiplied by P (units x p), so h_t and the output
    have width p while c_t keeps `units`. This is the cell of TensorFlow's and TF Addons'
    `NASCell`, with their weights (`kernel`, `recurrent_kernel`, `bias`, and
    `projection_weights` here called `projection_kernel`) but Keras' state order: the
    states are [h, c] like `LSTMCell`'s (TF Addons' were [c, h]).

    Args:
        units: width of c_t (and of h_t without a projection).
        projection: width p of a linear projection of h_t, or None (default).
        use_bias: whether U h_{t-1} gets a bias (default False, as in the original
            TensorFlow implementation).
        kernel_initializer, recurrent_initializer, bias_initializer: as in Keras.
        projection_initializer: initializer of P (default glorot uniform).
        The other arguments are Keras' (see `kerasrnn.cells.base.RecurrentCell`); the
        activations are fixed by the architecture.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> layer = keras.layers.RNN(kerasrnn.NASCell(8, projection=4), return_state=True)
    >>> h, h_last, c_last = layer(np.zeros((2, 5, 3), "float32"))
    >>> tuple(h.shape), tuple(c_last.shape)
    ((2, 4), (2, 8))
    """

    gate_count = 8

    def __init__(
        self,
        units,
        projection=None,
        use_bias=False,
        projection_initializer="glorot_uniform",
        **kwargs,
    ):
        for name in ("activation", "recurrent_activation"):
            if name in kwargs:
                raise ValueError(
                    f"NASCell's activations are fixed by its architecture; got {name}="
                    f"{kwargs[name]!r}."
                )
        check_int("projection", projection, allow_none=True)
        super().__init__(units, use_bias=use_bias, **kwargs)
        self.projection = projection
        self.projection_initializer = keras.initializers.get(projection_initializer)

    @property
    def output_size(self):
        return self.projection or self.units

    @property
    def state_size(self):
        return [self.output_size, self.units]

    def build(self, input_shape):
        # RecurrentCell.build makes U (units x 8 units); with a projection h_{t-1} is
        # narrower, so the weights are made here.
        if len(input_shape) != 2 or input_shape[-1] is None:
            raise ValueError(
                f"NASCell takes one time step of shape (batch, features) with known "
                f"features; got inputs of shape {tuple(input_shape)}."
            )
        width = self.gate_count * self.units
        self.kernel = self.add_weight(
            shape=(input_shape[-1], width),
            name="kernel",
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.recurrent_kernel = self.add_weight(
            shape=(self.output_size, width),
            name="recurrent_kernel",
            initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(width,),
                name="bias",
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        self.projection_kernel = None
        if self.projection is not None:
            self.projection_kernel = self.add_weight(
                shape=(self.units, self.projection),
                name="projection_kernel",
                initializer=self.projection_initializer,
            )
        self.built = True

    def input_projection(self, inputs):
        return ops.matmul(inputs, self.kernel)  # the bias is on the recurrent side

    def recurrent_step(self, projected, h_tm1, states):
        c_tm1 = states[1]
        m = ops.matmul(h_tm1, self.recurrent_kernel)
        if self.use_bias:
            m = m + self.bias
        x = ops.split(projected, 8, axis=-1)
        m = ops.split(m, 8, axis=-1)
        sigmoid, tanh, relu = ops.sigmoid, ops.tanh, ops.relu
        a0 = sigmoid(x[0] + m[0])
        a1 = relu(x[1] + m[1])
        a2 = sigmoid(x[2] + m[2])
        a3 = relu(x[3] * m[3])
        a4 = tanh(x[4] + m[4])
        a5 = sigmoid(x[5] + m[5])
        a6 = tanh(x[6] + m[6])
        a7 = sigmoid(x[7] + m[7])
        c = tanh(tanh(a0 * a1) + c_tm1) * tanh(a2 + a3)
        h = tanh(c * tanh(tanh(a4 * a5) + sigmoid(a6 + a7)))
        if self.projection is not None:
            h = ops.matmul(h, self.projection_kernel)
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        del config["activation"], config["recurrent_activation"]
        config.update(
            {
                "projection": self.projection,
                "projection_initializer": keras.initializers.serialize(self.projection_initializer),
            }
        )
        return config
