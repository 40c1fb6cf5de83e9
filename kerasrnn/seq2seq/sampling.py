"""Scheduled sampling (Bengio et al., 2015): which token the decoder is fed in training.

At target step t > 0 the decoder input is, with probability p, the model's own token
(drawn from its predicted distribution at step t-1, or its argmax) instead of the gold
y_{t-1}; p grows over training by a schedule. This is step-wise, as TensorFlow Addons'
`ScheduledEmbeddingTrainingSampler` was: the token the model feeds itself at step t
comes from the prediction made after the tokens actually fed before it.
"""
import math

import keras
from keras import ops

SCHEDULES = ("off", "constant", "linear", "inverse_sigmoid")
SAMPLING_MODES = ("sample", "argmax")


def sampling_probability(step, schedule, probability, steps):
    """Scheduled sampling's p at training step `step` (a number or tensor; keras.ops):

    * ``"off"``: p = 0 (teacher forcing);
    * ``"constant"``: p = p_max;
    * ``"linear"``: p = p_max min(1, i / S);
    * ``"inverse_sigmoid"``: Bengio et al.'s teacher-forcing probability
      eps_i = k / (k + exp(i / k)) turned into p = p_max (1 - eps_i)
      = p_max sigmoid((i - k ln k) / k), with k chosen so that k ln k = S: p reaches
      p_max / 2 at step S.

    Args:
        step: the training step i.
        schedule: one of "off", "constant", "linear", "inverse_sigmoid".
        probability: p_max, in [0, 1].
        steps: S (>= 1).

    Returns:
        p as a float32 tensor.

    Example:

    >>> from kerasrnn.seq2seq import sampling_probability
    >>> round(float(sampling_probability(500, "linear", 0.5, 1000)), 3)
    0.25
    """
    check_schedule(schedule, probability, steps)
    step = ops.cast(ops.convert_to_tensor(step), "float32")
    if schedule == "off":
        return ops.zeros_like(step)
    if schedule == "constant":
        return ops.full_like(step, probability)
    if schedule == "linear":
        return probability * ops.minimum(1.0, step / steps)
    k = steps + 2.0
    for _ in range(50):  # Newton's method on k ln k = S (k > 1)
        k = (k + steps) / (math.log(k) + 1.0)
    return probability * ops.sigmoid((step - steps) / k)


def check_schedule(schedule, probability, steps, mode="sample"):
    if schedule not in SCHEDULES:
        raise ValueError(
            f"`scheduled_sampling` must be one of {SCHEDULES}, got {schedule!r}."
        )
    if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not (
        0.0 <= probability <= 1.0
    ):
        raise ValueError(
            f"`sampling_probability` must be in [0, 1], got {probability!r}."
        )
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"`sampling_steps` must be an integer >= 1, got {steps!r}.")
    if mode not in SAMPLING_MODES:
        raise ValueError(f"`sampling_mode` must be one of {SAMPLING_MODES}, got {mode!r}.")


def own_tokens(logits, uniform, mode, pad_id=0):
    """The model's own next tokens from its logits `(batch, vocab)`: the argmax, or a
    draw from softmax(logits) by inverse transform sampling with `uniform` `(batch,)`
    in [0, 1) (the smallest v with sum_{u <= v} p(u) > uniform). The padding id is
    never chosen, so the target mask stays the gold one."""
    logits = ops.cast(ops.stop_gradient(logits), "float32")
    vocab = logits.shape[-1]
    if pad_id is not None:
        is_pad = ops.arange(vocab) == pad_id
        logits = ops.where(is_pad[None, :], -1e9, logits)
    if mode == "argmax":
        return ops.cast(ops.argmax(logits, axis=-1), "int32")
    cumulative = ops.cumsum(ops.softmax(logits, axis=-1), axis=-1)
    chosen = ops.sum(ops.cast(cumulative <= uniform[:, None], "int32"), axis=-1)
    chosen = ops.minimum(chosen, vocab - 1)  # rounding: the sum may end just below 1
    if pad_id is not None:  # (only reachable through rounding at the edges)
        chosen = ops.where(chosen == pad_id, ops.cast(ops.argmax(logits, -1), "int32"),
                           chosen)
    return chosen


def fed_tokens(gold, own, coin, probability, t, pad_id=0):
    """The decoder input at step t: `own` where coin < p (never at t = 0, the start
    token, nor where the gold input is padding), else `gold`. All `(batch,)`."""
    use_own = ops.logical_and(coin < probability, t > 0)
    if pad_id is not None:
        use_own = ops.logical_and(use_own, ops.not_equal(gold, pad_id))
    return ops.where(use_own, own, gold)


class SamplingProbabilityLog(keras.callbacks.Callback):
    """Adds scheduled sampling's current p (`Seq2Seq.current_sampling_probability`) to
    the logs after each epoch, as ``sampling_probability`` (in the history, the
    progress bar and any logging callback after it).

    Example:

    >>> import numpy as np, kerasrnn
    >>> model = kerasrnn.seq2seq.Seq2Seq(8, 8, embedding_dim=4, units=4,
    ...     scheduled_sampling="linear", sampling_probability=0.5, sampling_steps=4)
    >>> model.compile()
    >>> x = {"source": np.full((4, 3), 5), "target_in": np.full((4, 2), 6)}
    >>> history = model.fit(x, np.full((4, 2), 7), batch_size=2, epochs=2, verbose=0,
    ...                     callbacks=[kerasrnn.seq2seq.SamplingProbabilityLog()])
    >>> history.history["sampling_probability"]
    [0.25, 0.5]
    """

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["sampling_probability"] = float(
                ops.convert_to_numpy(self.model.current_sampling_probability()))
