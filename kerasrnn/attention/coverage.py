"""The coverage loss of See, Liu & Manning (2017), on an attentive decoder's alignments.

With the coverage c_t = sum_{t' < t} alpha_{t'} (what has been attended so far), the loss
of step t is sum_j min(alpha_{t,j}, c_{t,j}): it is zero while the decoder attends
positions it has not attended yet and grows when it attends the same ones again (the
cause of repeated words). The paper adds lambda * (its mean over the target steps) to
the negative log-likelihood, lambda = 1.
"""

import keras
from keras import ops

from kerasrnn.validation import check_number


def coverage_loss(alignments, mask=None):
    """Per-sequence coverage loss: the mean over target steps of sum_j min(alpha_tj, c_tj).

    Args:
        alignments: `[batch, Tq, Tk]` attention weights (e.g. from
            `AttentiveRNN(..., return_alignments=True)`).
        mask: `[batch, Tq]`, true at real target steps (padded steps count for nothing).

    Returns:
        `[batch]` losses.
    """
    alignments = ops.convert_to_tensor(alignments)
    if len(alignments.shape) != 3:
        raise ValueError(
            f"`alignments` must have shape [batch, Tq, Tk]; got {tuple(alignments.shape)}."
        )
    alignments = ops.cast(alignments, "float32")
    if mask is not None:
        keep = ops.cast(ops.convert_to_tensor(mask), "float32")
        alignments = alignments * keep[:, :, None]
    coverage = ops.cumsum(alignments, axis=1) - alignments  # exclusive: steps before t
    per_step = ops.sum(ops.minimum(alignments, coverage), axis=-1)  # [batch, Tq]
    if mask is None:
        return ops.mean(per_step, axis=-1)
    steps = ops.sum(keep, axis=-1)
    return ops.sum(per_step, axis=-1) / ops.maximum(steps, 1.0)


@keras.saving.register_keras_serializable(package="kerasrnn")
class CoverageLoss(keras.layers.Layer):
    """Adds `weight` x the batch mean of `coverage_loss` to the model's losses.

    It takes the alignments and, to keep it in the model's graph, the tensor that goes on
    (the decoder outputs), which it returns unchanged; `model.fit` adds the term to the
    training loss (See et al. 2017 use weight 1). Without `passthrough` it returns the
    alignments (then they must reach a model output).

    Args:
        weight: lambda, the weight of the coverage loss.

    Call arguments:
        alignments: `[batch, Tq, Tk]`.
        passthrough: any tensor, returned unchanged (default: the alignments).
        mask: `[batch, Tq]` target mask (picked up from the decoder's alignments).

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.attention.CoverageLoss(weight=0.5)
    >>> alignments = np.array([[[1.0, 0.0], [1.0, 0.0]]], "float32")  # attends twice
    >>> _ = layer(alignments)
    >>> float(layer.losses[0])
    0.25
    """

    def __init__(self, weight=1.0, **kwargs):
        super().__init__(**kwargs)
        self.weight = check_number("weight", weight)
        self.supports_masking = True

    def call(self, alignments, passthrough=None, mask=None):
        loss = ops.mean(coverage_loss(alignments, mask))
        self.add_loss(self.weight * loss)
        return alignments if passthrough is None else passthrough

    def compute_output_shape(self, alignments_shape, passthrough_shape=None):
        return alignments_shape if passthrough_shape is None else passthrough_shape

    def get_config(self):
        return {**super().get_config(), "weight": self.weight}
