"""Token accuracy over the real (non-padding) positions of target sequences."""

import keras
from keras import ops

from kerasrnn.validation import check_id


@keras.saving.register_keras_serializable(package="kerasrnn")
class MaskedAccuracy(keras.metrics.Metric):
    """Per-token accuracy over the non-padding targets, accumulated over batches:

    .. math::  \\text{acc} = \\frac{\\sum_{b,t} w_{bt} [\\arg\\max_v \\hat y_{btv} = y_{bt}]}
                                 {\\sum_{b,t} w_{bt}},
               \\qquad w_{bt} = s_{bt} \\, [y_{bt} \\ne \\text{pad\\_id}]

    The sums run over every token seen since the last reset, so a batch counts by its
    real tokens, not as one batch mean (Keras' accuracy with a padding mask averages
    per batch, weighting a batch by its padded length). `s` is `sample_weight` (ones if
    not given).

    Args:
        pad_id: target id that does not count (default 0, `[PAD]`); None counts every
            position.
        name: the metric name.

    Example:

    >>> import numpy as np, kerasrnn
    >>> metric = kerasrnn.metrics.MaskedAccuracy()
    >>> logits = np.eye(4, dtype="float32")[[[2, 1, 0]]]     # predicts 2, 1, 0
    >>> metric.update_state(np.array([[2, 3, 0]]), logits)  # 1 of 2 real tokens right
    >>> float(metric.result())
    0.5
    """

    def __init__(self, pad_id=0, name="accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.pad_id = check_id("pad_id", pad_id, allow_none=True)
        self.hits = self.add_variable((), initializer="zeros", name="hits")
        self.count = self.add_variable((), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(ops.convert_to_tensor(y_true), "int32")
        y_pred = ops.convert_to_tensor(y_pred)
        if len(y_pred.shape) != len(y_true.shape) + 1:
            raise ValueError(
                "MaskedAccuracy: `y_pred` must have one more axis (the vocabulary) than "
                f"`y_true`; got y_true {tuple(y_true.shape)} and y_pred "
                f"{tuple(y_pred.shape)}."
            )
        weights = ops.ones(ops.shape(y_true), "float32")
        if self.pad_id is not None:
            weights = ops.cast(ops.not_equal(y_true, self.pad_id), "float32")
        if sample_weight is not None:
            sample_weight = ops.cast(ops.convert_to_tensor(sample_weight), "float32")
            while len(sample_weight.shape) < len(y_true.shape):
                sample_weight = sample_weight[..., None]
            weights = weights * sample_weight
        best = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        right = ops.cast(ops.equal(best, y_true), "float32")
        self.hits.assign_add(ops.sum(right * weights))
        self.count.assign_add(ops.sum(weights))

    def result(self):
        return ops.where(self.count > 0, self.hits / ops.maximum(self.count, 1e-12), 0.0)

    def reset_state(self):
        self.hits.assign(0.0)
        self.count.assign(0.0)

    def get_config(self):
        config = super().get_config()
        # `pad_id` only when not 0: the translator recipe's former
        # `kerasrnn>MaskedAccuracy` (same registered name, no arguments) then reads
        # these files too.
        if self.pad_id != 0:
            config["pad_id"] = self.pad_id
        return config
