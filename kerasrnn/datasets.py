"""The standard corpora the recipes train on, downloaded, checked and cached on first use.

``kerasrnn.datasets.corpus_file("ptb", "ptb.train.txt")`` returns a local path, taken
from a local directory (``data_dir=`` or ``$KERASRNN_DATA``), the cache, or a SHA-256
checked download from the corpus' public source; ``download(corpus)`` fetches a whole
corpus; ``resolve("corpus:NAME/FILE")`` is what the recipes' data options go through;
``english_training_sentences()`` reads the English corpora's training splits as token
lists (`kerasrnn.data.english_text`), the text of a general-domain language model.
See `kerasrnn.data.download` (the implementation) and docs/data.md.
"""

from kerasrnn.data.download import (  # noqa: F401
    CORPORA,
    PREFIX,
    ChecksumError,
    Corpus,
    CorpusError,
    CorpusFile,
    corpus_file,
    default_cache_dir,
    default_data_dir,
    download,
    resolve,
)
from kerasrnn.data.english_text import english_training_sentences  # noqa: F401

__all__ = [
    "CORPORA",
    "PREFIX",
    "ChecksumError",
    "Corpus",
    "CorpusError",
    "CorpusFile",
    "corpus_file",
    "default_cache_dir",
    "default_data_dir",
    "download",
    "english_training_sentences",
    "resolve",
]
