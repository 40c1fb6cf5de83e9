"""SavedModel export with string-in / string-out serving signatures: the writer
(`kerasrnn.export.savedmodel`), the serving outputs (`kerasrnn.export.serving`) and the
string-level seq2seq (`kerasrnn.export.translator`).

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
function may run a decoding loop). `TextTranslator` does it for a
`kerasrnn.seq2seq.Seq2Seq`: the string-level decoding as a Python object, each call with a
`kerasrnn.decoding` strategy: translate lists of strings (n-best with scores), get the
alignments decoding returned, and `export` a SavedModel (a one-best and an n-best
signature, strings in and out). `TextGenerator` does the same for a
`kerasrnn.models.LanguageModel`: prompts in, continuations out, in Python, as a SavedModel
(with a streaming `step` signature) and for the runtimes below.

`TextTagger` does the same for a `kerasrnn.models.SequenceTagger` with its vocabularies:
tokenized sentences in, tags, probabilities and (for entity tags) entity spans out
(`entity_outputs`), from Python or a SavedModel.

For the runtimes beside TensorFlow: `export_onnx` writes an ONNX file for onnxruntime
(Keras' exporter, dynamic batch and length; standard LSTM and GRU layers as ONNX's own
`LSTM` / `GRU` operators, `kerasrnn.export.onnx_recurrent`) and `export_litert` a
LiteRT flatbuffer of builtin ops only (at a fixed input shape; standard LSTM layers as
LiteRT's fused LSTM kernel, `kerasrnn.export.litert_lstm`, other time loops as a builtin
WHILE); both take any model of the package's layers (`pip install
kerasrnn[deploy]` for the runtimes).
`kerasrnn.export.bundle.export_bundle` writes a recipe's ids-in / ids-out graphs with
``deploy.json`` (vocabularies, labels, tokenisation) and ``client.py``
(`kerasrnn/export/client.py`: the reference client, numpy and the runtime only, copied
beside the model so that it runs without TensorFlow, Keras or kerasrnn).
"""

from kerasrnn.export.language_model import TextGenerator
from kerasrnn.export.litert import export_litert
from kerasrnn.export.onnx import export_onnx
from kerasrnn.export.savedmodel import export_saved_model
from kerasrnn.export.serving import class_outputs, ids_to_strings, sequence_outputs
from kerasrnn.export.tagger import TextTagger, entity_outputs
from kerasrnn.export.translator import TOKENIZERS, TextTranslator

__all__ = [
    "export_saved_model",
    "export_onnx",
    "export_litert",
    "TextTagger",
    "TextTranslator",
    "TextGenerator",
    "TOKENIZERS",
    "class_outputs",
    "sequence_outputs",
    "entity_outputs",
    "ids_to_strings",
]
