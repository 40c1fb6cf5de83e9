"""Corpus loaders: local text files (plain or gzip) and tensorflow-datasets.

Every loader returns plain Python lists, so the caller can split, count and inspect the
data before it becomes a `tf.data` pipeline (see `kerasrnn.data.pipeline`):

* classification: ``(texts, labels)``, two lists of str;
* tagging: ``(sentences, tags)``, two lists of token lists.

A malformed line raises `DataFormatError`, whose message names the file and the line.
"""

import gzip
import os

__all__ = [
    "DataFormatError",
    "DatasetUnavailableError",
    "open_text",
    "read_lines",
    "load_tsv",
    "load_class_files",
    "load_conllu",
    "load_sick",
    "load_conll_columns",
    "load_tfds_classification",
    "load_tfds_tagging",
    "load_parallel_text",
    "load_tfds_translation",
]


class DataFormatError(ValueError):
    """A data file that does not have the expected format.

    Attributes:
        path: the file.
        line: the 1-based line number, or None when the problem is the whole file.
    """

    def __init__(self, path, line, message):
        self.path = os.fspath(path)
        self.line = line
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class DatasetUnavailableError(RuntimeError):
    """A tensorflow-datasets dataset that is neither prepared nor downloadable."""


def open_text(path, encoding="utf-8"):
    """Opens a text file for reading, decompressing it when it is gzip-compressed.

    `path` may also be a ``corpus:NAME/FILE`` spec of a standard corpus
    (`kerasrnn.datasets`), fetched on first use. Compression is recognised by the gzip
    magic bytes, not by the file name. Lines are
    split on ``\\n`` (and ``\\r\\n``) only: the Windows-1252 files of the sentence
    polarity corpus contain byte 0x85, which `str.splitlines` would take for a line
    break (NEL) if it were decoded as latin-1.
    """
    from kerasrnn.data.download import resolve

    path = os.fspath(resolve(path))  # a ``corpus:NAME/FILE`` spec -> its checked local copy
    if not os.path.exists(path):
        raise FileNotFoundError(f"data file not found: {path}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"expected a data file, got a directory: {path}")
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding=encoding, newline="")
    return open(path, encoding=encoding, newline="")


def read_lines(path, encoding="utf-8"):
    """Yields ``(line_number, line)`` with the line ending removed.

    A decoding error is reported with the file and line (wrong `encoding`)."""
    with open_text(path, encoding) as f:
        number = 0
        try:
            for number, line in enumerate(f, start=1):
                yield number, line.rstrip("\r\n")
        except UnicodeDecodeError as error:
            raise DataFormatError(
                path,
                number + 1,
                f"cannot decode as {encoding!r} ({error.reason}); "
                "pass the file's `encoding` (e.g. 'cp1252')",
            ) from None


def _require_examples(path, examples):
    if not examples:
        raise DataFormatError(path, None, "the file contains no examples (it is empty).")
    return examples


def load_tsv(path, encoding="utf-8", label_column=0, text_column=1):
    """Reads a classification file with one ``label<TAB>text`` example per line.

    Blank lines are skipped. A line without a tab, or with an empty label, is an error.

    Returns:
        ``(texts, labels)``.
    """
    texts, labels = [], []
    for number, line in read_lines(path, encoding):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) <= max(label_column, text_column):
            raise DataFormatError(
                path,
                number,
                f"expected 'label<TAB>text', got {len(fields)} field(s): {line[:60]!r}",
            )
        label = fields[label_column].strip()
        if not label:
            raise DataFormatError(path, number, "empty label")
        labels.append(label)
        texts.append(fields[text_column].strip())
    _require_examples(path, texts)
    return texts, labels


def load_class_files(files, encoding="utf-8"):
    """Reads one file per class, one example per line (blank lines skipped).

    Args:
        files: a mapping ``{label: path}``, or a list of paths whose labels are their
            extensions (``rt-polarity.pos`` -> ``pos``; after removing ``.gz``), or the
            file name when there is no extension.
        encoding: e.g. ``"cp1252"`` for the sentence polarity corpus.

    Returns:
        ``(texts, labels)``, in file order.
    """
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    if not isinstance(files, dict):
        mapping = {}
        for path in files:
            name = os.path.basename(os.fspath(path))
            if name.endswith(".gz"):
                name = name[:-3]
            label = name.rsplit(".", 1)[-1] if "." in name else name
            if label in mapping:
                raise ValueError(
                    f"`files`: {path} and {mapping[label]} would both get the label "
                    f"{label!r}; pass a {{label: path}} mapping instead."
                )
            mapping[label] = path
        files = mapping
    if not files:
        raise ValueError("`files` is empty: give at least one file per class.")
    texts, labels = [], []
    for label, path in files.items():
        lines = [line.strip() for _, line in read_lines(path, encoding)]
        lines = _require_examples(path, [line for line in lines if line])
        texts += lines
        labels += [str(label)] * len(lines)
    return texts, labels


def _sentences_from_blocks(path, encoding, parse_line, comment_prefix=None):
    """Groups lines into blank-line-separated sentences; parse_line(number, line)
    returns ``(token, tag)`` or None to skip the line."""
    sentences, tags = [], []
    words, labels = [], []
    for number, line in read_lines(path, encoding):
        if not line.strip():
            if words:
                sentences.append(words)
                tags.append(labels)
                words, labels = [], []
            continue
        if comment_prefix and line.startswith(comment_prefix):
            continue
        parsed = parse_line(number, line)
        if parsed is not None:
            words.append(parsed[0])
            labels.append(parsed[1])
    if words:
        sentences.append(words)
        tags.append(labels)
    _require_examples(path, sentences)
    return sentences, tags


def load_conllu(path, column="upos", encoding="utf-8"):
    """Reads a CoNLL-U file as (tokens, tags) sentences for POS tagging.

    Comment lines (``#``), multiword-token ranges (ID ``3-4``) and empty nodes (ID
    ``5.1``) are skipped, so the tokens are the syntactic words that carry the tags.

    Args:
        column: ``"upos"`` (column 4, universal tags) or ``"xpos"`` (column 5,
            language-specific tags).

    Returns:
        ``(sentences, tags)``: lists of token lists and tag lists.
    """
    columns = {"upos": 3, "xpos": 4}
    if column not in columns:
        raise ValueError(f"`column` must be one of {sorted(columns)}, got {column!r}.")
    index = columns[column]

    def parse(number, line):
        fields = line.split("\t")
        if len(fields) != 10:
            raise DataFormatError(
                path,
                number,
                f"a CoNLL-U token line has 10 tab-separated fields, got "
                f"{len(fields)}: {line[:60]!r}",
            )
        token_id = fields[0]
        if "-" in token_id or "." in token_id:
            return None
        if not token_id.isdigit():
            raise DataFormatError(path, number, f"bad token ID {token_id!r}")
        if not fields[1] or fields[index] in ("", "_"):
            raise DataFormatError(path, number, f"missing FORM or {column.upper()}")
        return fields[1], fields[index]

    return _sentences_from_blocks(path, encoding, parse, comment_prefix="#")


def load_conll_columns(path, token_column=0, tag_column=-1, encoding="utf-8", separator=None):
    """Reads CoNLL-2003-style column files: one token per line, columns separated by
    whitespace (or `separator`), sentences separated by blank lines; tags usually in a
    BIO scheme (``B-PER``, ``I-PER``, ``O``). ``-DOCSTART-`` lines are skipped.

    Every token line must have the same number of columns as the first one.

    Returns:
        ``(sentences, tags)``.
    """
    width = []

    def parse(number, line):
        fields = line.split(separator)
        if not width:
            width.append(len(fields))
        if len(fields) != width[0]:
            raise DataFormatError(
                path,
                number,
                f"expected {width[0]} columns like the first token line, "
                f"got {len(fields)}: {line[:60]!r}",
            )
        try:
            token, tag = fields[token_column], fields[tag_column]
        except IndexError:
            raise DataFormatError(
                path, number, f"no column {token_column} or {tag_column} in {line[:60]!r}"
            ) from None
        if token == "-DOCSTART-":
            return None
        return token, tag

    return _sentences_from_blocks(path, encoding, parse)


SICK_COLUMNS = ("sentence_A", "sentence_B", "relatedness_score", "entailment_judgment")
SICK_LABELS = ("CONTRADICTION", "ENTAILMENT", "NEUTRAL")


def load_sick(path, encoding="utf-8"):
    """A SICK-style tab-separated file (Marelli et al. 2014) whose header names the
    columns `SICK_COLUMNS` (others are ignored) -> ``(sentences_a, sentences_b,
    relatedness scores in [1, 5], entailment judgments in `SICK_LABELS`)``; a
    `DataFormatError` names the file and line of a malformed row."""
    rows = read_lines(path, encoding)
    header = next(rows, None)
    if header is None:
        raise DataFormatError(path, None, "the file is empty")
    names = header[1].split("\t")
    missing = [c for c in SICK_COLUMNS if c not in names]
    if missing:
        raise DataFormatError(
            path,
            1,
            f"the header lacks column(s) {missing}; expected the SICK header "
            f"with {list(SICK_COLUMNS)}, got {names}",
        )
    index = [names.index(c) for c in SICK_COLUMNS]
    a, b, scores, labels = [], [], [], []
    for number, line in rows:
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < len(names):
            raise DataFormatError(
                path, number, f"expected {len(names)} tab-separated fields, got {len(fields)}"
            )
        first, second, score, label = (fields[i].strip() for i in index)
        try:
            score = float(score)
        except ValueError:
            raise DataFormatError(
                path, number, f"relatedness_score must be a number, got {score!r}"
            ) from None
        if not 1.0 <= score <= 5.0:
            raise DataFormatError(path, number, f"relatedness_score must be in [1, 5], got {score}")
        if label not in SICK_LABELS:
            raise DataFormatError(
                path,
                number,
                f"entailment_judgment must be one of {list(SICK_LABELS)}, got {label!r}",
            )
        a.append(first)
        b.append(second)
        scores.append(score)
        labels.append(label)
    if not a:
        raise DataFormatError(path, None, "no sentence pairs after the header")
    return a, b, scores, labels


def _tfds_load(name, split, data_dir, download):
    import tensorflow_datasets as tfds

    try:
        return tfds.load(
            name, split=split, data_dir=data_dir, download=download, as_supervised=False
        )
    except Exception as error:  # tfds raises many types (DatasetNotFound, network...)
        where = data_dir or "~/tensorflow_datasets"
        raise DatasetUnavailableError(
            f"could not load the tensorflow-datasets dataset {name!r} (split {split!r}) "
            f"from {where} (download={download}): {type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''}. Download it on a "
            "machine with internet access (`tfds build` or tfds.load) and point "
            "`data_dir` at the result, or use local files."
        ) from None


def load_tfds_classification(
    name="imdb_reviews",
    split="train",
    data_dir=None,
    download=True,
    text_key="text",
    label_key="label",
):
    """Loads a text classification dataset from tensorflow-datasets (e.g.
    ``imdb_reviews``, ``ag_news_subset``) as ``(texts, labels)``; labels are the
    dataset's class names when it has them.

    Raises:
        DatasetUnavailableError: with a short explanation when the dataset is neither
            in `data_dir` nor downloadable.
    """
    dataset = _tfds_load(name, split, data_dir, download)
    import tensorflow_datasets as tfds

    names = None
    builder = tfds.builder(name, data_dir=data_dir)
    feature = builder.info.features[label_key]
    if hasattr(feature, "names"):
        names = feature.names
    texts, labels = [], []
    for example in tfds.as_numpy(dataset):
        texts.append(example[text_key].decode("utf-8"))
        label = int(example[label_key])
        labels.append(names[label] if names else str(label))
    return texts, labels


def load_tfds_tagging(
    name="conll2003",
    split="train",
    data_dir=None,
    download=True,
    tokens_key="tokens",
    tags_key="ner",
):
    """Loads a sequence tagging dataset from tensorflow-datasets (the catalog's
    ``conll2003`` has ``tokens`` with ``ner``, ``pos`` and ``chunks`` tags) as
    ``(sentences, tags)`` with tag names.

    Raises:
        DatasetUnavailableError: when the dataset is neither in `data_dir` nor
            downloadable.
    """
    dataset = _tfds_load(name, split, data_dir, download)
    import tensorflow_datasets as tfds

    feature = tfds.builder(name, data_dir=data_dir).info.features[tags_key]
    names = getattr(getattr(feature, "feature", feature), "names", None)
    sentences, tags = [], []
    for example in tfds.as_numpy(dataset):
        sentences.append([t.decode("utf-8") for t in example[tokens_key]])
        ids = [int(t) for t in example[tags_key]]
        tags.append([names[i] if names else str(i) for i in ids])
    return sentences, tags


def load_sentence_pairs(path, encoding="utf-8"):
    """Reads one sentence pair per line, the two sentences separated by a tab (plain
    or gzip; blank lines skipped) -> ``[(sentence_a, sentence_b), ...]``.

    Raises:
        DataFormatError: a line without exactly two tab-separated fields (the message
            names the file and line).
    """
    pairs = []
    for number, line in read_lines(path, encoding):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataFormatError(
                path, number, f"expected two tab-separated sentences, got {len(fields)} field(s)"
            )
        pairs.append(tuple(fields))
    return pairs


def load_parallel_text(source_path, target_path, encoding="utf-8"):
    """Loads a parallel corpus: two files with one sentence per line, line i of the
    source aligned with line i of the target (plain or gzip) -> ``(sources, targets)``.

    Raises:
        DataFormatError: when the files have different line counts (the message names
            both files and both counts) or are empty.
    """
    sources = [line for _, line in read_lines(source_path, encoding)]
    targets = [line for _, line in read_lines(target_path, encoding)]
    if len(sources) != len(targets):
        raise DataFormatError(
            source_path,
            None,
            f"parallel files differ in length: {os.fspath(source_path)} has "
            f"{len(sources)} lines but {os.fspath(target_path)} has {len(targets)} lines; "
            "they must hold one aligned sentence per line.",
        )
    _require_examples(source_path, sources)
    return sources, targets


def load_tfds_translation(
    name="ted_hrlr_translate/pt_to_en", split="train", data_dir=None, download=True
):
    """Loads a translation dataset from tensorflow-datasets (e.g.
    ``ted_hrlr_translate/pt_to_en``, ``wmt14_translate/de-en``) as ``(sources,
    targets)``; the language pair is the builder's ``supervised_keys``.

    Raises:
        DatasetUnavailableError: when the dataset is neither in `data_dir` nor
            downloadable.
    """
    dataset = _tfds_load(name, split, data_dir, download)
    import tensorflow_datasets as tfds

    source_key, target_key = tfds.builder(name, data_dir=data_dir).info.supervised_keys
    sources, targets = [], []
    for example in tfds.as_numpy(dataset):
        sources.append(example[source_key].decode("utf-8"))
        targets.append(example[target_key].decode("utf-8"))
    return sources, targets
