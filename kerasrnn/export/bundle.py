"""`export_bundle`: a recipe's model for a runtime beside TensorFlow (ONNX or LiteRT) as
one folder: the model file(s), ``deploy.json`` (the vocabularies, labels or tags, the
tokenisation settings and each model file's inputs and outputs) and ``client.py``, the
reference client (`kerasrnn.export.client`) copied beside them.

Strings cannot go into an ONNX or LiteRT graph (no string tables, no string ops among
the builtins), so the graph takes token ids and returns ids or probabilities, and the
client does the tokenisation and the lookups around it, in numpy.

Why the client is copied into the folder rather than imported from `kerasrnn`: ``import
kerasrnn.export.client`` runs ``kerasrnn/__init__``, which imports Keras (and through it
TensorFlow); the client must run where neither is installed. `client.py` imports
nothing of kerasrnn, so the copy beside the model runs on its own
(``python client.py FOLDER "some text"``) and can be loaded by file path.
"""

import json
import os
import shutil

# The formats a recipe's `export --format` writes; saved_model is the string-level
# SavedModel (`export_saved_model`), the others go through `export_bundle`.
FORMATS = ("saved_model", "onnx", "litert")
EXTENSIONS = {"onnx": ".onnx", "litert": ".tflite"}


def _check_format(format_name):
    if format_name not in EXTENSIONS:
        raise ValueError(
            f"format {format_name!r} is not a runtime bundle format; use one of "
            f"{', '.join(repr(f) for f in EXTENSIONS)} (or export_saved_model for a SavedModel)."
        )


def _runtime_inputs(path, format_name, specs):
    """The written file's input names and shapes (None: dynamic), in the order of
    `specs`: by name where the file keeps the specs' names, else by position (Keras'
    ONNX exporter names the inputs itself)."""
    if format_name == "litert":
        from ai_edge_litert.interpreter import Interpreter

        details = Interpreter(model_path=path).get_signature_runner().get_input_details()
        found = {name: [int(d) for d in value["shape"]] for name, value in details.items()}
    else:
        import onnxruntime

        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        found = {
            value.name: [d if isinstance(d, int) else None for d in value.shape]
            for value in session.get_inputs()
        }
    names = [spec.name for spec in specs]
    if set(names) != set(found):
        names = list(found)
    return names, [found[name] for name in names]


def export_bundle(folder, models, format_name, metadata, sequence_length=None, quantization=None):
    """Writes each model of `models` into `folder` in `format_name`, with ``deploy.json``
    and ``client.py`` (module docstring).

    Args:
        folder: the folder to write (created).
        models: ``{name: (keras_model, input_signature)}``; each is written as
            ``name.onnx`` or ``name.tflite`` (`export_onnx` / `export_litert` at batch
            size 1). `input_signature`: a list of `tf.TensorSpec` with static inner
            dimensions, or None for the model's inputs.
        format_name: ``"onnx"`` or ``"litert"``.
        metadata: a JSON-able dict the client reads (``task``, vocabularies, ...).
        sequence_length: the time dimension fixed in a LiteRT file (and in an ONNX file
            that goes through the LiteRT graph): longer inputs must be re-exported.
        quantization: None (float32), ``"dynamic_int8"`` (both formats) or
            ``"float16"`` (LiteRT), applied to every model file (`export_onnx`,
            `export_litert`); recorded in ``deploy.json``.

    Returns:
        `folder`.

    Example:

    >>> import keras, tempfile, json, os
    >>> ids = keras.Input((None,), dtype="int32", name="token_ids")
    >>> probs = keras.layers.Dense(2, activation="softmax")(
    ...     keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(9, 4)(ids)))
    >>> folder = export_bundle(tempfile.mkdtemp(), {"model": (keras.Model(ids, probs), None)},
    ...                        "onnx", {"task": "classifier"})
    >>> sorted(os.listdir(folder))
    ['client.py', 'deploy.json', 'model.onnx']
    """
    from kerasrnn.export import litert, onnx
    from kerasrnn.export._formats import FORMAT_NAMES, converter_output, model_input_specs
    from kerasrnn.export.litert import check_quantization, export_litert
    from kerasrnn.export.onnx import export_onnx

    _check_format(format_name)
    allowed = {"onnx": onnx.QUANTIZATIONS, "litert": litert.QUANTIZATIONS}[format_name]
    check_quantization(quantization, allowed, FORMAT_NAMES[format_name])
    os.makedirs(folder, exist_ok=True)
    written = {}
    for name, (model, signature) in models.items():
        specs = model_input_specs(model, signature)
        path = os.path.join(folder, name + EXTENSIONS[format_name])
        if format_name == "onnx":
            export_onnx(
                model,
                path,
                specs,
                batch_size=1,
                sequence_length=sequence_length,
                quantization=quantization,
            )
        else:
            with converter_output():
                export_litert(model, path, 1, sequence_length, specs, quantization)
        names, shapes = _runtime_inputs(path, format_name, specs)
        written[name] = {
            "file": os.path.basename(path),
            "inputs": names,
            "shapes": shapes,
            "outputs": len(model.outputs),
        }
    deploy = dict(metadata, format=format_name, quantization=quantization, models=written)
    with open(os.path.join(folder, "deploy.json"), "w", encoding="utf-8") as file:
        json.dump(deploy, file, ensure_ascii=False, indent=1)
    shutil.copyfile(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "client.py"),
        os.path.join(folder, "client.py"),
    )
    return folder
