"""Penn Treebank word-level language modelling, Zaremba et al. (2014) configurations.

    PYTHONPATH=. python bench/language_model.py --cell lstm          # "small", the target
    PYTHONPATH=. python bench/language_model.py --cell gru           # the same with GRUCell
    PYTHONPATH=. python bench/language_model.py --size medium        # on a GPU

"small": 2 x 200 units, batch 20, 20 unrolled steps, weights uniform in +-0.1, SGD lr 1
halved after every epoch from epoch 5, global gradient norm clipped at 5, 13 epochs, no
dropout. Paper: test perplexity 114.5 (TensorFlow's reproduction 115.9); target <= 114.5.
"medium": 2 x 650, 35 steps, dropout 0.5, init +-0.05, lr 1 x 0.8 per epoch after
epoch 6, 39 epochs. Paper: 82.7.

Prints the valid and test perplexity after every epoch, then those of the best epoch by
validation perplexity (the weights the recipe keeps) and of the last one (the paper's
protocol), the training wall time and the training speed in tokens/s; the recipe writes
them to <output_dir>/results.json.
"""

import argparse
import json
import os
import platform
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from recipes import language_model  # noqa: E402

PTB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "ptb")

SIZES = {
    "small": dict(
        units=200,
        steps=20,
        dropout=0.0,
        init_scale=0.1,
        epochs=13,
        lr_decay=0.5,
        lr_decay_after=4,
        clipnorm=5.0,
    ),
    "medium": dict(
        units=650,
        steps=35,
        dropout=0.5,
        init_scale=0.05,
        epochs=39,
        lr_decay=0.8,
        lr_decay_after=6,
        clipnorm=5.0,
    ),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
    parser.add_argument("--epochs", type=int, help="override the configuration's epochs")
    parser.add_argument("--data-dir", default=PTB)
    parser.add_argument("--output-dir", help="default: runs/bench_lm_<size>_<cell>")
    parser.add_argument("--unroll", type=int, default=1, help="unroll the RNN (faster on CPU)")
    args = parser.parse_args(argv)

    config = dict(language_model.DEFAULTS)
    config.update(SIZES[args.size])
    config.update(
        cell=args.cell,
        num_layers=2,
        batch_size=20,
        batching="stream",
        optimizer="sgd",
        learning_rate=1.0,
        loss_reduction="sum_over_time",
        patience=0,
        verbose=0,
        unroll=bool(args.unroll),
        evaluate_test_each_epoch=True,
        train_file=os.path.join(args.data_dir, "ptb.train.txt.gz"),
        valid_file=os.path.join(args.data_dir, "ptb.valid.txt.gz"),
        test_file=os.path.join(args.data_dir, "ptb.test.txt.gz"),
        output_dir=args.output_dir or f"runs/bench_lm_{args.size}_{args.cell}",
    )
    if args.epochs:
        config["epochs"] = args.epochs
    print(
        f"PTB {args.size} {args.cell}: {json.dumps({k: config[k] for k in SIZES['small']})}"
        f" on {platform.machine()} with {os.cpu_count()} CPUs",
        flush=True,
    )
    started = time.time()
    results = language_model.train(config)
    last = results["epochs"][-1]
    print(
        json.dumps(
            {
                "size": args.size,
                "cell": args.cell,
                "epochs_run": len(results["epochs"]),
                # The recipe keeps the weights of the epoch with the best validation perplexity;
                # the paper reports the model after the last epoch. Both are printed.
                "best_valid_perplexity": results["valid"]["perplexity"],
                "test_perplexity_at_best_valid": results["test"]["perplexity"],
                "last_epoch_valid_perplexity": last.get("valid_perplexity"),
                "last_epoch_test_perplexity": last.get("test_perplexity"),
                "train_seconds": results["train_seconds"],
                "tokens_per_second": results["tokens_per_second"],
                "wall_seconds": time.time() - started,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
