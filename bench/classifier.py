"""Quality benchmark: the classifier recipe on the sentence polarity corpus (Pang & Lee
2005, rt-polarity v1.0), k-fold cross-validation (the standard protocol: 10 folds).

Each fold trains on the other folds (10% of them held out for early stopping and the
best checkpoint) and reports accuracy on its own fold. Prints the mean and standard
deviation, the command and the wall time. `--keep-runs DIR` keeps each fold's run
(model, vocabulary, results) for a closer look.

    PYTHONPATH=. python bench/classifier.py [--folds 10] [--only-folds 3] [--set key=value ...]

Anchors (10-fold CV): Kim 2014 CNN, random embeddings 76.1%, word2vec 81.5%.
"""

import argparse
import os
import pathlib
import platform
import shlex
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from kerasrnn.data.specs import holdout  # noqa: E402
from recipes import classifier, common  # noqa: E402

DATA = (
    pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "sentence_polarity"
)
# From scratch (random embeddings); the recipe's defaults otherwise.
BENCH_CONFIG = {
    "cell": "lstm",
    "units": 128,
    "bidirectional": True,
    "pooling": "max",
    "embedding_dim": 300,
    "embedding_dropout": 0.5,
    "dropout": 0.5,
    "batch_size": 50,
    "epochs": 6,
    "patience": 1,
    "valid_fraction": 0.1,
    # The Naive Bayes expert (bigrams), counted on the training and validation
    # sentences once the RNN is trained; --set naive_bayes=0 measures the RNN alone.
    "naive_bayes": 2,
    "naive_bayes_counts_valid": True,
    "verbose": 2,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument(
        "--only-folds", type=int, default=None, help="run only the first N folds (quick checks)"
    )
    parser.add_argument(
        "--keep-runs",
        default=None,
        metavar="DIR",
        help="write each fold's run to DIR/foldK (default: a temporary "
        "directory, deleted at the end)",
    )
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="recipe options on top of the benchmark's",
    )
    args = parser.parse_args()
    overrides = dict(BENCH_CONFIG)
    overrides.update(item.split("=", 1) for item in args.set)

    import numpy as np

    from kerasrnn.data import load_class_files

    data = pathlib.Path(args.data)
    texts, labels = load_class_files(
        [data / "rt-polarity.pos", data / "rt-polarity.neg"], encoding="cp1252"
    )
    order = np.random.default_rng(0).permutation(len(texts))
    folds = np.array_split(order, args.folds)
    start = time.time()
    accuracies = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = args.keep_runs or tmp
        for k, test_idx in enumerate(folds[: args.only_folds or args.folds]):
            fold_start = time.time()
            train_idx = np.setdiff1d(order, test_idx)
            pick = lambda idx: ([texts[i] for i in idx], [labels[i] for i in idx])  # noqa
            config = common.load_config(
                classifier.DEFAULTS,
                overrides={**overrides, "output_dir": f"{runs}/fold{k}", "seed": 1234 + k},
            )
            (train, valid) = holdout(*pick(train_idx), config["valid_fraction"], config["seed"])
            results = classifier.train(
                config, {"train": train, "valid": valid, "test": pick(test_idx)}
            )
            acc = results["test"]["accuracy"]
            accuracies.append(acc)
            print(
                f"fold {k + 1}/{args.folds}: test accuracy {acc:.4f} "
                f"({results['history']['epochs_run']} epochs, "
                f"{time.time() - fold_start:.0f}s)",
                flush=True,
            )
    wall = time.time() - start
    print()
    print(
        f"sentence polarity, {len(accuracies)} of {args.folds} CV folds: mean accuracy "
        f"{100 * np.mean(accuracies):.2f}% (std {100 * np.std(accuracies):.2f})"
    )
    print("per fold:", " ".join(f"{100 * a:.2f}" for a in accuracies))
    print("config:", {k: overrides[k] for k in sorted(overrides)})
    print("command: PYTHONPATH=. python bench/classifier.py " + shlex.join(sys.argv[1:]))
    print(
        f"wall time: {wall / 60:.1f} min on {os.cpu_count()} CPU cores "
        f"({platform.processor() or platform.machine()})"
    )


if __name__ == "__main__":
    main()
