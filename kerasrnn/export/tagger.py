"""`TextTagger`: a trained sequence tagger with its vocabularies, strings in and tags,
probabilities and entity spans out, in Python and as a SavedModel (and ids in / ids out
for onnxruntime and LiteRT); the serving-graph pieces it uses: `entity_outputs`,
`viterbi_outputs` and the `ViterbiOutputs` layer."""

import re

import keras
import numpy as np
import tensorflow as tf

from kerasrnn.data.tagging import TaggerInputs, lm_tokens
from kerasrnn.export.serving import ids_to_strings, sequence_outputs
from kerasrnn.layers.crf import crf_decode, crf_decode_n_best, crf_log_norm, crf_marginals


def to_bio(schemes):
    """Whether predictions are written back from BIOES to BIO: trained in BIOES on a
    file in another scheme (`schemes`: ``(file scheme, training scheme)``)."""
    return schemes[1] == "BIOES" and schemes[0] != "BIOES"


def output_tags(tags, schemes):
    """The tag names the model's `tags` are reported as: with `to_bio`, S-X and E-X
    become B-X and I-X."""
    if not to_bio(schemes):
        return list(tags)
    return sorted({re.sub(r"^S-", "B-", re.sub(r"^E-", "I-", t)) for t in tags})


def viterbi_outputs(potentials, mask):
    """A CRF's Viterbi path (`crf_decode`) and the posterior marginal of each of its
    tags (`crf_marginals`), 0 on padding: potentials (batch, time, tags, tags) and a
    bool mask (batch, time) -> int32 (batch, time), float (batch, time)."""
    best, _ = crf_decode(potentials, mask)
    marginal = tf.gather(crf_marginals(potentials, mask), best, batch_dims=2)
    return tf.cast(best, "int32"), tf.where(mask, marginal, 0.0)


def entity_outputs(tokens, tags):
    """The entities of tagged sentences, in the serving graph, read as conlleval (and
    `kerasrnn.metrics.entity_spans`) reads them: tokens and tags (batch, time) strings,
    "" on padding -> ``entity_start``, ``entity_end`` (exclusive) int32 (batch,
    entities), -1 on padding; ``entity_type`` and ``entity_text`` (the tokens joined by
    spaces), "" on padding."""
    tags = tf.where(tags == "", "O", tags)
    prefix = tf.strings.substr(tags, 0, 1)
    kind = tf.strings.regex_replace(tf.strings.regex_replace(tags, "^.", ""), "^[^-]*-", "")
    kind = tf.where(kind == "", "_", kind)
    rows = tf.shape(tags)[0]

    def shift(x, fill, later):
        pad = tf.fill([rows, 1], fill)
        return tf.concat([x[:, 1:], pad], 1) if later else tf.concat([pad, x[:, :-1]], 1)

    def among(x, *values):
        return tf.reduce_any(tf.stack([x == v for v in values]), axis=0)

    previous, previous_kind = shift(prefix, "O", False), shift(kind, "", False)
    following, following_kind = shift(prefix, "O", True), shift(kind, "_", True)
    chunk = tf.logical_and(prefix != "O", prefix != ".")
    starts = (
        among(prefix, "B", "S")
        | (among(previous, "E", "S", "O") & among(prefix, "E", "I"))
        | (chunk & (previous_kind != kind))
    )
    ends = (
        among(prefix, "E", "S")
        | (among(prefix, "B", "I") & among(following, "B", "S", "O"))
        | (chunk & (kind != following_kind))
    )
    start_at, end_at = tf.where(starts), tf.where(ends)
    count = tf.shape(start_at)[0]
    inside = (
        tf.cumsum(tf.cast(starts, tf.int32), axis=1)
        - tf.cumsum(tf.cast(ends, tf.int32), axis=1, exclusive=True)
    ) > 0
    entity = tf.cumsum(tf.reshape(tf.cast(starts, tf.int32), [-1])) - 1
    flat_inside = tf.reshape(inside, [-1])
    text = tf.strings.unsorted_segment_join(
        tf.boolean_mask(tf.reshape(tokens, [-1]), flat_inside),
        tf.boolean_mask(entity, flat_inside),
        count,
        separator=" ",
    )

    def per_row(values, row_ids, default):
        ragged = tf.RaggedTensor.from_value_rowids(values, row_ids, nrows=tf.cast(rows, tf.int64))
        return ragged.to_tensor(default)

    return {
        "entity_start": per_row(tf.cast(start_at[:, 1], tf.int32), start_at[:, 0], -1),
        "entity_end": per_row(tf.cast(end_at[:, 1] + 1, tf.int32), end_at[:, 0], -1),
        "entity_type": per_row(tf.gather_nd(kind, start_at), start_at[:, 0], ""),
        "entity_text": per_row(text, start_at[:, 0], ""),
    }


class TextTagger:
    """A trained tagger with its vocabularies and tag set: tokenized sentences in, tags
    and probabilities out (and, for entity tags, the entities). `serve` is the exact
    function the SavedModel exports.

    Args:
        model: a `kerasrnn.models.SequenceTagger` (or a Keras model of the same inputs
            and outputs: ``word_ids``, optionally ``char_ids`` and ``lm_ids`` in; tag
            probabilities, or a CRF's potentials, out).
        words, chars: the word and character `kerasrnn.data.Vocabulary` (chars None:
            no character input).
        tags: the tag names, in the model's output order.
        lowercase, max_chars, lm_words: as `kerasrnn.data.TaggerInputs` takes them.
        schemes: ``(file scheme, training scheme)`` of entity tags (e.g. ``("BIO",
            "BIOES")``), or ``(None, None)``; predictions of a model trained in BIOES on
            another scheme are written back in BIO (`to_bio`).
    """

    def __init__(
        self,
        model,
        words,
        chars,
        tags,
        lowercase=True,
        max_chars=50,
        lm_words=None,
        schemes=(None, None),
    ):
        self.model = model
        self.encoder = TaggerInputs(words, chars, lowercase, max_chars, lm_words)
        self.tags = list(tags)
        self.schemes = tuple(schemes)
        self.output_tags = output_tags(self.tags, self.schemes)
        # a CRF model outputs pairwise potentials (batch, time, tags, tags)
        self.crf = len(model.outputs[0].shape) == 4
        self._word_lookup = words.lookup()
        self._char_lookup = chars.lookup() if chars is not None else None
        self._lm_lookup = lm_words.lookup() if lm_words is not None else None
        self._n_best = {}  # n -> the traced serve_n_best
        self._serve = tf.function(
            self.serve, input_signature=[tf.TensorSpec([None, None], tf.string, name="tokens")]
        )

    def serve(self, tokens):
        """tokens: (batch, time) strings, right-padded with "" -> tags (batch, time),
        "" on padding; probability; lengths; for entity tags the entities
        (`entity_outputs`)."""
        tokens = tf.convert_to_tensor(tokens, tf.string)
        outputs, lengths = self._model_outputs(tokens)
        if self.crf:
            outputs = self._crf_outputs(outputs, lengths)
        else:
            outputs = sequence_outputs(outputs, self.tags, lengths)
        outputs["tags"] = self._reported(outputs["tags"])
        if self.schemes[0] is not None:
            outputs.update(entity_outputs(tokens, outputs["tags"]))
        return outputs

    def _model_outputs(self, tokens):
        """The model's output for tokens (batch, time) strings, and the lengths."""
        from kerasrnn.data.tokenizers import encode_chars, encode_tokens

        lengths = tf.reduce_sum(tf.cast(tokens != "", tf.int32), axis=1)
        keys = tf.strings.lower(tokens, encoding="utf-8") if self.encoder.lowercase else tokens
        inputs = {"word_ids": encode_tokens(keys, self._word_lookup)}
        if self._char_lookup is not None:
            chars = tf.strings.substr(tokens, 0, self.encoder.max_chars, unit="UTF8_CHAR")
            inputs["char_ids"] = encode_chars(chars, self._char_lookup)
        if self._lm_lookup is not None:
            inputs["lm_ids"] = encode_tokens(lm_tokens(tokens), self._lm_lookup)
        return self.model(inputs, training=False), lengths

    def _reported(self, tags):
        """Tag strings as reported: with `to_bio`, back to BIO (S-X -> B-X, E-X -> I-X;
        exact on the well-formed paths a constrained CRF decodes)."""
        if not to_bio(self.schemes):
            return tags
        return tf.strings.regex_replace(tf.strings.regex_replace(tags, "^S-", "B-"), "^E-", "I-")

    def serve_n_best(self, tokens, n_best):
        """The `n_best` best tag sequences of each sentence: tokens (batch, time)
        strings, "" padding -> ``tags`` (batch, n_best, time), "" on padding and on the
        ranks past a sentence's allowed paths; ``score`` (batch, n_best), best first,
        -inf past the allowed paths; ``probability`` (batch, n_best), p(tags | x); and
        ``lengths``. A CRF decodes with list Viterbi (`crf_decode_n_best`: score the
        path's potentials, probability exp(score - log Z)); a softmax tagger, whose tags
        are independent, with the same search over psi_t(i, j) = log p(y_t = j | x)
        (score = probability's log). Not a serving signature: `n_best` is fixed per
        traced graph."""
        tokens = tf.convert_to_tensor(tokens, tf.string)
        outputs, lengths = self._model_outputs(tokens)
        mask = tf.sequence_mask(lengths, tf.shape(tokens)[1])
        if self.crf:
            potentials = outputs
            log_z = crf_log_norm(potentials, mask)
        else:
            log_p = tf.math.log(tf.maximum(tf.cast(outputs, tf.float32), 1e-30))
            potentials = log_p[:, :, None, :] + tf.zeros_like(log_p)[:, :, :, None]
            log_z = tf.zeros_like(log_p[:, 0, 0])
        best, score = crf_decode_n_best(potentials, n_best, mask)
        found = tf.logical_and(mask[:, None, :], tf.math.is_finite(score)[:, :, None])
        return {
            "tags": tf.where(found, self._reported(ids_to_strings(best, self.tags)), ""),
            "score": score,
            "probability": tf.exp(score - log_z[:, None]),
            "lengths": tf.cast(lengths, tf.int32),
        }

    def predict_n_best(self, sentences, n_best, batch_size=128):
        """The `n_best` best tag sequences of tokenized sentences (lists of str), best
        first (`serve_n_best`): per sentence a list of ``{"tags": [...], "score": s,
        "probability": p}`` (with ``"entities"`` for entity tags, as `predict` gives
        them), as long as `n_best` or the number of allowed tag sequences if smaller.
        n_best = 1 gives `predict`'s tags."""
        from kerasrnn.metrics.entities import entity_spans
        from kerasrnn.validation import check_int

        n_best = check_int("n_best", n_best)
        if n_best not in self._n_best:
            self._n_best[n_best] = tf.function(
                lambda tokens: self.serve_n_best(tokens, n_best),
                input_signature=[tf.TensorSpec([None, None], tf.string, name="tokens")],
            )
        results = []
        for start in range(0, len(sentences), batch_size):
            batch = [list(s) for s in sentences[start : start + batch_size]]
            width = max([len(s) for s in batch] + [1])
            out = self._n_best[n_best]([s + [""] * (width - len(s)) for s in batch])
            tags, scores = out["tags"].numpy(), out["score"].numpy()
            probabilities = out["probability"].numpy()
            for i, sentence in enumerate(batch):
                candidates = []
                for rank in range(n_best):
                    if not np.isfinite(scores[i, rank]):
                        break
                    found = {
                        "tags": [t.decode("utf-8") for t in tags[i, rank, : len(sentence)]],
                        "score": float(scores[i, rank]),
                        "probability": float(probabilities[i, rank]),
                    }
                    if self.schemes[0] is not None:
                        found["entities"] = [
                            {"text": " ".join(sentence[a:b]), "type": kind, "start": a, "end": b}
                            for a, b, kind in entity_spans(found["tags"])
                        ]
                    candidates.append(found)
                results.append(candidates)
        return results

    def _crf_outputs(self, potentials, lengths):
        """Viterbi tags and their posterior marginals, in the serving graph."""
        mask = tf.sequence_mask(lengths, tf.shape(potentials)[1])
        best, marginal = viterbi_outputs(potentials, mask)
        return {
            "tags": tf.where(mask, ids_to_strings(best, self.tags), ""),
            "probability": marginal,
            "lengths": tf.cast(lengths, tf.int32),
        }

    def serve_text(self, sentences):
        """Whitespace-tokenized sentences (batch,) -> the outputs of `serve`."""
        from kerasrnn.data.tokenizers import split_words

        return self.serve(split_words(sentences).to_tensor(default_value=""))

    def predict(self, sentences, batch_size=128):
        """Tags and their probabilities for tokenized sentences (lists of str); an
        empty sentence gets no tags, unknown words get tags from their characters."""
        results = []
        for start in range(0, len(sentences), batch_size):
            batch = [list(s) for s in sentences[start : start + batch_size]]
            width = max([len(s) for s in batch] + [1])
            out = self._serve([s + [""] * (width - len(s)) for s in batch])
            tags, probs = out["tags"].numpy(), out["probability"].numpy()
            for i, sentence in enumerate(batch):
                n = len(sentence)
                results.append(
                    {
                        "tags": [t.decode("utf-8") for t in tags[i, :n]],
                        "probabilities": [float(p) for p in probs[i, :n]],
                    }
                )
                if "entity_start" in out:
                    results[-1]["entities"] = [
                        {
                            "text": text.decode("utf-8"),
                            "type": kind.decode("utf-8"),
                            "start": int(start),
                            "end": int(end),
                        }
                        for start, end, kind, text in zip(
                            *(
                                out[k].numpy()[i]
                                for k in (
                                    "entity_start",
                                    "entity_end",
                                    "entity_type",
                                    "entity_text",
                                )
                            )
                        )
                        if start >= 0
                    ]
        return results

    def export(self, path):
        """Writes a SavedModel with two signatures: ``serving_default(tokens:
        string[batch, time], "" padding)`` and ``tag_text(text: string[batch])``
        (whitespace-tokenized), both -> tags, probability, lengths and, for entity
        tags, entity_start, entity_end, entity_type, entity_text."""
        from kerasrnn.export.savedmodel import export_saved_model

        lookups = [
            lookup
            for lookup in (self._word_lookup, self._char_lookup, self._lm_lookup)
            if lookup is not None
        ]
        return export_saved_model(
            path,
            self.model,
            {
                "serving_default": (
                    self.serve,
                    [tf.TensorSpec([None, None], tf.string, name="tokens")],
                ),
                "tag_text": (self.serve_text, [tf.TensorSpec([None], tf.string, name="text")]),
            },
            track=lookups,
        )

    def export_runtime(self, path, format_name, sequence_length=64, quantization=None):
        """Writes the tagger for onnxruntime or LiteRT (`kerasrnn.export.export_bundle`):
        word ids (1, time) and character ids (1, time, max_chars) in; the tag probabilities
        out, or with a CRF the Viterbi path and each tag's posterior marginal (computed in
        the graph, as `serve` does); with the vocabularies, the tags and the numpy-only
        ``client.py`` (tags and probabilities; no entities). `quantization`: the weights, as
        `export_bundle` takes it."""
        from kerasrnn.export.bundle import export_bundle

        if self._lm_lookup is not None:
            raise ValueError(
                f"a tagger with biLM features cannot be exported to {format_name!r} (the "
                "biLM's number normalisation is a string regex): export a SavedModel."
            )
        word_ids = keras.Input((None,), dtype="int32", name="word_ids")
        inputs, feed = [word_ids], {"word_ids": word_ids}
        signature = [tf.TensorSpec([None, None], tf.int32, name="word_ids")]
        vocabularies = {"words": self.encoder.words.tokens}
        if self._char_lookup is not None:
            chars = self.encoder.max_chars
            char_ids = keras.Input((None, chars), dtype="int32", name="char_ids")
            inputs.append(char_ids)
            feed["char_ids"] = char_ids
            signature.append(tf.TensorSpec([None, None, chars], tf.int32, name="char_ids"))
            vocabularies["chars"] = self.encoder.chars.tokens
        outputs = self.model(feed, training=False)
        if self.crf:
            outputs = ViterbiOutputs(name="viterbi")(outputs, word_ids)
        model = keras.Model(inputs, outputs, name="tagger_ids")
        metadata = {
            "task": "tagger",
            "lowercase": self.encoder.lowercase,
            "max_chars": self.encoder.max_chars,
            "crf": self.crf,
            "bio": to_bio(self.schemes),
            "tags": self.tags,
            "vocabularies": vocabularies,
        }
        return export_bundle(
            path,
            {"model": (model, signature)},
            format_name,
            metadata,
            sequence_length,
            quantization,
        )


class ViterbiOutputs(keras.layers.Layer):
    """A CRF tagger's outputs for a runtime without strings: `viterbi_outputs` of the
    potentials, the padding read from the word ids (0)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True  # takes the potentials' mask; returns none

    def call(self, potentials, word_ids):
        return list(viterbi_outputs(potentials, word_ids != 0))

    def compute_mask(self, inputs, mask=None):
        return None
