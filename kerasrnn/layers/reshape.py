"""Folding the time axis into the batch and back, to run a per-token network (e.g. a
character RNN over every word) on all tokens of all sequences at once."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kerasrnn")
class MergeBatchTime(keras.layers.Layer):
    """(batch, time, ...) -> (batch * time, ...). Undo with `SplitBatchTime`.

    Example:

    >>> import numpy as np, kerasrnn
    >>> tuple(kerasrnn.layers.MergeBatchTime()(np.zeros((2, 3, 4, 5))).shape)
    (6, 4, 5)
    """

    def call(self, inputs):
        shape = ops.shape(inputs)
        return ops.reshape(inputs, (-1,) + tuple(shape[2:]))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        if input_shape[0] is not None and input_shape[1] is not None:
            return (input_shape[0] * input_shape[1],) + tuple(input_shape[2:])
        return (None,) + tuple(input_shape[2:])


@keras.saving.register_keras_serializable(package="kerasrnn")
class SplitBatchTime(keras.layers.Layer):
    """``[values (batch * time, ...), reference (batch, time, ...)]`` ->
    (batch, time, ...): the inverse of `MergeBatchTime`, taking batch and time from
    `reference`.

    The output's Keras mask: where `reference` holds integer ids (e.g. each word's
    character ids), a position whose ids are all 0 is padding, ``mask[b, t] = any_k
    reference[b, t, k] != 0``; otherwise none. Without it, concatenating these features
    with masked word embeddings would unmask the padding (Keras' `Concatenate` keeps a
    position where any input is unmasked).

    Example:

    >>> import numpy as np, kerasrnn
    >>> values, reference = np.zeros((6, 8)), np.zeros((2, 3, 4))
    >>> tuple(kerasrnn.layers.SplitBatchTime()([values, reference]).shape)
    (2, 3, 8)
    """

    def call(self, inputs):
        values, reference = inputs
        shape = ops.shape(reference)
        return ops.reshape(values, (shape[0], shape[1]) + tuple(ops.shape(values)[1:]))

    def compute_mask(self, inputs, mask=None):
        reference = inputs[1]
        if len(reference.shape) < 3 or "int" not in str(reference.dtype):
            return None
        present = ops.not_equal(reference, 0)
        return ops.any(present, axis=tuple(range(2, len(reference.shape))))

    def compute_output_shape(self, input_shape):
        values, reference = input_shape
        return (reference[0], reference[1]) + tuple(values[1:])
