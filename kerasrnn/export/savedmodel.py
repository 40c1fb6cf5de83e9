"""`export_saved_model`: a Keras model and the functions around it (text in, text out)
as a plain TensorFlow SavedModel."""

import os

import keras
import tensorflow as tf


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
    from kerasrnn.export._formats import converter_output

    with converter_output():  # TensorFlow's warnings on tracked tables, shown on failure
        archive.write_out(os.fspath(path), verbose=verbose)
    return path
