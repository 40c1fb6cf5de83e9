"""SavedModel export with string-in / string-out serving signatures.

A recipe exports its trained Keras model together with the text preprocessing (the
tokenizer and `Vocabulary.lookup()` layers) and the postprocessing (ids -> labels or
tokens), so that the SavedModel takes raw strings and returns strings. It is a plain
TensorFlow SavedModel: ``tf.saved_model.load(path).signatures["serving_default"]``
works in a process that has never imported kerasrnn (or Keras).

Typical use (what the classifier recipe does)::

    lookup = vocabulary.lookup()

    def classify(texts):
        ids = encode_tokens(split_words(texts), lookup)
        return class_outputs(model(ids, training=False), labels)

    export_saved_model(path, model, {
        "serving_default": (classify, [tf.TensorSpec([None], tf.string, name="text")]),
    }, track=[lookup])

Language models and translators export their generation function the same way (the
function may run a decoding loop).
"""
import os

import tensorflow as tf

__all__ = ["export_saved_model", "class_outputs", "sequence_outputs", "ids_to_strings"]


def export_saved_model(path, model, endpoints, track=(), verbose=False):
    """Writes a SavedModel whose signatures are `endpoints`.

    Args:
        path: the output folder (created; an existing SavedModel there is replaced).
        model: the Keras model the endpoint functions call (its variables are saved).
        endpoints: an ordered dict ``{name: (fn, input_signature)}``; `fn` takes
            tensors matching `input_signature` (a list of `tf.TensorSpec`) and returns
            a dict of tensors. The first endpoint is also ``serving_default`` unless
            one is named so.
        track: further layers (e.g. `Vocabulary.lookup()` layers) or TensorFlow
            resources the functions use outside `model`; they must be listed, or
            their tables would be missing from the SavedModel.
        verbose: let Keras print the saved variables.

    Returns:
        `path`.
    """
    import keras

    if not endpoints:
        raise ValueError("`endpoints` is empty: give at least one serving function.")
    archive = keras.export.ExportArchive()
    archive.track(model)
    for resource in track:
        if isinstance(resource, keras.layers.Layer) and not resource.built:
            # Lookup layers own their table from construction but count as unbuilt.
            resource.build(None)
        archive.track(resource)
    for name, (fn, signature) in endpoints.items():
        if not isinstance(signature, (list, tuple)):
            raise TypeError(
                f"endpoint {name!r}: the input signature must be a list of "
                f"tf.TensorSpec, got {type(signature).__name__}."
            )
        archive.add_endpoint(name, tf.function(fn, input_signature=list(signature)))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    archive.write_out(os.fspath(path), verbose=verbose)
    return path


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
