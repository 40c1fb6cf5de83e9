"""`export_onnx`: a Keras model as an ONNX file that onnxruntime runs.

Two routes, the first that converts:

1. **Keras' own exporter**, `model.export(path, format="onnx")` (on TensorFlow through
   `tf2onnx`): every recurrent layer of the package converts, the time loop becoming an
   ONNX `Loop` whose body holds the cell's matmuls and gates, and the file keeps the
   model's dynamic batch and time dimensions. A standard LSTM or GRU layer becomes
   ONNX's own `LSTM` / `GRU` operator instead (`native_recurrences`, on by default;
   `kerasrnn.export.onnx_recurrent` says which layers and how).
   `keras.ops.scan` on TensorFlow keeps its carry in a one-element TensorArray, which
   tf2onnx's While handler does not recognise ("couldn't find scan output index"), so
   the package's own scans (the CRF's forward algorithm, Viterbi decode and marginals)
   are traced as plain loops for this route (`kerasrnn.ops.scans_as_loops`).
2. **Through the LiteRT graph** where tf2onnx cannot map a loop all the same (it
   raises, or it writes a file onnxruntime refuses to load, which is checked). The
   builtin-only LiteRT flatbuffer of `kerasrnn.export.litert`
   (TensorArrays lowered to preallocated buffers in a builtin `WHILE`) converts with
   `tf2onnx.convert.from_tflite` instead. Like the LiteRT file it has fixed shapes:
   `batch_size` and `sequence_length` fill the dynamic dimensions.

Quantisation (`quantization="dynamic_int8"`) runs onnxruntime's `quantize_dynamic` on
the written file. tf2onnx passes the cell's weights into the `Loop` as loop-carried
values, which the quantiser does not see as weights (it quantises initializers only),
so first each carried value that the body returns unchanged and that starts as an
initializer becomes an initializer of the body itself. The quantiser writes a native
`LSTM` operator as onnxruntime's `DynamicQuantizeLSTM` (int8 weights, here in 7 bits);
it has no int8 GRU, so a model to quantise keeps the `Loop` for its GRU layers.
"""

import logging
import os
import tempfile
import warnings
from contextlib import nullcontext

from kerasrnn.export._formats import (
    LOGGER,
    check_exportable,
    converter_output,
    loop_layer_named,
    model_input_specs,
    output_names,
)
from kerasrnn.export.litert import check_quantization
from kerasrnn.export.onnx_recurrent import native_recurrences as native_recurrences_of
from kerasrnn.ops import scans_as_loops

# onnxruntime's dynamic quantisation: int8 weights, activations quantised per call
QUANTIZATIONS = (None, "dynamic_int8")


def export_onnx(
    model,
    path,
    input_signature=None,
    opset_version=None,
    batch_size=None,
    sequence_length=None,
    quantization=None,
    native_recurrences=True,
):
    """Writes `model` as an ONNX file for onnxruntime (or any ONNX runtime).

    The graph computes `model(inputs, training=False)`: every `kerasrnn` cell in
    `keras.layers.RNN` or `kerasrnn.RNN`, `Bidirectional`, `RNNStack`, `AttentiveRNN`,
    masks from `Embedding(mask_zero=True)`, `go_backwards`, and the CRF's Viterbi decode
    (`crf_decode`) convert. Keras' exporter keeps the dimensions the model leaves `None`
    dynamic; a model it cannot convert (the Viterbi decode) goes through the LiteRT
    graph at the fixed shape `batch_size` x `sequence_length` (module docstring).

    Args:
        model: a built Keras model (a functional model's `inputs` give the signature).
        path: the `.onnx` file to write (its folder is created).
        input_signature: a list of `tf.TensorSpec` / `keras.InputSpec`, one per input,
            for a model without symbolic inputs (subclassed); default: the model's inputs.
        opset_version: the ONNX opset; default: the converter's.
        batch_size: the fixed batch size for the route through the LiteRT graph
            (default 1); unused when Keras' exporter converts the model.
        sequence_length: the fixed length of the inputs' time dimension for that route,
            as `export_litert` takes it; unused when Keras' exporter converts.
        quantization: None (float32 weights) or ``"dynamic_int8"``: onnxruntime's
            dynamic quantisation, each weight matrix stored as 8 bits (uint8 with a
            scale and zero point, W ~ s * (q - z): a quarter of the bytes) and each
            matmul's input quantised to uint8 at run time (`DynamicQuantizeLinear` +
            `MatMulInteger`, which onnxruntime's CPU kernels run).
        native_recurrences: write each standard LSTM or GRU layer (`kerasrnn.RNN` or
            `keras.layers.RNN` over a plain `LSTMCell` / `GRUCell`, `keras.layers.LSTM`
            / `GRU`, in `Bidirectional` and `RNNStack` too) as ONNX's fused `LSTM` /
            `GRU` operator (`direction="bidirectional"` for a `Bidirectional`), with
            `sequence_lens` from the mask, read as right padding (a row's length is its
            number of unmasked steps). False: every time loop a `Loop`, whose mask may
            have any pattern. Other cells (peepholes, layer norm, attention, custom
            cells) keep the `Loop` either way (`kerasrnn.export.onnx_recurrent`).

    Returns:
        `path`. Run it with ``onnxruntime.InferenceSession(path)``: the inputs are
        named after the model's inputs, the outputs come in the order of `model.outputs`.

    Raises:
        ValueError: for a layer ONNX cannot hold (a stateful RNN, a string lookup),
            naming the layer; for a model only the LiteRT route converts whose length
            is dynamic, naming `sequence_length`.

    Example:

    >>> import numpy as np, keras, kerasrnn, onnxruntime, tempfile, os
    >>> inputs = keras.Input((None, 3))
    >>> model = keras.Model(inputs, kerasrnn.RNN(kerasrnn.GRUCell(4))(inputs))
    >>> path = kerasrnn.export.export_onnx(
    ...     model, os.path.join(tempfile.mkdtemp(), "model.onnx"))
    >>> session = onnxruntime.InferenceSession(path)
    >>> x = np.ones((2, 5, 3), "float32")
    >>> (y,) = session.run(None, {session.get_inputs()[0].name: x})
    >>> bool(np.allclose(y, model.predict(x, verbose=0), atol=1e-5))
    True
    """
    check_quantization(quantization, QUANTIZATIONS, "ONNX")
    check_exportable(model, "onnx")
    specs = model_input_specs(model, input_signature)
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    os.makedirs(folder, exist_ok=True)
    # the native operators to write: onnxruntime's quantiser has an int8 LSTM, not a
    # GRU, so a GRU to quantise keeps the Loop, whose matmuls it quantises
    kinds = ("lstm", "gru") if quantization is None else ("lstm",)
    kinds = kinds if native_recurrences else ()
    if quantization is None:
        _export_float(model, path, specs, opset_version, batch_size, sequence_length, kinds)
        return path
    with tempfile.TemporaryDirectory() as scratch:
        float_path = os.path.join(scratch, "float32.onnx")
        _export_float(model, float_path, specs, opset_version, batch_size, sequence_length, kinds)
        _quantize_dynamic(float_path, path)
    return path


def _export_float(model, path, specs, opset_version, batch_size, sequence_length, kinds):
    """The float32 file by the first route that converts (module docstring), the
    recurrent layers of `kinds` ("lstm", "gru") as native operators."""
    # the converters' messages are shown only if both routes fail (route 1's, of a
    # loop it cannot map, are expected when route 2 then converts)
    with converter_output():
        try:
            with native_recurrences_of(model, kinds) if kinds else nullcontext(), scans_as_loops():
                model.export(
                    os.fspath(path),
                    format="onnx",
                    # one argument per model call: a multi-input model takes the list of inputs
                    input_signature=specs if len(specs) == 1 else [specs],
                    opset_version=opset_version,
                    verbose=False,
                )
            _check_loads(path)
            error = None
        except Exception as failure:  # tf2onnx's failure on a loop it cannot map
            error = failure
            keras_error = str(error).splitlines()[0] if str(error) else type(error).__name__
            try:
                _export_through_litert(
                    model, path, specs, opset_version, batch_size or 1, sequence_length
                )
            except ValueError as litert_error:
                raise ValueError(
                    f"{litert_error} (Keras' ONNX exporter failed first: {keras_error})"
                ) from None
    if error is not None:
        layer = loop_layer_named(model, str(error))
        what = (
            f"the loop of layer {layer.name!r} ({type(layer).__name__})"
            if layer is not None
            else "a loop"
        )
        LOGGER.warning(
            "%s: ONNX through the LiteRT graph (fixed shapes), as tf2onnx cannot map %s",
            os.fspath(path),
            what,
        )


def _check_loads(path):
    """Raises where onnxruntime refuses the written file: tf2onnx can write a `Loop`
    whose carried values do not match its body (seen with greedy decoding's loop),
    which only loading finds."""
    import onnxruntime

    onnxruntime.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])


def _export_through_litert(model, path, specs, opset_version, batch_size, sequence_length):
    """Route 2: the builtin LiteRT flatbuffer to ONNX, with the model's input names and
    outputs in the order of `model.outputs`."""
    import onnx
    import tf2onnx
    from ai_edge_litert.interpreter import Interpreter

    from kerasrnn.export.litert import litert_flatbuffer

    flatbuffer = litert_flatbuffer(model, specs, batch_size, sequence_length, "ONNX")
    runner = Interpreter(model_content=flatbuffer).get_signature_runner()
    inputs = {details["name"]: name for name, details in runner.get_input_details().items()}
    outputs = runner.get_output_details()
    output_tensors = [outputs[name]["name"] for name in output_names(len(outputs))]
    with tempfile.TemporaryDirectory() as folder:
        tflite_path = os.path.join(folder, "model.tflite")
        with open(tflite_path, "wb") as file:
            file.write(flatbuffer)
        with warnings.catch_warnings():
            # tf2onnx reads the file's tensors with tf.lite.Interpreter, which warns
            # that it is deprecated in favour of ai_edge_litert's; nothing to do here
            warnings.filterwarnings("ignore", "\\s*Warning: tf.lite.Interpreter is deprecated")
            proto, _ = tf2onnx.convert.from_tflite(
                tflite_path,
                input_names=list(inputs),
                output_names=output_tensors,
                opset=opset_version,
            )
    # Identity nodes give the names; renaming the tensors themselves would miss the
    # references inside the Loop bodies
    graph = proto.graph
    shapes = {details["name"]: details["shape"] for details in runner.get_input_details().values()}
    for value in graph.input:
        # the file runs one shape only: say so in its inputs (clients read them)
        for dim, size in zip(value.type.tensor_type.shape.dim, shapes[value.name]):
            dim.dim_value = int(size)
        old, value.name = value.name, inputs[value.name]
        graph.node.insert(0, onnx.helper.make_node("Identity", [value.name], [old]))
    for value, name in zip(graph.output, output_names(len(outputs))):
        graph.node.append(onnx.helper.make_node("Identity", [value.name], [name]))
        value.name = name
    onnx.save(proto, os.fspath(path))


def _quantize_dynamic(float_path, path):
    """onnxruntime's dynamic int8 quantisation of `float_path` into `path`, the loop
    bodies' weights included."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.registry import IntegerOpsRegistry

    proto = onnx.load(float_path)
    _inline_loop_constants(proto.graph)
    inlined = float_path + ".inlined.onnx"
    onnx.save(proto, inlined)
    # the quantiser logs a hint to run its shape pre-processing, which changes nothing
    # for these MatMul-only weights
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    lstm_input = float_path + ".lstm.onnx"
    try:
        quantize_dynamic(
            inlined,
            lstm_input,
            # uint8 weights, not int8: on x86 with AVX2 onnxruntime multiplies uint8
            # activations by int8 weights with VPMADDUBSW, whose int16 pair sums
            # saturate (measured: max error 0.3 on outputs ~0.5 for a 64-unit LSTM);
            # uint8 x uint8 does not (4e-3), at the full 8 bits (no reduce_range)
            weight_type=QuantType.QUInt8,
            op_types_to_quantize=[op for op in IntegerOpsRegistry if op != "LSTM"],
            extra_options={"EnableSubgraph": True},
        )
        # the LSTM operator's quantiser writes int8 weights whatever weight_type says,
        # so they take 7 bits (reduce_range), whose pair sums cannot saturate
        # (measured on a 64-unit LSTM: 0.26 at 8 bits, 4e-3 at 7)
        quantize_dynamic(
            lstm_input,
            os.fspath(path),
            weight_type=QuantType.QUInt8,
            op_types_to_quantize=["LSTM"],
            reduce_range=True,
            extra_options={"EnableSubgraph": True},
        )
    finally:
        logging.disable(previous)


def _names_used(graph, used):
    """Every tensor name read by a node of `graph` or its subgraphs, or output by it."""
    used.update(value.name for value in graph.output)
    for node in graph.node:
        used.update(node.input)
        for attribute in node.attribute:
            if attribute.HasField("g"):
                _names_used(attribute.g, used)
    return used


def _inline_loop_constants(graph):
    """Moves into each `Loop` body the loop-carried values that start as an initializer
    of `graph` and that the body returns unchanged (the cell's weights, as tf2onnx
    writes them), so that the quantiser finds them; drops the initializers left unused."""
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    used_outside = {value.name for value in graph.output}
    for node in graph.node:
        used_outside.update(node.input)
    for node in graph.node:
        if node.op_type != "Loop":
            continue
        body = next(a.g for a in node.attribute if a.name == "body")
        carried = len(node.input) - 2
        # backwards, so that deleting one index leaves the ones still to visit in place
        for k in reversed(range(carried)):
            start, inner = node.input[2 + k], body.input[2 + k].name
            if (
                start in initializers
                and body.output[1 + k].name == inner
                and node.output[k] not in used_outside
            ):
                tensor = body.initializer.add()
                tensor.CopyFrom(initializers[start])
                tensor.name = inner
                del node.input[2 + k]
                del body.input[2 + k]
                del body.output[1 + k]
                del node.output[k]
        _inline_loop_constants(body)
    used = _names_used(graph, set())
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
