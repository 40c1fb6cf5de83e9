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

from kerasrnn.ops import NEG_INF, scan
from kerasrnn.validation import check_int, check_number

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
    """One-line errors for a bad schedule, naming `ScheduledSampling`'s arguments."""
    if schedule not in SCHEDULES:
        raise ValueError(f"`schedule` must be one of {SCHEDULES}, got schedule={schedule!r}.")
    check_number("probability", probability, "[0, 1]")
    check_int("steps", steps)
    if mode not in SAMPLING_MODES:
        raise ValueError(f"`mode` must be one of {SAMPLING_MODES}, got mode={mode!r}.")


def own_tokens(logits, uniform, mode, pad_id=0):
    """The model's own next tokens from its logits `(batch, vocab)`: the argmax, or a
    draw from softmax(logits) by inverse transform sampling with `uniform` `(batch,)`
    in [0, 1) (the smallest v with sum_{u <= v} p(u) > uniform). The padding id is
    never chosen, so the target mask stays the gold one."""
    logits = ops.cast(ops.stop_gradient(logits), "float32")
    vocab = logits.shape[-1]
    if pad_id is not None:
        is_pad = ops.arange(vocab) == pad_id
        logits = ops.where(is_pad[None, :], NEG_INF, logits)
    if mode == "argmax":
        return ops.cast(ops.argmax(logits, axis=-1), "int32")
    cumulative = ops.cumsum(ops.softmax(logits, axis=-1), axis=-1)
    chosen = ops.sum(ops.cast(cumulative <= uniform[:, None], "int32"), axis=-1)
    chosen = ops.minimum(chosen, vocab - 1)  # rounding: the sum may end just below 1
    if pad_id is not None:  # (only reachable through rounding at the edges)
        chosen = ops.where(chosen == pad_id, ops.cast(ops.argmax(logits, -1), "int32"), chosen)
    return chosen


def fed_tokens(gold, own, coin, probability, t, pad_id=0):
    """The decoder input at step t: `own` where coin < p (never at t = 0, the start
    token, nor where the gold input is padding), else `gold`. All `(batch,)`."""
    use_own = ops.logical_and(coin < probability, t > 0)
    if pad_id is not None:
        use_own = ops.logical_and(use_own, ops.not_equal(gold, pad_id))
    return ops.where(use_own, own, gold)


@keras.saving.register_keras_serializable(package="kerasrnn")
class ScheduledSampling(keras.layers.Layer):
    """Scheduled sampling (Bengio et al. 2015) as a training regime a `Seq2Seq` takes:
    the decoder runs step by step and is fed, at each step t > 0 and with probability
    p, the model's own token instead of y_{t-1}:

    .. math::

        x_t = \\begin{cases} \\hat y_{t-1} & t > 0,\\ u_t < p_i,\\ y_{t-1} \\ne
            \\text{pad} \\\\ y_{t-1} & \\text{otherwise} \\end{cases}
        \\qquad \\hat y_{t-1} \\sim \\text{softmax}(z_{t-1}) \\text{ (or its argmax)}

    where z_{t-1} are the logits of the step before (given the tokens actually fed) and
    p_i follows `sampling_probability`'s schedule over the model's training steps i
    (`step`, a variable saved with the model and advanced by each training batch).
    Evaluation and generation stay as they are. Step-wise, as TensorFlow Addons'
    `ScheduledEmbeddingTrainingSampler`.

    Args:
        schedule: "constant", "linear" or "inverse_sigmoid" (or "off": p = 0).
        probability: the p_max the schedule grows to, in [0, 1].
        steps: the schedule's S (linear: steps to reach p_max; inverse_sigmoid: steps
            to reach p_max / 2).
        mode: "sample" (the fed token is drawn from the model's distribution, as TFA)
            or "argmax".
        seed: seed of the draws (coins and tokens).

    Example:

    >>> import numpy as np, kerasrnn
    >>> from kerasrnn.seq2seq import ScheduledSampling, Seq2Seq, Seq2SeqBackbone
    >>> model = Seq2Seq(Seq2SeqBackbone(8, 8, embedding_dim=4, units=4),
    ...                 scheduled_sampling=ScheduledSampling("linear", 0.5, steps=4))
    >>> model.compile()
    >>> x = {"source": np.full((4, 3), 5), "target_in": np.full((4, 2), 6)}
    >>> _ = model.fit(x, np.full((4, 2), 7), batch_size=2, verbose=0)
    >>> int(model.scheduled_sampling.step), float(model.scheduled_sampling.probability())
    (2, 0.25)
    """

    def __init__(
        self, schedule="linear", probability=0.25, steps=5000, mode="sample", seed=None, **kwargs
    ):
        super().__init__(**kwargs)
        check_schedule(schedule, probability, steps, mode)
        self.schedule, self.max_probability = schedule, float(probability)
        self.steps, self.mode, self.seed = int(steps), mode, seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def build(self, input_shape=None):
        if self.built:  # (deserialised inside a Seq2Seq, it arrives built)
            return
        self.step = self.add_weight(
            shape=(),
            dtype="int32",
            initializer="zeros",
            trainable=False,
            name="step",
            aggregation="only_first_replica",
        )
        self.built = True

    def probability(self):
        """p at the current training step `step`."""
        if not self.built:
            self.build()
        return sampling_probability(self.step, self.schedule, self.max_probability, self.steps)

    def advance(self):
        """One training step more (the model calls this once per training batch)."""
        self.step.assign_add(1)

    def noise(self, shape, seed=None):
        """The uniform draws `(coin, uniform)`, each of `shape` (batch, Ty), that decide
        which tokens are fed (see `decode`); `seed` overrides the layer's generator."""
        seed = self.seed_generator if seed is None else seed
        coin = keras.random.uniform(shape, seed=seed)
        uniform = keras.random.uniform(shape, seed=seed)
        return coin, uniform

    def decode(self, backbone, source_ids, target_in, probability=None, noise=None, training=False):
        """The backbone's decoder run step by step with scheduled sampling: each step
        is the backbone's own `call_decoder_step`, with the dropout of its
        teacher-forced pass in training (the embedding and output dropout, the decoder
        cell's masks fixed across time steps), drawn before the loop.

        At step t the decoder is fed x_t = own_t if t > 0, coin_t < p and y_in_t is not
        padding, else the gold input y_in_t; own_t is drawn from the model's
        distribution at step t-1 by inverse transform sampling with uniform_t
        (`mode="sample"`), or its argmax ("argmax"), never the padding id.

        Args:
            backbone: a `kerasrnn.seq2seq.Seq2SeqBackbone`.
            source_ids, target_in: int ids `(batch, Tx)`, `(batch, Ty)`.
            probability: p (default: the schedule's at the current step).
            noise: `(coin, uniform)` draws `(batch, Ty)` in [0, 1) (default: fresh ones
                from `noise`).
            training: dropout on or off.

        Returns:
            `(logits (batch, Ty, vocab), fed tokens (batch, Ty) int32, alignments
            (batch, Ty, Tx))`.
        """
        source_ids = ops.cast(ops.convert_to_tensor(source_ids), "int32")
        target_in = ops.cast(ops.convert_to_tensor(target_in), "int32")
        if not backbone.built:
            backbone.build()
        if probability is None:
            probability = self.probability()
        probability = ops.cast(probability, "float32")
        if noise is None:
            noise = self.noise(ops.shape(target_in))
        coin, uniform = (ops.cast(n, "float32") for n in noise)
        pad_id = backbone.pad_id
        encoded = backbone.call_encoder(source_ids, training=training)
        batch_size = ops.shape(source_ids)[0]
        cell = backbone.decoder.cell
        # Random masks are drawn before the loop, as the teacher-forced pass fixes its
        # dropout masks: a seed generator must not advance inside a traced loop body
        # (JAX). The embedding and output dropout draw one mask per step.
        steps = ops.shape(target_in)[1]
        embedding_masks = backbone.embedding_dropout(
            ops.ones((batch_size, steps, backbone.embedding_dim)), training=training
        )
        output_masks = backbone.output_dropout(
            ops.ones((batch_size, steps, cell.output_size)), training=training
        )
        if training:
            cell.draw_dropout_masks(backbone.target_embedding(target_in[:, 0]), encoded.states)
        # (the noise first: `scan` packs all five into one tensor of its dtype)
        time_major = [
            ops.moveaxis(x, 1, 0) for x in (coin, uniform, target_in, embedding_masks, output_masks)
        ]

        def step(carry, xs):
            t, previous_logits, states = carry[:3]
            coin_t, uniform_t, gold, embedding_mask, output_mask = xs
            own = own_tokens(previous_logits, uniform_t, self.mode, pad_id)
            fed = fed_tokens(gold, own, coin_t, probability, t, pad_id)
            real = ops.not_equal(gold, pad_id)[:, None]

            def readout(output):  # zeros at padded steps (as teacher forcing), dropout
                output = ops.where(real, output, ops.zeros_like(output))
                return backbone.readout_logits(output * ops.cast(output_mask, output.dtype))

            logits, new_states, alignments = backbone.call_decoder_step(
                fed,
                states,
                encoded.memory,
                readout=readout,
                training=training,
                embedding_mask=embedding_mask,
            )
            new_states = [ops.where(real, n, s) for n, s in zip(new_states, states)]
            alignments = ops.where(
                real, ops.cast(alignments, "float32"), ops.zeros_like(alignments, "float32")
            )
            carry = (t + 1, ops.cast(logits, "float32"), new_states, fed, alignments)
            # Keras' TensorFlow scan needs the per-step outputs shaped as the carry
            return carry, carry

        initial = (
            ops.convert_to_tensor(0, "int32"),
            ops.zeros((batch_size, backbone.target_vocab_size), "float32"),
            list(encoded.states),
            ops.zeros((batch_size,), "int32"),
            ops.zeros((batch_size, ops.shape(source_ids)[1]), "float32"),
        )
        # One packed sequence, not five: Keras' TensorFlow scan fails on several when the
        # number of steps is unknown at trace time (fit on padded_batch batches).
        _, (_, logits, _, fed, alignments) = scan(step, initial, time_major)
        if training:
            cell.reset_dropout_masks()
        return (ops.moveaxis(logits, 0, 1), ops.moveaxis(fed, 0, 1), ops.moveaxis(alignments, 0, 1))

    def get_config(self):
        return {
            **super().get_config(),
            "schedule": self.schedule,
            "probability": self.max_probability,
            "steps": self.steps,
            "mode": self.mode,
            "seed": self.seed,
        }


class SamplingProbabilityLog(keras.callbacks.Callback):
    """Adds scheduled sampling's current p (`ScheduledSampling.probability`) to
    the logs after each epoch, as ``sampling_probability`` (in the history, the
    progress bar and any logging callback after it).

    Example:

    >>> import numpy as np, kerasrnn
    >>> from kerasrnn.seq2seq import ScheduledSampling, Seq2Seq, Seq2SeqBackbone
    >>> model = Seq2Seq(Seq2SeqBackbone(8, 8, embedding_dim=4, units=4),
    ...                 scheduled_sampling=ScheduledSampling("linear", 0.5, steps=4))
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
                ops.convert_to_numpy(self.model.scheduled_sampling.probability())
            )
