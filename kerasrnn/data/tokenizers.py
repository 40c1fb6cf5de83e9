"""Word-, character- and subword-level (WordPiece, SentencePiece) tokenization as
TensorFlow ops.

Tokenization runs inside TensorFlow (`tf.strings`) so that the very same function turns
text into ids in the training pipeline and inside an exported SavedModel: a model never
sees text split one way in training and another way in serving.

Why not `TextVectorization` or keras-hub's `UnicodeCodepointTokenizer`: their ids do not
follow the shared vocabulary contract (``[PAD]``=0, ``[UNK]``=1, ``[START]``=2,
``[END]``=3: `TextVectorization` reserves only two ids, and code-point ids collide with
0-3), and character features need a vocabulary with frequency limits built from the
training words. Both tokenizers here therefore return strings, and a
`Vocabulary.lookup()` layer maps them to ids.

Subwords come from keras-hub: `learn_wordpiece_vocabulary` runs its
`compute_word_piece_vocabulary` (the BERT vocabulary learner of tensorflow-text) with the
four special tokens reserved at their contract ids, and `wordpiece_tokenizer` wraps the
result in its `WordPieceTokenizer`, which outputs the piece strings (``"play", "##ing"``)
for the same `Vocabulary.lookup()`. SentencePiece models (the unigram language model or
byte-pair encoding) are learned by the `sentencepiece` library itself
(`learn_sentencepiece`; keras-hub's `compute_sentence_piece_proto` cannot reserve the
special tokens at their ids) and run through keras-hub's `SentencePieceTokenizer`. Both
tokenizers' ops are tensorflow-text kernels: a process that loads a SavedModel using them
must ``import tensorflow_text`` first.
"""

import io
import weakref

import tensorflow as tf

from kerasrnn.data.vocabulary import SPECIAL_TOKENS, UNK, Vocabulary

__all__ = [
    "split_words",
    "split_chars",
    "tokenize",
    "encode_tokens",
    "encode_chars",
    "learn_wordpiece_vocabulary",
    "wordpiece_tokenizer",
    "split_wordpieces",
    "join_wordpieces",
    "SENTENCEPIECE_MODELS",
    "learn_sentencepiece",
    "sentencepiece_tokenizer",
    "sentencepiece_vocabulary",
    "split_subwords",
    "join_sentencepieces",
]
SUFFIX_INDICATOR = "##"  # marks a WordPiece that continues the previous one


def split_words(texts, lowercase=False):
    """Splits a batch of strings on whitespace.

    Args:
        texts: a string tensor of shape (batch,) (or a Python list of str).
        lowercase: lower-case first (Unicode-aware, ``tf.strings.lower(encoding="utf-8")``).

    Returns:
        A `tf.RaggedTensor` of shape (batch, None) of tokens; an empty or blank string
        gives an empty row.
    """
    texts = tf.convert_to_tensor(texts, tf.string)
    if lowercase:
        texts = tf.strings.lower(texts, encoding="utf-8")
    return tf.strings.split(texts)


def split_chars(tokens):
    """Splits every token (a string tensor of any shape, dense or ragged) into its
    Unicode characters, adding one ragged dimension (invalid UTF-8 -> U+FFFD)."""
    return tf.strings.unicode_split(tokens, "UTF-8", errors="replace")


def tokenize(texts, lowercase=False):
    """Python convenience: list of str -> list of token lists (str), with exactly the
    splitting of `split_words`."""
    if not texts:
        return []
    rows = split_words(list(texts), lowercase).to_list()
    return [[t.decode("utf-8") for t in row] for row in rows]


def _lookup_layer(vocabulary):
    return vocabulary.lookup() if isinstance(vocabulary, Vocabulary) else vocabulary


def encode_tokens(tokens, lookup, min_length=1):
    """Token strings (a ragged or dense (batch, time) string tensor; "" counts as
    padding in a dense one) -> a dense int32 id matrix padded with 0 ([PAD]).

    `lookup` is a `Vocabulary` or its `lookup()` layer (reuse one layer in hot paths).
    The result has at least `min_length` columns, so that a batch of empty sentences
    still gives a valid (fully masked) input rather than a zero-length sequence.
    """
    lookup = _lookup_layer(lookup)
    if isinstance(tokens, tf.RaggedTensor):
        ids = tf.ragged.map_flat_values(lookup, tokens)
        ids = ids.to_tensor(default_value=0)
    else:
        tokens = tf.convert_to_tensor(tokens, tf.string)
        ids = tf.where(tokens == "", tf.zeros_like(tokens, tf.int64), lookup(tokens))
    ids = tf.cast(ids, tf.int32)
    pad = tf.maximum(min_length - tf.shape(ids)[1], 0)
    return tf.pad(ids, [[0, 0], [0, pad]])


def encode_chars(tokens, lookup, min_length=1):
    """Token strings (batch, time) -> character ids (batch, time, chars), padded with 0.

    Padding tokens ("" in a dense input) get no characters, so they are all-[PAD]."""
    lookup = _lookup_layer(lookup)
    if not isinstance(tokens, tf.RaggedTensor):
        tokens = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(tokens, tf.string))
    chars = split_chars(tokens)
    ids = tf.ragged.map_flat_values(lookup, chars)
    ids = tf.cast(ids.to_tensor(default_value=0), tf.int32)
    pad_t = tf.maximum(min_length - tf.shape(ids)[1], 0)
    pad_c = tf.maximum(min_length - tf.shape(ids)[2], 0)
    return tf.pad(ids, [[0, 0], [0, pad_t], [0, pad_c]])


def _learning_texts(texts, vocabulary_size):
    """The non-blank `texts` a subword learner reads, after checking its arguments."""
    if int(vocabulary_size) != vocabulary_size or vocabulary_size <= len(SPECIAL_TOKENS):
        raise ValueError(
            f"`vocabulary_size` must be an integer > {len(SPECIAL_TOKENS)} (the special "
            f"tokens count towards it), got {vocabulary_size!r}."
        )
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise ValueError("`texts` has no non-blank sentence to learn a vocabulary from.")
    return texts


def learn_wordpiece_vocabulary(texts, vocabulary_size, lowercase=False):
    """Learns a WordPiece vocabulary from training sentences (keras-hub's
    `compute_word_piece_vocabulary`: whitespace and punctuation split, then pieces
    chosen by the BERT vocabulary learner).

    Args:
        texts: the training sentences (list of str).
        vocabulary_size: the largest vocabulary, the four special tokens included.
        lowercase: lower-case first (the tokenizer must be made with the same value).

    Returns:
        A `Vocabulary`: ``[PAD]``=0, ``[UNK]``=1, ``[START]``=2, ``[END]``=3, then the
        word-initial pieces and the ``##`` continuation pieces.

    Example:

    >>> vocab = learn_wordpiece_vocabulary(["playing played plays"] * 5, 40)
    >>> vocab.tokens[:4]
    ['[PAD]', '[UNK]', '[START]', '[END]']
    """
    from keras_hub.tokenizers import compute_word_piece_vocabulary

    texts = _learning_texts(texts, vocabulary_size)
    data = tf.data.Dataset.from_tensor_slices(tf.constant(texts, tf.string))
    tokens = compute_word_piece_vocabulary(
        data.batch(1024),
        int(vocabulary_size),
        lowercase=lowercase,
        suffix_indicator=SUFFIX_INDICATOR,
        reserved_tokens=list(SPECIAL_TOKENS),
    )
    return Vocabulary(tokens)


def wordpiece_tokenizer(vocabulary, lowercase=False):
    """keras-hub's `WordPieceTokenizer` over `vocabulary` (a `Vocabulary`, e.g. from
    `learn_wordpiece_vocabulary`): strings (batch,) -> a ragged tensor of piece strings.
    Words it cannot spell with the pieces become ``[UNK]``."""
    from keras_hub.tokenizers import WordPieceTokenizer

    return WordPieceTokenizer(
        vocabulary=vocabulary.tokens,
        lowercase=lowercase,
        suffix_indicator=SUFFIX_INDICATOR,
        oov_token=UNK,
        dtype="string",
    )


def split_subwords(texts, tokenizer):
    """Strings (batch,) -> a `tf.RaggedTensor` (batch, None) of piece strings by a
    keras-hub subword `tokenizer` (`wordpiece_tokenizer`, `sentencepiece_tokenizer`), in a
    graph or eagerly (eagerly keras-hub hands string outputs back as Python lists, so
    the call is traced)."""
    texts = tf.reshape(tf.convert_to_tensor(texts, tf.string), [-1])
    if not tf.executing_eagerly():
        return tokenizer.tokenize(texts)
    traced = _TRACED.get(tokenizer)
    if traced is None:
        traced = _TRACED[tokenizer] = tf.function(
            tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)]
        )
    return traced(texts)


split_wordpieces = split_subwords  # the WordPiece name it had first


_TRACED: weakref.WeakKeyDictionary = (
    weakref.WeakKeyDictionary()
)  # tokenizer -> its traced `tokenize`


def join_wordpieces(pieces):
    """WordPiece strings (ragged (batch, None)) -> text (batch,): pieces joined by
    spaces, a ``##`` piece glued to the one before it (``play ##ing`` -> ``playing``)."""
    joined = tf.strings.reduce_join(pieces, axis=-1, separator=" ")
    return tf.strings.regex_replace(joined, f"(^| ){SUFFIX_INDICATOR}", "")


# ------------------------------------------------------------------ SentencePiece

SENTENCEPIECE_MODELS = ("unigram", "bpe")  # the unigram language model, byte-pair encoding


def learn_sentencepiece(texts, vocabulary_size, model_type="unigram"):
    """Learns a SentencePiece model from training sentences with the `sentencepiece`
    trainer: the unigram language model (Kudo 2018) or byte-pair encoding (Sennrich et
    al. 2016: the most frequent adjacent pair of symbols merged, repeatedly), over raw
    text with the space as ``▁``, every character of the text kept.

    Args:
        texts: the training sentences (list of str; lower-case them first to learn
            lower-case pieces).
        vocabulary_size: the most pieces, the four special tokens included (a small
            text gives fewer).
        model_type: "unigram" or "bpe".

    Returns:
        The model (serialized `ModelProto` bytes): ``[PAD]``=0, ``[UNK]``=1,
        ``[START]``=2, ``[END]``=3, then the learned pieces (`sentencepiece_vocabulary`).

    Example:

    >>> model = learn_sentencepiece(["playing played plays", "the player plays"] * 5, 30, "bpe")
    >>> sentencepiece_vocabulary(model).tokens[:4]
    ['[PAD]', '[UNK]', '[START]', '[END]']
    >>> pieces = split_subwords(["the players played"], sentencepiece_tokenizer(model))
    >>> [p.decode() for p in pieces[0].numpy()]
    ['▁the', '▁playe', 'r', 's', '▁played']
    >>> join_sentencepieces(pieces).numpy()
    array([b'the players played'], dtype=object)
    """
    import sentencepiece

    if model_type not in SENTENCEPIECE_MODELS:
        raise ValueError(f"`model_type` must be one of {SENTENCEPIECE_MODELS}, got {model_type!r}.")
    texts = _learning_texts(texts, vocabulary_size)
    model = io.BytesIO()
    pad, unk, start, end = SPECIAL_TOKENS
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(texts),
            model_writer=model,
            vocab_size=int(vocabulary_size),
            model_type=model_type,
            character_coverage=1.0,
            hard_vocab_limit=False,  # at most `vocabulary_size`: a small text gives fewer
            pad_id=0,
            unk_id=1,
            bos_id=2,
            eos_id=3,
            pad_piece=pad,
            unk_piece=unk,
            bos_piece=start,
            eos_piece=end,
            minloglevel=2,
            num_threads=1,  # a sentence corpus learns in seconds; no thread pool needed
        )
    except RuntimeError as error:  # e.g. "Vocabulary size too high (20000). Please set..."
        raise ValueError(f"sentencepiece could not learn the model: {error}") from None
    return model.getvalue()


def sentencepiece_tokenizer(model):
    """keras-hub's `SentencePieceTokenizer` over a `learn_sentencepiece` model: strings
    (batch,) -> a ragged tensor of piece strings (a character the model lacks comes out
    as itself, which the vocabulary maps to ``[UNK]``)."""
    from keras_hub.tokenizers import SentencePieceTokenizer

    return SentencePieceTokenizer(proto=model, dtype="string")


def sentencepiece_vocabulary(model):
    """The pieces of a `learn_sentencepiece` model as a `Vocabulary` (its ids are the
    model's)."""
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    if pieces[: len(SPECIAL_TOKENS)] != list(SPECIAL_TOKENS):
        raise ValueError(
            f"the SentencePiece model's first pieces are {pieces[:4]}, not the special "
            f"tokens {list(SPECIAL_TOKENS)}: learn it with `learn_sentencepiece`."
        )
    return Vocabulary(pieces)


def join_sentencepieces(pieces):
    """SentencePiece strings (ragged (batch, None)) -> text (batch,): the pieces
    concatenated, each ``▁`` a space (``▁play ing ▁well`` -> ``playing well``)."""
    joined = tf.strings.reduce_join(pieces, axis=-1)
    return tf.strings.strip(tf.strings.regex_replace(joined, "\u2581", " "))
