"""Transfer from a language model: the classifier and the tagger with and without it.

* ``transfer`` (``mr``): ULMFiT (`recipes.transfer`) on sentence polarity (MR). A
  word-level LM trained for ``--lm-minutes`` on the shared text (`recipes.lm_corpus`:
  PTB, EWT, Multi30k English, CoNLL-2003 and SICK training texts; MR left out, since
  every MR sentence is some fold's test), then for each of the first ``--folds`` of
  MR's 10 folds (`bench/quality.py`'s split): the bigram Naive Bayes alone, the
  classifier from scratch, and the same classifier with ``--pretrained-lm`` (LM
  fine-tuning, slanted triangular rates, discriminative rates, gradual unfreezing).
  Same architecture both ways: one direction, 2 LSTM layers, concat pooling. Finished
  runs under ``--runs`` are read, not trained again.
* ``bilm_upos`` (``upos``): a bidirectional LM (`recipes.language_model
  --bidirectional`) on PTB train plus the EWT training sentences (normalised as the
  tagger's biLM input), then the tagger on EWT with the same seeds without and with
  ``--contextual-lm`` (the biLM frozen, its layers mixed by `ScalarMix`), beside the
  most-frequent-tag baseline. Each step runs the recipe's command line in a fresh
  process; a step whose results.json exists is skipped.

* ``vectors_ner`` (``ner_vectors``): word vectors learned without labels. A word-level
  LM trained for ``--lm-minutes`` on the training text of PTB, EWT and CoNLL-2003
  (lower-cased), its input embedding written by ``language_model export-embeddings``,
  then the CoNLL-2003 tagger (recipes/configs/conll2003_ner.yaml, ``--tagger-epochs``)
  with the same seeds without and with ``--embeddings`` (fine-tuned; their width, the
  LM's, replaces the config's 100), beside the coverage of the vectors.

All are reduced measurements (a small LM trained for minutes on a CPU), not the papers'
settings. The corpora helpers and baselines are bench/quality.py's.

    python -m bench transfer [--lm-minutes 6] [--folds 2] [--runs runs/ulmfit]
    python -m bench transfer --lm runs/ulmfit/lm --runs runs/other --transfer lm_extend_vocabulary=2
    python -m bench bilm_upos --output-dir runs/bilm-upos [--seeds 1 2] [--tagger-epochs 2]
    python -m bench vectors_ner --output-dir runs/ner-vectors [--lm-minutes 5] [--seeds 1]
"""

import json
import os
import pathlib
import platform
import sys
import time

from bench import quality, suite

DATA = quality.DATA


# ------------------------------------------------------------------ MR with ULMFiT
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
    "find_lr": False,  # the published figure's peak: `learning_rate`
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
    from recipes import common, language_model, lm_corpus

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


def mr(argv=None):
    parser = suite.parser("transfer", __doc__)
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
    args = parser.parse_args(argv)
    transfer_options = dict(TRANSFER, **dict(item.split("=", 1) for item in args.transfer))
    import numpy as np

    from kerasrnn.data.specs import holdout
    from recipes import classifier, common

    start = time.time()
    if args.lm:
        lm_dir, corpus, lm = trained_lm(args.lm)
    else:
        lm_dir, corpus, lm = train_lm(args.runs, args.lm_minutes, args.data)
    texts, labels, folds = quality.mr_folds(args.data)
    rows = []
    for k, (train_idx, test_idx) in enumerate(folds[: args.folds]):

        def pick(idx):
            return [texts[i] for i in idx], [labels[i] for i in idx]

        test = pick(test_idx)
        row = {
            "fold": k + 1,
            "naive_bayes_bigram": quality.naive_bayes_accuracy(pick(train_idx), test),
        }
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
    print(quality.wall_line(time.time() - start))
    suite.write_result(
        args,
        "mr_transfer",
        "Sentence polarity (MR) with a pretrained language model (ULMFiT)",
        {
            "transfer": suite.figure(
                means["transfer"], f"with transfer, mean of {len(rows)} folds", unit="%"
            ),
            "scratch": suite.figure(means["scratch"], "the same classifier from scratch", unit="%"),
        },
        baseline=suite.figure(means["naive_bayes_bigram"], "bigram Naive Bayes", unit="%"),
        details={"rows": rows, "classifier": CLASSIFIER, "transfer": transfer_options},
        readme=False,
    )
    return rows


# ------------------------------------------------------------------ EWT UPOS with a biLM
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


def upos(argv=None):
    parser = suite.parser("bilm_upos", __doc__)
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
    args = parser.parse_args(argv)
    out = pathlib.Path(args.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    log = out / "recipes.log"
    python = sys.executable
    began = time.time()
    walls = {}

    lm_config = dict(quality.BILM_CONFIG, **dict(item.split("=", 1) for item in args.lm))
    tagger_config = dict(
        TAGGER_CONFIG, epochs=args.tagger_epochs, **dict(item.split("=", 1) for item in args.tagger)
    )
    print("biLM:", json.dumps(lm_config), flush=True)
    print("tagger:", json.dumps(tagger_config), "seeds", args.seeds, flush=True)

    lm_dir = pathlib.Path(args.bilm_dir).resolve() if args.bilm_dir else out / "bilm"
    if not (lm_dir / "results.json").exists():
        text = quality.bilm_text(out)
        walls["bilm"] = quality.run_recipe(
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
                str(quality.DATA / "ptb" / "ptb.test.txt.gz"),
                "--seed",
                "1",
                *quality.flags(lm_config),
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
                if k in quality.BILM_CONFIG
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
                walls[f"{name} seed {seed}"] = quality.run_recipe(
                    [
                        python,
                        "-m",
                        "recipes.tagger",
                        "train",
                        "--output-dir",
                        str(run_dir),
                        "--train",
                        str(quality.DATA / "ud_en_ewt" / "en_ewt-ud-train.conllu.gz"),
                        "--valid",
                        str(quality.DATA / "ud_en_ewt" / "en_ewt-ud-dev.conllu.gz"),
                        "--test",
                        str(quality.DATA / "ud_en_ewt" / "en_ewt-ud-test.conllu.gz"),
                        "--seed",
                        str(seed),
                        *quality.flags(dict(tagger_config, **extra)),
                    ],
                    log,
                )
            results = json.loads((run_dir / "results.json").read_text())
            accuracy[name][seed] = results["test"]["accuracy"]

    baseline = quality.most_frequent_tag_baseline()
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
    print("published (full training): Plank et al. 2016 bi-LSTM 94.6%; Stanza 96.2%")
    print("wall times (s):", json.dumps({k: round(v) for k, v in walls.items()}))
    print(
        f"total wall time: {(time.time() - began) / 60:.1f} min on {platform.node()} "
        f"({os.cpu_count()} cores)"
    )
    means = {name: 100 * sum(s.values()) / len(s) for name, s in accuracy.items()}
    suite.write_result(
        args,
        "ewt_upos_bilm",
        "UD English EWT UPOS with a frozen biLM's features (reduced)",
        {
            "bilm": suite.figure(
                means["tagger + biLM (frozen)"],
                f"test accuracy with the biLM, mean of {len(args.seeds)} seeds",
                unit="%",
            ),
            "plain": suite.figure(means["tagger"], "the same tagger without", unit="%"),
        },
        baseline=suite.figure(100 * baseline, "most frequent tag per word", unit="%"),
        published=suite.figure(94.6, "Plank et al. 2016 bi-LSTM (full training)", 1, "%"),
        details={"accuracy": accuracy, "bilm": lm_config, "tagger": tagger_config},
        readme=False,
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


# ------------------------------------------------------- CoNLL-2003 with LM vectors


def _shared_text(out, valid_lines=2000, seed=0):
    """PTB, EWT and CoNLL-2003 training sentences, lower-cased, shuffled: train.txt and
    valid.txt (its last `valid_lines`) in `out`; their paths and line counts."""
    import random

    from kerasrnn.data.english_text import english_training_sentences

    texts = english_training_sentences(str(DATA))
    lines = [" ".join(s).lower() for name in ("ptb", "ud_en_ewt", "conll2003") for s in texts[name]]
    random.Random(seed).shuffle(lines)
    parts = {"train": lines[:-valid_lines], "valid": lines[-valid_lines:]}
    out.mkdir(parents=True, exist_ok=True)
    for name, part in parts.items():
        (out / f"{name}.txt").write_text("".join(line + "\n" for line in part))
    return {name: str(out / f"{name}.txt") for name in parts}, {
        name: len(part) for name, part in parts.items()
    }


SPLITS = ("train", "valid", "test")


def ner_vectors(argv=None):
    parser = suite.parser("vectors_ner", __doc__)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--lm-minutes", type=float, default=5.0)
    parser.add_argument("--tagger-epochs", type=int, default=2)
    parser.add_argument("--max-vocab", type=int, default=20000, help="the LM's vocabulary")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    log, python, began, walls = out / "recipes.log", sys.executable, time.time(), {}
    lm_dir, vectors = out / "lm", out / "lm.vec"
    lm_config = dict(LM_CONFIG, max_vocab=args.max_vocab, time_budget=args.lm_minutes)
    if not (lm_dir / "results.json").exists():
        text, lines = _shared_text(out / "text")
        print("LM text lines:", json.dumps(lines), flush=True)
        walls["lm"] = quality.run_recipe(
            [python, "-m", "recipes.language_model", "train", "--output-dir", str(lm_dir),
             "--train-file", text["train"], "--valid-file", text["valid"], "--seed", "1",
             *quality.flags(lm_config)],
            log,
        )  # fmt: skip
    lm_results = json.loads((lm_dir / "results.json").read_text())
    if not vectors.exists():
        quality.run_recipe(
            [python, "-m", "recipes.language_model", "export-embeddings", str(lm_dir),
             str(vectors)],
            log,
        )  # fmt: skip
    config = str(pathlib.Path(__file__).resolve().parent.parent / "recipes" / "configs")
    tagger = {"epochs": args.tagger_epochs, "verbose": 2}
    # corpus: names, which the recipe resolves (KERASRNN_DATA), keep the record portable
    tagger.update({split: f"corpus:conll2003/{split}.txt" for split in SPLITS})
    variants = {"tagger": {}, "tagger + LM vectors (fine-tuned)": {"embeddings": str(vectors)}}
    f1, coverage = {name: {} for name in variants}, None
    for name, extra in variants.items():
        for seed in args.seeds:
            run_dir = out / (("vectors_" if extra else "plain_") + f"seed{seed}")
            if not (run_dir / "results.json").exists():
                walls[f"{name} seed {seed}"] = quality.run_recipe(
                    [python, "-m", "recipes.tagger", "train", "--config",
                     config + "/conll2003_ner.yaml", "--output-dir", str(run_dir), "--seed",
                     str(seed), *quality.flags(dict(tagger, **extra))],
                    log,
                )  # fmt: skip
            results = json.loads((run_dir / "results.json").read_text())
            f1[name][seed] = results["test"]["entities"]["f1"]
            coverage = results.get("pretrained_vectors", {}).get("embeddings", coverage)
    if coverage:
        coverage = dict(coverage, file=os.path.relpath(coverage["file"]))
    print()
    print("| model | " + " | ".join(f"seed {s}" for s in args.seeds) + " | mean |")
    print("|---|" + "---|" * (len(args.seeds) + 1))
    means = {}
    for name, scores in f1.items():
        values = [scores[s] for s in args.seeds]
        means[name] = 100 * sum(values) / len(values)
        cells = " | ".join(f"{100 * v:.2f}" for v in values)
        print(f"| {name} | {cells} | {means[name]:.2f} |")
    print("vectors coverage:", json.dumps(coverage))
    print("LM valid perplexity:", round(lm_results["valid"]["perplexity"], 2))
    print("wall times (s):", json.dumps({k: round(v) for k, v in walls.items()}))
    print(f"total wall time: {(time.time() - began) / 60:.1f} min ({os.cpu_count()} cores)")
    figures = {}
    for key, name, label in (
        ("vectors", "tagger + LM vectors (fine-tuned)", "test F1 with the LM's vectors"),
        ("plain", "tagger", "the same tagger without"),
    ):
        runs = [100 * f1[name][s] for s in args.seeds]
        figures[key] = suite.figure(
            means[name],
            f"{label}, mean of {len(args.seeds)} seed(s)",
            spread={"kind": "min-max", "low": min(runs), "high": max(runs)},
            runs=runs,
        )
    suite.write_result(
        args,
        "ner_lm_vectors",
        f"CoNLL-2003 NER test entity F1 with word vectors from an LM (reduced: an LM of "
        f"{args.lm_minutes:g} minutes, {args.tagger_epochs} tagger epochs)",
        figures,
        published=suite.figure(90.94, "Lample et al. 2016 with pretrained embeddings", 2),
        details={
            "f1": f1,
            "coverage": coverage,
            "lm": lm_config,
            "tagger": tagger,
            "lm_valid_perplexity": lm_results["valid"]["perplexity"],
        },  # fmt: skip
        readme=False,
    )
