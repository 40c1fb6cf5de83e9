"""Tokenisers of a translation model's two sides, as TensorFlow ops: the same function
runs in the training pipeline (`tokenize_texts`, Python lists) and inside an exported
SavedModel (`tokenize_graph`, `detokenize_graph`), so served and trained tokens agree.

`translation_dataset` turns sentence pairs into the teacher-forcing batches a
`kerasrnn.seq2seq.Seq2Seq` trains on.

Kinds (`TOKENIZERS`): ``word`` (punctuation split off words, then whitespace), ``char``
(characters, the space as ``▁``, `SPACE`), and subwords learned from the training text
(`SUBWORDS`, see `kerasrnn.data.tokenizers`): ``wordpiece`` (keras-hub WordPiece),
``sentencepiece`` (SentencePiece's unigram language model) and ``bpe`` (SentencePiece's
byte-pair encoding).
"""

import base64
import os

import keras

TOKENIZERS = ("word", "char", "wordpiece", "sentencepiece", "bpe")
SUBWORDS = ("wordpiece", "sentencepiece", "bpe")
# The kinds whose tokenizer is a learned SentencePiece model (not just a vocabulary),
# with the model type each learns.
SENTENCEPIECE_KINDS = {"sentencepiece": "unigram", "bpe": "bpe"}
SPACE = "\u2581"  # the space, as a character token
# Detokenisation of the "word" (and WordPiece) tokens, in this order: hyphens and
# apostrophes between two letters or digits are rejoined ("t - shirt" -> "t-shirt",
# "man ' s" -> "man's"), as sacreBLEU's 13a tokeniser keeps them inside words; no space
# before closing punctuation, none after an opening bracket, none inside a pair of
# double quotes. The tokeniser splits all of them off, so the rules guess; on Multi30k
# English they restore >99% of lines exactly (a spaced "a - b" or "dogs' toys" is what
# they get wrong).
_JOINER = "[-'\u2019]"  # ' and the typographic ’
_ALNUM = r"[\pL\pN]"
# RE2 has no lookaround, so a match cannot check the letter after a joiner without
# consuming it, which would break chains ("mother - in - law"): mark the joiners with a
# letter on their right first, then join the marked ones with a letter on their left.
_MARK = "\ue000"  # a private-use character, not in any text
_CLOSING = r" ([.,!?;:%)\]}])"
_OPENING = r"([(\[{]) "
_QUOTED = r'" ([^"]*) "'


def tokenize_graph(texts, kind, lowercase=False, subwords=None):
    """Strings (batch,) -> a ragged string tensor of tokens, as TensorFlow ops (the
    same function runs in the data pipeline and inside the SavedModel). A subword kind
    needs the side's `subwords` tokenizer (`kerasrnn.data.tokenizers`'
    `wordpiece_tokenizer`, which lower-cases itself, or `sentencepiece_tokenizer`)."""
    import tensorflow as tf

    from kerasrnn.data.tokenizers import split_subwords

    texts = tf.convert_to_tensor(texts, tf.string)
    if kind in SUBWORDS and subwords is None:
        raise ValueError(f"the {kind} tokenizer needs its learned `subwords` tokenizer.")
    if kind == "wordpiece":
        return split_subwords(texts, subwords)
    if lowercase:
        texts = lower_graph(texts)
    if kind in SENTENCEPIECE_KINDS:
        return split_subwords(texts, subwords)
    if kind == "word":
        return tf.strings.split(tf.strings.regex_replace(texts, r"(\pP)", r" \1 "))
    if kind == "char":
        spaced = tf.strings.regex_replace(tf.strings.strip(texts), r"\s+", SPACE)
        return tf.strings.unicode_split(spaced, "UTF-8", errors="replace")
    raise ValueError(f"`kind` must be one of {TOKENIZERS}, got {kind!r}.")


def lower_graph(texts, kind="word"):
    """Lower-cases strings (batch,) as the `kind` tokeniser does: keras-hub's WordPiece
    case-folds (NFKC casefold, "ß" -> "ss"), the others use `tf.strings.lower`."""
    import tensorflow as tf

    texts = tf.convert_to_tensor(texts, tf.string)
    if kind == "wordpiece":
        import tensorflow_text

        return tensorflow_text.case_fold_utf8(texts)
    return tf.strings.lower(texts, encoding="utf-8")


def detokenize_graph(tokens, kind):
    """A ragged string tensor of tokens -> strings (batch,)."""
    import tensorflow as tf

    from kerasrnn.data.tokenizers import join_sentencepieces, join_wordpieces

    if kind in SENTENCEPIECE_KINDS:  # the spaces are pieces: nothing to guess
        return join_sentencepieces(tokens)
    if kind == "char":
        joined = tf.strings.reduce_join(tokens, axis=-1)
        return tf.strings.regex_replace(joined, SPACE, " ")
    if kind == "wordpiece":
        joined = join_wordpieces(tokens)
    else:
        joined = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
    text = tf.strings.regex_replace(joined, f" ({_JOINER}) ({_ALNUM})", rf" \1{_MARK}\2")
    text = tf.strings.regex_replace(text, f"({_ALNUM}) ({_JOINER}){_MARK}", r"\1\2")
    text = tf.strings.regex_replace(text, _MARK, " ")
    text = tf.strings.regex_replace(text, _CLOSING, r"\1")
    text = tf.strings.regex_replace(text, _OPENING, r"\1")
    return tf.strings.regex_replace(text, _QUOTED, r'"\1"')


def tokenize_texts(texts, kind, lowercase=False, subwords=None, batch=4096):
    """Python lists: strings -> token lists, with exactly `tokenize_graph`."""
    rows = []
    for start in range(0, len(texts), batch):
        ragged = tokenize_graph(list(texts[start : start + batch]), kind, lowercase, subwords)
        rows += [[t.decode("utf-8") for t in row] for row in ragged.to_list()]
    return rows


@keras.saving.register_keras_serializable(package="kerasrnn")
class TextSide:
    """One side of a translation model: its tokeniser `kind`, lower-casing and
    vocabulary, converting strings to ids and ids back to strings, in Python for
    training data and as TensorFlow ops (`encode_graph`, `decode_graph`) for a
    SavedModel.

    Args:
        vocabulary: a `kerasrnn.data.Vocabulary` (for a subword kind: its pieces, e.g.
            from `build`).
        kind: "word", "char", "wordpiece", "sentencepiece" or "bpe" (`TOKENIZERS`).
        lowercase: lower-case the text first (WordPiece case-folds itself).
        subword_model: for "sentencepiece" and "bpe": the learned model
            (`kerasrnn.data.tokenizers.learn_sentencepiece`, as `build` makes it and
            `subword_model` keeps it).

    Example:

    >>> side = TextSide.build(["A man, a plan.", "a dog"], kind="word", lowercase=True)
    >>> side.tokenize(["A dog."])
    [['a', 'dog', '.']]
    >>> side.encode(["a dog"])[0] == side.vocabulary.encode(["a", "dog"])
    True
    """

    def __init__(self, vocabulary, kind="word", lowercase=False, subword_model=None):
        from kerasrnn.data import tokenizers

        if kind not in TOKENIZERS:
            raise ValueError(f"`kind` must be one of {TOKENIZERS}, got {kind!r}.")
        if (subword_model is None) == (kind in SENTENCEPIECE_KINDS):
            raise ValueError(
                f"`subword_model` is the learned model of the sentencepiece and bpe "
                f"kinds, and of no other: got kind={kind!r} "
                f"{'without' if subword_model is None else 'with'} one."
            )
        self.vocabulary, self.kind, self.lowercase = vocabulary, kind, lowercase
        self.subword_model, self.subwords = subword_model, None
        if kind == "wordpiece":
            self.subwords = tokenizers.wordpiece_tokenizer(vocabulary, lowercase)
        elif subword_model is not None:
            pieces = tokenizers.sentencepiece_vocabulary(subword_model).tokens
            if vocabulary.tokens[: len(pieces)] != pieces:
                raise ValueError(
                    "`vocabulary` does not start with the pieces of `subword_model` "
                    "(their ids must agree): give the vocabulary made with the model."
                )
            self.subwords = tokenizers.sentencepiece_tokenizer(subword_model)
        self._lookup = self._names = None

    def get_config(self):
        """The side as a JSON-able dict (the vocabulary's tokens, the learned subword
        model as base64), which `from_config` reads back."""
        model = self.subword_model
        return {
            "vocabulary": self.vocabulary.tokens,
            "kind": self.kind,
            "lowercase": self.lowercase,
            "subword_model": None if model is None else base64.b64encode(model).decode("ascii"),
        }

    @classmethod
    def from_config(cls, config):
        from kerasrnn.data.vocabulary import Vocabulary

        model = config.get("subword_model")
        return cls(
            Vocabulary(config["vocabulary"]),
            config["kind"],
            config["lowercase"],
            None if model is None else base64.b64decode(model),
        )

    def save(self, directory, name):
        """Writes readable copies of the side into `directory`: ``<name>_vocab.txt``
        (one token a line, as `Vocabulary.save` writes it; a language model's
        vocabulary file) and, for a sentencepiece or bpe side, the learned model as
        ``<name>_subwords.model``. Returns the paths written."""
        paths = [os.path.join(directory, f"{name}_vocab.txt")]
        self.vocabulary.save(paths[0])
        if self.subword_model is not None:
            paths.append(os.path.join(directory, f"{name}_subwords.model"))
            with open(paths[-1], "wb") as f:
                f.write(self.subword_model)
        return paths

    @classmethod
    def build(
        cls,
        texts,
        kind="word",
        lowercase=False,
        max_vocab=30000,
        min_freq=1,
        subword_vocab_size=8000,
    ):
        """The side of training sentences `texts`: counted word / char tokens
        (`max_vocab`, `min_freq`, the 4 special tokens included) or a learned subword
        vocabulary of `subword_vocab_size` pieces."""
        from kerasrnn.data import Vocabulary, tokenizers

        if kind == "wordpiece":
            vocabulary = tokenizers.learn_wordpiece_vocabulary(texts, subword_vocab_size, lowercase)
        elif kind in SENTENCEPIECE_KINDS:
            if lowercase:
                texts = [t.decode("utf-8") for t in lower_graph(list(texts)).numpy()]
            model = tokenizers.learn_sentencepiece(
                texts, subword_vocab_size, SENTENCEPIECE_KINDS[kind]
            )
            return cls(tokenizers.sentencepiece_vocabulary(model), kind, lowercase, model)
        else:
            tokens = tokenize_texts(texts, kind, lowercase)
            vocabulary = Vocabulary.build(tokens, max_vocab, min_freq)
        return cls(vocabulary, kind, lowercase)

    @property
    def lookup(self):
        """The vocabulary's string -> id lookup layer (made once)."""
        if self._lookup is None:
            import tensorflow as tf

            with tf.init_scope():  # eagerly, even when first used inside a tf.function
                self._lookup = self.vocabulary.lookup()
        return self._lookup

    def normalize_case(self, texts):
        """Python strings with the case this side's tokens have: lower-cased as its
        tokeniser lower-cases (`lower_graph`: WordPiece case-folds, "ß" -> "ss") when
        the side lower-cases, else unchanged."""
        texts = list(texts)
        if not self.lowercase or not texts:
            return texts
        return [t.decode("utf-8") for t in lower_graph(texts, self.kind).numpy()]

    def tokenize(self, texts):
        """Python strings -> token lists."""
        return tokenize_texts(texts, self.kind, self.lowercase, self.subwords)

    def encode(self, texts):
        """Python strings -> id lists ([UNK] for unknown tokens; an empty text is
        ``[PAD]`` alone, so that no row has length 0)."""
        return [self.vocabulary.encode(tokens) or [0] for tokens in self.tokenize(texts)]

    def encode_graph(self, texts):
        """Strings (batch,) -> int32 ids (batch, length), padded with 0 (TF ops)."""
        from kerasrnn.data.tokenizers import encode_tokens

        tokens = tokenize_graph(texts, self.kind, self.lowercase, self.subwords)
        return encode_tokens(tokens, self.lookup)

    def decode_graph(self, ids):
        """Ids (batch, length) -> strings (batch,): [PAD], [START] and [END] dropped,
        the tokens joined back into text (TF ops)."""
        import tensorflow as tf

        from kerasrnn.data.vocabulary import END_ID, PAD_ID, START_ID

        if self._names is None:
            with tf.init_scope():  # eagerly: every traced function shares the constant
                self._names = tf.constant(self.vocabulary.tokens, tf.string)
        keep = (ids != PAD_ID) & (ids != START_ID) & (ids != END_ID)
        tokens = tf.gather(self._names, tf.ragged.boolean_mask(ids, keep))
        return detokenize_graph(tokens, self.kind)


def translation_dataset(
    source,
    target,
    sources,
    targets,
    batch_size=32,
    max_source_length=None,
    max_target_length=None,
    shuffle=False,
    seed=None,
    bucket_boundaries=None,
):
    """Sentence pairs -> the teacher-forcing dataset a `kerasrnn.seq2seq.Seq2Seq` trains
    on: ``{"source": x, "target_in": [START] y} -> y [END]``, padded per batch
    (`kerasrnn.data.sequence_dataset`).

    Pairs whose source has no token or more than `max_source_length`, or whose target
    has more than `max_target_length`, are left out.

    Args:
        source: the source `TextSide`.
        target: the target `TextSide`.
        sources: the source sentences (a list of str).
        targets: their translations, aligned with `sources`.
        batch_size: pairs per batch.
        max_source_length: source tokens at most (None: no limit).
        max_target_length: target tokens at most, [END] not counted (None: no limit).
        shuffle: reshuffle the pairs every epoch.
        seed: the shuffling seed.
        bucket_boundaries: source lengths where length buckets split (None: plain
            batching).

    Returns:
        ``(dataset, pairs kept)``.

    Example:

    >>> side = TextSide.build(["a b c", "b c"], kind="word")
    >>> data, kept = translation_dataset(side, side, ["a b", "", "c"], ["b", "a", "a b"])
    >>> kept, sorted(next(iter(data))[0])
    (2, ['source', 'target_in'])
    """
    from kerasrnn.data.pipeline import sequence_dataset

    columns = ([], [], [])
    for src, tgt in zip(source.tokenize(sources), target.tokenize(targets)):
        if (
            not src
            or (max_source_length is not None and len(src) > max_source_length)
            or (max_target_length is not None and len(tgt) > max_target_length)
        ):
            continue
        columns[0].append(source.vocabulary.encode(src))
        columns[1].append(target.vocabulary.encode(tgt, add_start=True))
        columns[2].append(target.vocabulary.encode(tgt, add_end=True))
    if not columns[0]:
        raise ValueError(
            f"no sentence pair is left after length filtering (of {len(sources)}; "
            f"max_source_length={max_source_length}, max_target_length="
            f"{max_target_length})."
        )
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
