"""Word- and character-level tokenization as TensorFlow ops.

Tokenization runs inside TensorFlow (`tf.strings`) so that the very same function turns
text into ids in the training pipeline and inside an exported SavedModel: a model never
sees text split one way in training and another way in serving.

Why not `TextVectorization` or keras-nlp's `UnicodeCodepointTokenizer`: their ids do not
follow the shared vocabulary contract (``[PAD]``=0, ``[UNK]``=1, ``[START]``=2,
``[END]``=3: `TextVectorization` reserves only two ids, and code-point ids collide with
0-3), and character features need a vocabulary with frequency limits built from the
training words. Both tokenizers here therefore return strings, and a
`Vocabulary.lookup()` layer maps them to ids.
"""
import tensorflow as tf

from kerasrnn.data.vocabulary import Vocabulary

__all__ = ["split_words", "split_chars", "tokenize", "encode_tokens", "encode_chars"]


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
