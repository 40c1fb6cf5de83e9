"""The writers of a `SequenceTagger`: its SavedModel signatures (tokens or sentences in,
tags, probabilities and entities out: the task's own `text_outputs`) and its
onnxruntime / LiteRT bundle (ids in, tag ids and probabilities out, the CRF's Viterbi
path computed in the graph: `ViterbiOutputs`)."""

import keras

from kerasrnn.export.bundle import export_bundle


def tagger_endpoints(task):
    """``serving_default(tokens: string[batch, time], "" padding)`` and
    ``tag_text(text: string[batch])`` (whitespace-tokenized), both -> tags,
    probability, lengths and, for entity tags, entity_start, entity_end, entity_type,
    entity_text (`SequenceTagger.text_outputs`)."""
    import tensorflow as tf

    return {
        "serving_default": (
            task.text_outputs,
            [tf.TensorSpec([None, None], tf.string, name="tokens")],
        ),
        "tag_text": (
            task.text_outputs_of_sentences,
            [tf.TensorSpec([None], tf.string, name="text")],
        ),
    }


class ViterbiOutputs(keras.layers.Layer):
    """A tagger's readable ids for a runtime without strings: the best tag ids and each
    one's probability (`SequenceTagger.decode_tags`: the CRF's Viterbi path and its
    posterior marginals), the padding read from the word ids (0)."""

    def __init__(self, tagger, **kwargs):
        super().__init__(**kwargs)
        self.decode_tags = tagger.decode_tags  # (a method: the tagger is not a sublayer)
        self.supports_masking = True  # takes the potentials' mask; returns none

    def call(self, potentials, word_ids):
        mask = word_ids != 0
        best, probability = self.decode_tags(potentials, mask)
        return [best, keras.ops.where(mask, probability, 0.0)]

    def compute_mask(self, inputs, mask=None):
        return None


def tagger_bundle(task, path, format_name, sequence_length=64, quantization=None):
    """The tagger for onnxruntime or LiteRT (`export_bundle`): word ids (batch, time)
    and character ids (batch, time, max_chars) in; the tag probabilities out, or with a
    CRF the Viterbi path and each tag's posterior marginal (computed in the graph, as
    `text_outputs` does); with the vocabularies, the tags and the numpy-only
    ``client.py`` (tags and probabilities; no entities)."""
    import tensorflow as tf

    preprocessor = task.preprocessor
    if preprocessor.lm_words is not None:
        raise ValueError(
            f"a tagger with biLM features cannot be exported to {format_name!r} (the "
            "biLM's number normalisation is a string regex): export a SavedModel."
        )
    word_ids = keras.Input((None,), dtype="int32", name="word_ids")
    inputs, feed = [word_ids], {"word_ids": word_ids}
    signature = [tf.TensorSpec([None, None], tf.int32, name="word_ids")]
    vocabularies = {"words": preprocessor.words.tokens}
    if preprocessor.chars is not None:
        chars = preprocessor.max_chars
        char_ids = keras.Input((None, chars), dtype="int32", name="char_ids")
        inputs.append(char_ids)
        feed["char_ids"] = char_ids
        signature.append(tf.TensorSpec([None, None, chars], tf.int32, name="char_ids"))
        vocabularies["chars"] = preprocessor.chars.tokens
    outputs = task(feed, training=False)
    if task.crf:
        outputs = ViterbiOutputs(task, name="viterbi")(outputs, word_ids)
    model = keras.Model(inputs, outputs, name="tagger_ids")
    metadata = {
        "task": "tagger",
        "lowercase": preprocessor.lowercase,
        "max_chars": preprocessor.max_chars,
        "crf": task.crf,
        "bio": preprocessor.bio_output,
        "tags": task.tags,
        "vocabularies": vocabularies,
    }
    models = {"model": (model, signature)}
    return export_bundle(path, models, format_name, metadata, sequence_length, quantization)
