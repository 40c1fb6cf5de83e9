"""The training splits of the standard English corpora as token lists, for a
general-domain language model (ULMFiT's, Howard & Ruder 2018).

`english_training_sentences` reads the training split of each English corpus of
`kerasrnn.data.download.CORPORA` (`TRAINING_FILES`): Penn Treebank ``ptb.train.txt``,
UD English EWT ``en_ewt-ud-train.conllu``, Multi30k ``train.en.gz`` (raw text: its
punctuation is split off, as the other corpora's already is), CoNLL-2003 ``train.txt``
(less its ``-DOCSTART-`` lines) and SICK ``SICK_train.txt`` (both sentences of each
pair, each sentence once). Never a validation or test split, so a classifier or tagger
fine-tuned from the LM is still evaluated on text the LM has not read.

The sentence polarity corpus (MR) is left out: it is evaluated by cross-validation, so
every sentence is some fold's test sentence, and an LM that read it would have seen the
evaluated fold.

`write_language_model_corpus` writes those sentences lower-cased, one per line, as the
``train.txt`` / ``valid.txt`` of ``kerasrnn language_model train --train-file``
(``kerasrnn lm_corpus`` is its command line).
"""

import json
import os
import random
import re

from kerasrnn.data.download import corpus_file
from kerasrnn.data.loaders import load_conll_columns, load_conllu, load_sick, read_lines

__all__ = [
    "PUNCTUATION",
    "TRAINING_FILES",
    "english_training_sentences",
    "write_language_model_corpus",
]

# {corpus: its training file}, names of `kerasrnn.data.download.CORPORA`, in reading order.
TRAINING_FILES = {
    "ptb": "ptb.train.txt",
    "ud_en_ewt": "en_ewt-ud-train.conllu",
    "multi30k": "train.en.gz",
    "conll2003": "train.txt",
    "sick": "SICK_train.txt",
}

# Multi30k's raw (untokenised) text: split off punctuation, as the other corpora already are.
PUNCTUATION = re.compile(r"([.,!?;:\"()])")

_LEFT_OUT = "sentence_polarity (cross-validated: every sentence is a test sentence)"


def _sick_sentences(path):
    a, b, _, _ = load_sick(path)
    return [s.split() for s in dict.fromkeys(a + b)]  # each sentence once, first-seen order


def english_training_sentences(data_dir=None, cache_dir=None):
    """The training sentences of the English corpora, as whitespace-split token lists.

    Args:
        data_dir: a local folder holding ``<corpus>/<file>`` (or ``<file>.gz``); default
            ``$KERASRNN_DATA``, else the files are downloaded (see
            `kerasrnn.data.download.corpus_file`).
        cache_dir: the download cache (see `kerasrnn.data.download.corpus_file`).

    Returns:
        ``{corpus: sentences}`` for the corpora of `TRAINING_FILES`, in that order; each
        sentence a non-empty list of tokens, case kept.

    Raises:
        FileNotFoundError: a training file is missing from `data_dir` (the message names it).
        kerasrnn.data.download.ChecksumError: a file that is not the published one.

    Example:

    >>> texts = english_training_sentences("data")  # doctest: +SKIP
    >>> {name: len(sentences) for name, sentences in texts.items()}  # doctest: +SKIP
    {'ptb': 42068, 'ud_en_ewt': 12544, 'multi30k': 29000, 'conll2003': 14041, 'sick': 4802}
    """

    def path(corpus):
        return corpus_file(corpus, TRAINING_FILES[corpus], data_dir=data_dir, cache_dir=cache_dir)

    texts = {  # read in this order, so a missing folder is reported at its first file
        "ptb": [line.split() for _, line in read_lines(path("ptb"))],
        "ud_en_ewt": load_conllu(path("ud_en_ewt"))[0],
        "multi30k": [
            PUNCTUATION.sub(r" \1 ", line).split() for _, line in read_lines(path("multi30k"))
        ],
        "conll2003": [s for s in load_conll_columns(path("conll2003"))[0] if s[0] != "-DOCSTART-"],
        "sick": _sick_sentences(path("sick")),
    }
    return {name: [s for s in sentences if s] for name, sentences in texts.items()}


def write_language_model_corpus(output_dir, data_dir=None, valid_lines=2000, seed=0):
    """Writes `english_training_sentences`, lower-cased and shuffled, for a language model.

    Args:
        output_dir: the folder to write (made when missing): ``train.txt`` and
            ``valid.txt``, one space-joined sentence per line, and ``corpus.json``.
        data_dir: see `english_training_sentences`.
        valid_lines: how many lines of the shuffle, its last, are ``valid.txt`` (the
            text the LM's best epoch is chosen on).
        seed: the seed of the shuffle (`random.Random`).

    Returns:
        The content of ``corpus.json``: lines and tokens per corpus (``corpora``), what
        is left out and why (``left_out``), ``train_lines``, ``valid_lines`` and
        ``train_tokens``.
    """
    texts = english_training_sentences(data_dir)
    lines = [" ".join(s).lower() for sentences in texts.values() for s in sentences]
    random.Random(seed).shuffle(lines)
    valid, train = lines[len(lines) - valid_lines :], lines[: len(lines) - valid_lines]
    os.makedirs(output_dir, exist_ok=True)
    for name, part in (("train.txt", train), ("valid.txt", valid)):
        with open(os.path.join(output_dir, name), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in part))
    summary = {
        "corpora": {
            name: {"lines": len(s), "tokens": sum(map(len, s))} for name, s in texts.items()
        },
        "left_out": _LEFT_OUT,
        "train_lines": len(train),
        "valid_lines": len(valid),
        "train_tokens": sum(len(line.split()) for line in train),
    }
    with open(os.path.join(output_dir, "corpus.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    return summary
