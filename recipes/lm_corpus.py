"""The shared English text for a transfer language model (ULMFiT's general-domain LM):
the training splits of the corpora in the data folder, one lower-cased, whitespace-
tokenised sentence per line, for ``language_model train --train-file``.

    kerasrnn lm_corpus --output-dir runs/lm_corpus [--data DIR] [--valid-lines 2000]

The corpora are read from ``--data DIR``, else from ``$KERASRNN_DATA``. What is read (and
why MR is not) is `kerasrnn.data.english_text`'s; `write_language_model_corpus` writes
``train.txt``, ``valid.txt`` (the last `valid_lines` of a seeded shuffle, for the LM's
best epoch) and ``corpus.json`` (lines and tokens per corpus) into `output_dir`; the
command prints corpus.json.
"""

import argparse
import json
import os
import sys


def _data_dir(data):
    """The corpora folder: `data` (``--data``), else ``$KERASRNN_DATA``, the folder the
    ``corpus:`` specs of `kerasrnn.datasets` read too; without either, a one-line error."""
    folder = data or os.environ.get("KERASRNN_DATA")
    if not folder:
        raise FileNotFoundError(
            "no corpora folder: give --data DIR or set KERASRNN_DATA (a folder holding "
            "ptb/, ud_en_ewt/, multi30k/, conll2003/ and sick/)"
        )
    return folder


def build(output_dir, data=None, valid_lines=2000, seed=0):
    """`write_language_model_corpus` over the corpora folder (never a download); returns
    the summary (corpus.json's content)."""
    from kerasrnn.data.english_text import write_language_model_corpus

    return write_language_model_corpus(output_dir, _data_dir(data), valid_lines, seed)


def main(argv=None, prog="recipes.lm_corpus"):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default="runs/lm_corpus", help="where to write")
    parser.add_argument("--data", default=None, help="the corpora folder (default: $KERASRNN_DATA)")
    parser.add_argument("--valid-lines", type=int, default=2000, help="lines held out as valid.txt")
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffle")
    args = parser.parse_args(argv)
    try:
        summary = build(args.output_dir, args.data, args.valid_lines, args.seed)
    except (FileNotFoundError, ValueError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
