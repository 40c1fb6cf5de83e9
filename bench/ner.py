"""Quality benchmark: named-entity recognition on CoNLL-2003 English with the tagger recipe.

Rows (each trained on train, best epoch by valid, scored on valid and test with
entity-level micro P/R/F1 as conlleval counts it, `kerasrnn.metrics.entity_scores`, and
cross-checked against seqeval when it is installed):

- ``dictionary``: no learning; every token span seen as an entity in training, with its
  most frequent type, matched longest-first left to right (a strong simple baseline).
- ``softmax``, ``crf``, ``crf-constrained``: the output layer (independent softmax per
  token, a linear-chain CRF, the CRF with the BIO scheme's transitions forbidden in
  training and Viterbi).
- ``...-bioes``: trained on BIOES tags, scored after conversion back to the file's BIO.
- ``...-nochars``: without the character BiRNN.
- ``crf-constrained-bilm``: the constrained CRF with ELMo-style features of a frozen
  biLM (``--contextual-lm``) trained on the shared text: PTB train, EWT train and
  CoNLL-2003 train, normalised as the tagger's biLM input (lower-cased, numbers "N");
  `bench/bilm_upos.py`'s biLM, for ``--bilm-minutes`` (``--bilm-dir``: reuse or write
  it there).

    PYTHONPATH=. python bench/ner.py                  # every row, then the table
    PYTHONPATH=. python bench/ner.py --rows dictionary softmax crf
    PYTHONPATH=. python bench/ner.py --table           # the table of the finished rows

Finished rows are kept in ``--output-dir`` (``ROW/results.json`` and
``ROW/test_predictions.json``) and not trained again, so the command resumes after a
kill (an unfinished row restarts from its last epoch: the recipe's BackupAndRestore).

Published anchors (test F1): 88.76 (best system of the CoNLL-2003 shared task, Florian
et al. 2003, with gazetteers); 90.94 (Lample et al. 2016, BiLSTM-CRF with pretrained
word embeddings); Lample et al. report 83.63 for the same model with random embeddings.
"""

import argparse
import collections
import json
import os
import pathlib
import platform
import shlex
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

# ../shared/data beside the checkout (a worktree one level deeper looks one level up)
DATA = next(
    (
        p / "shared" / "data" / "conll2003"
        for p in pathlib.Path(__file__).resolve().parents[1:4]
        if (p / "shared" / "data" / "conll2003").is_dir()
    ),
    pathlib.Path("../shared/data/conll2003"),
)
PUBLISHED = [
    ("CoNLL-2003 shared task best (Florian et al. 2003, gazetteers)", 88.76),
    ("Lample et al. 2016 BiLSTM-CRF, pretrained embeddings", 90.94),
]
BENCH_CONFIG = {
    "format": "columns",
    "lowercase": True,
    "embedding_dim": 100,
    "char_dim": 32,
    "char_units": 32,
    "max_chars": 20,
    "cell": "lstm",
    "units": 128,
    "num_layers": 1,
    "batch_size": 32,
    "epochs": 8,
    "patience": 3,
    "verbose": 2,
}
# row name -> recipe options on top of BENCH_CONFIG (None: the dictionary baseline).
# Ordered most informative first.
ROWS = {
    "dictionary": None,
    "softmax": {"crf": False},
    "crf": {"crf": True, "crf_constraints": "false"},
    "crf-constrained-bioes": {"crf": True, "crf_constraints": "true", "tag_scheme": "bioes"},
    "crf-constrained": {"crf": True, "crf_constraints": "true"},
    "softmax-bioes": {"crf": False, "tag_scheme": "bioes"},
    "crf-constrained-bioes-nochars": {
        "crf": True,
        "crf_constraints": "true",
        "tag_scheme": "bioes",
        "char_dim": 0,
    },
    "softmax-nochars": {"crf": False, "char_dim": 0},
    "crf-constrained-bilm": {"crf": True, "crf_constraints": "true", "contextual_lm": "BILM"},
}


def load(data, split):
    from kerasrnn.data import load_conll_columns

    return load_conll_columns(str(data / f"{split}.txt.gz"))


class Dictionary:
    """Every token span tagged as an entity in training, with its most frequent type;
    tagging matches the longest known span first, left to right, and writes BIO tags."""

    def __init__(self, sentences, tags):
        from kerasrnn.metrics import entity_spans

        counts = collections.defaultdict(collections.Counter)
        for words, labels in zip(sentences, tags):
            for start, end, kind in entity_spans(labels):
                counts[tuple(words[start:end])][kind] += 1
        self.types = {span: c.most_common(1)[0][0] for span, c in counts.items()}
        self.longest = max(map(len, self.types), default=0)

    def tag(self, words):
        tags, i = ["O"] * len(words), 0
        while i < len(words):
            for n in range(min(self.longest, len(words) - i), 0, -1):
                kind = self.types.get(tuple(words[i : i + n]))
                if kind is not None:
                    tags[i : i + n] = [f"B-{kind}"] + [f"I-{kind}"] * (n - 1)
                    i += n
                    break
            else:
                i += 1
        return tags


def scores(gold, predicted):
    """Entity P/R/F1 (ours) with seqeval's F1 beside it where seqeval is installed."""
    from kerasrnn.metrics import entity_scores

    result = entity_scores(gold, predicted)
    try:
        from seqeval.metrics import f1_score
    except ImportError:
        result["seqeval_f1"] = None
    else:
        result["seqeval_f1"] = float(f1_score(gold, predicted))
    return result


def train_bilm(data, folder, minutes):
    """The biLM of the ``crf-constrained-bilm`` row in `folder` (trained there on the
    shared text for `minutes` unless its results.json exists)."""
    import bilm_upos

    folder = pathlib.Path(folder).resolve()
    if (folder / "results.json").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    text = bilm_upos.lm_text(folder, extra_train=load(data, "train")[0])
    config = dict(bilm_upos.LM_CONFIG, epochs=20, time_budget=minutes, patience=0)
    command = [sys.executable, "-m", "recipes.language_model", "train", "--bidirectional", "true"]
    command += ["--output-dir", str(folder / "run"), "--train-file", str(text["train"])]
    command += ["--valid-file", str(text["valid"]), "--test-file", ""]
    bilm_upos.run(command + bilm_upos.flags(config), folder / "recipes.log")
    (folder / "results.json").write_text((folder / "run" / "results.json").read_text())
    return folder


def run_row(name, data, out, epochs, seed, bilm=None):
    folder = out / name
    done = folder / "row.json"
    if done.exists():
        return json.loads(done.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    splits = {split: load(data, split) for split in ("train", "valid", "test")}
    began = time.time()
    if ROWS[name] is None:
        model = Dictionary(*splits["train"])
        predicted = {s: [model.tag(w) for w in splits[s][0]] for s in ("valid", "test")}
        info = {"epochs": 0}
    else:
        from recipes import common, tagger

        options = dict(ROWS[name])
        if options.get("contextual_lm") == "BILM":
            options["contextual_lm"] = str(bilm / "run")
        overrides = {
            **BENCH_CONFIG,
            **options,
            "epochs": epochs,
            "seed": seed,
            "output_dir": str(folder / "run"),
            **{s: str(data / f"{s}.txt.gz") for s in ("train", "valid", "test")},
        }
        config = common.load_config(tagger.DEFAULTS, overrides=overrides)
        run = folder / "run"
        if not (run / "training_curves.png").exists() or (run / "backup").exists():
            tagger.train(config)  # else: trained, only the scoring is missing
        trained = tagger.Tagger.from_run(config)
        predicted = {
            s: [p["tags"] for p in trained.predict(splits[s][0])] for s in ("valid", "test")
        }
        history = json.loads((run / "history.json").read_text())
        info = {
            "epochs": len(history["rows"]),
            "config": {
                k: overrides[k]
                for k in sorted(overrides)
                if k not in ("train", "valid", "test", "output_dir")
            },
        }
    row = {
        "row": name,
        "seconds": time.time() - began,
        **info,
        **{s: scores(splits[s][1], predicted[s]) for s in ("valid", "test")},
    }
    (folder / "test_predictions.json").write_text(json.dumps(predicted["test"]))
    done.write_text(json.dumps(row, indent=1))
    return row


def table(out):
    lines = [
        ("| model | valid F1 | test P | test R | test F1 | seqeval test F1 | epochs | minutes |"),
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in ROWS:
        path = out / name / "row.json"
        if not path.exists():
            continue
        row = json.loads(path.read_text())
        test = row["test"]
        seqeval = test.get("seqeval_f1")
        lines.append(
            f"| {name} | {100 * row['valid']['f1']:.2f} | {100 * test['precision']:.2f} | "
            f"{100 * test['recall']:.2f} | {100 * test['f1']:.2f} | "
            f"{'-' if seqeval is None else f'{100 * seqeval:.2f}'} | {row['epochs']} | "
            f"{row['seconds'] / 60:.1f} |"
        )
    for label, f1 in PUBLISHED:
        lines.append(f"| {label} (published) | | | | {f1:.2f} | | | |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA), help="the conll2003 folder")
    parser.add_argument(
        "--output-dir",
        default="runs/ner-bench",
        help="one folder per row; finished rows are not run again",
    )
    parser.add_argument(
        "--rows",
        nargs="*",
        default=list(ROWS),
        choices=list(ROWS),
        help="rows to run (default: all, most informative first)",
    )
    parser.add_argument(
        "--epochs", type=int, default=BENCH_CONFIG["epochs"], help="epochs per trained row at most"
    )
    parser.add_argument("--seed", type=int, default=1234, help="the recipe's seed")
    parser.add_argument(
        "--bilm-dir", default=None, help="the biLM folder (default: OUTPUT_DIR/bilm)"
    )
    parser.add_argument("--bilm-minutes", type=float, default=25, help="the biLM's training budget")
    parser.add_argument(
        "--table", action="store_true", help="print the table of the finished rows, train nothing"
    )
    args = parser.parse_args()
    out = pathlib.Path(args.output_dir)
    if not args.table:
        data = pathlib.Path(args.data)
        for name in args.rows:
            bilm = None
            if ROWS[name] and ROWS[name].get("contextual_lm"):
                bilm = train_bilm(data, args.bilm_dir or out / "bilm", args.bilm_minutes)
            row = run_row(name, data, out, args.epochs, args.seed, bilm)
            print(
                f"{name}: test entity F1 {100 * row['test']['f1']:.2f}", file=sys.stderr, flush=True
            )
    print(table(out))
    print("command: PYTHONPATH=. python bench/ner.py " + shlex.join(sys.argv[1:]))
    print(f"on {os.cpu_count()} CPU cores ({platform.processor() or platform.machine()})")


if __name__ == "__main__":
    main()
