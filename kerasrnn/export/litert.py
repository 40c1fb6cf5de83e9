"""`export_litert`: a Keras model as a LiteRT (TensorFlow Lite) flatbuffer of builtin ops
only, which the plain LiteRT interpreter runs (no Select TensorFlow / Flex delegate).

Why not Keras' own `model.export(path, format="litert")`: it converts with
``SELECT_TF_OPS`` allowed, and Keras' time loop (a `tf.while_loop` that collects each
step's output in a `TensorArray`) becomes `FlexTensorListReserve` / `...SetItem` /
`...Stack` ops, which the LiteRT interpreter without the Flex delegate refuses, so the
file runs on no phone or microcontroller runtime.

The route here: the converter's own TensorList lowering, which turns that loop into a
builtin `WHILE` whose body writes each step's output into a preallocated buffer tensor
(the TensorArray becomes a [time, batch, units] tensor updated in place), given two
things it cannot work without:

1. **Static shapes.** The lowering needs the buffer's element shape: every dimension of
   every input is fixed at export (`batch_size`, `sequence_length`). A model whose time
   dimension is `None` needs `sequence_length=`; the interpreter then runs that shape.
2. **Frozen weights.** A variable read inside a `WHILE` body (every cell reads its
   kernels there) converts to a `READ_VARIABLE` that the interpreter cannot resolve, so
   the traced function's variables are folded into constants first.

Conversion then allows ``TFLITE_BUILTINS`` only: anything that would need a TensorFlow
op fails at export, as a one-line error naming the ops, instead of on the device.

A standard LSTM layer needs no loop at all: with ``native_recurrences=True`` (the
default) it becomes LiteRT's fused ``UNIDIRECTIONAL_SEQUENCE_LSTM`` kernel
(`kerasrnn.export.litert_lstm`), masks included; the `WHILE` stays for every other cell.
"""

import contextlib
import os
import re

import keras

from kerasrnn.export._formats import (
    LOGGER,
    call_model,
    check_exportable,
    converter_output,
    model_input_specs,
    sublayers,
)
from kerasrnn.export.litert_lstm import (
    finished_fused_lstms,
    fusable_lstm_cell,
    fused_lstm_loops,
)
from kerasrnn.validation import check_int


def _static_specs(specs, batch_size, sequence_length, format_name):
    """Every dimension fixed: batch from `batch_size`, time (axis 1) from
    `sequence_length` (an int for every input, or one per input)."""
    import tensorflow as tf

    batch_size = check_int("batch_size", batch_size)
    lengths = sequence_length
    if not isinstance(lengths, (list, tuple)):
        lengths = [lengths] * len(specs)
    if len(lengths) != len(specs):
        raise ValueError(
            f"sequence_length has {len(lengths)} entries for a model with {len(specs)} "
            f"inputs; give one int (every input) or one per input."
        )
    fixed = []
    for spec, length in zip(specs, lengths):
        length = check_int("sequence_length", length, allow_none=True)
        shape = list(spec.shape)
        if shape and shape[0] is None:
            shape[0] = batch_size
        if len(shape) > 1 and shape[1] is None:
            shape[1] = length
        if any(dim is None for dim in shape):
            axis = "time" if len(shape) > 1 and shape[1] is None else "a"
            raise ValueError(
                f"input {spec.name!r} has a dynamic {axis} dimension (shape "
                f"{tuple(spec.shape)}); the {format_name} export through LiteRT's builtin "
                f"WHILE loop needs every dimension fixed: pass sequence_length=N (or an "
                f"input_signature with static shapes)."
            )
        fixed.append(tf.TensorSpec(shape, spec.dtype, name=spec.name))
    return fixed


def _one_line(error):
    """The converter's error in one line: the TensorFlow ops it could not map."""
    text = str(error)
    ops = sorted(set(re.findall(r"'tf\.(\w+)' op", text)))
    if not ops:
        ops = sorted(set(re.findall(r"\btf\.(\w+)\b", text)))
    if ops:
        return f"TensorFlow op(s) {', '.join(ops)} are not LiteRT builtins"
    first = next((line for line in text.splitlines() if "error" in line), text[:200])
    return first.strip()


# The LiteRT converter's post-training quantisations that keep the file builtin-only
# and need no calibration data.
QUANTIZATIONS = (None, "dynamic_int8", "float16")


def check_quantization(quantization, allowed, format_name):
    """One-line ValueError naming the allowed values, before any conversion."""
    if quantization not in allowed:
        raise ValueError(
            f"quantization={quantization!r} is not a {format_name} quantisation; use one of "
            f"{', '.join(repr(value) for value in allowed)}."
        )


def export_litert(
    model,
    path,
    batch_size=1,
    sequence_length=None,
    input_signature=None,
    quantization=None,
    native_recurrences=True,
):
    """Writes `model` as a `.tflite` file of LiteRT builtin ops only.

    The graph computes `model(inputs, training=False)` at one fixed input shape (LiteRT's
    builtin `WHILE` needs static shapes; see the module docstring for the route): every
    `kerasrnn` cell in `keras.layers.RNN` or `kerasrnn.RNN`, `Bidirectional`,
    `RNNStack`, `AttentiveRNN`, masks from `Embedding(mask_zero=True)` (padding inside
    the fixed length), `go_backwards`, and the CRF's Viterbi decode convert. Weights are
    stored as float32 constants.

    A standard LSTM layer (`keras.layers.LSTM`, or `keras.layers.RNN` / `kerasrnn.RNN`
    over `keras.layers.LSTMCell` or a `kerasrnn.LSTMCell` with its default gates and
    activations; alone, in `Bidirectional` or in `RNNStack`) is written as LiteRT's
    fused ``UNIDIRECTIONAL_SEQUENCE_LSTM`` kernel, one per layer and direction (a
    `Bidirectional` is two of them: the converter writes no
    ``BIDIRECTIONAL_SEQUENCE_LSTM``), with Keras' results for any mask. A layer with
    ``return_state=True`` keeps the loop (the kernel returns no final cell state), as
    do the other cells (GRU, peephole or coupled LSTM, layer norm, attention, custom).

    Args:
        model: a built Keras model, on the TensorFlow backend.
        path: the `.tflite` file to write (its folder is created).
        batch_size: the batch dimension the file runs (default 1, one request).
        sequence_length: the time dimension (axis 1) of inputs whose length the model
            leaves `None`: one int for every input, or a list with one entry per input
            (None where the input's own length is static).
        input_signature: a list of fully static `tf.TensorSpec` / `keras.InputSpec`,
            one per input, for a model without symbolic inputs (subclassed); default:
            the model's inputs with `batch_size` and `sequence_length` filled in.
        quantization: None (float32 weights), ``"dynamic_int8"`` (dynamic-range
            quantisation: each weight matrix stored as int8 with one float scale per
            output channel, W ~ s * q with q in [-127, 127], a quarter of the bytes;
            the kernels quantise activations on the fly) or ``"float16"``
            (weights stored as float16, half the bytes, dequantised to float32 at load).
            Both stay builtin-only and need no calibration data. With fused LSTM
            kernels, ``"dynamic_int8"`` stores their weight matrices of 1024 entries or
            more as int8, dequantised once when the interpreter loads the file.
        native_recurrences: write standard LSTM layers as LiteRT's fused LSTM kernel
            (True, the default) or every recurrent layer as a `WHILE` loop (False).
            Where the converter cannot fuse, the loop is written and a warning logged
            on the ``kerasrnn.export`` logger.

    Returns:
        `path`. Run it with ``ai_edge_litert.interpreter.Interpreter(model_path=path)``:
        its signature ``serving_default`` takes the inputs by the model's input names
        and returns the outputs as ``output_0``, ``output_1`` ... in the order of
        `model.outputs`.

    Raises:
        ValueError: a dynamic dimension left unfixed (naming `sequence_length`); a layer
            LiteRT cannot hold (a stateful RNN, a string lookup), naming the layer; a
            model that needs TensorFlow ops, naming them.

    Example:

    >>> import numpy as np, keras, kerasrnn, tempfile, os
    >>> from ai_edge_litert.interpreter import Interpreter
    >>> inputs = keras.Input((None, 3), name="x")
    >>> model = keras.Model(inputs, kerasrnn.RNN(kerasrnn.GRUCell(4))(inputs))
    >>> path = kerasrnn.export.export_litert(
    ...     model, os.path.join(tempfile.mkdtemp(), "model.tflite"),
    ...     batch_size=2, sequence_length=5)
    >>> run = Interpreter(model_path=path).get_signature_runner()
    >>> x = np.ones((2, 5, 3), "float32")
    >>> bool(np.allclose(run(x=x)["output_0"], model.predict(x, verbose=0), atol=1e-5))
    True
    """
    check_quantization(quantization, QUANTIZATIONS, "LiteRT")
    check_exportable(model, "litert")
    flatbuffer = litert_flatbuffer(
        model,
        model_input_specs(model, input_signature),
        batch_size,
        sequence_length,
        quantization=quantization,
        native_recurrences=native_recurrences,
    )
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    os.makedirs(folder, exist_ok=True)
    with open(path, "wb") as file:
        file.write(flatbuffer)
    return path


def litert_flatbuffer(
    model,
    specs,
    batch_size,
    sequence_length,
    format_name="LiteRT",
    quantization=None,
    native_recurrences=False,
):
    """The builtin-only LiteRT flatbuffer (bytes) of `model` called on `specs` with
    their dynamic dimensions fixed (the route of the module docstring), its weights
    quantised as `export_litert`'s `quantization` says, its standard LSTM layers on
    LiteRT's fused LSTM with `native_recurrences` (`kerasrnn.export.litert_lstm`)."""
    if keras.backend.backend() != "tensorflow":
        raise ValueError(
            f"the {format_name} export converts a TensorFlow graph; got the "
            f"{keras.backend.backend()!r} backend: run with KERAS_BACKEND=tensorflow."
        )
    specs = _static_specs(specs, batch_size, sequence_length, format_name)
    failure = None
    if native_recurrences and any(fusable_lstm_cell(layer) for layer in sublayers(model)):
        try:
            flatbuffer, layers = _converted(model, specs, quantization, format_name, True)
            return finished_fused_lstms(flatbuffer, layers) if layers else flatbuffer
        except ValueError as error:
            # the graph with its loops instead: a model that cannot convert at all
            # fails there again, with the converter's reason
            failure = error
    flatbuffer = _converted(model, specs, quantization, format_name, False)[0]
    if failure is not None:
        LOGGER.warning("LiteRT's fused LSTM failed (%s); the WHILE loop instead", failure)
    return flatbuffer


def _converted(model, specs, quantization, format_name, native_recurrences):
    """(flatbuffer, the layers traced through the fused LSTM) of `model` at the static
    `specs`."""
    import tensorflow as tf

    from kerasrnn._private import frozen_concrete_function

    # The weights enter the graph as constants (the model's variables read through a
    # keras.StatelessScope): a variable read inside a WHILE body cannot run in LiteRT,
    # and freezing the variables afterwards would inline the functions the converter
    # fuses into LSTM kernels.
    weights = [(v, tf.constant(keras.ops.convert_to_numpy(v))) for v in model.variables]
    fused = []

    def traced(*args):
        routes = fused_lstm_loops(model) if native_recurrences else contextlib.nullcontext([])
        with keras.StatelessScope(state_mapping=weights), routes as layers:
            outputs = call_model(model, args)
            fused[:] = layers
            return outputs

    function = tf.function(traced, input_signature=specs).get_concrete_function()
    if function.variables:
        # a variable the model does not track (read outside its layers' weights): frozen
        function = frozen_concrete_function(function)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function], model)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if quantization is not None:
        # Optimize.DEFAULT without a representative dataset is dynamic-range int8;
        # with float16 as the supported type it stores float16 weights instead
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if fused:
            # The MLIR quantizer leaves the fused LSTM's weights float32; the flatbuffer
            # quantizer stores each large one as int8 (dequantised once, at load)
            converter.experimental_new_dynamic_range_quantizer = False
    if quantization == "float16":
        converter.target_spec.supported_types = [tf.float16]
    try:
        with converter_output():
            return converter.convert(), fused
    except Exception as error:  # the converter's ConverterError, pages long
        raise ValueError(
            f"model {model.name!r} cannot be exported to {format_name} with LiteRT builtin "
            f"ops only: {_one_line(error)}."
        ) from None
