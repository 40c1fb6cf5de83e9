"""Quality and speed benchmark: the translator recipe on Multi30k, German -> English.

Trains a Bahdanau-attention GRU encoder-decoder (bidirectional encoder, learned bridge)
on train (29,000 pairs), validates on val, and scores test_2016_flickr (1,000
sentences) with sacreBLEU's corpus BLEU (`kerasrnn.metrics.corpus_bleu`; cased unless
``--set lowercase=true``) using greedy search and beam search (`beam_size`, 5 here).
Prints BLEU, exact training wall time and decoding speed (sentences/s, batches of 64)
on this machine, with the command.

    PYTHONPATH=. python bench/translator.py                     # the full benchmark
    PYTHONPATH=. python bench/translator.py --train-pairs 2000 --test-sentences 100 \\
        --set epochs=1 encoder_units=64 decoder_units=128 embedding_dim=64   # smoke run

Anchor: the widely used PyTorch seq2seq notebooks' Bahdanau GRU (512 units) reaches
28.3 BLEU with greedy decoding; target: >= 33 BLEU with beam search.
"""

import argparse
import os
import pathlib
import platform
import shlex
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import timing  # noqa: E402  (bench/, the script's folder)
from recipes import common, translator  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "multi30k"
# The notebooks' model: 256-d embeddings, 512-unit GRUs (encoder per direction), dropout
# 0.5, gradient clipping 1, words seen at least twice.
BENCH_CONFIG = {
    "source_tokenizer": "word",
    "target_tokenizer": "word",
    "cell": "gru",
    "attention": "bahdanau",
    "embedding_dim": 256,
    "encoder_units": 512,
    "decoder_units": 512,
    "attention_units": 512,
    "dropout": 0.5,
    "min_freq": 2,
    "batch_size": 128,
    "epochs": 10,
    "patience": 2,
    "clipnorm": 1.0,
    "beam_size": 5,
    "max_decode_length": 60,
    "bucket_boundaries": [10, 15, 20, 25, 30],
    "heatmaps": 3,
    "output_dir": "runs/bench-translator",
    "verbose": 2,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument(
        "--train-pairs", type=int, default=0, help="train on the first N pairs only (0: all 29,000)"
    )
    parser.add_argument(
        "--test-sentences",
        type=int,
        default=0,
        help="score the first N test sentences only (0: all 1,000)",
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
    config = common.load_config(translator.DEFAULTS, overrides=overrides)

    from kerasrnn.data import load_parallel_text

    data = pathlib.Path(args.data)
    if not data.exists():
        sys.exit(f"Multi30k not found at {data} (see ../shared/data/multi30k/SOURCE.md)")
    splits = {
        name: load_parallel_text(data / f"{stem}.de.gz", data / f"{stem}.en.gz")
        for name, stem in (("train", "train"), ("valid", "val"), ("test", "test_2016_flickr"))
    }
    if args.train_pairs:
        splits["train"] = tuple(side[: args.train_pairs] for side in splits["train"])
    if args.test_sentences:
        splits["test"] = tuple(side[: args.test_sentences] for side in splits["test"])

    results, total = timing.timed(lambda: translator.train(config, splits))
    test = results["test"]
    # `evaluate` names beam size 1 "greedy".
    beam = f"beam{config['beam_size']}" if config["beam_size"] > 1 else "greedy"
    beam_label = f"beam {config['beam_size']}"
    # With lowercase the references are lower-cased too (see Translator.evaluate).
    case = "cased" if test.get("cased", True) else "case-insensitive"
    print()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    print(
        f"data: {len(splits['train'][0])} training pairs "
        f"({results['train_pairs_used']} within the length limits), "
        f"{len(splits['valid'][0])} validation, {test['examples']} test sentences"
    )
    print(
        f"model: {results['parameters']:,} parameters, vocabularies "
        f"{results['source_vocabulary']} (de) / {results['target_vocabulary']} (en)"
    )
    print(
        f"training: {results['history']['epochs_run']} epoch(s), "
        f"{results['train_seconds']:.0f} s wall; final val_loss "
        f"{results['history']['val_loss'][-1]:.3f}"
    )
    print(
        f"test_2016_flickr BLEU ({case}): greedy {test['greedy']['bleu']:.2f}, "
        f"{beam_label} {test[beam]['bleu']:.2f}"
    )
    print(
        f"decoding speed: greedy {test['greedy']['sentences_per_second']:.1f} "
        f"sentences/s, {beam_label} {test[beam]['sentences_per_second']:.1f} sentences/s"
    )
    for sample in test[beam]["samples"][:3]:
        print(
            f"  {sample['source']}\n    -> {sample['translation']}\n    ref {sample['reference']}"
        )
    print(f"total wall time {total:.0f} s; results in {config['output_dir']}/results.json")


if __name__ == "__main__":
    main()
