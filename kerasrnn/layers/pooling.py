"""Pooling over the unmasked time steps of a sequence."""

import keras
from keras import ops

MODES = ("mean", "max")


def _pool(inputs, mask, mode):
    """Mean or max of (batch, time, features) over the steps where `mask` is True."""
    if mask is None:
        mask = ops.ones(ops.shape(inputs)[:2], "bool")
    weights = ops.cast(mask, inputs.dtype)[..., None]
    count = ops.sum(weights, axis=1)
    if mode == "mean":
        return ops.sum(inputs * weights, axis=1) / ops.maximum(count, 1.0)
    lowest = ops.min(inputs) - 1.0
    pooled = ops.max(ops.where(weights > 0, inputs, lowest), axis=1)
    return ops.where(count > 0, pooled, ops.zeros_like(pooled))


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
        return _pool(inputs, mask, self.mode)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}


@keras.saving.register_keras_serializable(package="kerasrnn")
class ConcatPooling1D(keras.layers.Layer):
    """ULMFiT's concat pooling (Howard & Ruder 2018): the last, the max and the mean of
    the unmasked time steps of (batch, time, features), side by side:

    .. math::

        h_c = [\\, h_{t^*} \\,;\\, \\max_{t \\in M} h_t \\,;\\,
               \\tfrac{1}{|M|} \\textstyle\\sum_{t \\in M} h_t \\,], \\qquad
        t^* = \\max M

    where M is the set of unmasked steps (all steps without a mask) and t* the last of
    them, so a right-padded sequence gives the state after its last real token. The
    output has 3 x features; a fully masked row gives zeros. (For a bidirectional
    encoder, h_{t*} is the backward direction's state after one token: use the
    forward-only encoder ULMFiT uses, or `MaskedPooling1D`.)

    Example:

    >>> import numpy as np, kerasrnn
    >>> x = np.array([[[1.0], [3.0], [2.0], [100.0]]], "float32")
    >>> mask = np.array([[True, True, True, False]])
    >>> kerasrnn.layers.ConcatPooling1D()(x, mask=mask).numpy().tolist()
    [[2.0, 3.0, 2.0]]
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if len(inputs.shape) != 3:
            raise ValueError(
                "ConcatPooling1D expects (batch, time, features) inputs; got shape "
                f"{tuple(inputs.shape)}."
            )
        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], "bool")
        steps = ops.arange(ops.shape(inputs)[1], dtype="int32")[None, :]
        last = ops.max(ops.where(mask, steps, -1), axis=1)  # -1: a fully masked row
        # one-hot of t* (all zeros for -1) picks h_{t*}
        pick = ops.cast(ops.equal(steps, last[:, None]), inputs.dtype)[..., None]
        picked = ops.sum(inputs * pick, axis=1)
        return ops.concatenate(
            [picked, _pool(inputs, mask, "max"), _pool(inputs, mask, "mean")], axis=-1
        )

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        features = input_shape[2]
        return (input_shape[0], None if features is None else 3 * features)
