"""The shared English text for a transfer language model (ULMFiT's general-domain LM):
the training splits of the corpora in the data folder, one lower-cased, whitespace-
tokenised sentence per line, for ``language_model train --train-file``.

    kerasrnn lm_corpus --output-dir runs/lm_corpus [--data DIR] [--valid-lines 2000]

The corpora are read from ``--data DIR``, else from ``$KERASRNN_DATA``.

Read (training splits only, never a validation or test split): Penn Treebank
``ptb.train.txt``, UD English EWT ``en_ewt-ud-train.conllu``, Multi30k ``train.en``,
CoNLL-2003 ``train.txt`` and SICK ``SICK_train.txt`` (both sentences of each pair).
The sentence polarity corpus (MR) is left out: it is evaluated by cross-validation, so
every sentence is some fold's test sentence, and an LM that read it would have seen the
evaluated fold. Writes ``train.txt``, ``valid.txt`` (the last `valid_lines` of a seeded
shuffle, for the LM's best epoch) and ``corpus.json`` (lines and tokens per corpus) into
`output_dir`; prints corpus.json.
"""

import argparse
import json
import os
import random
import re
import sys

# Raw (untokenised) text: split off punctuation, as the other corpora already are.
PUNCTUATION = re.compile(r"([.,!?;:\"()])")


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


def corpora(data):
    """``{name: sentences}`` (token lists, not yet lower-cased) of every training text."""
    from kerasrnn.data.loaders import load_conll_columns, load_conllu, load_sick, read_lines

    def path(*parts):
        for suffix in ("", ".gz"):
            if os.path.exists(os.path.join(data, *parts) + suffix):
                return os.path.join(data, *parts) + suffix
        raise FileNotFoundError(f"not found: {os.path.join(data, *parts)}[.gz] (see --data)")

    ptb = [line.split() for _, line in read_lines(path("ptb", "ptb.train.txt"))]
    ewt = load_conllu(path("ud_en_ewt", "en_ewt-ud-train.conllu"))[0]
    multi30k = [
        PUNCTUATION.sub(r" \1 ", line).split()
        for _, line in read_lines(path("multi30k", "train.en"))
    ]
    conll = [
        s for s in load_conll_columns(path("conll2003", "train.txt"))[0] if s[0] != "-DOCSTART-"
    ]
    a, b, _, _ = load_sick(path("sick", "SICK_train.txt"))
    sick = [s.split() for s in dict.fromkeys(list(a) + list(b))]  # each sentence once
    texts = {"ptb": ptb, "ud_en_ewt": ewt, "multi30k": multi30k, "conll2003": conll}
    texts["sick"] = sick
    return {name: [s for s in sentences if s] for name, sentences in texts.items()}


def build(output_dir, data=None, valid_lines=2000, seed=0):
    """Writes train.txt, valid.txt and corpus.json into `output_dir`; returns the
    summary (corpus.json's content)."""
    texts = corpora(_data_dir(data))
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
        "left_out": "sentence_polarity (cross-validated: every sentence is a test sentence)",
        "train_lines": len(train),
        "valid_lines": len(valid),
        "train_tokens": sum(len(line.split()) for line in train),
    }
    with open(os.path.join(output_dir, "corpus.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    return summary


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
