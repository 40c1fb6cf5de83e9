"""What the ONNX and LiteRT writers share: the layers a format cannot hold, checked
before any conversion, the model's inputs as `tf.TensorSpec`s, and `converter_output`
(the converters' own messages kept off the terminal unless the export fails)."""

import contextlib
import logging
import re

import keras

from kerasrnn._private import keras_nested_layers
from kerasrnn.cells.min_rnn import InputGatedCell

FORMAT_NAMES = {"onnx": "ONNX", "litert": "LiteRT"}

# Layers that cannot work in a runtime that holds no state between calls and no string
# tables, with the fix. Checked by class name so that a Keras upgrade that renames a
# module changes nothing here.
_STRING_LAYERS = ("TextVectorization", "StringLookup", "Hashing")
_STRING_FIX = (
    "strings stay outside the exported graph: export token ids in / ids out and look "
    "the vocabulary up in the client"
)


def _unsupported_reason(layer, format_name):
    """Why `layer` cannot go into `format_name`, or None."""
    if getattr(layer, "stateful", False) is True:
        return (
            "a stateful layer carries its state in variables between calls, which the "
            "runtime does not keep: build the model with stateful=False and pass the "
            "states as inputs"
        )
    if type(layer).__name__ in _STRING_LAYERS:
        return _STRING_FIX
    if getattr(layer, "fast_path", False) and isinstance(
        getattr(layer, "cell", None), InputGatedCell
    ):
        return (
            f"the parallel scan of its {type(layer.cell).__name__} is not exported: build "
            "the layer with fast_path=False (the same weights, run step by step)"
        )
    return None


def _sublayers(layer, seen):
    """Every layer inside `layer` (itself included), however it is held: the model's
    layers, a wrapper's layer, an RNN's cell, a stack's layers."""
    if id(layer) in seen:
        return
    seen.add(id(layer))
    yield layer
    for value in vars(layer).values():
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            if isinstance(item, keras.layers.Layer):
                yield from _sublayers(item, seen)


def sublayers(model):
    """Every layer inside `model` (itself included), each once."""
    return list(_sublayers(model, set()))


def check_exportable(model, format_name):
    """One-line ValueError naming the first layer of `model` that `format_name` cannot
    hold, and the fix."""
    for layer in _sublayers(model, set()):
        reason = _unsupported_reason(layer, format_name)
        if reason is not None:
            raise ValueError(
                f"layer {layer.name!r} ({type(layer).__name__}) cannot be exported to "
                f"{FORMAT_NAMES[format_name]}: {reason}."
            )


def safe_name(name, index, prefix):
    """A signature name the runtimes accept (letters, digits, underscores)."""
    name = re.sub(r"\W", "_", str(name or "")).strip("_")
    return name or f"{prefix}_{index}"


def model_input_specs(model, input_signature):
    """The model's inputs as a list of `tf.TensorSpec` (named after the inputs): the
    given `input_signature`, or the shapes and dtypes of a functional model's inputs."""
    import tensorflow as tf

    if input_signature is None:
        inputs = getattr(model, "inputs", None)
        if not inputs:
            raise ValueError(
                f"model {model.name!r} has no symbolic inputs (a subclassed model, or not "
                "built): pass input_signature=[tf.TensorSpec(shape, dtype), ...]."
            )
        input_signature = [
            tf.TensorSpec(tuple(x.shape), x.dtype, name=safe_name(x.name, i, "input"))
            for i, x in enumerate(inputs)
        ]
    specs = []
    for index, spec in enumerate(keras.tree.flatten(input_signature)):
        if isinstance(spec, keras.InputSpec):
            spec = tf.TensorSpec(spec.shape, spec.dtype, name=spec.name)
        if not isinstance(spec, tf.TensorSpec):
            raise TypeError(
                f"input_signature[{index}] must be a tf.TensorSpec or keras.InputSpec; got "
                f"{spec!r}."
            )
        specs.append(
            tf.TensorSpec(spec.shape, spec.dtype, name=safe_name(spec.name, index, "input"))
        )
    return specs


def output_names(count):
    """The names of a model's `count` outputs in a LiteRT signature, in the order of
    `model.outputs` (the converter keeps neither layer names nor a dict's keys)."""
    return [f"output_{i}" for i in range(count)]


def call_model(model, args):
    """`model(inputs, training=False)` with one tensor per input, its outputs as a flat
    list, which the LiteRT signature names `output_names` in order (a dict would be
    flattened by sorted keys: output_10 before output_2)."""
    return keras.tree.flatten(model(args[0] if len(args) == 1 else list(args), training=False))


# The exporters' logger: one line per fallback route taken (`logging`'s last-resort
# handler prints it on stderr when the program configured none); at DEBUG level the
# converters' own messages are shown as they come (`converter_output`).
LOGGER = logging.getLogger("kerasrnn.export")


@contextlib.contextmanager
def converter_output():
    """Keeps what the converters (tf2onnx, the TFLite converter, TensorFlow's
    SavedModel writer) print on file descriptors 1 and 2 during the block -- messages of
    a route that fails and is replaced by another ("make_sure failure", "Issue
    encountered when serializing table_initializer") -- and shows it only if the
    block raises; shown as it comes when `LOGGER` is at DEBUG level."""
    from kerasrnn._startup import captured_native_output

    with captured_native_output(loud=LOGGER.isEnabledFor(logging.DEBUG)):
        yield


def loop_layer_named(model, text):
    """The layer of `model` (searched depth first) whose name appears in a converter's
    error `text` as a path component, for a one-line reason; None if none does."""
    found = None
    for layer in keras_nested_layers(model):
        if re.search(rf"(^|[/'\s]){re.escape(layer.name)}(_\d+)?/", text):
            found = layer  # the innermost (last) match names the loop best
    return found
