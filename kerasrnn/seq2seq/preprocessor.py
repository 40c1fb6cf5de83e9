"""`Seq2SeqPreprocessor`: source texts to a `Seq2Seq`'s ids, and its generated ids back
to translations (copied source words and replaced unknown words included)."""

import keras

from kerasrnn.data.text import TextSide
from kerasrnn.models.preprocessor import Preprocessor, string_examples
from kerasrnn.serialization import deserialize
from kerasrnn.special_tokens import END_ID, PAD_ID, START_ID, UNK_ID


def _side(side, name):
    side = deserialize(side)
    if not isinstance(side, TextSide):
        raise ValueError(
            f"`{name}` must be a kerasrnn.data.text.TextSide (a vocabulary and its "
            f"tokenizer, e.g. TextSide(vocabulary, 'word')); got {type(side).__name__}."
        )
    return side


@keras.saving.register_keras_serializable(package="kerasrnn")
class Seq2SeqPreprocessor(Preprocessor):
    """Source texts -> a `kerasrnn.seq2seq.Seq2Seq`'s source ids, and its generated ids
    -> target texts, each side by its `kerasrnn.data.text.TextSide` (a tokenizer kind:
    words, characters or learned subwords, lower-casing and the vocabulary).

    A source is tokenized as the side's kind does (tokens its vocabulary lacks ->
    ``[UNK]``), cut to the model's `max_source_length` tokens (longer text is
    truncated, not an error) and padded with ``[PAD]`` (0). An output keeps its tokens
    before ``[END]``, ``[START]`` and ``[PAD]`` dropped, and is joined back into text
    by the target side (`kerasrnn.data.text.detokenize_graph`). An empty or blank
    source translates to "" (score 0), not to the model's answer for an all-padding
    source. With copy attention (a `CopyReadout`), an id V + i past the target
    vocabulary is the source token at position i; with `replace_unk`, an output
    ``[UNK]`` becomes the source token it attended to most
    (`kerasrnn.decoding.replace_unk`).

    Args:
        source: the source `TextSide`.
        target: the target `TextSide`.
        replace_unk: replace output ``[UNK]`` tokens by the most attended source token
            (needs the model's `max_source_length`).

    Example:

    >>> from kerasrnn.data.text import TextSide
    >>> side = TextSide.build(["a man runs .", "a dog"], kind="word")
    >>> ids, tokens, blank = Seq2SeqPreprocessor(side, side).encode(["A man runs!", " "])
    >>> ids.numpy().tolist(), blank.numpy().tolist()
    ([[1, 7, 8, 1], [0, 0, 0, 0]], [False, True])
    """

    def __init__(self, source, target, replace_unk=False, **kwargs):
        super().__init__(**kwargs)
        self.source, self.target = _side(source, "source"), _side(target, "target")
        self.replace_unk = bool(replace_unk)
        self.lookup(self.source.vocabulary, "source")

    def examples(self, x):
        return string_examples(x, "a source text")

    def length(self, example):
        return len(example.split())

    def resources(self):
        # the sides' subword tokenizers (a SentencePiece model is a resource a
        # SavedModel must track)
        subwords = [side.subwords for side in (self.source, self.target) if side.subwords]
        return super().resources() + subwords

    # ---- training data -------------------------------------------------------------------
    def dataset(
        self,
        sources,
        targets,
        batch_size=32,
        max_lengths=(None, None),
        shuffle=False,
        seed=None,
        bucket_boundaries=None,
        copy_targets=False,
    ):
        """Sentence pairs -> ``(dataset, pairs kept)``: the teacher-forcing batches a
        `Seq2Seq` trains on (`kerasrnn.data.text.translation_dataset`: ``{"source",
        "target_in"} -> target_out``), the pairs within `max_lengths` (source, target
        tokens at most; None: no limit). With `copy_targets` (a `CopyReadout`), each
        target word the target vocabulary lacks but the source holds is labelled with
        its extended id (`kerasrnn.data.copy_target_ids`)."""
        from kerasrnn.data.text import translation_dataset

        if not copy_targets:
            return translation_dataset(
                self.source,
                self.target,
                sources,
                targets,
                batch_size,
                *max_lengths,
                shuffle,
                seed,
                bucket_boundaries,
            )
        from kerasrnn.data import copy_target_ids
        from kerasrnn.data.pipeline import sequence_dataset

        source, target = self.source, self.target
        limits = [limit or float("inf") for limit in max_lengths]
        columns: tuple = ([], [], [])
        for src, tgt in zip(source.tokenize(sources), target.tokenize(targets)):
            if not src or len(src) > limits[0] or len(tgt) > limits[1]:
                continue
            columns[0].append(source.vocabulary.encode(src))
            columns[1].append(target.vocabulary.encode(tgt, add_start=True))
            columns[2].append(copy_target_ids(src, tgt, source.vocabulary, target.vocabulary))
        if not columns[0]:
            raise ValueError("no sentence pair is left after length filtering.")
        dataset = sequence_dataset(
            {"source": columns[0], "target_in": columns[1]},
            columns[2],
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
            bucket_boundaries=bucket_boundaries or None,
            length_key="source",
            target_weights=False,
        )
        return dataset, len(columns[0])

    # ---- text in -------------------------------------------------------------------------
    def encode(self, x, max_length=None, static_width=False):
        """Strings (batch,) -> ``(ids, tokens, blank)`` (TensorFlow ops): source ids
        int32 (batch, length), the source tokens (batch, length) strings ("" on
        padding) and which texts are blank (batch,); `length` is at most `max_length`
        (exactly it with `static_width`, a static shape: decoding collects alignments
        only over a static source length)."""
        import tensorflow as tf

        from kerasrnn.data.text import tokenize_graph
        from kerasrnn.data.tokenizers import encode_tokens

        side = self.source
        texts = tf.convert_to_tensor(x, tf.string)
        tokens = tokenize_graph(texts, side.kind, side.lowercase, side.subwords)
        ids = encode_tokens(tokens, self.lookup(side.vocabulary, "source"))
        words = tokens.to_tensor("")
        if max_length is not None:
            ids, words = ids[:, :max_length], words[:, :max_length]
        words = tf.pad(words, [[0, 0], [0, tf.shape(ids)[1] - tf.shape(words)[1]]])
        blank = tf.equal(tf.strings.strip(texts), "") | tf.reduce_all(ids == PAD_ID, axis=1)
        if static_width:
            if max_length is None:
                raise ValueError(
                    "a static source width needs the model's `max_source_length` (for "
                    "`replace_unk`, copy attention or the coverage penalty)."
                )
            pad = [[0, 0], [0, max_length - tf.shape(ids)[1]]]
            ids = tf.ensure_shape(tf.pad(ids, pad), [None, max_length])
            words = tf.ensure_shape(tf.pad(words, pad), [None, max_length])
        return ids, words, blank

    # ---- text out ------------------------------------------------------------------------
    def output_tokens(self, result, words):
        """A `DecodeResult`'s ids (batch, n, length) -> target tokens (TensorFlow ops):
        the target vocabulary's, an id V + i past it the source token at position i
        (copy attention), and with `replace_unk` each ``[UNK]`` the most attended
        source token."""
        import tensorflow as tf

        from kerasrnn.decoding import replace_unk

        tokens = tf.convert_to_tensor(result.tokens)
        size = len(self.target.vocabulary)
        names = self.names(self.target.vocabulary, "target")
        names = tf.gather(names, tf.minimum(tokens, size - 1))
        copied = tf.gather(words, tf.maximum(tokens - size, 0), batch_dims=1)
        names = tf.where(tokens >= size, copied, names)
        if self.replace_unk:
            names = replace_unk(result, words, names, unk_id=UNK_ID)
        return names

    def decode(self, result, words, blank):
        """A `DecodeResult` of sources `words` (`encode`'s tokens) -> translations
        (batch, n) strings and their scores (batch, n) float32, best first; a blank
        source gives "" and 0 (TensorFlow ops)."""
        import tensorflow as tf

        from kerasrnn.data.text import detokenize_graph

        tokens = tf.convert_to_tensor(result.tokens)
        names = self.output_tokens(result, words)
        n, length = tf.shape(tokens)[1], tf.shape(tokens)[-1]
        keep = (tokens != PAD_ID) & (tokens != START_ID) & (tokens != END_ID)
        kept = tf.ragged.boolean_mask(
            tf.reshape(names, (-1, length)), tf.reshape(keep, (-1, length))
        )
        strings = tf.reshape(detokenize_graph(kept, self.target.kind), (-1, n))
        blank = tf.tile(blank[:, None], [1, n])
        scores = tf.cast(tf.convert_to_tensor(result.scores), tf.float32)
        return tf.where(blank, "", strings), tf.where(blank, 0.0, scores)

    def get_config(self):
        return {
            **super().get_config(),
            "source": keras.saving.serialize_keras_object(self.source),
            "target": keras.saving.serialize_keras_object(self.target),
            "replace_unk": self.replace_unk,
        }
