"""The boolean mask of real (non-padding) token ids."""

import keras
from keras import ops

from kerasrnn.validation import check_id


@keras.saving.register_keras_serializable(package="kerasrnn")
class NotPadding(keras.layers.Layer):
    """ids -> ids != pad_id: the mask of real positions, e.g. the source mask that an
    attention layer needs beside the encoder outputs.

    Args:
        pad_id: the padding id (default 0, the `[PAD]` id of `kerasrnn.data`).

    Example:

    >>> import numpy as np, kerasrnn
    >>> np.asarray(kerasrnn.layers.NotPadding()(np.array([[5, 7, 0]]))).tolist()
    [[True, True, False]]
    """

    def __init__(self, pad_id=0, **kwargs):
        super().__init__(**kwargs)
        self.pad_id = check_id("pad_id", pad_id)

    def call(self, ids):
        return ops.not_equal(ids, self.pad_id)

    def compute_output_shape(self, input_shape):
        return input_shape

    def compute_output_spec(self, ids):
        return keras.KerasTensor(ids.shape, dtype="bool")

    def get_config(self):
        config = super().get_config()
        # `pad_id` only when not 0: the translator recipe's former `kerasrnn>NotPadding`
        # (same registered name, no arguments) then reads these files too.
        if self.pad_id != 0:
            config["pad_id"] = self.pad_id
        return config
