"""`TextTranslator`, a `kerasrnn.seq2seq.Seq2Seq` between strings (tokenising,
decoding and detokenising as TensorFlow ops), and `export_seq2seq`, its SavedModel."""

import keras
import tensorflow as tf

from kerasrnn.data.text import TOKENIZERS as _KINDS
from kerasrnn.export.savedmodel import export_saved_model

# The kinds a vocabulary side takes by name: those of kerasrnn.data.text but wordpiece,
# whose learned pieces only a TextSide holds.
TOKENIZERS = tuple(kind for kind in _KINDS if kind != "wordpiece")


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
            f"tokens); got tokenize={tokenize!r} (wordpiece: give a "
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
            lambda texts: tokenize_graph(texts, side.kind, side.lowercase, side.wordpiece),
            lambda tokens: detokenize_graph(tokens, side.kind),
        )
    return (
        _vocabulary_tokens(side, name),
        _tokenizer(tokenize, lowercase),
        _detokenizer(detokenize, tokenize),
    )


class TextTranslator:
    """A `kerasrnn.seq2seq.Seq2Seq` between strings: tokenising, `Seq2Seq.generate` and
    detokenising as TensorFlow ops (`decode`, the graph a SavedModel serves), batched
    translation of Python strings (`translate`), the alignments decoding returned
    (`alignments`, for `kerasrnn.visualize.plot_alignments`) and a SavedModel
    (`export`). (BLEU and speed on a test set: the translator recipe's
    `Translator.evaluate`, over `translate`.)

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
        **options: `Seq2Seq.generate` arguments for every decoding (`max_length`,
            `length_normalization`, `max_length_ratio`, `min_length`, ...).

    Example:

    >>> import kerasrnn
    >>> from kerasrnn.data import Vocabulary
    >>> from kerasrnn.export import TextTranslator
    >>> vocab = Vocabulary.build([["a", "b", "c"]])
    >>> model = kerasrnn.seq2seq.Seq2Seq(
    ...     kerasrnn.seq2seq.Seq2SeqBackbone(len(vocab), len(vocab), embedding_dim=4, units=4))
    >>> texts = TextTranslator(model, vocab, vocab, max_source_length=5, max_length=4)
    >>> rows = texts.translate(["a b", " "], beam_size=2, n_best=2)
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
        **options,
    ):
        from kerasrnn.data import END_ID, PAD_ID, START_ID
        from kerasrnn.seq2seq import Seq2Seq

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
        if not model.built:
            model.build()
        self.model = model
        self.max_source_length = max_source_length or model.max_source_length
        if replace_unk and self.max_source_length is None:
            raise ValueError(
                "`replace_unk` needs `max_source_length` (the alignments "
                "decoding collects need a static source width)."
            )
        self.replace_unk, self.options = bool(replace_unk), options
        _generation_options(options)  # checked here, read at every decoding
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

    def generate(self, texts, beam_size=1, n_best=1, return_alignments=False):
        """Strings `(batch,)` -> the `DecodeResult` of `Seq2Seq.generate` (greedy for
        `beam_size` 1, else beam search widened to `n_best` beams), its output tokens
        as strings `(batch, n, length)` (``[UNK]`` replaced with `replace_unk`), the
        source tokens and the blank mask (TensorFlow ops)."""
        from kerasrnn import decoding
        from kerasrnn.data import UNK_ID
        from kerasrnn.decoding import replace_unk

        beam_size = max(beam_size, n_best)
        settings, beam_search, scorer, constraints = _generation_options(self.options)
        if beam_size <= 1:
            strategy = decoding.GreedySearch(constraints)
        else:
            strategy = beam_search(beam_size, n_best, scorer, constraints)
        alignments = self.replace_unk or return_alignments
        # The coverage penalty reads the alignments beam search collects: a static width.
        static = alignments or strategy.needs_alignments
        ids, words, blank = self.encode(texts, static_width=static and not tf.executing_eagerly())
        result = self.model.generate(ids, strategy, return_alignments=alignments, **settings)
        names = tf.gather(self._target_tokens, tf.convert_to_tensor(result.tokens))
        if self.replace_unk:
            names = replace_unk(result, words, names, unk_id=UNK_ID)
        return result, names, words, blank

    def decode(self, texts, beam_size=1, n_best=1):
        """Strings `(batch,)` -> translations `(batch, n_best)` strings and their
        scores `(batch, n_best)` float32, best first (TensorFlow ops): greedy search
        (the log-probability) for `beam_size` 1, else beam search (its ranking
        score)."""
        from kerasrnn.data import END_ID, PAD_ID, START_ID

        result, names, _, blank = self.generate(texts, beam_size, n_best)
        tokens = tf.convert_to_tensor(result.tokens)
        length = tf.shape(tokens)[-1]
        keep = (tokens != PAD_ID) & (tokens != START_ID) & (tokens != END_ID)
        strings = self._join(
            tf.ragged.boolean_mask(tf.reshape(names, (-1, length)), tf.reshape(keep, (-1, length)))
        )
        strings = tf.reshape(strings, (-1, n_best))
        blank = tf.tile(blank[:, None], [1, n_best])
        scores = tf.cast(tf.convert_to_tensor(result.scores), tf.float32)
        return tf.where(blank, "", strings), tf.where(blank, 0.0, scores)

    def translate(self, texts, beam_size=1, n_best=None, batch_size=64):
        """Python strings -> their translations (a list of str, in the order given);
        with `n_best` K, per text the K best as ``[{"translation", "score"}, ...]``.
        Runs `decode` as one traced function per setting, `batch_size` texts at a
        time, the texts taken in order of length: a batch decodes until its longest
        output ends, so batching similar lengths wastes fewer steps."""
        key = (beam_size, n_best)
        if key not in self._functions:
            self._functions[key] = tf.function(
                lambda t: self.decode(t, beam_size, n_best or 1),
                input_signature=[tf.TensorSpec([None], tf.string)],
            )
        texts = list(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i].split()))
        results = [None] * len(texts)
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            strings, scores = self._functions[key](tf.constant([texts[i] for i in rows], tf.string))
            for i, row, row_scores in zip(rows, strings.numpy(), scores.numpy()):
                hypotheses = [
                    {"translation": t.decode("utf-8"), "score": float(s)}
                    for t, s in zip(row, row_scores)
                ]
                results[i] = hypotheses if n_best else hypotheses[0]["translation"]
        return results

    def alignments(self, text, beam_size=1):
        """What decoding one text attended to (eagerly): ``(result, source_tokens,
        output_tokens)``, the `DecodeResult` with its alignments, the source tokens
        read (a list of str) and the best hypothesis' output tokens up to its length,
        the end token included; ``plot_alignments(result, source_tokens,
        output_tokens)`` draws them."""
        result, names, words, _ = self.generate([text], beam_size, 1, True)
        length = int(tf.convert_to_tensor(result.lengths)[0, 0])
        source = [w.decode("utf-8") for w in words.numpy()[0] if w]
        output = [w.decode("utf-8") for w in names.numpy()[0, 0, :length]]
        return result, source, output

    def export(self, path, beam_size=4, n_best=None, translate_beam_size=1, verbose=False):
        """Writes a SavedModel serving `decode` (see `export_seq2seq`): ``translate``
        (and ``serving_default``) with `translate_beam_size` beams (1: greedy), and
        ``translate_n_best`` with `beam_size` beams and `n_best` (default
        `beam_size`) hypotheses. Returns `path`."""
        n_best = beam_size if n_best is None else n_best
        if isinstance(n_best, bool) or not isinstance(n_best, int) or not 1 <= n_best <= beam_size:
            raise ValueError(
                f"`n_best` must be an integer in [1, beam_size={beam_size}]; got n_best={n_best!r}."
            )

        def translate(text):
            strings, scores = self.decode(text, translate_beam_size, 1)
            return {"translation": strings[:, 0], "score": scores[:, 0]}

        def translate_n_best(text):
            strings, scores = self.decode(text, beam_size, n_best)
            return {"translations": strings, "scores": scores}

        signature = [tf.TensorSpec([None], tf.string, name="text")]
        return export_saved_model(
            path,
            self.model,
            {
                "serving_default": (translate, signature),
                "translate": (translate, signature),
                "translate_n_best": (translate_n_best, signature),
            },
            track=[self.lookup],
            verbose=verbose,
        )


def _generation_options(options):
    """`TextTranslator`'s generate options as (`Seq2Seq.generate` settings, the beam
    search class (`beam_search`, default `kerasrnn.decoding.BeamSearch`), a
    `kerasrnn.decoding.Scorer`, `kerasrnn.decoding.Constraints`)."""
    from kerasrnn import decoding

    options = dict(options)
    settings = {
        key: options.pop(key)
        for key in ("max_length", "readout_dtype", "jit_compile")
        if key in options
    }
    beam_search = options.pop("beam_search", decoding.BeamSearch)
    scorer = decoding.Scorer(
        **{
            key: options.pop(key)
            for key in ("length_normalization", "alpha", "coverage_penalty_weight")
            if key in options
        }
    )
    return settings, beam_search, scorer, decoding.Constraints(**options)


def export_seq2seq(
    path,
    model,
    source_vocabulary,
    target_vocabulary,
    tokenize="word",
    detokenize=None,
    lowercase=False,
    beam_size=4,
    n_best=None,
    max_length=None,
    length_normalization="average",
    verbose=False,
    translate_beam_size=1,
    max_source_length=None,
    **options,
):
    """Exports a `kerasrnn.seq2seq.Seq2Seq` as a SavedModel that translates strings.

    Signatures (plain TensorFlow: ``tf.saved_model.load(path)`` in a process without
    kerasrnn or Keras):

    * ``serving_default`` / ``translate``: ``text`` string `(batch,)` ->
      ``translation`` string `(batch,)` and ``score`` float32 `(batch,)` (greedy
      search and its log-probability; beam search of `translate_beam_size` beams and
      its ranking score if that is above 1);
    * ``translate_n_best``: ``text`` -> ``translations`` string `(batch, n_best)` and
      ``scores`` float32 `(batch, n_best)` (beam search, best first, the ranking
      score).

    The strings are processed as `TextTranslator` does: an empty or blank text gives
    "" (score 0), a text longer than `max_source_length` is cut to it (not an error),
    tokens the source vocabulary lacks map to `[UNK]`.

    Args:
        path: the output folder.
        model: a `Seq2Seq`.
        source_vocabulary: a `kerasrnn.data.text.TextSide` (its tokeniser is used) or
            a `kerasrnn.data.Vocabulary` (or its token list) with the model's source
            ids, tokenised by `tokenize`.
        target_vocabulary: the same for the target ids.
        tokenize: for vocabularies: "word", "char" or a function (see
            `TextTranslator`).
        detokenize: for vocabularies: "word", "char", a function or None (see
            `TextTranslator`).
        lowercase: lower-case the text before the built-in tokenizers.
        beam_size: beam search's k for ``translate_n_best``.
        n_best: hypotheses per text in ``translate_n_best`` (default `beam_size`).
        max_length: the most tokens generated (default the model's
            `max_target_length`).
        length_normalization: beam search's ranking (None, "average", "gnmt").
        verbose: let Keras print the saved variables.
        translate_beam_size: the ``translate`` signature's search: 1 greedy, k > 1
            beam search with k beams.
        max_source_length: source tokens read at most (default the model's).
        **options: further `TextTranslator` arguments for both signatures
            (`replace_unk`, `max_length_ratio`, `min_length`, ...).

    Returns:
        `path`.
    """
    translator = TextTranslator(
        model,
        source_vocabulary,
        target_vocabulary,
        tokenize,
        detokenize,
        lowercase,
        max_source_length,
        max_length=max_length,
        length_normalization=length_normalization,
        **options,
    )
    return translator.export(path, beam_size, n_best, translate_beam_size, verbose)
