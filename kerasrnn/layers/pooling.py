"""Pooling over the unmasked time steps of a sequence."""

import keras
from keras import ops

MODES = ("mean", "max")


@keras.saving.register_keras_serializable(package="kerasrnn")
class MaskedPooling1D(keras.layers.Layer):
    """Mean or max over the unmasked time steps of (batch, time, features).

    .. math::

        \\text{mean: } \\frac{1}{|M|} \\sum_{t \\in M} h_t \\qquad
        \\text{max: } \\max_{t \\in M} h_t \\text{ (per feature)}

    where M is the set of unmasked steps (all steps without a mask). A fully masked row
    (an empty sentence) gives zeros. Ours because Keras' `GlobalMaxPooling1D` ignores
    the mask, and its `GlobalAveragePooling1D` divides by zero (NaN) on an empty row.

    Args:
        mode: "mean" or "max".

    Example:

    >>> import numpy as np, kerasrnn
    >>> x = np.array([[[1.0], [3.0], [100.0]]], "float32")
    >>> mask = np.array([[True, True, False]])
    >>> float(kerasrnn.layers.MaskedPooling1D("max")(x, mask=mask)[0, 0])
    3.0
    """

    def __init__(self, mode="mean", **kwargs):
        super().__init__(**kwargs)
        if mode not in MODES:
            raise ValueError(f"`mode` must be one of {MODES}, got mode={mode!r}.")
        self.mode = mode
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if len(inputs.shape) != 3:
            raise ValueError(
                "MaskedPooling1D expects (batch, time, features) inputs; got shape "
                f"{tuple(inputs.shape)}."
            )
        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], "bool")
        weights = ops.cast(mask, inputs.dtype)[..., None]
        count = ops.sum(weights, axis=1)
        if self.mode == "mean":
            return ops.sum(inputs * weights, axis=1) / ops.maximum(count, 1.0)
        lowest = ops.min(inputs) - 1.0
        pooled = ops.max(ops.where(weights > 0, inputs, lowest), axis=1)
        return ops.where(count > 0, pooled, ops.zeros_like(pooled))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}
