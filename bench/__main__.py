"""The one entry point of bench/: lists the benchmarks, runs one, renders the results.

python -m bench list                    # each benchmark, one line
python -m bench cells --rounds 3        # run one (--help: its options)
python -m bench render [--check]        # docs/results.md and the README tables
"""

import importlib
import os
import sys

# name -> (module in bench/, function, one line); the function takes argv
BENCHMARKS = {
    "cells": ("cells", "main", "training step of the LSTM/GRU vs Keras' layers and PyTorch (CPU)"),
    "recipes_torch": ("recipes_torch", "main", "each recipe's training step vs PyTorch"),
    "decoding": ("decoding", "main", "beam-search throughput of Seq2Seq.generate"),
    "attention": ("attention", "main", "attentive decoder speed vs Keras-only; learning"),
    "serving": ("serving", "main", "trained models served by Keras, SavedModel, ONNX, LiteRT"),
    "quantization": ("quantization", "main", "quantised LiteRT/ONNX: size, latency, metric"),
    "gpu": ("gpu", "main", "the core on a GPU (JAX, torch backends) vs cuDNN (gpu.sh)"),
    "classifier": ("quality", "classifier", "MR sentence polarity, 10-fold CV, NB baseline"),
    "tagger": ("quality", "tagger", "UD English EWT UPOS accuracy, most-frequent-tag baseline"),
    "sick": ("quality", "sick", "SICK entailment and relatedness, majority and overlap"),
    "ner": ("quality", "ner", "CoNLL-2003 NER entity F1, dictionary baseline"),
    "ner_best": ("quality", "ner_best", "CoNLL-2003 NER with biLM, vectors and a budget"),
    "ner_n_best": (
        "quality",
        "ner_n_best",
        "CoNLL-2003 NER oracle F1 of the n best (list Viterbi)",
    ),
    "language_model": ("quality", "language_model", "Penn Treebank perplexity (Zaremba)"),
    "translator": ("quality", "translator", "Multi30k De-En BLEU and decoding speed"),
    "translator_lm": ("quality", "translator_lm", "Multi30k De-En BLEU with LM shallow fusion"),
    "translator_subwords": (
        "quality",
        "translator_subwords",
        "Multi30k De-En BLEU with subwords vs words",
    ),
    "time_budget": (
        "quality",
        "time_budget",
        "char LM: budget schedules, range test, same minutes",
    ),
    "copy_attention": ("quality", "copy_attention", "copy attention vs softmax, rare words"),
    "search_error": ("quality", "search_error", "greedy and beam vs exhaustive search, dates"),
    "diverse_n_best": ("quality", "diverse_n_best", "Multi30k n-best diversity, diverse vs beam"),
    "transfer": ("transfer", "mr", "MR with and without LM transfer (ULMFiT), bigram NB"),
    "bilm_upos": ("transfer", "upos", "EWT UPOS with and without a frozen biLM's features"),
    "vectors_ner": ("transfer", "ner_vectors", "CoNLL-2003 NER with and without LM word vectors"),
}


def usage():
    width = max(map(len, BENCHMARKS))
    lines = [__doc__.strip(), "", "benchmarks:"]
    lines += [f"  {name:<{width}}  {line}" for name, (_, _, line) in BENCHMARKS.items()]
    lines.append(f"  {'render':<{width}}  docs/results.md and the README tables from bench/results")
    return "\n".join(lines)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name == "list":
        width = max(map(len, BENCHMARKS))
        for bench, (_, _, line) in BENCHMARKS.items():
            print(f"{bench:<{width}}  {line}")
        return 0
    if name == "render":
        from bench import suite

        return suite.render(rest)
    if name not in BENCHMARKS:
        print(
            f"python -m bench: unknown benchmark {name!r}; one of: {', '.join(BENCHMARKS)} "
            "(python -m bench list)",
            file=sys.stderr,
        )
        return 2
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    module, function, _ = BENCHMARKS[name]
    result = getattr(importlib.import_module(f"bench.{module}"), function)(rest)
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
