"""ELMo's scalar mix: a learned, softmax-weighted sum of a stack's layer outputs."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kerasrnn")
class ScalarMix(keras.layers.Layer):
    """gamma * sum_j softmax(s)_j h_j over L layer outputs (Peters et al. 2018, eq. 1).

    .. math::

        \\mathrm{ScalarMix}(h_0, \\dots, h_{L-1})
        = \\gamma \\sum_{j=0}^{L-1} \\mathrm{softmax}(s)_j \\, h_j

    with L learned scalars s (initialised to 0: an average) and a learned scale gamma
    (initialised to 1). With ``layer_norm=True`` each h_j is first normalised over its
    feature axis, (h_j - mean) / sqrt(var + epsilon), without gain or bias: the paper's
    option for layers whose activations differ in scale (Peters et al. 2018, sec. 3.2).

    Args:
        layer_norm: normalise every layer's output before mixing.
        epsilon: the variance offset of the normalisation.
        weights_initializer: initializer of s (default zeros).
        gamma_initializer: initializer of gamma (default ones).

    Call arguments:
        inputs: a list of L >= 1 tensors of one shape (batch, ..., features), e.g. the
            outputs of every layer of a stack. The mask of the first (if any) passes on.

    Example:

    >>> import numpy as np
    >>> from kerasrnn.layers import ScalarMix
    >>> layers = [np.full((2, 3, 4), v, "float32") for v in (1.0, 3.0)]
    >>> float(ScalarMix()(layers)[0, 0, 0])  # equal weights at the start: the average
    2.0
    """

    def __init__(
        self,
        layer_norm=False,
        epsilon=1e-6,
        weights_initializer="zeros",
        gamma_initializer="ones",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.layer_norm = bool(layer_norm)
        self.epsilon = float(epsilon)
        self.weights_initializer = keras.initializers.get(weights_initializer)
        self.gamma_initializer = keras.initializers.get(gamma_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        if (
            not isinstance(input_shape, (list, tuple))
            or not input_shape
            or not all(isinstance(shape, (list, tuple)) for shape in input_shape)
        ):
            raise ValueError(
                "ScalarMix takes a list of layer outputs of one shape; got an input of "
                f"shape {input_shape!r}."
            )
        shapes = [tuple(shape) for shape in input_shape]
        if any(shape != shapes[0] for shape in shapes):
            raise ValueError(f"ScalarMix needs layer outputs of one shape; got shapes {shapes}.")
        self.scalar_weights = self.add_weight(
            shape=(len(shapes),),
            name="scalar_weights",
            initializer=self.weights_initializer,
        )
        self.gamma = self.add_weight(shape=(), name="gamma", initializer=self.gamma_initializer)
        self.built = True

    def call(self, inputs, mask=None):
        if len(inputs) != self.scalar_weights.shape[0]:
            raise ValueError(
                f"ScalarMix was built for {self.scalar_weights.shape[0]} layers; got {len(inputs)}."
            )
        weights = ops.softmax(self.scalar_weights)
        mixed = 0.0
        for index, h in enumerate(inputs):
            if self.layer_norm:
                mean = ops.mean(h, axis=-1, keepdims=True)
                variance = ops.mean(ops.square(h - mean), axis=-1, keepdims=True)
                h = (h - mean) * ops.rsqrt(variance + self.epsilon)
            mixed = mixed + ops.cast(weights[index], h.dtype) * h
        return ops.cast(self.gamma, mixed.dtype) * mixed

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            return mask[0]
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "layer_norm": self.layer_norm,
                "epsilon": self.epsilon,
                "weights_initializer": keras.initializers.serialize(self.weights_initializer),
                "gamma_initializer": keras.initializers.serialize(self.gamma_initializer),
            }
        )
        return config
