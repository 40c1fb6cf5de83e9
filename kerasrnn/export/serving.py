"""Serving outputs as TensorFlow ops: ids to strings, a classifier's and a tagger's
output dicts (what their SavedModel signatures return)."""

import tensorflow as tf


def ids_to_strings(ids, names):
    """Maps an int tensor of indices into the Python list `names` to strings."""
    return tf.gather(tf.constant(list(names), tf.string), tf.cast(ids, tf.int32))


def class_outputs(probabilities, labels):
    """Serving outputs of a classifier.

    Args:
        probabilities: (batch, classes) class probabilities.
        labels: the class names, in output order.

    Returns:
        A dict: ``label`` (batch,) the most probable class name, ``probability``
        (batch,) its probability, ``probabilities`` (batch, classes), ``labels``
        (batch, classes) the class names of those columns.
    """
    probabilities = tf.cast(probabilities, tf.float32)
    best = tf.argmax(probabilities, axis=-1)
    names = ids_to_strings(tf.range(len(labels)), labels)
    return {
        "label": ids_to_strings(best, labels),
        "probability": tf.reduce_max(probabilities, axis=-1),
        "probabilities": probabilities,
        "labels": tf.tile(names[tf.newaxis], [tf.shape(probabilities)[0], 1]),
    }


def sequence_outputs(probabilities, tags, lengths):
    """Serving outputs of a tagger (one class per position).

    Args:
        probabilities: (batch, time, tags) per-position probabilities.
        tags: the tag names, in output order.
        lengths: (batch,) number of real positions of each row.

    Returns:
        A dict: ``tags`` (batch, time) the best tag per position, "" on padding;
        ``probability`` (batch, time) its probability, 0 on padding; ``lengths``.
    """
    probabilities = tf.cast(probabilities, tf.float32)
    mask = tf.sequence_mask(lengths, tf.shape(probabilities)[1])
    best = ids_to_strings(tf.argmax(probabilities, axis=-1), tags)
    return {
        "tags": tf.where(mask, best, tf.constant("", tf.string)),
        "probability": tf.where(mask, tf.reduce_max(probabilities, axis=-1), 0.0),
        "lengths": tf.cast(lengths, tf.int32),
    }
