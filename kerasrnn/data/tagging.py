"""A tagger's inputs from tokenized sentences: words (optionally lower-cased), their
characters and, for biLM features, the words as the Penn Treebank LM text writes them;
in Python (`TaggerInputs`, for training) with the same results as the TensorFlow ops
the serving graph uses (`lm_tokens`, `tf.strings.lower`)."""

# A number, as the Penn Treebank LM text writes it: "N" (1, 3.5, 1,000, 12:30, 1/2, -4).
NUMBER = r"[+-]?[0-9]+([.,:/-][0-9]+)*|[+-]?[.,][0-9]+"


def lowercase_tokens(sentences):
    """Lower-cases tokens with TensorFlow's Unicode lower-casing, exactly as the
    exported model does (Python's `str.lower` differs on a few characters)."""
    import tensorflow as tf

    flat = [t for s in sentences for t in s]
    if not flat:
        return [list(s) for s in sentences]
    lowered = iter(tf.strings.lower(flat, encoding="utf-8").numpy())
    return [[next(lowered).decode("utf-8") for _ in s] for s in sentences]


def lm_tokens(tokens):
    """The biLM's view of a tagger's tokens (a tf.string tensor of any shape): the
    Penn Treebank LM normalisation, lower-cased and every number written "N". EWT is
    cased and keeps its numbers, so its words are mapped the same way before their
    lookup in the biLM vocabulary (words it lacks are [UNK], as PTB's <unk>)."""
    import tensorflow as tf

    lowered = tf.strings.lower(tokens, encoding="utf-8")
    return tf.strings.regex_replace(lowered, f"^({NUMBER})$", "N")


def lm_sentences(sentences):
    """`lm_tokens` of token lists (Python strings in, Python strings out)."""
    import tensorflow as tf

    flat = [t for s in sentences for t in s]
    if not flat:
        return [list(s) for s in sentences]
    mapped = iter(lm_tokens(tf.constant(flat)).numpy())
    return [[next(mapped).decode("utf-8") for _ in s] for s in sentences]


class TaggerInputs:
    """Token lists -> a `kerasrnn.models.SequenceTagger`'s inputs (``word_ids``,
    ``char_ids``, ``lm_ids`` as lists of id lists), in Python, with the same vocabulary
    and character handling as the TensorFlow serving function
    (`kerasrnn.export.TextTagger`).

    Args:
        words: the word `Vocabulary` (looked up after lower-casing with `lowercase`).
        chars: the character `Vocabulary`, or None (no character features).
        lowercase: lower-case the words (characters keep their case).
        max_chars: characters of a word at most (longer words are cut).
        lm_words: the biLM's `Vocabulary` (words mapped by `lm_sentences`), or None.
    """

    def __init__(self, words, chars, lowercase, max_chars, lm_words=None):
        self.words, self.chars = words, chars
        self.lowercase, self.max_chars = lowercase, max_chars
        self.lm_words = lm_words

    def inputs(self, sentences):
        keys = lowercase_tokens(sentences) if self.lowercase else sentences
        inputs = {"word_ids": [self.words.encode(s) for s in keys]}
        if self.chars is not None:
            inputs["char_ids"] = [
                [self.chars.encode(list(t)[: self.max_chars]) for t in s] for s in sentences
            ]
        if self.lm_words is not None:
            inputs["lm_ids"] = [self.lm_words.encode(s) for s in lm_sentences(sentences)]
        return inputs
