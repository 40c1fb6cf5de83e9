"""`export_task`: a library task with its preprocessor as a SavedModel that takes and
returns strings, or as an onnxruntime / LiteRT bundle (ids-in / ids-out graphs,
``deploy.json`` and the numpy-only reference client): each task's writer, chosen by
the task's class."""

import keras

from kerasrnn.export.bundle import FORMATS
from kerasrnn.export.classifier import (
    classifier_bundle,
    classifier_endpoints,
    pair_bundle,
    pair_endpoints,
)
from kerasrnn.export.language_model import language_model_bundle, language_model_endpoints
from kerasrnn.export.savedmodel import export_saved_model
from kerasrnn.export.tagger import tagger_bundle, tagger_endpoints
from kerasrnn.export.translator import translator_endpoints
from kerasrnn.export.translator_runtime import translator_bundle
from kerasrnn.models import LanguageModel, PairClassifier, SequenceTagger, TextClassifier
from kerasrnn.seq2seq import Seq2Seq


def export_task(
    task,
    path,
    format="saved_model",
    strategy=None,
    n_best_strategy=None,
    max_length=None,
    sequence_length=64,
    quantization=None,
    readout_dtype="float32",
    verbose=False,
):
    """Writes `task` (a `kerasrnn.models` task with its preprocessor) for serving.

    ``format="saved_model"``: a plain TensorFlow SavedModel whose signatures take raw
    strings and return strings (it loads with ``tf.saved_model.load`` in a process
    without kerasrnn or Keras; a subword translator needs ``import tensorflow_text``
    first): the task's own text path (`text_outputs`, `decode_texts`) traced. Each
    task's signatures:

    * `TextClassifier`: ``serving_default(text)`` -> label, probability, probabilities,
      labels;
    * `PairClassifier`: ``serving_default(sentence_a, sentence_b)`` -> a judgment or a
      score;
    * `SequenceTagger`: ``serving_default(tokens)`` and ``tag_text(text)`` -> tags,
      probability, lengths (and the entities of entity tags);
    * `LanguageModel`: ``serving_default(prompt)`` -> continuation, and the streaming
      ``step``;
    * `Seq2Seq`: ``translate`` (also ``serving_default``), ``translate_n_best``, and
      the streaming ``encode`` and ``decoder_step``.

    ``"onnx"`` / ``"litert"``: a folder with the ids-in / ids-out model file(s),
    ``deploy.json`` (the vocabularies, labels or tags, the tokenisation) and
    ``client.py`` (`kerasrnn.export.bundle.export_bundle`).

    Args:
        task: a `TextClassifier`, `PairClassifier`, `SequenceTagger`, `LanguageModel`
            or `kerasrnn.seq2seq.Seq2Seq` with a preprocessor.
        path: the folder to write.
        format: "saved_model", "onnx" or "litert".
        strategy: a generative task's decoding strategy (default its sampler): the
            translator's ``translate`` signature, the language model's generation; the
            runtimes' bundles hold greedy search and, when it is one, this beam search.
        n_best_strategy: the translator's ``translate_n_best`` strategy (default
            ``BeamSearch(4)``).
        max_length: a generative task's tokens generated at most (default its own).
        sequence_length: the time dimension of a LiteRT file (fixed shapes) and of an
            ONNX file that goes through the LiteRT graph.
        quantization: None (float32), "dynamic_int8" (both formats) or "float16"
            (LiteRT), as `export_bundle` takes it.
        readout_dtype: the translator SavedModel's readout precision (`generate`'s).
        verbose: let Keras print the saved variables (SavedModel).

    Returns:
        `path`.
    """
    if format not in FORMATS:
        raise ValueError(
            f"`format` must be one of {', '.join(map(repr, FORMATS))}; got {format!r}."
        )
    if getattr(task, "preprocessor", None) is None:
        raise ValueError(
            f"{type(task).__name__} has no preprocessor: the export takes and gives text, "
            "so build the task with `preprocessor=` (or export the network itself with "
            "kerasrnn.export.export_onnx / export_litert / model.export)."
        )
    if keras.backend.backend() != "tensorflow":  # the text path is TensorFlow ops
        raise ValueError(
            f"export_task writes TensorFlow graphs; got the {keras.backend.backend()!r} "
            "backend: run the export with KERAS_BACKEND=tensorflow (a run trained on any "
            "backend loads there)."
        )
    if isinstance(task, LanguageModel):  # trained on stateful windows: served row by row
        task = task.stateless()
    if format == "saved_model":
        endpoints = _endpoints(task, strategy, n_best_strategy, max_length, readout_dtype)
        track = task.preprocessor.resources()
        return export_saved_model(path, task, endpoints, track=track, verbose=verbose)
    if isinstance(task, Seq2Seq):
        return translator_bundle(task, path, format, strategy, quantization, max_length)
    if isinstance(task, LanguageModel):
        return language_model_bundle(
            task, path, format, sequence_length, quantization, strategy, max_length
        )
    writers = {
        TextClassifier: classifier_bundle,
        PairClassifier: pair_bundle,
        SequenceTagger: tagger_bundle,
    }
    return writers[_kind(task, writers)](task, path, format, sequence_length, quantization)


def _endpoints(task, strategy, n_best_strategy, max_length, readout_dtype):
    if isinstance(task, Seq2Seq):
        return translator_endpoints(task, strategy, n_best_strategy, max_length, readout_dtype)
    if isinstance(task, LanguageModel):
        return language_model_endpoints(task, strategy, max_length)
    writers = {
        TextClassifier: classifier_endpoints,
        PairClassifier: pair_endpoints,
        SequenceTagger: tagger_endpoints,
    }
    return writers[_kind(task, writers)](task)


def _kind(task, writers):
    for kind in writers:
        if isinstance(task, kind):
            return kind
    raise TypeError(
        "`task` must be a kerasrnn.models TextClassifier, PairClassifier, SequenceTagger, "
        f"LanguageModel or Seq2Seq; got {type(task).__name__}."
    )
