"""Quality benchmark: UD English EWT UPOS with and without a biLM's contextual features.

1. Trains a bidirectional language model (`recipes.language_model --bidirectional`) on
   the unlabeled text at hand: Penn Treebank train plus the EWT training sentences, the
   latter normalised as PTB is (`recipes.tagger.lm_sentences`: lower-cased, numbers
   "N"); validation text: PTB valid + EWT dev; test: PTB test.
2. Trains the tagger on EWT (train; dev picks the best epoch) with the same seeds
   without and with ``--contextual-lm`` (the biLM frozen, its layers mixed by
   `ScalarMix`), and prints test UPOS accuracy per seed and the mean, beside the
   most-frequent-tag baseline and the published figure.

    PYTHONPATH=. python bench/bilm_upos.py --output-dir runs/bilm-upos \
        [--bilm-dir RUN] [--seeds 1 2] [--tagger-epochs 2] [--lm key=value ...]
        [--tagger key=value ...]

Each step runs the recipe's command line in a fresh process; a step whose
results.json exists is skipped, and re-running the script resumes an interrupted step
(the recipes' BackupAndRestore), so an interrupted benchmark continues where it stopped.

Anchors (test UPOS accuracy): Plank et al. 2016 bi-LSTM without pretrained embeddings
94.6%, Stanza 96.2% (as on the tagger page).
"""

import argparse
import collections
import json
import os
import pathlib
import platform
import shlex
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared" / "data"
EWT, PTB = SHARED / "ud_en_ewt", SHARED / "ptb"
# A small biLM, one epoch: 25.5 min on 2 CPU cores shared with other jobs (2026-11-24).
LM_CONFIG = {
    "units": 128,
    "num_layers": 2,
    "max_vocab": 16000,
    "batch_size": 32,
    "steps": 35,
    "dropout": 0.1,
    "optimizer": "adam",
    "learning_rate": 0.002,
    "loss_reduction": "mean",
    "epochs": 1,
    "verbose": 2,
}
# A smaller tagger than bench/tagger.py's (1 BiLSTM layer of 64 + 64, 32-d characters),
# trained for a few epochs: both variants fit in the benchmark's budget on 2 shared cores.
TAGGER_CONFIG = {
    "column": "upos",
    "lowercase": True,
    "embedding_dim": 100,
    "word_dropout": 0.1,
    "char_dim": 32,
    "char_units": 32,
    "cell": "lstm",
    "units": 64,
    "num_layers": 1,
    "dropout": 0.33,
    "max_chars": 20,
    "batch_size": 64,
    "patience": 3,
    "verbose": 2,
}
PUBLISHED = "Plank et al. 2016 bi-LSTM (no pretrained embeddings) 94.6%; Stanza 96.2%"


def flags(config):
    out = []
    for key, value in config.items():
        out += [
            "--" + key.replace("_", "-"),
            str(value).lower() if isinstance(value, bool) else str(value),
        ]
    return out


def run(command, log):
    """Runs a recipe command; returns its wall time in seconds."""
    print("$ " + " ".join(shlex.quote(c) for c in command), flush=True)
    began = time.time()
    with open(log, "a") as stderr:
        subprocess.run(
            command,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
    return time.time() - began


def lm_text(out, extra_train=()):
    """Writes the biLM's train and valid text (PTB and EWT, then the token lists
    `extra_train` in the training text), normalised as the tagger's biLM input; returns
    their paths."""
    from kerasrnn.data.loaders import load_conllu, read_lines
    from recipes.tagger import lm_sentences

    paths = {}
    for split, ptb, ewt in (
        ("train", "ptb.train.txt.gz", "en_ewt-ud-train.conllu.gz"),
        ("valid", "ptb.valid.txt.gz", "en_ewt-ud-dev.conllu.gz"),
    ):
        paths[split] = out / f"lm_{split}.txt"
        if paths[split].exists():
            continue
        lines = [line.strip() for _, line in read_lines(str(PTB / ptb)) if line.strip()]
        sentences, _ = load_conllu(str(EWT / ewt), "upos")
        if split == "train":
            sentences = list(sentences) + list(extra_train)
        lines += [" ".join(s) for s in lm_sentences(sentences) if s]
        partial = paths[split].with_suffix(".partial")
        partial.write_text("\n".join(lines) + "\n")
        partial.rename(paths[split])
    return paths


def most_frequent_tag_baseline():
    """Each test word's most frequent training tag (unseen words: the most frequent
    tag overall), exact word forms."""
    from kerasrnn.data.loaders import load_conllu

    words, tags = load_conllu(str(EWT / "en_ewt-ud-train.conllu.gz"), "upos")
    counts = collections.defaultdict(collections.Counter)
    overall = collections.Counter()
    for sentence, labels in zip(words, tags):
        for word, tag in zip(sentence, labels):
            counts[word][tag] += 1
            overall[tag] += 1
    default = overall.most_common(1)[0][0]
    test_words, test_tags = load_conllu(str(EWT / "en_ewt-ud-test.conllu.gz"), "upos")
    correct = total = 0
    for sentence, labels in zip(test_words, test_tags):
        for word, tag in zip(sentence, labels):
            guess = counts[word].most_common(1)[0][0] if word in counts else default
            correct += guess == tag
            total += 1
    return correct / total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--tagger-epochs", type=int, default=2)
    parser.add_argument(
        "--bilm-dir", help="a trained biLM run to reuse (default: train one in OUTPUT_DIR/bilm)"
    )
    parser.add_argument(
        "--lm",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="language-model options on top of the benchmark's",
    )
    parser.add_argument(
        "--tagger",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="tagger options on top of the benchmark's",
    )
    args = parser.parse_args()
    out = pathlib.Path(args.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    log = out / "recipes.log"
    python = sys.executable
    began = time.time()
    walls = {}

    lm_config = dict(LM_CONFIG, **dict(item.split("=", 1) for item in args.lm))
    tagger_config = dict(
        TAGGER_CONFIG, epochs=args.tagger_epochs, **dict(item.split("=", 1) for item in args.tagger)
    )
    print("biLM:", json.dumps(lm_config), flush=True)
    print("tagger:", json.dumps(tagger_config), "seeds", args.seeds, flush=True)

    lm_dir = pathlib.Path(args.bilm_dir).resolve() if args.bilm_dir else out / "bilm"
    if not (lm_dir / "results.json").exists():
        text = lm_text(out)
        walls["bilm"] = run(
            [
                python,
                "-m",
                "recipes.language_model",
                "train",
                "--bidirectional",
                "true",
                "--output-dir",
                str(lm_dir),
                "--train-file",
                str(text["train"]),
                "--valid-file",
                str(text["valid"]),
                "--test-file",
                str(PTB / "ptb.test.txt.gz"),
                "--seed",
                "1",
                *flags(lm_config),
            ],
            log,
        )
    lm_results = json.loads((lm_dir / "results.json").read_text())
    walls.setdefault("bilm", lm_results["wall_seconds"])  # its fit, when run earlier
    print(
        "biLM run:",
        lm_dir,
        "config:",
        json.dumps(
            {
                k: v
                for k, v in json.loads((lm_dir / "config.json").read_text()).items()
                if k in LM_CONFIG
            }
        ),
        flush=True,
    )
    print(
        "biLM perplexity:",
        json.dumps(
            {
                split: {
                    k: lm_results[split][d]["perplexity"] if d else lm_results[split][k]
                    for k, d in (
                        ("forward", "forward"),
                        ("backward", "backward"),
                        ("perplexity", None),
                    )
                }
                for split in ("valid", "test")
            }
        ),
        flush=True,
    )

    variants = {"tagger": {}, "tagger + biLM (frozen)": {"contextual_lm": str(lm_dir)}}
    accuracy = {name: {} for name in variants}
    for name, extra in variants.items():
        for seed in args.seeds:
            run_dir = out / (("bilm_" if extra else "plain_") + f"seed{seed}")
            if not (run_dir / "results.json").exists():
                walls[f"{name} seed {seed}"] = run(
                    [
                        python,
                        "-m",
                        "recipes.tagger",
                        "train",
                        "--output-dir",
                        str(run_dir),
                        "--train",
                        str(EWT / "en_ewt-ud-train.conllu.gz"),
                        "--valid",
                        str(EWT / "en_ewt-ud-dev.conllu.gz"),
                        "--test",
                        str(EWT / "en_ewt-ud-test.conllu.gz"),
                        "--seed",
                        str(seed),
                        *flags(dict(tagger_config, **extra)),
                    ],
                    log,
                )
            results = json.loads((run_dir / "results.json").read_text())
            accuracy[name][seed] = results["test"]["accuracy"]

    baseline = most_frequent_tag_baseline()
    print()
    print("| model | " + " | ".join(f"seed {s}" for s in args.seeds) + " | mean |")
    print("|---|" + "---|" * (len(args.seeds) + 1))
    for name, scores in accuracy.items():
        values = [scores[s] for s in args.seeds]
        print(
            f"| {name} | "
            + " | ".join(f"{100 * v:.2f}%" for v in values)
            + f" | {100 * sum(values) / len(values):.2f}% |"
        )
    print(f"| most frequent tag per word | | | {100 * baseline:.2f}% |")
    print(f"published (full training): {PUBLISHED}")
    print("wall times (s):", json.dumps({k: round(v) for k, v in walls.items()}))
    print(
        f"total wall time: {(time.time() - began) / 60:.1f} min on {platform.node()} "
        f"({os.cpu_count()} cores)"
    )
    (out / "summary.json").write_text(
        json.dumps(
            {
                "bilm": lm_config,
                "tagger": tagger_config,
                "seeds": args.seeds,
                "accuracy": accuracy,
                "most_frequent_tag": baseline,
                "walls": walls,
                "lm_results": {k: lm_results[k] for k in ("valid", "test")},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
