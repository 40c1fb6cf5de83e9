"""Layers of sentence-pair models: the pair features of two sentence vectors and the
expected grade of a distribution over grades."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kerasrnn")
class PairFeatures(keras.layers.Layer):
    """[u; v; |u - v|; u * v] of two sentence vectors (Conneau et al. 2017).

    Example:

    >>> import keras, numpy as np
    >>> u, v = np.array([[1.0, 2.0]]), np.array([[3.0, 1.0]])
    >>> keras.ops.convert_to_numpy(PairFeatures()([u, v])).tolist()
    [[1.0, 2.0, 3.0, 1.0, 2.0, 1.0, 3.0, 2.0]]
    """

    def call(self, inputs):
        u, v = inputs
        return ops.concatenate([u, v, ops.abs(u - v), u * v], axis=-1)

    def compute_output_shape(self, input_shape):
        shape = input_shape[0]
        return tuple(shape[:-1]) + (4 * shape[-1],)


@keras.saving.register_keras_serializable(package="kerasrnn")
class ExpectedScore(keras.layers.Layer):
    """The expected grade sum_{i=1..K} i p_i of a distribution over the grades 1..K:
    (batch, K) -> (batch, 1) (Tai et al. 2015's relatedness score).

    Example:

    >>> import keras, numpy as np
    >>> keras.ops.convert_to_numpy(ExpectedScore()(np.array([[0.0, 0.5, 0.5]]))).tolist()
    [[2.5]]
    """

    def call(self, probabilities):
        k = probabilities.shape[-1]
        grades = ops.cast(ops.arange(1, k + 1), probabilities.dtype)
        return ops.sum(probabilities * grades, axis=-1, keepdims=True)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (1,)
