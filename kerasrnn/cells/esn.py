"""Echo state network reservoir (Jaeger 2001) as a recurrent cell."""

import keras
from keras import ops

from kerasrnn.cells.base import RecurrentCell
from kerasrnn.validation import check_number


def scale_spectral_radius(weights, spectral_radius, use_norm2=False):
    """W * spectral_radius / rho(W): the reservoir matrix rescaled to a spectral radius.

    rho(W) is the largest eigenvalue modulus of W, or with `use_norm2` its Frobenius norm,
    an upper bound of it that needs no eigenvalues (then the radius is at most
    `spectral_radius`). A zero matrix stays zero. This is TF Addons' ESNCell scaling.

    Example:

    >>> import numpy as np
    >>> from kerasrnn.cells.esn import scale_spectral_radius
    >>> w = scale_spectral_radius(np.array([[0.0, 2.0], [2.0, 0.0]], "float32"), 0.9)
    >>> np.round(np.abs(np.linalg.eigvals(np.asarray(w))).max(), 4)
    np.float32(0.9)
    """
    weights = ops.convert_to_tensor(weights)
    if use_norm2:
        rho = ops.sqrt(ops.sum(ops.square(weights)))
    else:
        rho = ops.cast(ops.max(ops.abs(ops.eig(weights)[0])), weights.dtype)
    safe = ops.where(ops.equal(rho, 0.0), ops.ones_like(rho), rho)
    return weights * ops.where(ops.equal(rho, 0.0), ops.zeros_like(rho), spectral_radius / safe)


@keras.saving.register_keras_serializable(package="kerasrnn")
class ESNCell(RecurrentCell):
    """Echo state network cell: a fixed random reservoir with leaky integration.

    .. math::  h_t = (1 - \\alpha)\\, h_{t-1} + \\alpha\\, \\phi(W x_t + U h_{t-1} + b)

    with alpha = `leaky`. W (`kernel`), U (`recurrent_kernel`) and b are drawn once and
    never trained (the weights are non-trainable; an ESN trains only a readout, e.g. a
    `Dense` layer on h_t). U is sparse and scaled for the echo state property: each
    entry of `recurrent_initializer`'s draw is kept with probability `connectivity`,
    and the result is multiplied by spectral_radius / rho(U), rho the largest
    eigenvalue modulus (or, with `use_norm2`, the Frobenius norm, which bounds it).
    This is TF Addons' `ESNCell`, with its weight names and defaults; only the
    connectivity mask's random stream differs (it is seeded here by `seed`).

    Args:
        units: size of the reservoir (width of h_t).
        connectivity: probability that a reservoir connection exists (default 0.1).
        leaky: leaking rate alpha in (0, 1]; 1 (default) is no leaky integration.
        spectral_radius: the spectral radius U is scaled to (default 0.9).
        use_norm2: scale by the Frobenius norm instead of the eigenvalues.
        activation: phi (default tanh).
        use_bias: whether there is a b (default True).
        kernel_initializer, recurrent_initializer, bias_initializer: initial W, the
            draw U is masked and scaled from, and b (glorot uniform, glorot uniform,
            zeros, as in TF Addons).
        seed: seed of the connectivity mask (and of the dropout masks).
        The other arguments are Keras' (see `kerasrnn.cells.base.RecurrentCell`).

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> cell = kerasrnn.ESNCell(16, connectivity=0.3, leaky=0.5, seed=1)
    >>> h = keras.layers.RNN(cell)(np.ones((2, 5, 3), "float32"))
    >>> rho = np.abs(np.linalg.eigvals(keras.ops.convert_to_numpy(cell.recurrent_kernel)))
    >>> tuple(h.shape), round(float(rho.max()), 4), cell.trainable_weights
    ((2, 16), 0.9, [])
    """

    def __init__(
        self,
        units,
        connectivity=0.1,
        leaky=1.0,
        spectral_radius=0.9,
        use_norm2=False,
        activation="tanh",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        connectivity = check_number("connectivity", connectivity, "(0, 1]")
        leaky = check_number("leaky", leaky, "(0, 1]")
        spectral_radius = check_number("spectral_radius", spectral_radius, "(0, inf)")
        if "recurrent_activation" in kwargs:
            raise ValueError("ESNCell has no gates, so no `recurrent_activation`.")
        super().__init__(
            units,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            **kwargs,
        )
        self.connectivity = float(connectivity)
        self.leaky = float(leaky)
        self.spectral_radius = float(spectral_radius)
        self.use_norm2 = bool(use_norm2)

    @property
    def state_size(self):
        return self.units

    def _reservoir_initializer(self, shape, dtype=None):
        weights = self.recurrent_initializer(shape, dtype=dtype)
        keep = keras.random.uniform(shape, dtype=dtype, seed=self.seed) <= self.connectivity
        weights = ops.where(keep, weights, ops.zeros_like(weights))
        return scale_spectral_radius(weights, self.spectral_radius, self.use_norm2)

    def build(self, input_shape):
        # The reservoir is fixed: unlike RecurrentCell.build, every weight is non-trainable.
        if len(input_shape) != 2 or input_shape[-1] is None:
            raise ValueError(
                f"ESNCell takes one time step of shape (batch, features) with known "
                f"features; got inputs of shape {tuple(input_shape)}."
            )
        self.kernel = self.add_weight(
            shape=(input_shape[-1], self.units),
            name="kernel",
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
            trainable=False,
        )
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, self.units),
            name="recurrent_kernel",
            initializer=self._reservoir_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
            trainable=False,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(self.units,),
                name="bias",
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
                trainable=False,
            )
        self.built = True

    def recurrent_step(self, projected, h_tm1, states):
        candidate = self.activation(projected + ops.matmul(h_tm1, self.recurrent_kernel))
        h = (1.0 - self.leaky) * states[0] + self.leaky * candidate
        return h, [h]

    def get_config(self):
        config = super().get_config()
        del config["recurrent_activation"]
        config.update(
            {
                "connectivity": self.connectivity,
                "leaky": self.leaky,
                "spectral_radius": self.spectral_radius,
                "use_norm2": self.use_norm2,
            }
        )
        return config
