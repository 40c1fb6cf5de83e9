"""Quality benchmark: the tagger recipe on UD English EWT (UD 2.16), UPOS tags.

Trains on the train split (dev for early stopping and the best checkpoint), then prints
dev and test token accuracy, the command and the wall time.

    PYTHONPATH=. python bench/tagger.py [--set key=value ...]

Anchors (test UPOS accuracy): Plank et al. 2016 bi-LSTM without pretrained embeddings
94.6%, Stanza 96.2%.
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

from recipes import common, tagger  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "ud_en_ewt"
BENCH_CONFIG = {
    "column": "upos",
    "lowercase": True,
    "embedding_dim": 100,
    "word_dropout": 0.1,
    "char_dim": 50,
    "char_units": 64,
    "cell": "lstm",
    "units": 128,
    "num_layers": 2,
    "dropout": 0.33,
    "max_chars": 20,
    "batch_size": 64,
    "epochs": 16,
    "patience": 3,
    "verbose": 1,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--output-dir", default=None, help="default: a temporary folder")
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
    data = pathlib.Path(args.data)
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        config = common.load_config(
            tagger.DEFAULTS,
            overrides={
                **overrides,
                "train": str(data / "en_ewt-ud-train.conllu.gz"),
                "valid": str(data / "en_ewt-ud-dev.conllu.gz"),
                "test": str(data / "en_ewt-ud-test.conllu.gz"),
                "format": "conllu",
                "output_dir": args.output_dir or tmp,
            },
        )
        results = tagger.train(config)
    wall = time.time() - start
    print()
    print(
        f"UD English EWT UPOS: dev accuracy {100 * results['valid']['accuracy']:.2f}%, "
        f"test accuracy {100 * results['test']['accuracy']:.2f}% "
        f"({results['test']['tokens']} test tokens, "
        f"{results['history']['epochs_run']} epochs)"
    )
    print("config:", {k: overrides[k] for k in sorted(overrides)})
    print("command: PYTHONPATH=. python bench/tagger.py " + shlex.join(sys.argv[1:]))
    print(
        f"wall time: {wall / 60:.1f} min on {os.cpu_count()} CPU cores "
        f"({platform.processor() or platform.machine()})"
    )


if __name__ == "__main__":
    main()
