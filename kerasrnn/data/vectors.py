"""Pretrained word vectors aligned to a vocabulary: `load_vectors` reads word2vec / GloVe
text (with or without word2vec's ``count dim`` header line, which is also fastText's
``.vec``) and word2vec binary files, gzip read transparently, and returns `WordVectors`:
the embedding matrix whose row i is the vector of the vocabulary's token i, the coverage
(words found exactly, words found only lower-cased) and optionally a vocabulary extended
with the file's most frequent words; `write_vectors` writes a ``.vec`` file.

Rows of words missing from the file are drawn from U[-a, a] with a chosen so that their
variance equals that of the file's vectors (Kim 2014), so that missing words start on
the scale of the found ones; ``[PAD]`` is zeros.

Example:

>>> import os, tempfile
>>> from kerasrnn.data import Vocabulary
>>> from kerasrnn.data.vectors import load_vectors
>>> path = os.path.join(tempfile.mkdtemp(), "v.vec")
>>> _ = open(path, "w").write("3 2\\nthe 1 2\\nParis 3 4\\ncat 5 6\\n")
>>> vectors = load_vectors(path, Vocabulary(["the", "paris", "dog"]))
>>> vectors.matrix[4:6].tolist(), vectors.coverage()["found_lowercase"]
([[1.0, 2.0], [3.0, 4.0]], 1)
"""

import gzip
import os

import numpy as np

from kerasrnn.data.loaders import DataFormatError
from kerasrnn.data.vocabulary import PAD_ID, SPECIAL_TOKENS, Vocabulary

__all__ = ["WordVectors", "load_vectors", "write_vectors"]

_SNIFF = 4096  # bytes read to tell a binary file from a text one


class WordVectors:
    """Vectors of a file aligned to a vocabulary (what `load_vectors` returns).

    Attributes:
        path: the file.
        vocabulary: the `Vocabulary` the rows follow (the given one, or with
            ``extend`` it and the file's frequent words after it).
        matrix: float32 (len(vocabulary), dim): row i is token i's vector.
        dim: the vectors' width.
        words: the regular tokens of the vocabulary before the extension.
        found: of those, the tokens whose exact form is in the file.
        found_lowercase: of those, the tokens found only by their lower-cased form (the
            file word's or the token's, e.g. ``Paris`` for ``paris``).
        added: tokens the extension added (all of them with the file's vector).
    """

    def __init__(self, path, vocabulary, matrix, found, found_lowercase, added=0):
        self.path, self.vocabulary, self.matrix = os.fspath(path), vocabulary, matrix
        self.dim = int(matrix.shape[1])
        self.found, self.found_lowercase, self.added = found, found_lowercase, added
        self.words = len(vocabulary) - len(SPECIAL_TOKENS) - added  # before the extension

    def coverage(self):
        """``{"file", "dim", "vocabulary", "found", "found_lowercase", "added",
        "coverage"}``: coverage = (found + found_lowercase) / vocabulary, the regular
        tokens before the extension (the four special tokens are not counted)."""
        words = self.words
        return {
            "file": self.path,
            "dim": self.dim,
            "vocabulary": words,
            "found": self.found,
            "found_lowercase": self.found_lowercase,
            "added": self.added,
            "coverage": (self.found + self.found_lowercase) / max(words, 1),
        }

    def describe(self):
        """One line for a log: the coverage in words."""
        c = self.coverage()
        added = f", {c['added']} added from the file" if c["added"] else ""
        return (
            f"{c['file']}: {c['found'] + c['found_lowercase']} of {c['vocabulary']} words "
            f"have a {c['dim']}-d vector ({c['coverage']:.1%}; {c['found_lowercase']} "
            f"matched only lower-cased{added})"
        )

    def initialize(self, embedding, trainable=True):
        """Writes the matrix into a built Keras `Embedding` layer (any layer whose
        ``embeddings`` variable has this matrix's shape) and sets whether training may
        change it (``trainable=False``: frozen; set it before ``compile``)."""
        variable = getattr(embedding, "embeddings", None)
        if variable is None or tuple(variable.shape) != self.matrix.shape:
            shape = None if variable is None else tuple(variable.shape)
            raise ValueError(
                f"{self.path}: the vectors form a {self.matrix.shape} matrix but the layer "
                f"{getattr(embedding, 'name', embedding)!r} has embeddings of shape {shape}; "
                "build the layer with the vocabulary and width of these vectors."
            )
        variable.assign(self.matrix.astype(variable.dtype))
        embedding.trainable = bool(trainable)
        return embedding


def _open(path):
    """The file as a binary stream (gzip decompressed)."""
    from kerasrnn.data.download import resolve

    path = os.fspath(resolve(path))
    if not os.path.exists(path):
        raise FileNotFoundError(f"vectors file not found: {path}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"expected a vectors file, got a directory: {path}")
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def _header(line):
    """``(count, dim)`` of a word2vec header line, or None."""
    fields = line.split()
    if len(fields) == 2 and all(f.isdigit() for f in fields):
        return int(fields[0]), int(fields[1])
    return None


def _is_binary(path):
    """Whether the file is word2vec binary: a header line followed by bytes that are not
    text (raw float32 values give NUL bytes or invalid UTF-8 almost at once)."""
    with _open(path) as f:
        first = f.readline(1024)
        if _header(first.decode("utf-8", "replace")) is None:
            return False
        rest = f.read(_SNIFF)
    if b"\0" in rest:
        return True
    try:
        rest.decode("utf-8")
    except UnicodeDecodeError as error:  # a multi-byte character cut by the sniff is text
        return error.start < len(rest) - 3
    return False


def _text_entries(path, encoding):
    """Yields ``(line number, word, vector)`` of a text file (header skipped)."""
    dim, said = None, "the header line"
    with _open(path) as f:
        for number, raw in enumerate(f, start=1):
            try:
                line = raw.decode(encoding).rstrip("\r\n")
            except UnicodeDecodeError as error:
                raise DataFormatError(
                    path,
                    number,
                    f"cannot decode as {encoding!r} ({error.reason}); pass "
                    "the file's `encoding`, or binary=True for a word2vec binary file",
                ) from None
            if number == 1 and _header(line):
                dim = _header(line)[1]
                continue
            fields = line.rstrip().split(" ")
            if not line.strip():
                continue
            if len(fields) < 2:
                raise DataFormatError(
                    path, number, "expected 'word v1 ... vd' (a word, then numbers)"
                )
            if dim is None:
                dim, said = len(fields) - 1, f"line {number}"
            if len(fields) - 1 != dim:
                if len(fields) - 1 < dim or _number(fields[1]):
                    raise DataFormatError(
                        path,
                        number,
                        f"expected {dim} numbers after the word (as {said} has), got "
                        f"{len(fields) - 1}; fix or drop the line",
                    )
                # a word with spaces in it (GloVe 840B has a few): the last dim fields
                fields = [" ".join(fields[:-dim])] + fields[-dim:]
            try:
                vector = np.asarray(fields[1:], dtype="float32")
            except ValueError:
                raise DataFormatError(
                    path, number, "the vector has non-numeric values; fix or drop the line"
                ) from None
            yield number, fields[0], vector


def _number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _binary_entries(path, encoding):
    """Yields ``(entry number, word, vector)`` of a word2vec binary file."""
    with _open(path) as f:
        header = _header(f.readline().decode("utf-8", "replace"))
        count, dim = header
        for number in range(1, count + 1):
            word = bytearray()
            while True:
                byte = f.read(1)
                if not byte:
                    raise DataFormatError(
                        path,
                        None,
                        f"the file ends at entry {number} of the {count} its header promises "
                        "(truncated?); download it again",
                    )
                if byte == b" ":
                    break
                if byte != b"\n" or word:  # entries may be separated by a newline
                    word += byte
            data = f.read(4 * dim)
            if len(data) != 4 * dim:
                raise DataFormatError(
                    path,
                    None,
                    f"entry {number} ({bytes(word)!r}) has {len(data) // 4} of its {dim} "
                    "values (truncated?); download it again",
                )
            try:
                text = word.decode(encoding)
            except UnicodeDecodeError:
                text = word.decode(encoding, "replace")
            yield number, text, np.frombuffer(data, dtype="<f4").astype("float32")


def load_vectors(
    path, vocabulary, extend=0, lowercase=False, binary=None, encoding="utf-8", seed=0
):
    """Reads the vectors of `vocabulary`'s tokens from a word-vector file.

    Each token takes the vector of its exact form; failing that, of the first (most
    frequent) file word with the same lower-cased form (``found_lowercase``). Formats:
    text, one ``word v1 ... vd`` line per word, with or without a first ``count dim``
    line (word2vec, GloVe, fastText ``.vec``), and word2vec's binary format (a header
    line, then each word, a space and d little-endian float32 values).

    Args:
        path: the file (gzip read transparently).
        vocabulary: a `kerasrnn.data.Vocabulary`.
        extend: add the file's first `extend` words (the most frequent ones, in the
            usual frequency-sorted files) that the vocabulary lacks after its tokens
            (lower-cased first with `lowercase`); 0: the vocabulary as it is.
        lowercase: the vocabulary holds lower-cased tokens (the added words are
            lower-cased, and keep the vector of their most frequent form).
        binary: True for word2vec binary, False for text, None: detected (a header
            line followed by bytes that are not text).
        encoding: the words' text encoding.
        seed: the seed of the missing words' random rows.

    Returns:
        A `WordVectors` (``matrix``, ``vocabulary``, ``coverage()``).

    Raises:
        DataFormatError: a malformed line (the file, the line and the fix in its message),
            vectors of different widths, or a file without vectors.
    """
    extend = int(extend)
    if extend < 0:
        raise ValueError(f"`extend` must be >= 0 (words to add), got {extend}.")
    binary = _is_binary(path) if binary is None else bool(binary)
    entries = (_binary_entries if binary else _text_entries)(path, encoding)
    tokens = vocabulary.tokens
    exact_keys = set(tokens[len(SPECIAL_TOKENS) :])
    lower_keys = {t.lower() for t in exact_keys}
    exact, lower, extra = {}, {}, {}
    dim = None
    for _, word, vector in entries:
        if dim is None:
            dim = vector.shape[0]
        if word in exact_keys and word not in exact:
            exact[word] = vector
        key = word.lower()
        if key in lower_keys and key not in lower:
            lower[key] = vector
        new = key if lowercase else word
        if (
            len(extra) < extend
            and new not in exact_keys
            and new not in extra
            and new not in SPECIAL_TOKENS
            and new.strip() == new
            and new
        ):
            extra[new] = vector
    if dim is None:
        raise DataFormatError(path, None, "the file contains no vectors (it is empty).")
    if extra:
        vocabulary = Vocabulary(tokens[len(SPECIAL_TOKENS) :] + list(extra))
        tokens = vocabulary.tokens
    rows, found, found_lowercase = {}, 0, 0
    for i, token in enumerate(tokens[len(SPECIAL_TOKENS) :], start=len(SPECIAL_TOKENS)):
        if token in exact:
            rows[i], found = exact[token], found + 1
        elif token in extra:
            rows[i] = extra[token]
        elif token.lower() in lower:
            rows[i], found_lowercase = lower[token.lower()], found_lowercase + 1
    known = np.stack(list(rows.values())) if rows else np.zeros((0, dim), "float32")
    # U[-a, a] has variance a^2 / 3: a = sqrt(3) std keeps the file's scale (Kim 2014)
    scale = float(np.sqrt(3.0) * known.std()) if known.size > 1 else 0.05
    rng = np.random.default_rng(seed)
    matrix = rng.uniform(-scale, scale, (len(tokens), dim)).astype("float32")
    for i, vector in rows.items():
        matrix[i] = vector
    matrix[PAD_ID] = 0.0
    return WordVectors(path, vocabulary, matrix, found, found_lowercase, len(extra))


def write_vectors(path, tokens, matrix):
    """Writes ``tokens[i] matrix[i]`` lines after a ``count dim`` header: a word2vec /
    fastText ``.vec`` text file that `load_vectors` (and gensim, fastText) read. Tokens
    must be free of whitespace."""
    matrix = np.asarray(matrix, dtype="float32")
    if matrix.ndim != 2 or len(tokens) != matrix.shape[0]:
        raise ValueError(
            f"`matrix` must have one row per token: {len(tokens)} tokens, shape {matrix.shape}."
        )
    bad = [t for t in tokens if not t or t.split() != [t]]
    if bad:
        raise ValueError(f"tokens must be non-empty and free of whitespace, got {bad[:3]!r}.")
    partial = f"{os.fspath(path)}.partial-{os.getpid()}"
    with open(partial, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"{matrix.shape[0]} {matrix.shape[1]}\n")
        for token, row in zip(tokens, matrix):
            f.write(token + " " + " ".join(f"{v:.6g}" for v in row) + "\n")
    os.replace(partial, path)
    return os.fspath(path)
