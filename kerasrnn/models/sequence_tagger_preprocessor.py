"""`SequenceTaggerPreprocessor`: tokenized sentences to a `SequenceTagger`'s word,
character and biLM ids, and its tag ids back to tags, probabilities and the entity
spans they spell (`entity_outputs`, conlleval's reading, as TensorFlow ops)."""

import re

import keras
import numpy as np

from kerasrnn.models.preprocessor import Preprocessor, as_text, unpadded, vocabulary_of
from kerasrnn.validation import check_int


def entity_outputs(tokens, tags):
    """The entities of tagged sentences, as TensorFlow ops, read as conlleval (and
    `kerasrnn.metrics.entity_spans`) reads them: tokens and tags (batch, time) strings,
    "" on padding -> ``entity_start``, ``entity_end`` (exclusive) int32 (batch,
    entities), -1 on padding; ``entity_type`` and ``entity_text`` (the tokens joined by
    spaces), "" on padding."""
    import tensorflow as tf

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


ENTITY_KEYS = ("entity_start", "entity_end", "entity_type", "entity_text")


def entity_results(outputs, row):
    """Row `row` of `entity_outputs` (NumPy) -> ``[{"text", "type", "start", "end"}]``."""
    start, end, kind, text = (outputs[key][row] for key in ENTITY_KEYS)
    return [
        {"text": t.decode("utf-8"), "type": k.decode("utf-8"), "start": int(a), "end": int(b)}
        for a, b, k, t in zip(start, end, kind, text)
        if a >= 0
    ]


@keras.saving.register_keras_serializable(package="kerasrnn")
class SequenceTaggerPreprocessor(Preprocessor):
    """Tokenized sentences -> a `kerasrnn.models.SequenceTagger`'s inputs, and its tag
    ids -> tags, their probabilities and, for entity tags, the entities.

    Inputs made (each padded with 0): ``word_ids`` (batch, time), each token looked up
    in `words` after lower-casing with `lowercase` (Unicode aware; unknown ->
    ``[UNK]``); with `chars`, ``char_ids`` (batch, time, chars), each token's first
    `max_chars` characters, case kept; with `lm_words`, ``lm_ids`` (batch, time), each
    token as the Penn Treebank LM text writes it (`kerasrnn.data.tagging.lm_tokens`:
    lower-cased, a number "N") looked up in the biLM's vocabulary.

    A sentence is a string (split on whitespace) or a list of tokens; `predict` takes
    one or a list of them. With `bio_output`, tags trained in BIOES are reported in BIO
    (S-X -> B-X, E-X -> I-X; exact on the well-formed paths a constrained CRF decodes).

    Args:
        words: the word `kerasrnn.data.Vocabulary` (or its token list).
        chars: the character vocabulary, or None (no character input).
        lm_words: the biLM's vocabulary, or None (no biLM input).
        lowercase: lower-case the words before their lookup (characters keep case).
        max_chars: characters of a token at most (longer tokens are cut).
        bio_output: report BIOES tags as BIO.

    Example:

    >>> from kerasrnn.data import Vocabulary
    >>> preprocessor = SequenceTaggerPreprocessor(
    ...     Vocabulary(["the", "cat"]), Vocabulary(list("thecaT")), lowercase=True)
    >>> inputs = preprocessor.encode([["The", "cat"], ["a"]])
    >>> inputs["word_ids"].numpy().tolist(), inputs["char_ids"].shape.as_list()
    ([[4, 5], [1, 0]], [2, 2, 3])
    """

    def __init__(
        self,
        words,
        chars=None,
        lm_words=None,
        lowercase=True,
        max_chars=50,
        bio_output=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.words = vocabulary_of(words, "words")
        if self.words is None:
            raise ValueError("`words` is required: the word Vocabulary the model was trained with.")
        self.chars = vocabulary_of(chars, "chars")
        self.lm_words = vocabulary_of(lm_words, "lm_words")
        self.lowercase = bool(lowercase)
        self.max_chars = check_int("max_chars", max_chars)
        self.bio_output = bool(bio_output)
        for name in ("words", "chars", "lm_words"):
            if getattr(self, name) is not None:
                self.lookup(getattr(self, name), name)

    # ---- text in -------------------------------------------------------------------------
    def examples(self, x):
        def sentence(item, index):
            if isinstance(item, (str, bytes)) or getattr(item, "ndim", None) == 0:
                return as_text(item).split()
            if isinstance(item, (list, tuple)) and all(
                isinstance(t, (str, bytes, np.str_)) for t in item
            ):
                return [as_text(t) for t in item]
            raise TypeError(f"sentence {index} is neither a string nor a list of tokens: {item!r}.")

        if isinstance(x, (str, bytes)):
            return [sentence(x, 0)], True
        if hasattr(x, "numpy"):
            x = x.numpy()
        if isinstance(x, np.ndarray):
            x = x.tolist()
        if not isinstance(x, (list, tuple)):
            raise TypeError(
                "give a sentence (a string, split on whitespace), or a list of sentences "
                f"(strings, or lists of tokens); got {type(x).__name__}."
            )
        return [sentence(item, i) for i, item in enumerate(x)], False

    def length(self, example):
        return len(example)

    def tokens_tensor(self, sentences):
        """Token lists -> a dense (batch, time) string tensor, "" on padding."""
        import tensorflow as tf

        width = max([len(s) for s in sentences] + [1])
        return tf.constant([list(s) + [""] * (width - len(s)) for s in sentences], tf.string)

    def encode(self, x):
        """Tokens (batch, time) strings, "" on padding (a dense tensor, a ragged one, or
        a list of token lists) -> ``{"word_ids", "char_ids", "lm_ids"}`` (the inputs the
        model takes)."""
        import tensorflow as tf

        from kerasrnn.data.tagging import lm_tokens
        from kerasrnn.data.tokenizers import encode_chars, encode_tokens

        if isinstance(x, tf.RaggedTensor):
            x = x.to_tensor("")
        elif isinstance(x, (list, tuple)):
            x = self.tokens_tensor(x)
        tokens = tf.convert_to_tensor(x, tf.string)
        keys = tf.strings.lower(tokens, encoding="utf-8") if self.lowercase else tokens
        inputs = {"word_ids": encode_tokens(keys, self.lookup(self.words, "words"))}
        if self.chars is not None:
            cut = tf.strings.substr(tokens, 0, self.max_chars, unit="UTF8_CHAR")
            inputs["char_ids"] = encode_chars(cut, self.lookup(self.chars, "chars"))
        if self.lm_words is not None:
            lm = encode_tokens(lm_tokens(tokens), self.lookup(self.lm_words, "lm_words"))
            inputs["lm_ids"] = lm
        return inputs

    def id_lists(self, sentences, chunk=2048):
        """Token lists -> ``{"word_ids", "char_ids", "lm_ids"}`` as lists, per sentence
        (and per token for the characters) as `encode` gives them, without padding."""
        columns: dict = {}
        for start in range(0, len(sentences), chunk):
            batch = [list(s) for s in sentences[start : start + chunk]]
            lengths = [len(s) for s in batch]
            for name, ids in self.encode(batch).items():
                columns.setdefault(name, []).extend(unpadded(ids.numpy(), lengths))
        return columns

    def dataset(
        self, sentences, tags=None, batch_size=32, shuffle=False, seed=None, bucket_boundaries=None
    ):
        """Token lists (and their tag ids, a list per sentence) as a `tf.data.Dataset`
        of padded, optionally shuffled and length-bucketed batches with per-token
        weights (`kerasrnn.data.sequence_dataset`), for `SequenceTagger.fit`."""
        from kerasrnn.data import sequence_dataset

        return sequence_dataset(
            self.id_lists(sentences),
            tags,
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
            bucket_boundaries=bucket_boundaries or None,
            length_key="word_ids",
        )

    # ---- tags out ------------------------------------------------------------------------
    def reported(self, tags):
        """Tag strings as reported: with `bio_output`, BIOES written as BIO."""
        if not self.bio_output:
            return tags
        import tensorflow as tf

        return tf.strings.regex_replace(tf.strings.regex_replace(tags, "^S-", "B-"), "^E-", "I-")

    def reported_tag(self, tag):
        """One tag name as `reported` writes it (a Python string)."""
        if not self.bio_output:
            return tag
        return re.sub(r"^S-", "B-", re.sub(r"^E-", "I-", tag))

    def reported_names(self, tags):
        """The tag names `reported` gives for a model's `tags`, each once, sorted when
        BIOES is written as BIO (Python strings)."""
        if not self.bio_output:
            return list(tags)
        return sorted({self.reported_tag(t) for t in tags})

    def outputs(self, tokens, best, probability, tags):
        """The tagger's readable outputs (TensorFlow ops): `tokens` (batch, time)
        strings ("" padding), the best tag ids and each one's probability (batch,
        time), the model's tag names -> ``tags`` (batch, time) ("" on padding),
        ``probability`` (0 on padding), ``lengths`` and, for entity tags, the
        `entity_outputs`."""
        import tensorflow as tf

        from kerasrnn.layers.tag_schemes import is_entity_tags

        mask = tokens != ""
        names = tf.gather(tf.constant(list(tags), tf.string), tf.cast(best, tf.int32))
        reported = self.reported(tf.where(mask, names, ""))
        outputs = {
            "tags": reported,
            "probability": tf.where(mask, tf.cast(probability, tf.float32), 0.0),
            "lengths": tf.reduce_sum(tf.cast(mask, tf.int32), axis=1),
        }
        if is_entity_tags(tags):
            outputs.update(entity_outputs(tokens, reported))
        return outputs

    def results(self, outputs, sentences):
        """`outputs` (NumPy) of `sentences` -> per sentence ``{"tokens", "tags",
        "probabilities"}`` and, for entity tags, ``"entities"`` (``[{"text", "type",
        "start", "end"}]``)."""
        outputs = {k: keras.ops.convert_to_numpy(v) for k, v in outputs.items()}
        rows = []
        for i, sentence in enumerate(sentences):
            n = len(sentence)
            row = {
                "tokens": list(sentence),
                "tags": [t.decode("utf-8") for t in outputs["tags"][i, :n]],
                "probabilities": [float(p) for p in outputs["probability"][i, :n]],
            }
            if "entity_start" in outputs:
                row["entities"] = entity_results(outputs, i)
            rows.append(row)
        return rows

    def get_config(self):
        return {
            **super().get_config(),
            "words": self.words.tokens,
            "chars": None if self.chars is None else self.chars.tokens,
            "lm_words": None if self.lm_words is None else self.lm_words.tokens,
            "lowercase": self.lowercase,
            "max_chars": self.max_chars,
            "bio_output": self.bio_output,
        }
