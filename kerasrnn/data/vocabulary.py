"""Token vocabularies with the fixed special-token ids of `kerasrnn.special_tokens`
([PAD]=0, [UNK]=1, [START]=2, [END]=3), shared by every task and recipe.

Regular tokens follow from id 4, most frequent first (ties broken alphabetically so a
vocabulary is reproducible from the same data).
"""

import collections
import os

from kerasrnn.special_tokens import (  # noqa: F401 (re-exported: kerasrnn.data.PAD ...)
    END,
    END_ID,
    PAD,
    PAD_ID,
    SPECIAL_TOKENS,
    START,
    START_ID,
    UNK,
    UNK_ID,
)


def _as_str(token):
    # tf.data and tf.strings hand out bytes; a vocabulary stores text.
    if isinstance(token, bytes):
        return token.decode("utf-8")
    if not isinstance(token, str):
        raise TypeError(f"tokens must be str or bytes, got {type(token).__name__}: {token!r}")
    return token


class Vocabulary:
    """An ordered token list: ``[PAD]``=0, ``[UNK]``=1, ``[START]``=2, ``[END]``=3, then
    the regular tokens.

    Args:
        tokens: the regular tokens in id order (ids 4, 5, ...). A list that already
            starts with the four special tokens in their order (as `save` writes it) is
            accepted too. Tokens must be unique, non-empty and free of newlines.

    Build one from data with `Vocabulary.build`; turn it into Keras layers with `lookup`
    (tokens -> ids) and `inverse_lookup` (ids -> tokens), or use `encode`/`decode` in
    plain Python.

    Example:

    >>> from kerasrnn.data import Vocabulary
    >>> vocab = Vocabulary.build([["a", "b", "a"], ["c", "a"]], min_freq=1)
    >>> vocab.tokens
    ['[PAD]', '[UNK]', '[START]', '[END]', 'a', 'b', 'c']
    >>> vocab.encode(["a", "zebra"], add_start=True, add_end=True)
    [2, 4, 1, 3]
    >>> vocab.decode([2, 4, 1, 3, 0], skip_special=True)
    ['a', '[UNK]']
    """

    PAD, UNK, START, END = PAD, UNK, START, END
    PAD_ID, UNK_ID, START_ID, END_ID = PAD_ID, UNK_ID, START_ID, END_ID
    SPECIAL_TOKENS = SPECIAL_TOKENS

    def __init__(self, tokens):
        tokens = [_as_str(t) for t in tokens]
        if tuple(tokens[: len(SPECIAL_TOKENS)]) == SPECIAL_TOKENS:
            tokens = tokens[len(SPECIAL_TOKENS) :]
        seen = set()
        for token in tokens:
            if token in SPECIAL_TOKENS:
                raise ValueError(
                    f"`tokens` contains the special token {token!r} out of place; special "
                    f"tokens are only allowed as the first four entries, in the order "
                    f"{list(SPECIAL_TOKENS)}."
                )
            if not token or "\n" in token or "\r" in token:
                raise ValueError(
                    f"`tokens` must be non-empty strings without line breaks, got {token!r}."
                )
            if token in seen:
                raise ValueError(f"`tokens` contains {token!r} more than once.")
            seen.add(token)
        self._tokens = list(SPECIAL_TOKENS) + tokens
        self._ids = {token: i for i, token in enumerate(self._tokens)}

    @classmethod
    def build(cls, token_lists, max_size=None, min_freq=1):
        """Counts tokens and keeps the frequent ones.

        Args:
            token_lists: an iterable of token sequences (lists of str/bytes; a plain
                string counts as a sequence of characters, which builds a character
                vocabulary). Empty tokens are ignored.
            max_size: the largest vocabulary size, *including* the four special tokens
                (like `TextVectorization(max_tokens=...)`); None for no limit.
            min_freq: keep only tokens seen at least this many times.

        Returns:
            A `Vocabulary` whose regular tokens are sorted by decreasing count, then
            alphabetically.
        """
        if max_size is not None and (int(max_size) != max_size or max_size < len(SPECIAL_TOKENS)):
            raise ValueError(
                f"`max_size` must be an integer >= {len(SPECIAL_TOKENS)} (the special "
                f"tokens count towards it) or None, got {max_size!r}."
            )
        if int(min_freq) != min_freq or min_freq < 1:
            raise ValueError(f"`min_freq` must be an integer >= 1, got {min_freq!r}.")
        if isinstance(token_lists, (str, bytes)):
            raise TypeError(
                "`token_lists` must be an iterable of token sequences, not a single string; "
                "wrap it in a list."
            )
        counts = collections.Counter()
        for tokens in token_lists:
            counts.update(t for t in map(_as_str, tokens) if t)
        for special in SPECIAL_TOKENS:
            counts.pop(special, None)
        ranked = sorted(
            (t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t)
        )
        if max_size is not None:
            ranked = ranked[: int(max_size) - len(SPECIAL_TOKENS)]
        return cls(ranked)

    @property
    def tokens(self):
        """All tokens in id order, the four special tokens first (a copy)."""
        return list(self._tokens)

    def __len__(self):
        return len(self._tokens)

    def __contains__(self, token):
        return _as_str(token) in self._ids

    def __eq__(self, other):
        return isinstance(other, Vocabulary) and self._tokens == other._tokens

    def __repr__(self):
        preview = ", ".join(map(repr, self._tokens[4:9]))
        more = ", ..." if len(self) > 9 else ""
        return f"Vocabulary(size={len(self)}, tokens=[{preview}{more}])"

    def token_to_id(self, token):
        """The id of `token`, `UNK_ID` when it is out of vocabulary."""
        return self._ids.get(_as_str(token), UNK_ID)

    def id_to_token(self, index):
        """The token of id `index`; raises IndexError for ids outside the vocabulary."""
        index = int(index)
        if not 0 <= index < len(self._tokens):
            raise IndexError(f"id {index} is outside the vocabulary (size {len(self)}).")
        return self._tokens[index]

    def encode(self, tokens, add_start=False, add_end=False):
        """Token sequence -> list of ids (unknown tokens -> `UNK_ID`)."""
        if isinstance(tokens, (str, bytes)):
            raise TypeError(
                "`encode` takes a sequence of tokens, not a string; split it first "
                "(or pass list(text) for characters)."
            )
        ids = [self.token_to_id(t) for t in tokens]
        return ([START_ID] if add_start else []) + ids + ([END_ID] if add_end else [])

    def decode(self, ids, skip_special=False):
        """Ids -> list of tokens. `skip_special` drops [PAD], [START] and [END] (an
        [UNK] stays: it stands for a real token)."""
        tokens = [self.id_to_token(i) for i in ids]
        if skip_special:
            tokens = [t for t in tokens if t not in (PAD, START, END)]
        return tokens

    def save(self, path):
        """Writes the vocabulary, one token per line (UTF-8), special tokens first,
        atomically: a reader sees the old file or the new one, never part of one."""
        dirname = os.path.dirname(os.fspath(path))
        if dirname:
            os.makedirs(dirname, exist_ok=True)
        partial = f"{os.fspath(path)}.partial-{os.getpid()}"
        try:
            with open(partial, "w", encoding="utf-8", newline="\n") as f:
                f.write("\n".join(self._tokens) + "\n")
            os.replace(partial, path)
        finally:
            if os.path.exists(partial):
                os.remove(partial)

    @classmethod
    def load(cls, path):
        """Reads a vocabulary written by `save` (one token per line)."""
        if not os.path.exists(path):
            raise FileNotFoundError(f"vocabulary file not found: {path}")
        with open(path, encoding="utf-8", newline="\n") as f:
            tokens = f.read().split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
        if tuple(tokens[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise ValueError(
                f"{path}: not a kerasrnn vocabulary file; the first lines must be "
                f"{list(SPECIAL_TOKENS)}, got {tokens[:4]}."
            )
        try:
            return cls(tokens)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None

    def lookup(self, **kwargs):
        """A `keras.layers.StringLookup` mapping tokens to these ids: [PAD] -> 0 (the
        mask token, so a following `Embedding(mask_zero=True)` masks it), any unknown
        token -> 1 ([UNK]). Extra keyword arguments go to `StringLookup`."""
        import keras

        return keras.layers.StringLookup(
            vocabulary=self._tokens[2:],
            mask_token=PAD,
            oov_token=UNK,
            num_oov_indices=1,
            **kwargs,
        )

    def inverse_lookup(self, **kwargs):
        """A `keras.layers.StringLookup(invert=True)` mapping ids back to tokens (0 ->
        [PAD], 1 and out-of-range ids -> [UNK])."""
        import keras

        return keras.layers.StringLookup(
            vocabulary=self._tokens[2:],
            mask_token=PAD,
            oov_token=UNK,
            num_oov_indices=1,
            invert=True,
            **kwargs,
        )
