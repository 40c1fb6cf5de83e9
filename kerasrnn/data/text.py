"""Tokenisers of a translation model's two sides, as TensorFlow ops: the same function
runs in the training pipeline (`tokenize_texts`, Python lists) and inside an exported
SavedModel (`tokenize_graph`, `detokenize_graph`), so served and trained tokens agree.

Kinds (`TOKENIZERS`): ``word`` (punctuation split off words, then whitespace), ``char``
(characters, the space as ``▁``, `SPACE`) and ``wordpiece`` (keras-hub WordPiece
subwords, see `kerasrnn.data.tokenizers`).
"""
TOKENIZERS = ("word", "char", "wordpiece")
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


def tokenize_graph(texts, kind, lowercase=False, wordpiece=None):
    """Strings (batch,) -> a ragged string tensor of tokens, as TensorFlow ops (the
    same function runs in the data pipeline and inside the SavedModel). "wordpiece"
    needs the side's `wordpiece` tokenizer
    (`kerasrnn.data.tokenizers.wordpiece_tokenizer`), which lower-cases itself."""
    import tensorflow as tf

    from kerasrnn.data.tokenizers import split_wordpieces

    texts = tf.convert_to_tensor(texts, tf.string)
    if kind == "wordpiece":
        if wordpiece is None:
            raise ValueError("the wordpiece tokenizer needs its `wordpiece` tokenizer.")
        return split_wordpieces(texts, wordpiece)
    if lowercase:
        texts = lower_graph(texts)
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

    from kerasrnn.data.tokenizers import join_wordpieces

    if kind == "char":
        joined = tf.strings.reduce_join(tokens, axis=-1)
        return tf.strings.regex_replace(joined, SPACE, " ")
    if kind == "wordpiece":
        joined = join_wordpieces(tokens)
    else:
        joined = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
    text = tf.strings.regex_replace(joined, f" ({_JOINER}) ({_ALNUM})",
                                    rf" \1{_MARK}\2")
    text = tf.strings.regex_replace(text, f"({_ALNUM}) ({_JOINER}){_MARK}", r"\1\2")
    text = tf.strings.regex_replace(text, _MARK, " ")
    text = tf.strings.regex_replace(text, _CLOSING, r"\1")
    text = tf.strings.regex_replace(text, _OPENING, r"\1")
    return tf.strings.regex_replace(text, _QUOTED, r'"\1"')


def tokenize_texts(texts, kind, lowercase=False, wordpiece=None, batch=4096):
    """Python lists: strings -> token lists, with exactly `tokenize_graph`."""
    rows = []
    for start in range(0, len(texts), batch):
        ragged = tokenize_graph(list(texts[start:start + batch]), kind, lowercase,
                                wordpiece)
        rows += [[t.decode("utf-8") for t in row] for row in ragged.to_list()]
    return rows
