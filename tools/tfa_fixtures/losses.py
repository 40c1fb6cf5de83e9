"""Fixture of tfa.seq2seq.sequence_loss under every averaging/summing combination.

Logits (batch, time, classes), integer targets and weights that mask the padded steps
(plus one fractional weight); the loss for each combination of
average_across_timesteps / sum_over_timesteps (at most one) and average_across_batch /
sum_over_batch (at most one) that TFA accepts (it rejects averaging over one axis while
summing over the other: 7 of the 9), with the default softmax_loss_function. TFA's
"sum" divides by the number of nonzero weights. A second target
array pads with id 0 and is scored with weights = (targets != 0), for `pad_id`. Run from
the repository root in the reference environment (README.md):

    python tools/tfa_fixtures/losses.py
"""

import itertools

import numpy as np
import tensorflow as tf
import tensorflow_addons as tfa
from common import rng, save, versions

BATCH, TIME, CLASSES = 3, 5, 6

# per axis: (average, sum) flags; at most one of them may be on
AXIS_MODES = {"none": (False, False), "average": (True, False), "sum": (False, True)}


def main():
    generator = rng(11)
    logits = generator.normal(0.0, 2.0, (BATCH, TIME, CLASSES)).astype("float32")
    targets = generator.integers(1, CLASSES, (BATCH, TIME)).astype("int32")
    lengths = np.array([5, 3, 1])
    weights = (np.arange(TIME)[None, :] < lengths[:, None]).astype("float32")
    weights[0, 2] = 0.5  # a fractional weight, not only a mask
    padded = np.where(weights > 0, targets, 0).astype("int32")  # pad id 0 after the end
    arrays = {
        "logits": logits,
        "targets": targets,
        "weights": weights,
        "padded_targets": padded,
        "versions": versions(),
    }
    for (time_mode, (avg_t, sum_t)), (batch_mode, (avg_b, sum_b)) in itertools.product(
        AXIS_MODES.items(), AXIS_MODES.items()
    ):
        flags = dict(
            average_across_timesteps=avg_t,
            average_across_batch=avg_b,
            sum_over_timesteps=sum_t,
            sum_over_batch=sum_b,
        )
        key = f"time_{time_mode}__batch_{batch_mode}"
        if (avg_t and sum_b) or (sum_t and avg_b):
            continue  # TFA raises: "ambiguous order"
        arrays[key] = tfa.seq2seq.sequence_loss(
            tf.constant(logits), tf.constant(targets), tf.constant(weights), **flags
        ).numpy()
        arrays[f"padded__{key}"] = tfa.seq2seq.sequence_loss(
            tf.constant(logits),
            tf.constant(padded),
            tf.cast(tf.not_equal(padded, 0), tf.float32),
            **flags,
        ).numpy()
    save("sequence_loss", **arrays)


if __name__ == "__main__":
    main()
