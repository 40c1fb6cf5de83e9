"""`TextTranslator`, a `kerasrnn.seq2seq.Seq2Seq` between strings (tokenising,
decoding and detokenising as TensorFlow ops) and its SavedModel."""

import keras
import tensorflow as tf

from kerasrnn.data.text import SUBWORDS as _SUBWORDS
from kerasrnn.data.text import TOKENIZERS as _KINDS
from kerasrnn.export.savedmodel import export_saved_model

# The kinds a vocabulary side takes by name: those of kerasrnn.data.text but the
# subwords, whose learned model only a TextSide holds.
TOKENIZERS = tuple(kind for kind in _KINDS if kind not in _SUBWORDS)


def _tokenizer(tokenize, lowercase):
    """strings (batch,) -> ragged tokens, as TensorFlow ops: a kind of
    `kerasrnn.data.text` (the same tokens a `TextSide` of that kind gives) or a
    function."""
    from kerasrnn.data.text import tokenize_graph

    if callable(tokenize):
        return tokenize
    if tokenize not in TOKENIZERS:
        raise ValueError(
            f"`tokenize` must be one of {TOKENIZERS} or a function (strings -> ragged "
            f"tokens); got tokenize={tokenize!r} (subwords: give a "
            "kerasrnn.data.text.TextSide, which holds the learned pieces)."
        )
    return lambda texts: tokenize_graph(texts, tokenize, lowercase)


def _detokenizer(detokenize, tokenize):
    """ragged tokens -> strings (batch,), as TensorFlow ops."""
    from kerasrnn.data.text import detokenize_graph

    if callable(detokenize):
        return detokenize
    if detokenize is None:
        detokenize = tokenize if tokenize in TOKENIZERS else "word"
    if detokenize not in TOKENIZERS:
        raise ValueError(
            f"`detokenize` must be one of {TOKENIZERS}, a function (ragged tokens -> "
            f"strings) or None; got detokenize={detokenize!r}."
        )
    return lambda tokens: detokenize_graph(tokens, detokenize)


def _vocabulary_tokens(vocabulary, name):
    from kerasrnn.data import SPECIAL_TOKENS, Vocabulary

    if isinstance(vocabulary, Vocabulary):
        return vocabulary
    tokens = list(vocabulary)
    if tokens[: len(SPECIAL_TOKENS)] != list(SPECIAL_TOKENS):
        raise ValueError(
            f"`{name}` must be a kerasrnn.data.Vocabulary, a kerasrnn.data.text.TextSide "
            f"or a token list starting with {list(SPECIAL_TOKENS)}; got {tokens[:4]!r}..."
        )
    return Vocabulary(tokens)


def _side(side, name, tokenize, detokenize, lowercase):
    """(vocabulary, split: strings -> ragged tokens, join: ragged tokens -> strings) of
    one side: a `TextSide` brings its own tokeniser, a vocabulary takes `tokenize`."""
    from kerasrnn.data.text import TextSide, detokenize_graph, tokenize_graph

    if isinstance(side, TextSide):
        return (
            side.vocabulary,
            lambda texts: tokenize_graph(texts, side.kind, side.lowercase, side.subwords),
            lambda tokens: detokenize_graph(tokens, side.kind),
        )
    return (
        _vocabulary_tokens(side, name),
        _tokenizer(tokenize, lowercase),
        _detokenizer(detokenize, tokenize),
    )


def _cache_key(strategy, settings):
    """What a traced `TextTranslator.translate` function depends on: the strategy and
    the decoding `settings` (a fusion by its own ``cache_key``); None where one of
    them cannot key a cache (the call then traces a function of its own)."""
    keys = [strategy.cache_key()]
    for name, value in sorted(settings.items()):
        if name == "fusion" and value is not None:
            value = getattr(value, "cache_key", lambda: None)()
            keys.append(None if value is None else (name, value))
        else:
            keys.append((name, value))
    return None if None in keys else tuple(keys)


class TextTranslator:
    """A `kerasrnn.seq2seq.Seq2Seq` between strings: tokenising, `Seq2Seq.generate` and
    detokenising as TensorFlow ops (`decode`, the graph a SavedModel serves), batched
    translation of Python strings (`translate`), the alignments decoding returned
    (`alignments`, for `kerasrnn.visualize.plot_alignments`) and a SavedModel
    (`export`). How each decodes is a `kerasrnn.decoding` strategy passed in (greedy
    search when none is): its scorer and constraints are the decoding options.

    An empty or blank text gives "" (score 0), not the model's answer for an all-padding
    source. A text longer than `max_source_length` tokens is cut to them (not an error).
    Tokens the source vocabulary lacks map to ``[UNK]``.

    Args:
        model: a `Seq2Seq` using `kerasrnn.data`'s special ids.
        source: the source side: a `kerasrnn.data.text.TextSide` (its own tokeniser),
            or a `kerasrnn.data.Vocabulary` (or its token list) tokenised by `tokenize`.
        target: the target side, the same way (a vocabulary is joined by `detokenize`).
        tokenize: for a vocabulary side: a tokenizer kind of `kerasrnn.data.text`,
            "word" (punctuation split off words, then whitespace) or "char" (the
            characters, a space as ``▁``), the tokens a `TextSide` of that kind gives;
            or a function of TensorFlow ops from strings `(batch,)` to ragged tokens
            `(batch, None)`.
        detokenize: "word" (`kerasrnn.data.text.detokenize_graph`'s rules), "char"
            (joined, ``▁`` back to a space), a function from ragged target tokens to
            strings `(batch,)`, or None (the same kind as `tokenize`, "word" for a
            function).
        lowercase: lower-case the text before the built-in `tokenize`.
        max_source_length: source tokens read at most (default the model's
            `max_source_length`; `replace_unk` needs one).
        replace_unk: an output ``[UNK]`` becomes the source token it attended to most
            (`kerasrnn.decoding.replace_unk`).
        max_length: the most tokens generated (default the model's `max_target_length`).
        readout_dtype: `Seq2Seq.generate`'s readout precision ("float32", "bfloat16",
            "float16").

    Example:

    >>> import kerasrnn
    >>> from kerasrnn.data import Vocabulary
    >>> from kerasrnn.decoding import BeamSearch
    >>> from kerasrnn.export import TextTranslator
    >>> vocab = Vocabulary.build([["a", "b", "c"]])
    >>> model = kerasrnn.seq2seq.Seq2Seq(
    ...     kerasrnn.seq2seq.Seq2SeqBackbone(len(vocab), len(vocab), embedding_dim=4, units=4))
    >>> texts = TextTranslator(model, vocab, vocab, max_source_length=5, max_length=4)
    >>> rows = texts.translate(["a b", " "], BeamSearch(2), return_scores=True)
    >>> [len(row) for row in rows], rows[1][0]
    ([2, 2], {'translation': '', 'score': 0.0})
    """

    def __init__(
        self,
        model,
        source,
        target,
        tokenize="word",
        detokenize=None,
        lowercase=False,
        max_source_length=None,
        replace_unk=False,
        max_length=None,
        readout_dtype="float32",
    ):
        from kerasrnn.data import END_ID, PAD_ID, START_ID
        from kerasrnn.seq2seq import Seq2Seq
        from kerasrnn.seq2seq.generation import check_readout_dtype

        if not isinstance(model, Seq2Seq):
            raise ValueError(
                f"`model` must be a kerasrnn.seq2seq.Seq2Seq; got {type(model).__name__}."
            )
        self.source_vocabulary, self._split, _ = _side(
            source, "source_vocabulary", tokenize, detokenize, lowercase
        )
        self.target_vocabulary, _, self._join = _side(
            target, "target_vocabulary", tokenize, detokenize, lowercase
        )
        # the sides' subword tokenizers (a SentencePiece model is a resource the
        # SavedModel must track)
        self._subwords = [
            side.subwords for side in (source, target) if getattr(side, "subwords", None)
        ]
        for name, vocab, size in (
            ("source_vocabulary", self.source_vocabulary, model.source_vocab_size),
            ("target_vocabulary", self.target_vocabulary, model.target_vocab_size),
        ):
            if len(vocab) != size:
                raise ValueError(
                    f"`{name}` has {len(vocab)} tokens but the model's "
                    f"{name.split('_')[0]}_vocab_size is {size}: use the vocabulary the "
                    "model was trained with."
                )
        if (model.pad_id, model.start_id, model.end_id) != (PAD_ID, START_ID, END_ID):
            raise ValueError(
                "TextTranslator uses kerasrnn.data's special ids ([PAD]=0, [START]=2, "
                f"[END]=3); the model has pad_id={model.pad_id}, start_id="
                f"{model.start_id}, end_id={model.end_id}."
            )
        check_readout_dtype(readout_dtype)
        if not model.built:
            model.build()
        self.model = model
        self.max_source_length = max_source_length or model.max_source_length
        if replace_unk and self.max_source_length is None:
            raise ValueError(
                "`replace_unk` needs `max_source_length` (the alignments "
                "decoding collects need a static source width)."
            )
        self.copies = model.copy_readout is not None
        if self.copies and self.max_source_length is None:
            raise ValueError(
                "A model with a `copy_readout` needs `max_source_length` (its extended "
                "vocabulary, target ids then one per source position, has a static width)."
            )
        self.replace_unk = bool(replace_unk)
        self.settings = {"max_length": max_length, "readout_dtype": readout_dtype}
        with tf.init_scope():  # eagerly, even when first made inside a tf.function
            # (a TextSide's own lookup layer, so that a SavedModel tracks just one)
            self.lookup = getattr(source, "lookup", None)
            if not isinstance(self.lookup, keras.layers.Layer):
                self.lookup = self.source_vocabulary.lookup()
            self._target_tokens = tf.constant(self.target_vocabulary.tokens, tf.string)
        self._functions = {}

    def encode(self, texts, static_width=False):
        """Strings `(batch,)` -> source ids int32 `(batch, length)`, the source tokens
        `(batch, length)` (strings, "" on padding) and which texts are blank `(batch,)`,
        as TensorFlow ops; `length` is at most `max_source_length` (exactly it with
        `static_width`, a static shape: decoding loops collect alignments only over
        a static source length)."""
        from kerasrnn.data import PAD_ID
        from kerasrnn.data.tokenizers import encode_tokens

        texts = tf.convert_to_tensor(texts, tf.string)
        limit = self.max_source_length
        tokens = self._split(texts)
        ids, words = encode_tokens(tokens, self.lookup), tokens.to_tensor("")
        if limit is not None:
            ids, words = ids[:, :limit], words[:, :limit]
        words = tf.pad(words, [[0, 0], [0, tf.shape(ids)[1] - tf.shape(words)[1]]])
        blank = tf.equal(tf.strings.strip(texts), "") | tf.reduce_all(ids == PAD_ID, axis=1)
        if static_width:
            pad = [[0, 0], [0, limit - tf.shape(ids)[1]]]
            ids = tf.ensure_shape(tf.pad(ids, pad), [None, limit])
            words = tf.ensure_shape(tf.pad(words, pad), [None, limit])
        return ids, words, blank

    def generate(self, texts, strategy=None, return_alignments=False):
        """Strings `(batch,)` -> the `DecodeResult` of `Seq2Seq.generate` with
        `strategy` (a `kerasrnn.decoding` strategy; None: greedy search), its output
        tokens as strings `(batch, n, length)` (``[UNK]`` replaced with `replace_unk`),
        the source tokens and the blank mask (TensorFlow ops)."""
        from kerasrnn import decoding
        from kerasrnn.data import UNK_ID
        from kerasrnn.decoding import replace_unk

        strategy = decoding.GreedySearch() if strategy is None else decoding.get(strategy)
        alignments = self.replace_unk or return_alignments
        # The coverage penalty reads the alignments beam search collects: a static width.
        static = alignments or strategy.needs_alignments or self.copies
        ids, words, blank = self.encode(texts, static_width=static and not tf.executing_eagerly())
        result = self.model.generate(ids, strategy, return_alignments=alignments, **self.settings)
        names = self._names(tf.convert_to_tensor(result.tokens), words)
        if self.replace_unk:
            names = replace_unk(result, words, names, unk_id=UNK_ID)
        return result, names, words, blank

    def _names(self, tokens, words):
        """Output ids `(batch, n, length)` -> tokens: the target vocabulary's, and with
        copy attention an id V + i past it is the source token at position i."""
        size = len(self.target_vocabulary)
        names = tf.gather(self._target_tokens, tf.minimum(tokens, size - 1))
        if not self.copies:
            return names
        copied = tf.gather(words, tf.maximum(tokens - size, 0), batch_dims=1)
        return tf.where(tokens >= size, copied, names)

    def decode(self, texts, strategy=None):
        """Strings `(batch,)` -> translations `(batch, n)` strings and their scores
        `(batch, n)` float32, best first (TensorFlow ops), n the strategy's `n_best`
        (1 for greedy search and sampling): greedy search's scores are
        log-probabilities, beam search's its ranking scores."""
        from kerasrnn.data import END_ID, PAD_ID, START_ID

        result, names, _, blank = self.generate(texts, strategy)
        tokens = tf.convert_to_tensor(result.tokens)
        n, length = tf.shape(tokens)[1], tf.shape(tokens)[-1]
        keep = (tokens != PAD_ID) & (tokens != START_ID) & (tokens != END_ID)
        strings = self._join(
            tf.ragged.boolean_mask(tf.reshape(names, (-1, length)), tf.reshape(keep, (-1, length)))
        )
        strings = tf.reshape(strings, (-1, n))
        blank = tf.tile(blank[:, None], [1, n])
        scores = tf.cast(tf.convert_to_tensor(result.scores), tf.float32)
        return tf.where(blank, "", strings), tf.where(blank, 0.0, scores)

    def translate(self, texts, strategy=None, return_scores=False, batch_size=64):
        """Python strings -> their translations (a list of str, in the order given);
        with `return_scores`, per text the strategy's `n_best` hypotheses as
        ``[{"translation", "score"}, ...]``, best first. Runs `decode` as one traced
        function per strategy, `batch_size` texts at a time, the texts taken in order
        of length: a batch decodes until its longest output ends, so batching similar
        lengths wastes fewer steps. A change of `settings` (``max_length``,
        ``readout_dtype``, ``fusion``) traces a new function."""
        from kerasrnn import decoding

        strategy = decoding.GreedySearch() if strategy is None else decoding.get(strategy)
        key = _cache_key(strategy, self.settings)
        function = self._functions.get(key) if key is not None else None
        if function is None:
            function = tf.function(
                lambda t: self.decode(t, strategy),
                input_signature=[tf.TensorSpec([None], tf.string)],
            )
            if key is not None:
                self._functions[key] = function
        texts = list(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i].split()))
        results: list = [None] * len(texts)
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            strings, scores = function(tf.constant([texts[i] for i in rows], tf.string))
            for i, row, row_scores in zip(rows, strings.numpy(), scores.numpy()):
                hypotheses = [
                    {"translation": t.decode("utf-8"), "score": float(s)}
                    for t, s in zip(row, row_scores)
                ]
                results[i] = hypotheses if return_scores else hypotheses[0]["translation"]
        return results

    def alignments(self, text, strategy=None):
        """What decoding one text attended to (eagerly): ``(result, source_tokens,
        output_tokens)``, the `DecodeResult` with its alignments, the source tokens
        read (a list of str) and the best hypothesis' output tokens up to its length,
        the end token included; ``plot_alignments(result, source_tokens,
        output_tokens)`` draws them."""
        result, names, words, _ = self.generate([text], strategy, True)
        length = int(tf.convert_to_tensor(result.lengths)[0, 0])
        source = [w.decode("utf-8") for w in words.numpy()[0] if w]
        output = [w.decode("utf-8") for w in names.numpy()[0, 0, :length]]
        return result, source, output

    def _streaming_functions(self):
        """The ``encode`` and ``decoder_step`` functions of `export` and the latter's
        input signature (shapes from encoding one source)."""
        import numpy as np

        from kerasrnn.seq2seq.backbone import Encoded

        template = self.model.encode(np.ones((1, 1), "int32"))
        memory = keras.tree.flatten(template.memory)
        states = keras.tree.flatten(template.states)

        copies = self.copies

        def encode(text):
            ids, _, _ = self.encode(text, static_width=copies)
            encoded = self.model.encode(ids)
            return {
                **({"source_ids": ids} if copies else {}),
                **{f"memory_{i}": m for i, m in enumerate(keras.tree.flatten(encoded.memory))},
                **{f"state_{i}": s for i, s in enumerate(keras.tree.flatten(encoded.states))},
                "lengths": encoded.lengths,
            }

        def decoder_step(token, *flat):
            source = flat[-1] if copies else None
            flat = flat[:-1] if copies else flat
            memory = keras.tree.pack_sequence_as(template.memory, list(flat[len(states) :]))
            step = self.model.step_fn(
                Encoded(memory, None, None, source) if copies else memory,
                return_alignments=False,
            )
            logits, new = step(
                token, keras.tree.pack_sequence_as(template.states, flat[: len(states)])
            )
            return {
                "logits": logits,
                **{f"state_{i}": s for i, s in enumerate(keras.tree.flatten(new))},
            }

        signature = (
            [tf.TensorSpec([None], tf.int32, name="token")]
            + [
                tf.TensorSpec([None, *s.shape[1:]], tf.as_dtype(s.dtype), name=f"state_{i}")
                for i, s in enumerate(states)
            ]
            + [  # the source length (axis 1) varies (not with copy attention)
                tf.TensorSpec(
                    [None, self.max_source_length if copies else None, *m.shape[2:]],
                    tf.as_dtype(m.dtype),
                    name=f"memory_{i}",
                )
                for i, m in enumerate(memory)
            ]
            + (
                [tf.TensorSpec([None, self.max_source_length], tf.int32, name="source_ids")]
                if copies
                else []
            )
        )
        return encode, decoder_step, signature

    def export(self, path, translate=None, translate_n_best=None, verbose=False):
        """Writes a SavedModel that translates strings. Returns `path`.

        Signatures (plain TensorFlow: ``tf.saved_model.load(path)`` in a process without
        kerasrnn or Keras), each `decode` with its strategy:

        * ``serving_default`` / ``translate``: ``text`` string `(batch,)` ->
          ``translation`` string `(batch,)` and ``score`` float32 `(batch,)`, the best
          hypothesis of the `translate` strategy (default greedy search: its
          log-probability);
        * ``translate_n_best``: ``text`` -> ``translations`` string `(batch, n)` and
          ``scores`` float32 `(batch, n)`, best first: the `n_best` hypotheses of the
          `translate_n_best` strategy (default ``BeamSearch(4)``, all 4 beams).
        * streaming, a decoder loop run by the caller: ``encode``: ``text`` ->
          ``memory_<i>`` (the attention memory: keys, values, mask), ``state_<i>`` (the
          decoder's initial states) and ``lengths``; ``decoder_step``: ``token`` int32
          `(batch,)`, the ``state_<i>`` and the ``memory_<i>`` -> ``logits`` `(batch,
          target vocabulary)` and the new ``state_<i>`` (start with [START], id 2). With
          copy attention (a `CopyReadout`) ``encode`` also returns ``source_ids`` (padded
          to `max_source_length`), ``decoder_step`` takes them last and its ``logits``
          are log-probabilities over the extended vocabulary.

        Args:
            path: the output folder.
            translate: the ``translate`` signature's `kerasrnn.decoding` strategy.
            translate_n_best: the ``translate_n_best`` signature's strategy.
            verbose: let Keras print the saved variables.
        """
        from kerasrnn import decoding

        single = decoding.GreedySearch() if translate is None else decoding.get(translate)
        several = (
            decoding.BeamSearch(4) if translate_n_best is None else decoding.get(translate_n_best)
        )

        def translate_best(text):
            strings, scores = self.decode(text, single)
            return {"translation": strings[:, 0], "score": scores[:, 0]}

        def translate_n(text):
            strings, scores = self.decode(text, several)
            return {"translations": strings, "scores": scores}

        signature = [tf.TensorSpec([None], tf.string, name="text")]
        encode, decoder_step, step_signature = self._streaming_functions()
        # The SavedModel holds the translator alone: a language model fused in
        # `settings` (`Seq2Seq.generate`'s `fusion`) is left out of its graphs.
        settings, self.settings = self.settings, dict(self.settings, fusion=None)
        try:
            return export_saved_model(
                path,
                self.model,
                {
                    "serving_default": (translate_best, signature),
                    "translate": (translate_best, signature),
                    "translate_n_best": (translate_n, signature),
                    "encode": (encode, signature),
                    "decoder_step": (decoder_step, step_signature),
                },
                track=[self.lookup, *self._subwords],
                verbose=verbose,
            )
        finally:
            self.settings = settings
