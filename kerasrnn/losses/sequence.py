"""The masked, label-smoothed token cross-entropy of a sequence of predictions, with
TensorFlow Addons' `sequence_loss` reductions."""

import keras
from keras import ops

from kerasrnn.validation import check_id, check_rate

_FLAGS = (
    "average_across_timesteps",
    "average_across_batch",
    "sum_over_timesteps",
    "sum_over_batch",
)


@keras.saving.register_keras_serializable(package="kerasrnn")
class SequenceCrossEntropy(keras.losses.Loss):
    """Cross-entropy of a sequence of token predictions, weighted and reduced as TensorFlow
    Addons' `tfa.seq2seq.sequence_loss`.

    Per target position (b, t), with V the vocabulary and eps the label smoothing,

    .. math::

        \\ell_{bt} = (1 - \\epsilon) \\, (-\\log p_{bt}(y_{bt}))
            + \\epsilon \\, \\frac{1}{V} \\sum_{v} (-\\log p_{bt}(v)),
        \\qquad w_{bt} = s_{bt} \\, [y_{bt} \\ne \\text{pad\\_id}]

    (the cross-entropy against the smoothed target (1 - eps) one_hot(y) + eps / V),
    where s is `sample_weight` (ones if not given) and the padding factor is dropped
    with `pad_id=None`. The weighted losses w l are then reduced as TFA did:

    * average over time and batch (the default): sum_bt w l / sum_bt w, a scalar;
    * sum over time and batch: sum_bt w l / #{w != 0}, a scalar (the same number for
      0/1 weights; TFA's `SequenceLoss` class defaulted to this);
    * one axis only: `average_across_timesteps` gives (batch,) sum_t w l / sum_t w,
      `average_across_batch` gives (time,) sum_b w l / sum_b w, and `sum_over_*` the
      same sums divided by the count of nonzero weights along the axis;
    * no flag: the weighted losses w l, (batch, time).

    With `per_sequence`, the average over time and batch is multiplied by the number of
    time steps T: each sequence's summed cross-entropy averaged over the batch, where
    nothing is padded (Zaremba et al.'s loss over truncated-BPTT windows, whose
    gradient scale their SGD at rate 1 with clipping at 5 assumes).

    A zero denominator gives 0, never NaN. Keras' own `reduction` does not apply (the
    flags decide); under a `tf.distribute` strategy a scalar loss is divided by the
    replica count, as Keras' losses are.

    Args:
        from_logits: `y_pred` holds logits (default) rather than probabilities.
        label_smoothing: eps in [0, 1).
        pad_id: target id whose positions get weight 0 (default 0, `[PAD]`); None for
            no implicit mask (weights come from `sample_weight` alone).
        average_across_timesteps: see above.
        average_across_batch: see above.
        sum_over_timesteps: see above (not with `average_across_timesteps`).
        sum_over_batch: see above (not with `average_across_batch`).
        per_sequence: the loss per sequence instead of per token (see above; with the
            default averages only).
        name: the loss name.

    Call arguments:
        y_true: int `(batch, time)` target ids.
        y_pred: `(batch, time, vocab_size)` logits (or probabilities).
        sample_weight: optional `(batch, time)` (or `(batch,)`, per sequence) weights.

    Example:

    >>> import numpy as np, kerasrnn
    >>> loss = kerasrnn.losses.SequenceCrossEntropy()
    >>> logits = np.zeros((1, 3, 4), "float32")          # uniform: -log p = log 4
    >>> round(float(loss(np.array([[2, 3, 0]]), logits)), 4)  # the [PAD] is not counted
    1.3863
    """

    def __init__(
        self,
        from_logits=True,
        label_smoothing=0.0,
        pad_id=0,
        average_across_timesteps=True,
        average_across_batch=True,
        sum_over_timesteps=False,
        sum_over_batch=False,
        per_sequence=False,
        name="sequence_cross_entropy",
        **kwargs,
    ):
        super().__init__(name=name, **kwargs)
        label_smoothing = check_rate("label_smoothing", label_smoothing)
        pad_id = check_id("pad_id", pad_id, allow_none=True)
        if average_across_timesteps and sum_over_timesteps:
            raise ValueError(
                "`average_across_timesteps` and `sum_over_timesteps` cannot both be True."
            )
        if average_across_batch and sum_over_batch:
            raise ValueError("`average_across_batch` and `sum_over_batch` cannot both be True.")
        if per_sequence and not (average_across_timesteps and average_across_batch):
            raise ValueError(
                "`per_sequence` scales the average over time and batch: keep "
                "`average_across_timesteps` and `average_across_batch` True."
            )
        self.from_logits = bool(from_logits)
        self.label_smoothing = float(label_smoothing)
        self.pad_id = pad_id
        self.average_across_timesteps = bool(average_across_timesteps)
        self.average_across_batch = bool(average_across_batch)
        self.sum_over_timesteps = bool(sum_over_timesteps)
        self.sum_over_batch = bool(sum_over_batch)
        self.per_sequence = bool(per_sequence)

    def __call__(self, y_true, y_pred, sample_weight=None):
        # The flags reduce; Keras' mask/weight reduction (which would re-weight an
        # already reduced value) is bypassed, as TFA's SequenceLoss did.
        losses, weights = self.weighted_losses(y_true, y_pred, sample_weight)
        loss = self.reduce(losses, weights)
        if len(loss.shape) == 0:
            # Keras' own `Loss.__call__` divides by the replica count under
            # tf.distribute (replica gradients are summed); so must this.
            loss = _scale_for_distribution(loss)
        return loss

    def call(self, y_true, y_pred):
        """The unweighted per-position losses l, (batch, time)."""
        y_true = ops.cast(y_true, "int32")
        y_pred = ops.cast(y_pred, self.dtype)  # float32 unless dtype= says otherwise
        if self.from_logits and not self.label_smoothing:
            # the backend's fused softmax cross-entropy: the same value, a cheaper
            # backward pass than log_softmax's over the whole vocabulary
            return keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)
        if self.from_logits:
            log_p = ops.log_softmax(y_pred, axis=-1)
        else:
            log_p = ops.log(ops.clip(y_pred, 1e-7, 1.0))
        loss = -ops.take_along_axis(log_p, y_true[..., None], axis=-1)[..., 0]
        if self.label_smoothing:
            eps = self.label_smoothing
            # (a sum over V, not ops.mean, which runs in float32 on JAX)
            vocab = ops.cast(ops.shape(log_p)[-1], log_p.dtype)
            loss = (1.0 - eps) * loss - eps * ops.sum(log_p, axis=-1) / vocab
        return loss

    def weighted_losses(self, y_true, y_pred, sample_weight=None):
        """(w * l, w): the weighted per-position losses and the weights, (batch, time)."""
        y_true = ops.convert_to_tensor(y_true)
        y_pred = ops.convert_to_tensor(y_pred)
        if len(y_true.shape) != 2:
            raise ValueError(
                f"SequenceCrossEntropy: `y_true` must be (batch, time) target ids; got "
                f"shape {tuple(y_true.shape)}."
            )
        if len(y_pred.shape) != 3:
            raise ValueError(
                f"SequenceCrossEntropy: `y_pred` must be (batch, time, vocab_size); got "
                f"shape {tuple(y_pred.shape)}."
            )
        weights = ops.ones(ops.shape(y_true), self.dtype)
        if self.pad_id is not None:
            weights = ops.cast(ops.not_equal(ops.cast(y_true, "int32"), self.pad_id), self.dtype)
        if sample_weight is not None:
            sample_weight = ops.cast(ops.convert_to_tensor(sample_weight), self.dtype)
            if len(sample_weight.shape) == 1:
                sample_weight = sample_weight[:, None]
            elif len(sample_weight.shape) != 2:
                raise ValueError(
                    "SequenceCrossEntropy: `sample_weight` must be (batch, time) or "
                    f"(batch,); got shape {tuple(sample_weight.shape)}."
                )
            weights = weights * sample_weight
        return self.call(y_true, y_pred) * weights, weights

    def reduce(self, losses, weights):
        """TFA's reductions of the weighted losses (see the class docstring)."""
        nonzero = ops.cast(ops.not_equal(weights, 0.0), weights.dtype)
        if self.average_across_timesteps and self.average_across_batch:
            mean = _divide_no_nan(ops.sum(losses), ops.sum(weights))
            return mean * ops.cast(ops.shape(losses)[1], mean.dtype) if self.per_sequence else mean
        if self.sum_over_timesteps and self.sum_over_batch:
            return _divide_no_nan(ops.sum(losses), ops.sum(nonzero))
        if self.average_across_timesteps or self.average_across_batch:
            axis = 0 if self.average_across_batch else 1
            return _divide_no_nan(ops.sum(losses, axis=axis), ops.sum(weights, axis=axis))
        if self.sum_over_timesteps or self.sum_over_batch:
            axis = 0 if self.sum_over_batch else 1
            return _divide_no_nan(ops.sum(losses, axis=axis), ops.sum(nonzero, axis=axis))
        return losses

    def get_config(self):
        config = super().get_config()
        config.pop("reduction", None)  # the flags reduce
        config.update(
            {
                "from_logits": self.from_logits,
                "label_smoothing": self.label_smoothing,
                "pad_id": self.pad_id,
                **{flag: getattr(self, flag) for flag in _FLAGS},
                "per_sequence": self.per_sequence,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="kerasrnn")
class MaskedSequenceCrossEntropy(SequenceCrossEntropy):
    """The translator recipe's former loss, kept so that `.keras` files that recorded it
    in their compile configuration still load: `SequenceCrossEntropy` with its defaults
    (mean over the non-`[PAD]` tokens) and the given `label_smoothing`."""

    def __init__(self, label_smoothing=0.0, name="masked_cross_entropy", **kwargs):
        super().__init__(label_smoothing=label_smoothing, name=name, **kwargs)


def _divide_no_nan(numerator, denominator):
    safe = ops.where(ops.equal(denominator, 0.0), ops.ones_like(denominator), denominator)
    return ops.where(ops.equal(denominator, 0.0), ops.zeros_like(numerator), numerator / safe)


def _scale_for_distribution(value):
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        if replicas > 1:
            value = value / replicas
    return value
