"""The writers of a `TextClassifier` and a `PairClassifier`: their SavedModel signatures
(sentences in, judgments out, the task's own `text_outputs`) and their onnxruntime /
LiteRT bundles (token ids in, probabilities or a score out, with ``deploy.json``)."""

import keras

from kerasrnn.export.bundle import export_bundle
from kerasrnn.models.text_classifier_preprocessor import label_names


def classifier_endpoints(task):
    """``serving_default(text: string[batch])`` -> label, probability, probabilities,
    labels (`TextClassifier.text_outputs`)."""
    import tensorflow as tf

    signature = [tf.TensorSpec([None], tf.string, name="text")]
    return {"serving_default": (task.text_outputs, signature)}


def pair_endpoints(task):
    """``serving_default(sentence_a, sentence_b: string[batch])`` -> a judgment (label,
    probability, probabilities, labels) or a score (`PairClassifier.text_outputs`)."""
    import tensorflow as tf

    signature = [
        tf.TensorSpec([None], tf.string, name="sentence_a"),
        tf.TensorSpec([None], tf.string, name="sentence_b"),
    ]
    return {"serving_default": (task.text_outputs, signature)}


def classifier_bundle(task, path, format_name, sequence_length=64, quantization=None):
    """The classifier for onnxruntime or LiteRT (`export_bundle`): token ids (batch,
    time) in, class probabilities out, with the vocabulary, the labels and the
    numpy-only ``client.py`` that predicts as `predict` does."""
    preprocessor = task.preprocessor
    metadata = {
        "task": "classifier",
        "lowercase": preprocessor.lowercase,
        "labels": label_names(preprocessor.labels, task.num_classes),
        "vocabularies": {"words": preprocessor.vocabulary.tokens},
    }
    models = {"model": (task, None)}
    return export_bundle(path, models, format_name, metadata, sequence_length, quantization)


def pair_bundle(task, path, format_name, sequence_length=64, quantization=None):
    """The pair model for onnxruntime or LiteRT (`export_bundle`): the two sentences'
    token ids in, the judgment's probabilities or the score out, with the vocabulary,
    the labels and the numpy-only ``client.py``."""
    preprocessor = task.preprocessor
    # the runtimes take a list of inputs and one output: the dict-input model is
    # wrapped, and a distribution head keeps only its score, as `text_outputs` does
    a = keras.Input((None,), dtype="int32", name="sentence_a")
    b = keras.Input((None,), dtype="int32", name="sentence_b")
    out = task({"sentence_a": a, "sentence_b": b})
    if isinstance(out, dict):
        out = out["score"]
    metadata = {
        "task": "pair_classifier",
        "lowercase": preprocessor.lowercase,
        "max_length": preprocessor.max_length,
        "labels": None
        if task.head != "classes"
        else label_names(preprocessor.labels, task.num_classes),
        "vocabularies": {"words": preprocessor.vocabulary.tokens},
    }
    models = {"model": (keras.Model([a, b], out, name="pair_runtime"), None)}
    return export_bundle(path, models, format_name, metadata, sequence_length, quantization)
