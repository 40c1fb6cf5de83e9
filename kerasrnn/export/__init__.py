"""Serving: a library task as a SavedModel that takes raw strings, or as ONNX and LiteRT
files with a numpy-only reference client; the writers only, the text handling being
the task's preprocessor's (`kerasrnn.models`).

* `export_task(task, path, format)` -- the whole task: its preprocessor, network and
  decoding as string-in / string-out SavedModel signatures (plain TensorFlow:
  ``tf.saved_model.load(path).signatures["serving_default"]`` works in a process that
  has never imported kerasrnn or Keras), or for onnxruntime / LiteRT as ids-in /
  ids-out graphs with ``deploy.json`` (vocabularies, labels, tokenisation) and
  ``client.py`` (`kerasrnn/export/client.py`, copied beside the model so that it runs
  without TensorFlow, Keras or kerasrnn);
* `export_saved_model(path, model, endpoints, track)` -- any Keras model and the
  functions around it as a SavedModel;
* `export_onnx` -- an ONNX file for onnxruntime (Keras' exporter, dynamic batch and
  length; standard LSTM and GRU layers as ONNX's own `LSTM` / `GRU` operators,
  `kerasrnn.export.onnx_recurrent`);
* `export_litert` -- a LiteRT flatbuffer of builtin ops only (at a fixed input shape;
  standard LSTM layers as LiteRT's fused LSTM kernel, `kerasrnn.export.litert_lstm`,
  other time loops as a builtin WHILE). ``pip install kerasrnn[deploy]`` for the
  runtimes.

Typical use::

    tagger = kerasrnn.models.SequenceTagger.from_preset("runs/ner")
    kerasrnn.export.export_task(tagger, "runs/ner/saved_model")
    kerasrnn.export.export_task(tagger, "runs/ner/onnx", format="onnx")
"""

from kerasrnn.export.litert import export_litert
from kerasrnn.export.onnx import export_onnx
from kerasrnn.export.savedmodel import export_saved_model
from kerasrnn.export.tasks import export_task

__all__ = ["export_litert", "export_onnx", "export_saved_model", "export_task"]
