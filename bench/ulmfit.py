"""Quality benchmark, reduced: ULMFiT transfer (recipes.transfer) on sentence polarity
(MR), against the same classifier trained from scratch and a bigram Naive Bayes, on the
same folds.

1. The shared text (`recipes.lm_corpus`: PTB, EWT, Multi30k English, CoNLL-2003 and
   SICK training texts; MR left out, since every MR sentence is some fold's test).
2. A word-level LM on it for `--lm-minutes` (its `--time-budget`: the cosine schedule
   spans the minutes, whatever number of epochs they hold).
3. For each of the first `--folds` folds of MR's 10-fold split (the split of
   bench/classifier.py; 10% of the training folds held out for the best epoch): the
   bigram Naive Bayes alone, the classifier from scratch, and the same classifier with
   ``--pretrained-lm`` (LM fine-tuning on the fold's training texts, slanted triangular
   rates, discriminative rates, gradual unfreezing). Same architecture both ways: one
   direction (the LM's), 2 LSTM layers, concat pooling.

    PYTHONPATH=. python bench/ulmfit.py [--lm-minutes 6] [--folds 2] [--runs runs/ulmfit]
    PYTHONPATH=. python bench/ulmfit.py --lm runs/ulmfit/lm --runs runs/other \
        --transfer lm_extend_vocabulary=2     # other transfer options, the same LM

Prints a table (accuracy per fold and mean) and the LM's figures. Finished runs under
`--runs` are read, not trained again (delete them to measure afresh). A reduced measurement:
a small LM trained for minutes on a CPU, 2 of 10 folds; not the paper's setting.
"""

import argparse
import json
import os
import pathlib
import platform
import shlex
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from kerasrnn.data.specs import holdout  # noqa: E402
from recipes import classifier, common, language_model, lm_corpus  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data"

LM_CONFIG = {
    # Keras' initializers (glorot, orthogonal, forget-gate bias 1), not the recipe's
    # default Zaremba init (uniform +-0.1, forget bias 0): a classifier built on an LM
    # of that init stayed near chance on MR (docs/recipes/classifier.md)
    "init_scale": 0.0,
    "max_vocab": 10000,
    "units": 128,
    "num_layers": 2,
    "dropout": 0.2,
    "optimizer": "adam",
    "learning_rate": 0.002,
    "loss_reduction": "mean",
    "clipnorm": 1.0,
    "batch_size": 64,
    "steps": 35,
    "epochs": 1000,  # a cap: the time budget ends the training
    "budget_schedule": "cosine",
    "warmup": 0.05,
    "test_file": "",
    "verbose": 2,
}
# The classifier, the same way with and without transfer (the LM's shapes).
CLASSIFIER = {
    "cell": "lstm",
    "units": 128,
    "num_layers": 2,
    "embedding_dim": 128,
    "bidirectional": False,
    "pooling": "concat",
    "lowercase": True,
    "embedding_dropout": 0.4,
    "dropout": 0.4,
    "batch_size": 50,
    "epochs": 5,
    "patience": 0,
    "valid_fraction": 0.1,
    "learning_rate": 0.002,
    "verbose": 2,
}
TRANSFER = {
    "lm_finetune_epochs": 1,
    "lr_schedule": "slanted_triangular",
    "discriminative_decay": 2.6,
    "gradual_unfreezing": True,
    "learning_rate": 0.004,
}


def naive_bayes_accuracy(train, test, lowercase=True):
    """Bigram multinomial Naive Bayes (binarised counts, `NaiveBayesExpert` times a
    uniform model) trained on `train`, accuracy on `test`."""
    import numpy as np

    from kerasrnn.data import Vocabulary
    from kerasrnn.data.tokenizers import tokenize
    from kerasrnn.layers import NaiveBayesExpert

    labels = sorted(set(train[1]))
    tokens = tokenize(train[0], lowercase)
    vocab = Vocabulary.build(tokens)
    expert = NaiveBayesExpert(len(vocab), len(labels), order=2)
    expert.estimate([vocab.encode(t) for t in tokens], [labels.index(y) for y in train[1]])
    correct = 0
    test_tokens = tokenize(test[0], lowercase)
    for start in range(0, len(test_tokens), 256):
        rows = [vocab.encode(t) or [0] for t in test_tokens[start : start + 256]]
        ids = np.zeros((len(rows), max(map(len, rows))), "int32")
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
        uniform = np.full((len(rows), len(labels)), 1.0 / len(labels), "float32")
        predicted = np.argmax(np.asarray(expert([ids, uniform])), axis=1)
        gold = [labels.index(y) for y in test[1][start : start + 256]]
        correct += int(np.sum(predicted == np.array(gold)))
    return correct / len(test[1])


def mr_folds(data):
    """MR's texts, labels and 10-fold split (bench/classifier.py's): a list of
    (training indices, test indices), one per fold."""
    import numpy as np

    from kerasrnn.data import load_class_files

    polarity = pathlib.Path(data) / "sentence_polarity"
    texts, labels = load_class_files(
        [polarity / "rt-polarity.pos", polarity / "rt-polarity.neg"], encoding="cp1252"
    )
    order = np.random.default_rng(0).permutation(len(texts))
    folds = [(np.setdiff1d(order, test), test) for test in np.array_split(order, 10)]
    return texts, labels, folds


def trained_lm(lm_dir):
    """An LM run of an earlier `--runs` (`--lm`), with its corpus' summary."""
    with open(os.path.join(lm_dir, "config.json")) as f:
        corpus = os.path.dirname(json.load(f)["train_file"])
    with open(os.path.join(corpus, "corpus.json")) as f:
        summary = json.load(f)
    with open(os.path.join(lm_dir, "results.json")) as f:
        return lm_dir, summary, json.load(f)


def train_lm(runs, minutes, data):
    """The shared text and an LM trained on it for `minutes` under `runs` (each made
    only when missing), as `trained_lm` gives them."""
    corpus = os.path.join(runs, "corpus")
    if not os.path.exists(os.path.join(corpus, "train.txt")):
        lm_corpus.build(corpus, data)
    lm_dir = os.path.join(runs, "lm")
    if not os.path.exists(os.path.join(lm_dir, "results.json")):
        config = common.load_config(
            language_model.DEFAULTS,
            overrides={
                **LM_CONFIG,
                "train_file": os.path.join(corpus, "train.txt"),
                "valid_file": os.path.join(corpus, "valid.txt"),
                "output_dir": lm_dir,
                "time_budget": float(minutes),
            },
        )
        language_model.train(config)
    return trained_lm(lm_dir)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA), help="the shared corpora folder")
    parser.add_argument("--runs", default="runs/ulmfit", help="corpus, LM and fold runs")
    parser.add_argument("--lm-minutes", type=float, default=6.0, help="the LM's time budget")
    parser.add_argument("--folds", type=int, default=2, help="the first N of 10 MR folds")
    parser.add_argument(
        "--lm", help="the LM run of an earlier --runs (RUNS/lm) instead of training one"
    )
    parser.add_argument(
        "--transfer",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="the transfer run's options on top of TRANSFER (e.g. gradual_unfreezing=false)",
    )
    args = parser.parse_args()
    transfer_options = dict(TRANSFER, **dict(item.split("=", 1) for item in args.transfer))
    import numpy as np

    start = time.time()
    if args.lm:
        lm_dir, corpus, lm = trained_lm(args.lm)
    else:
        lm_dir, corpus, lm = train_lm(args.runs, args.lm_minutes, args.data)
    texts, labels, folds = mr_folds(args.data)
    rows = []
    for k, (train_idx, test_idx) in enumerate(folds[: args.folds]):

        def pick(idx):
            return [texts[i] for i in idx], [labels[i] for i in idx]

        test = pick(test_idx)
        row = {"fold": k + 1, "naive_bayes_bigram": naive_bayes_accuracy(pick(train_idx), test)}
        for name, extra in (
            ("scratch", {}),
            ("transfer", {**transfer_options, "pretrained_lm": lm_dir}),
        ):
            config = common.load_config(
                classifier.DEFAULTS,
                overrides={
                    **CLASSIFIER,
                    **extra,
                    "output_dir": os.path.join(args.runs, f"fold{k}_{name}"),
                    "seed": 1234 + k,
                },
            )
            done = os.path.join(config["output_dir"], "results.json")
            if os.path.exists(done):  # a finished fold run (re-running the benchmark)
                with open(done) as f:
                    results = json.load(f)
            else:
                train, valid = holdout(*pick(train_idx), config["valid_fraction"], config["seed"])
                results = classifier.train(config, {"train": train, "valid": valid, "test": test})
            row[name] = results["test"]["accuracy"]
            row[f"{name}_minutes"] = results["train_seconds"] / 60
            if name == "transfer":
                row["lm_finetune_valid_perplexity"] = results["lm_finetune"]["valid_perplexity"]
                row["lm_finetune_minutes"] = results["lm_finetune"]["seconds"] / 60
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)

    epochs = lm.get("epochs") or [{}]
    budget = lm.get("time_budget", {})
    print("ULMFiT transfer on MR (sentence polarity), reduced measurement")
    print(
        f"LM: {corpus['train_tokens']} training tokens of the shared text (MR left out), "
        f"vocabulary {lm['vocabulary_size']}, 2 x 128 LSTM, "
        f"{budget.get('seconds_used', 0) / 60:.1f} min ({budget.get('steps')} steps of "
        f"{LM_CONFIG['batch_size']} x {LM_CONFIG['steps']} tokens), valid perplexity "
        f"{epochs[-1].get('valid_perplexity', float('nan')):.1f}"
    )
    print()
    print("| fold | bigram NB | from scratch | with transfer |")
    print("|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['fold']} | {100 * row['naive_bayes_bigram']:.2f} | "
            f"{100 * row['scratch']:.2f} | {100 * row['transfer']:.2f} |"
        )
    means = {
        key: 100 * np.mean([r[key] for r in rows])
        for key in ("naive_bayes_bigram", "scratch", "transfer")
    }
    print(
        f"| mean of {len(rows)} | {means['naive_bayes_bigram']:.2f} | "
        f"{means['scratch']:.2f} | {means['transfer']:.2f} |"
    )
    print()
    print(
        "training minutes per fold: scratch "
        + " ".join(f"{r['scratch_minutes']:.1f}" for r in rows)
        + "; transfer: LM fine-tuning "
        + " ".join(f"{r['lm_finetune_minutes']:.1f}" for r in rows)
        + " + classifier "
        + " ".join(f"{r['transfer_minutes']:.1f}" for r in rows)
        + "; LM fine-tuning valid perplexity "
        + " ".join(f"{r['lm_finetune_valid_perplexity'][-1]:.1f}" for r in rows)
    )
    print("classifier:", CLASSIFIER, "transfer:", transfer_options)
    print("command: PYTHONPATH=. python bench/ulmfit.py " + shlex.join(sys.argv[1:]))
    print(
        f"wall time: {(time.time() - start) / 60:.1f} min on {os.cpu_count()} CPU cores "
        f"({platform.processor() or platform.machine()})"
    )


if __name__ == "__main__":
    main()
