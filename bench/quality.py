"""The quality runs: each recipe trained on its standard corpus and scored on its test
split, beside a strong simple baseline on the same split and the published figure.

* ``classifier``: sentence polarity (MR, Pang & Lee 2005), 10-fold cross-validation of
  a BiLSTM times a bigram Naive Bayes expert; baseline: the bigram Naive Bayes alone on
  the same folds; published: Kim 2014 CNN, random embeddings 76.1%.
* ``tagger``: UD English EWT UPOS accuracy (dev picks the best epoch); baseline: each
  word's most frequent training tag; published: Plank et al. 2016 bi-LSTM 94.6%.
* ``ner``: CoNLL-2003 English entity F1 (conlleval's micro P/R/F1) for several output
  layers (softmax, CRF, the CRF constrained to the BIO scheme, BIOES, no characters,
  a frozen biLM's features); baseline: a dictionary of the training entities;
  published: Lample et al. 2016 with random embeddings 83.63 (pretrained: 90.94).
* ``ner_best``: CoNLL-2003 with all of the tagger's options at once (constrained CRF, a
  frozen biLM's features, LM word vectors, the budget schedule), mean of two seeds;
  baseline: the dictionary; published: Lample et al. 2016 with pretrained embeddings 90.94.
* ``ner_n_best``: CoNLL-2003 test, the oracle entity F1 of the n best tag sequences of
  the constrained BiLSTM-CRF (list Viterbi: per sentence the candidate with the most
  correct entities); baseline: the best path's F1; published: NCRF++ 97.47 at n = 10.
* ``language_model``: Penn Treebank perplexity, Zaremba et al.'s "small" (2 x 200,
  13 epochs, no dropout; paper 114.5) or "medium"; baseline: none (the paper).
* ``time_budget``: a task (character LM, PTB, Multi30k, CoNLL-2003) given the same
  minutes under each budget schedule, at the configured peak or the range test's
  (``--find-lr``), beside the constant configured rate; its test score.
* ``translator``: Multi30k German -> English, sacreBLEU on test_2016_flickr, greedy and
  beam search, and the decoding speed; published: the PyTorch notebooks' 512-unit GRU
  28.3 greedy.
* ``sick``: SICK (SemEval-2014 task 1), the sentence-pair model's two heads with the
  shipped ``sick_entailment`` config: entailment accuracy (baseline: the majority
  judgment) and relatedness Pearson r, with the score or Tai et al.'s distribution as
  the target (baseline: the sentences' word overlap), on the test pairs; published: the
  best SemEval-2014 system, 84.6% and 0.8414.
* ``translator_lm``: the same translator with shallow fusion of a language model trained
  on the training targets (``recipes.translator lm-text``, the target vocabulary); lambda
  chosen by validation BLEU, then test BLEU at it; baseline: lambda = 0 (no LM).

The corpora are read from the shared data folder (``KERASRNN_DATA``, or ``shared/data``
beside the checkout); each run writes bench/results/NAME.json.

    python -m bench classifier [--folds 10] [--only-folds 3] [--set key=value ...]
    python -m bench tagger [--set key=value ...]
    python -m bench sick [--tasks entailment relatedness relatedness_distribution]
    python -m bench ner [--rows dictionary softmax crf-constrained] [--table]
    python -m bench ner_best [--bilm-minutes 45] [--vectors LM.vec] [--minutes 20]
    python -m bench ner_n_best [--run-dir runs/ner-n-best] [--n-best 1 5 10]
    python -m bench language_model --cell lstm [--size small]
    python -m bench translator [--train-pairs 2000 --test-sentences 100 --set epochs=1]
    python -m bench time_budget [--task ptb] [--minutes 3] [--variants constant cosine+find]
    python -m bench translator_lm --run-dir RUN --lm-dir LM_RUN [--weights 0.1 0.2 0.3]
"""

import collections
import json
import os
import pathlib
import platform
import shlex
import subprocess
import sys
import tempfile
import time

from bench import suite, timing

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = suite.ROOT


def shared_data():
    """The shared corpora: ``KERASRNN_DATA``, else ``shared/data`` in a parent folder."""
    if os.environ.get("KERASRNN_DATA"):
        return pathlib.Path(os.environ["KERASRNN_DATA"])
    for parent in ROOT.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return ROOT.parent / "shared" / "data"


DATA = shared_data()


def overrides(base, items):
    """`base` with ``key=value`` items on top (the recipes parse the values)."""
    return {**base, **dict(item.split("=", 1) for item in items)}


def wall_line(seconds):
    return (
        f"wall time: {seconds / 60:.1f} min on {os.cpu_count()} CPU cores "
        f"({platform.processor() or platform.machine()})"
    )


# ------------------------------------------------------------------ classifier (MR)
# From scratch (random embeddings); the recipe's defaults otherwise.
CLASSIFIER_CONFIG = {
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


def mr_folds(data, folds=10):
    """MR's texts, labels and k-fold split: a list of (training indices, test
    indices), one per fold (seeded: the same for every run)."""
    import numpy as np

    from kerasrnn.data import load_class_files

    polarity = pathlib.Path(data) / "sentence_polarity"
    texts, labels = load_class_files(
        [polarity / "rt-polarity.pos", polarity / "rt-polarity.neg"], encoding="cp1252"
    )
    order = np.random.default_rng(0).permutation(len(texts))
    folds = [(np.setdiff1d(order, test), test) for test in np.array_split(order, folds)]
    return texts, labels, folds


def classifier(argv=None):
    parser = suite.parser("classifier", __doc__)
    parser.add_argument("--data", default=str(DATA), help="the shared corpora folder")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument(
        "--only-folds", type=int, default=None, help="run only the first N folds (quick checks)"
    )
    parser.add_argument(
        "--keep-runs", metavar="DIR", help="write each fold's run to DIR/foldK (default: none)"
    )
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    config_overrides = overrides(CLASSIFIER_CONFIG, args.set)

    import numpy as np

    from kerasrnn.data.specs import holdout
    from recipes import classifier as recipe
    from recipes import common

    texts, labels, folds = mr_folds(args.data, args.folds)
    start = time.time()
    accuracies, baseline = [], []
    with tempfile.TemporaryDirectory() as tmp:
        runs = args.keep_runs or tmp
        for k, (train_idx, test_idx) in enumerate(folds[: args.only_folds or args.folds]):
            fold_start = time.time()

            def pick(idx):
                return [texts[i] for i in idx], [labels[i] for i in idx]

            config = common.load_config(
                recipe.DEFAULTS,
                overrides={**config_overrides, "output_dir": f"{runs}/fold{k}", "seed": 1234 + k},
            )
            train, valid = holdout(*pick(train_idx), config["valid_fraction"], config["seed"])
            results = recipe.train(config, {"train": train, "valid": valid, "test": pick(test_idx)})
            accuracies.append(results["test"]["accuracy"])
            baseline.append(naive_bayes_accuracy(pick(train_idx), pick(test_idx)))
            print(
                f"fold {k + 1}/{args.folds}: test accuracy {accuracies[-1]:.4f}, bigram NB "
                f"{baseline[-1]:.4f} ({results['history']['epochs_run']} epochs, "
                f"{time.time() - fold_start:.0f}s)",
                flush=True,
            )
    mean, std = 100 * np.mean(accuracies), 100 * np.std(accuracies)
    print(
        f"\nsentence polarity, {len(accuracies)} of {args.folds} CV folds: mean accuracy "
        f"{mean:.2f}% (std {std:.2f}); bigram Naive Bayes {100 * np.mean(baseline):.2f}%"
    )
    print("per fold:", " ".join(f"{100 * a:.2f}" for a in accuracies))
    print("config:", {k: config_overrides[k] for k in sorted(config_overrides)})
    print(wall_line(time.time() - start))
    suite.write_result(
        args,
        "mr",
        "Sentence polarity (MR), 10-fold cross-validation",
        {
            "accuracy": suite.figure(
                float(mean),
                f"mean accuracy over {len(accuracies)} folds",
                unit="%",
                spread={"kind": "std", "value": float(std)},
                runs=[round(100 * a, 2) for a in accuracies],
            )
        },
        baseline=suite.figure(float(100 * np.mean(baseline)), "bigram Naive Bayes", unit="%"),
        published=suite.figure(76.1, "Kim 2014 CNN, random embeddings", digits=1, unit="%"),
    )
    return accuracies


# ------------------------------------------------------------------ tagger (EWT UPOS)
TAGGER_CONFIG = {
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


def most_frequent_tag_baseline(ewt=None):
    """Each test word's most frequent training tag (unseen words: the most frequent
    tag overall), exact word forms."""
    from kerasrnn.data.loaders import load_conllu

    ewt = pathlib.Path(ewt) if ewt else DATA / "ud_en_ewt"
    words, tags = load_conllu(str(ewt / "en_ewt-ud-train.conllu.gz"), "upos")
    counts = collections.defaultdict(collections.Counter)
    overall = collections.Counter()
    for sentence, labels in zip(words, tags):
        for word, tag in zip(sentence, labels):
            counts[word][tag] += 1
            overall[tag] += 1
    default = overall.most_common(1)[0][0]
    test_words, test_tags = load_conllu(str(ewt / "en_ewt-ud-test.conllu.gz"), "upos")
    correct = total = 0
    for sentence, labels in zip(test_words, test_tags):
        for word, tag in zip(sentence, labels):
            guess = counts[word].most_common(1)[0][0] if word in counts else default
            correct += guess == tag
            total += 1
    return correct / total


def tagger(argv=None):
    parser = suite.parser("tagger", __doc__)
    parser.add_argument("--data", default=str(DATA / "ud_en_ewt"), help="the EWT folder")
    parser.add_argument("--output-dir", default=None, help="default: a temporary folder")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    from recipes import common
    from recipes import tagger as recipe

    config_overrides = overrides(TAGGER_CONFIG, args.set)
    data = pathlib.Path(args.data)
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        config = common.load_config(
            recipe.DEFAULTS,
            overrides={
                **config_overrides,
                "train": str(data / "en_ewt-ud-train.conllu.gz"),
                "valid": str(data / "en_ewt-ud-dev.conllu.gz"),
                "test": str(data / "en_ewt-ud-test.conllu.gz"),
                "format": "conllu",
                "output_dir": args.output_dir or tmp,
            },
        )
        results = recipe.train(config)
    baseline = most_frequent_tag_baseline(data)
    print(
        f"\nUD English EWT UPOS: dev accuracy {100 * results['valid']['accuracy']:.2f}%, "
        f"test accuracy {100 * results['test']['accuracy']:.2f}% "
        f"({results['test']['tokens']} test tokens, {results['history']['epochs_run']} "
        f"epochs); most frequent tag per word {100 * baseline:.2f}%"
    )
    print("config:", {k: config_overrides[k] for k in sorted(config_overrides)})
    print(wall_line(time.time() - start))
    suite.write_result(
        args,
        "ewt_upos_crf" if config["crf"] else "ewt_upos",  # --set crf=true: the CRF's own file
        "UD English EWT, UPOS tagging" + (", CRF output layer" if config["crf"] else ""),
        {"accuracy": suite.figure(100 * results["test"]["accuracy"], "test accuracy", unit="%")},
        baseline=suite.figure(100 * baseline, "most frequent tag per word", unit="%"),
        published=suite.figure(94.6, "Plank et al. 2016 bi-LSTM", digits=1, unit="%"),
        notes=(
            f"dev accuracy {100 * results['valid']['accuracy']:.2f}%; "
            f"{results['history']['epochs_run']} epochs (at most {config['epochs']}, early "
            f"stopping on dev); {results['test']['tokens']} test tokens"
        ),
    )
    return results


# ------------------------------------------------------------------ SICK (pair model)
# name: (the options over the shipped config, the best SemEval-2014 system's figure
# (Marelli et al. 2014)); relatedness_distribution is Tai et al.'s target distribution
SICK_TASKS = {
    "entailment": (
        {"task": "entailment"},
        suite.figure(84.6, "best SemEval-2014 system", digits=1, unit="%"),
    ),
    "relatedness": (
        {"task": "relatedness"},
        suite.figure(0.8414, "best SemEval-2014 system", digits=4),
    ),
    "relatedness_distribution": (
        {"task": "relatedness", "relatedness_target": "distribution"},
        suite.figure(0.8414, "best SemEval-2014 system", digits=4),
    ),
}


def sick(argv=None):
    parser = suite.parser("sick", __doc__)
    parser.add_argument("--data", default=str(DATA / "sick"), help="the SICK folder")
    parser.add_argument("--tasks", nargs="+", choices=list(SICK_TASKS), default=list(SICK_TASKS))
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    from recipes import common
    from recipes import pair_classifier as recipe

    data = pathlib.Path(args.data)
    for name in args.tasks:
        options, published = SICK_TASKS[name]
        task = options["task"]
        start = time.time()
        with tempfile.TemporaryDirectory() as tmp:
            config = common.load_config(
                recipe.RECIPE.options,
                "sick_entailment",  # the shipped config, each task's options over it
                {
                    **overrides({}, args.set),
                    **options,
                    "train": str(data / "SICK_train.txt.gz"),
                    "valid": str(data / "SICK_trial.txt.gz"),
                    "test": str(data / "SICK_test_annotated.txt.gz"),
                    "output_dir": tmp,
                    "verbose": 2,
                },
            )
            results = recipe.train(config)
        test, valid = results["test"], results["valid"]
        baselines = test["baselines"]
        epochs = results["history"]["epochs_run"]
        if task == "entailment":
            figures = {"accuracy": suite.figure(100 * test["accuracy"], "test accuracy", unit="%")}
            baseline = suite.figure(
                100 * baselines["majority_accuracy"],
                f"majority judgment ({baselines['majority_judgment']})",
                unit="%",
            )
            notes = f"trial accuracy {100 * valid['accuracy']:.2f}%; {epochs} epochs"
        else:
            figures = {"pearson": suite.figure(test["pearson"], "test Pearson r", digits=4)}
            overlap = baselines["word_overlap"]
            baseline = suite.figure(overlap["pearson"], "word overlap (Jaccard)", digits=4)
            notes = (
                f"Spearman rho {test['spearman']:.4f}, MSE {test['mse']:.4f} (the training "
                f"mean: MSE {baselines['mean_score_mse']:.4f}); word overlap Spearman rho "
                f"{overlap['spearman']:.4f}; trial Pearson r {valid['pearson']:.4f}; "
                f"{epochs} epochs"
            )
        key, figure = next(iter(figures.items()))
        print(
            f"\nSICK {name}: test {key} {figure['value']:.4g}; {baseline['label']} "
            f"{baseline['value']:.4g}; {notes}"
        )
        print(wall_line(time.time() - start))
        suite.write_result(
            args,
            f"sick_{name}",
            f"SICK {name.replace('_', ', target ')}",
            figures,
            baseline=baseline,
            published=published,
            notes=f"One run of the shipped sick_entailment config with {options}; {notes}.",
        )


# ------------------------------------------------------------------ NER (CoNLL-2003)
# A small biLM, one epoch: 25.5 min on 2 CPU cores shared with other jobs (2026-11-24).
BILM_CONFIG = {
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


def flags(config):
    out = []
    for key, value in config.items():
        out += [
            "--" + key.replace("_", "-"),
            str(value).lower() if isinstance(value, bool) else str(value),
        ]
    return out


def run_recipe(command, log):
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


def bilm_text(out, extra_train=()):
    """Writes the biLM's train and valid text (PTB and EWT, then the token lists
    `extra_train` in the training text), normalised as the tagger's biLM input; returns
    their paths."""
    from kerasrnn.data.loaders import load_conllu, read_lines
    from kerasrnn.data.tagging import lm_sentences

    ewt_dir, ptb_dir = DATA / "ud_en_ewt", DATA / "ptb"
    paths = {}
    for split, ptb, ewt in (
        ("train", "ptb.train.txt.gz", "en_ewt-ud-train.conllu.gz"),
        ("valid", "ptb.valid.txt.gz", "en_ewt-ud-dev.conllu.gz"),
    ):
        paths[split] = out / f"lm_{split}.txt"
        if paths[split].exists():
            continue
        lines = [line.strip() for _, line in read_lines(str(ptb_dir / ptb)) if line.strip()]
        sentences, _ = load_conllu(str(ewt_dir / ewt), "upos")
        if split == "train":
            sentences = list(sentences) + list(extra_train)
        lines += [" ".join(s) for s in lm_sentences(sentences) if s]
        partial = paths[split].with_suffix(".partial")
        partial.write_text("\n".join(lines) + "\n")
        partial.rename(paths[split])
    return paths


NER_PUBLISHED = [
    ("CoNLL-2003 shared task best (Florian et al. 2003, gazetteers)", 88.76),
    ("Lample et al. 2016 BiLSTM-CRF, pretrained embeddings", 90.94),
]
NER_CONFIG = {
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
# row name -> recipe options on top of NER_CONFIG (None: the dictionary baseline).
# Ordered most informative first.
NER_ROWS = {
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


def load_conll(data, split):
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


def entity_scores(gold, predicted):
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
    folder = pathlib.Path(folder).resolve()
    if (folder / "results.json").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    text = bilm_text(folder, extra_train=load_conll(data, "train")[0])
    config = dict(BILM_CONFIG, epochs=20, time_budget=minutes, patience=0, find_lr=False)
    command = [sys.executable, "-m", "recipes.language_model", "train", "--bidirectional", "true"]
    command += ["--output-dir", str(folder / "run"), "--train-file", str(text["train"])]
    command += ["--valid-file", str(text["valid"]), "--test-file", ""]
    run_recipe(command + flags(config), folder / "recipes.log")
    (folder / "results.json").write_text((folder / "run" / "results.json").read_text())
    return folder


def run_row(name, data, out, epochs, seed, bilm=None, extra=None):
    """Trains and scores the row `name` of `NER_ROWS` in ``out/name`` (recipe options
    `extra` on top of the row's), or reads it back when it is finished."""
    folder = out / name
    done = folder / "row.json"
    if done.exists():
        return json.loads(done.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    splits = {split: load_conll(data, split) for split in ("train", "valid", "test")}
    began = time.time()
    if NER_ROWS[name] is None:
        model = Dictionary(*splits["train"])
        predicted = {s: [model.tag(w) for w in splits[s][0]] for s in ("valid", "test")}
        info = {"epochs": 0}
    else:
        from kerasrnn.models import SequenceTagger
        from recipes import common, tagger

        options = dict(NER_ROWS[name])
        if options.get("contextual_lm") == "BILM":
            options["contextual_lm"] = str(bilm / "run")
        overrides = {
            **NER_CONFIG,
            **options,
            "epochs": epochs,
            "seed": seed,
            "output_dir": str(folder / "run"),
            **{s: str(data / f"{s}.txt.gz") for s in ("train", "valid", "test")},
            **(extra or {}),
        }
        config = common.load_config(tagger.DEFAULTS, overrides=overrides)
        run = folder / "run"
        if not (run / "training_curves.png").exists() or (run / "backup").exists():
            tagger.train(config)  # else: trained, only the scoring is missing
        trained = SequenceTagger.from_preset(run, compile=False)
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
        **{s: entity_scores(splits[s][1], predicted[s]) for s in ("valid", "test")},
    }
    (folder / "test_predictions.json").write_text(json.dumps(predicted["test"]))
    done.write_text(json.dumps(row, indent=1))
    return row


def ner_table(out):
    lines = [
        ("| model | valid F1 | test P | test R | test F1 | seqeval test F1 | epochs | minutes |"),
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in NER_ROWS:
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
    for label, f1 in NER_PUBLISHED:
        lines.append(f"| {label} (published) | | | | {f1:.2f} | | | |")
    return "\n".join(lines)


def ner(argv=None):
    parser = suite.parser("ner", __doc__)
    parser.add_argument("--data", default=str(DATA / "conll2003"), help="the conll2003 folder")
    parser.add_argument(
        "--output-dir",
        default="runs/ner-bench",
        help="one folder per row; finished rows are not run again",
    )
    parser.add_argument(
        "--rows",
        nargs="*",
        default=list(NER_ROWS),
        choices=list(NER_ROWS),
        help="rows to run (default: all, most informative first)",
    )
    parser.add_argument(
        "--epochs", type=int, default=NER_CONFIG["epochs"], help="epochs per trained row at most"
    )
    parser.add_argument("--seed", type=int, default=1234, help="the recipe's seed")
    parser.add_argument(
        "--bilm-dir", default=None, help="the biLM folder (default: OUTPUT_DIR/bilm)"
    )
    parser.add_argument("--bilm-minutes", type=float, default=25, help="the biLM's training budget")
    parser.add_argument(
        "--table", action="store_true", help="print the table of the finished rows, train nothing"
    )
    args = parser.parse_args(argv)
    out = pathlib.Path(args.output_dir)
    if not args.table:
        data = pathlib.Path(args.data)
        for name in args.rows:
            bilm = None
            if NER_ROWS[name] and NER_ROWS[name].get("contextual_lm"):
                bilm = train_bilm(data, args.bilm_dir or out / "bilm", args.bilm_minutes)
            row = run_row(name, data, out, args.epochs, args.seed, bilm)
            print(
                f"{name}: test entity F1 {100 * row['test']['f1']:.2f}", file=sys.stderr, flush=True
            )
    print(ner_table(out))
    rows = {
        name: json.loads((out / name / "row.json").read_text())
        for name in NER_ROWS
        if (out / name / "row.json").exists()
    }
    best = max(
        (n for n in rows if n != "dictionary" and "bilm" not in n),
        default=None,
        key=lambda n: rows[n]["valid"]["f1"],
    )
    if best is not None:
        suite.write_result(
            args,
            "conll2003_ner",
            "CoNLL-2003 English named entities",
            {"f1": suite.figure(100 * rows[best]["test"]["f1"], f"test entity F1, {best}")},
            baseline=suite.figure(100 * rows["dictionary"]["test"]["f1"], "dictionary")
            if "dictionary" in rows
            else None,
            published=suite.figure(83.63, "Lample et al. 2016 BiLSTM-CRF, random embeddings"),
            details={"rows": rows},
        )
    return rows


def ner_best(argv=None):
    """CoNLL-2003 with what the tagger offers at once: the constrained CRF, the features of
    a frozen biLM trained here for ``--bilm-minutes``, word vectors from a language model
    (``--vectors``, e.g. the ``lm.vec`` that ``vectors_ner`` writes), and the budget
    schedule with the range test for ``--minutes`` per seed; the test entity F1's mean over
    ``--seeds`` beside the dictionary baseline."""
    parser = suite.parser("ner_best", __doc__)
    parser.add_argument("--data", default=str(DATA / "conll2003"), help="the conll2003 folder")
    parser.add_argument("--output-dir", default="runs/ner-best", help="one folder per seed")
    parser.add_argument("--bilm-dir", default=None, help="default: OUTPUT_DIR/bilm")
    parser.add_argument("--bilm-minutes", type=float, default=45, help="the biLM's budget")
    parser.add_argument("--vectors", default=None, help="a .vec file for --embeddings")
    parser.add_argument("--minutes", type=float, default=20, help="each tagger's budget")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1234, 2])
    args = parser.parse_args(argv)
    data, out = pathlib.Path(args.data), pathlib.Path(args.output_dir).resolve()
    bilm = train_bilm(data, args.bilm_dir or out / "bilm", args.bilm_minutes)
    # the budget sets the schedule; the epochs are only a cap, and no early stop
    extra = {"time_budget": args.minutes, "patience": 0}
    if args.vectors:
        extra["embeddings"] = str(pathlib.Path(args.vectors).resolve())
    rows = {}
    for seed in args.seeds:
        rows[seed] = run_row("crf-constrained-bilm", data, out / f"seed{seed}", 1000, seed,
                             bilm, extra)  # fmt: skip
        print(f"seed {seed}: test entity F1 {100 * rows[seed]['test']['f1']:.2f}", flush=True)
    dictionary = run_row("dictionary", data, out, 0, 0)
    for row in rows.values():  # the results file names the runs, not this machine's folders
        for key in ("contextual_lm", "embeddings"):
            if key in row["config"]:
                row["config"][key] = os.path.relpath(row["config"][key], ROOT)
    scores = [100 * row["test"]["f1"] for row in rows.values()]
    mean = sum(scores) / len(scores)
    lm = json.loads((bilm / "results.json").read_text())
    print(f"test entity F1, mean of {len(scores)} seeds: {mean:.2f}; dictionary "
          f"{100 * dictionary['test']['f1']:.2f}")  # fmt: skip
    suite.write_result(
        args,
        "conll2003_ner_best",
        "CoNLL-2003 English named entities: constrained CRF, biLM features, LM vectors, "
        "budget schedule",
        {
            "f1": suite.figure(
                mean,
                f"test entity F1, mean of {len(scores)} seeds",
                spread={"kind": "min-max", "low": min(scores), "high": max(scores)},
                runs=scores,
            )
        },
        baseline=suite.figure(
            100 * dictionary["test"]["f1"], "dictionary of the training entities"
        ),
        published=suite.figure(90.94, "Lample et al. 2016 BiLSTM-CRF, pretrained embeddings"),
        details={
            "rows": rows,
            # the biLM's results.json has its validation perplexity per epoch only
            "bilm": {
                "time_budget": lm["time_budget"],
                "epochs": lm["epochs"],
                "valid_perplexity": lm["epochs"][-1]["valid_perplexity"],
            },
        },
    )
    return rows


# ------------------------------------------------------------------ n-best NER (oracle F1)
def oracle_choice(gold, candidates):
    """The candidate (tag lists, best first) with the most correct entities against
    `gold`; on a tie the one with fewer predicted entities, then the higher ranked."""
    from kerasrnn.metrics import entity_spans

    truth = set(entity_spans(gold))

    def key(item):
        rank, tags = item
        found = set(entity_spans(tags))
        return (-len(found & truth), len(found), rank)

    return min(enumerate(candidates), key=key)[1]


def ner_n_best(argv=None):
    """CoNLL-2003 test: the entity F1 of the best path and the oracle F1 of the n best
    (list Viterbi, `SequenceTagger.predict_n_best`) of a constrained BiLSTM-CRF tagger."""
    parser = suite.parser("ner_n_best", __doc__)
    parser.add_argument("--data", default=str(DATA / "conll2003"), help="the conll2003 folder")
    parser.add_argument(
        "--run-dir",
        default="runs/ner-n-best",
        help="a tagger run; trained there first (recipes/configs/conll2003_ner.yaml) if it "
        "holds no best.keras",
    )
    parser.add_argument(
        "--n-best", type=int, nargs="+", default=[1, 5, 10], help="the k of each row"
    )
    parser.add_argument("--seed", type=int, default=1234, help="the recipe's seed (training)")
    args = parser.parse_args(argv)
    from kerasrnn.models import SequenceTagger
    from recipes import common, tagger

    data, run = pathlib.Path(args.data), pathlib.Path(args.run_dir)
    if not (run / "best.keras").exists():
        overrides = {
            "output_dir": str(run),
            "seed": args.seed,
            "verbose": 2,
            **{s: str(data / f"{s}.txt.gz") for s in ("train", "valid", "test")},
        }
        path = ROOT / "recipes" / "configs" / "conll2003_ner.yaml"
        tagger.train(common.load_config(tagger.DEFAULTS, str(path), overrides))
    trained = SequenceTagger.from_preset(run, compile=False)
    sentences, gold = load_conll(data, "test")
    began = time.time()
    best = [p["tags"] for p in trained.predict(sentences)]
    lists = [[c["tags"] for c in n] for n in trained.predict_n_best(sentences, max(args.n_best))]
    seconds = time.time() - began
    # list Viterbi's first path is Viterbi's: a check of the run, not a figure
    differ = sum(n[0] != b for n, b in zip(lists, best))
    rows = {}
    for k in args.n_best:
        chosen = [oracle_choice(g, n[:k]) for g, n in zip(gold, lists)]
        rows[k] = {"k": k, **entity_scores(gold, chosen)}
        print(f"k={k}: oracle entity F1 {100 * rows[k]['f1']:.2f}", file=sys.stderr, flush=True)
    lines = ["| n best | oracle test entity F1 | seqeval F1 |", "|---|---|---|"]
    for k, row in rows.items():
        seqeval = "-" if row.get("seqeval_f1") is None else f"{100 * row['seqeval_f1']:.2f}"
        lines.append(f"| {k} | {100 * row['f1']:.2f} | {seqeval} |")
    print("\n".join(lines))
    one_best = entity_scores(gold, best)
    suite.write_result(
        args,
        "conll2003_ner_n_best",
        "CoNLL-2003 English named entities, n-best oracle",
        {
            f"oracle_{k}": suite.figure(
                100 * row["f1"],
                "test entity F1, best path" if k == 1 else f"oracle test entity F1 of the {k} best",
            )
            for k, row in rows.items()
        },
        headline=f"oracle_{max(args.n_best)}",
        baseline=suite.figure(100 * one_best["f1"], "the best path, Viterbi"),
        published=suite.figure(97.47, "NCRF++, Yang & Zhang 2018, oracle F1 of the 10 best"),
        notes=(
            "Per sentence the candidate with the most correct entities (then the fewest "
            "predicted, then the best ranked); conlleval's micro F1 over the test set. "
            f"{len(sentences)} sentences decoded in {seconds:.0f} s; the first of the n best "
            f"was Viterbi's path in {len(sentences) - differ} of them."
        ),
        details={"rows": list(rows.values()), "run": str(run)},
    )
    return rows


# ------------------------------------------------------------------ language model (PTB)
LM_SIZES = {
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


def language_model(argv=None):
    parser = suite.parser("language_model", __doc__)
    parser.add_argument("--size", choices=sorted(LM_SIZES), default="small")
    parser.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
    parser.add_argument("--epochs", type=int, help="override the configuration's epochs")
    parser.add_argument("--data-dir", default=str(DATA / "ptb"))
    parser.add_argument("--output-dir", help="default: runs/bench_lm_<size>_<cell>")
    parser.add_argument("--unroll", type=int, default=1, help="unroll the RNN (faster on CPU)")
    args = parser.parse_args(argv)
    from recipes import language_model as recipe

    config = dict(recipe.DEFAULTS)
    config.update(LM_SIZES[args.size])
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
        f"PTB {args.size} {args.cell}: {json.dumps({k: config[k] for k in LM_SIZES['small']})}"
        f" on {platform.machine()} with {os.cpu_count()} CPUs",
        flush=True,
    )
    results, wall = timing.timed(lambda: recipe.train(config))
    last = results["epochs"][-1]
    summary = {
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
        "wall_seconds": wall,
    }
    print(json.dumps(summary, indent=2))
    paper = {"small": 114.5, "medium": 82.7}[args.size]
    suite.write_result(
        args,
        f"ptb_{args.size}" + ("" if args.cell == "lstm" else f"_{args.cell}"),
        f"Penn Treebank perplexity, Zaremba et al.'s {args.size} {args.cell.upper()}",
        {
            "perplexity": suite.figure(
                results["test"]["perplexity"], "test perplexity at the best validation epoch", 1
            )
        },
        published=suite.figure(paper, f"Zaremba et al. 2014, {args.size}", 1),
        details=summary,
    )
    return summary


# ------------------------------------------------------------------ time budgets
# Each variant gets the same minutes: `constant` is the fixed schedule (the configured
# rate, training stopped when the minutes are spent); the others stretch a schedule over
# them, at the configured peak or at the peak the range test picks (`+find`, its time
# inside the minutes). `cosine+find` is what `--time-budget` does by default.
# The character LM: one layer of 128 units on tiny Shakespeare (first 90% train, then 5%
# valid, 5% test), Adam at the hand-set 2e-3 of char-rnn.
BUDGET_LM_CONFIG = {
    "level": "char",
    "batching": "stream",
    "units": 128,
    "num_layers": 1,
    "embedding_dim": 32,
    "bidirectional": False,
    "dropout": 0.0,
    "optimizer": "adam",
    "learning_rate": 0.002,
    "loss_reduction": "mean",
    "clipnorm": 1.0,
    "batch_size": 32,
    "steps": 64,
}
BUDGET_VARIANTS = {
    "constant": {"budget_schedule": "constant", "find_lr": False},
    "cosine": {"budget_schedule": "cosine", "find_lr": False},
    "wsd": {"budget_schedule": "wsd", "find_lr": False},
    "cosine+find": {"budget_schedule": "cosine", "find_lr": True},
    "wsd+find": {"budget_schedule": "wsd", "find_lr": True},
}
# task: (title, recipe, shipped config or None, settings over it, where results.json
# holds the score, the score's name, its scale, whether lower is better). The shipped
# configs at the recipe's own rates: Zaremba's SGD 1 (its epoch decay is off under a
# budget), the translator's default Adam 1e-3 (its config's 2e-3 was raised by hand),
# the tagger's Adam 1e-3.
BUDGET_TASKS = {
    "char": (
        "character LM on tiny Shakespeare", "language_model", None, BUDGET_LM_CONFIG,
        ("test", "bits_per_character"), "test bits per character", 1, True,
    ),
    "ptb": (
        "word LM on PTB (Zaremba et al.'s small)", "language_model",
        "recipes/configs/zaremba_small.yaml", {"evaluate_test_each_epoch": False},
        ("test", "perplexity"), "test perplexity", 1, True,
    ),
    "translation_de_en": (
        "Multi30k German -> English translator", "translator",
        "recipes/configs/translation_de_en.yaml", {"learning_rate": 0.001, "heatmaps": 0},
        ("test", "beam5", "bleu"), "test BLEU, beam 5", 1, False,
    ),
    "conll2003": (
        "CoNLL-2003 NER tagger", "tagger", "recipes/configs/conll2003_ner.yaml", {},
        ("test", "entities", "f1"), "test entity F1", 100, False,
    ),
}  # fmt: skip


def budget_text(out):
    """The tiny Shakespeare text split by characters into train / valid / test files."""
    text = (DATA / "tiny_shakespeare" / "input.txt").read_text(encoding="utf-8")
    cuts = [0, int(0.9 * len(text)), int(0.95 * len(text)), len(text)]
    files = {}
    for split, low, high in zip(("train", "valid", "test"), cuts, cuts[1:]):
        files[split] = out / f"{split}.txt"
        files[split].write_text(text[low:high], encoding="utf-8")
    return files


def time_budget(argv=None):
    """Each variant of `BUDGET_VARIANTS` trained on a task of `BUDGET_TASKS` for the same
    minutes per seed, one after another with the machine to itself (`--together` starts
    a seed's variants at once, quicker but with each slowing the others unevenly); each
    one's test score (the mean over the seeds), steps and the range test's pick. A
    finished run (its folder holds results.json) is read back, not retrained."""
    parser = suite.parser("time_budget", __doc__)
    parser.add_argument("--task", choices=sorted(BUDGET_TASKS), default="char")
    parser.add_argument("--minutes", type=float, default=3.0, help="each variant's budget")
    parser.add_argument(
        "--variants", nargs="+", choices=sorted(BUDGET_VARIANTS), default=list(BUDGET_VARIANTS)
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1234, 2])
    parser.add_argument("--output-dir", default="runs/bench_time_budget")
    parser.add_argument("--set", nargs="*", default=[], help="key=value config overrides")
    parser.add_argument(
        "--together", action="store_true", help="train a seed's variants at once, not in turn"
    )
    args = parser.parse_args(argv)
    title, recipe, shipped, settings, where, score_name, scale, lower = BUDGET_TASKS[args.task]
    out = pathlib.Path(args.output_dir).resolve() / args.task
    out.mkdir(parents=True, exist_ok=True)
    config = overrides(settings, args.set)
    # the epochs are only a cap and the whole budget is spent (no early stop)
    config.update(time_budget=args.minutes, epochs=1000, patience=0, verbose=0)
    command = [sys.executable, "-m", f"recipes.{recipe}", "train", "--overwrite"]
    if shipped:
        command += ["--config", str(ROOT / shipped)]
    else:
        text = budget_text(out)
        command += ["--train-file", str(text["train"]), "--valid-file", str(text["valid"])]
        command += ["--test-file", str(text["test"])]
    rate = float(config.get("learning_rate") or read_config_rate(ROOT / shipped))
    folders = {
        (name, seed): out / f"{name.replace('+', '_')}-seed{seed}"
        for seed in args.seeds
        for name in args.variants
    }
    for seed in args.seeds:
        started = []
        for name in args.variants:
            folder = folders[name, seed]
            if (folder / "results.json").exists():
                continue
            argv_ = command + flags({**config, **BUDGET_VARIANTS[name], "seed": seed})
            argv_ += ["--output-dir", str(folder)]
            print("$ " + " ".join(shlex.quote(c) for c in argv_), flush=True)
            log = open(f"{folder}.log", "w", encoding="utf-8")  # noqa: SIM115
            started.append((name, subprocess.Popen(argv_, stdout=log, stderr=log, cwd=ROOT), log))
            if not args.together:
                started[-1][1].wait()
        for name, process, log in started:
            code = process.wait()
            log.close()
            if code:
                raise SystemExit(f"{name} failed (exit {code}); see {folders[name, seed]}.log")
    rows = {}
    for (name, seed), folder in folders.items():
        results = json.loads((folder / "results.json").read_text())
        if results["time_budget"]["minutes"] != args.minutes:
            raise SystemExit(
                f"{folder} was trained for {results['time_budget']['minutes']:g} minutes, not "
                f"{args.minutes:g}: pass another --output-dir or remove the folder."
            )
        score = dig(results, where)
        # the same score on the validation split, where the recipe reports it
        valid = dig(results, ("valid", *where[1:])) if where[0] == "test" else None
        search = results.get("find_lr") or {}
        row = rows.setdefault(name, {"runs": {}})["runs"][seed] = {
            "score": scale * float(score),
            "valid": None if valid is None else scale * float(valid),
            "peak": search.get("pick", rate),
            "rule": search.get("rule", "the configured rate"),
            "find_lr_seconds": search.get("seconds", 0.0),
            "steps": results["time_budget"]["steps"],
            "seconds_used": results["time_budget"]["seconds_used"],
        }
        on_valid = "" if valid is None else f" (valid {row['valid']:.3f})"
        print(
            f"{name:12s} seed {seed}: {score_name} {row['score']:.3f}{on_valid}, "
            f"peak {row['peak']:.3g} "
            f"({row['rule']}), {row['steps']} steps in {row['seconds_used']:.0f} s "
            f"(range test {row['find_lr_seconds']:.0f} s)",
            flush=True,
        )
    figures = {}
    for name, row in rows.items():
        scores = [run["score"] for run in row["runs"].values()]
        row["score"] = sum(scores) / len(scores)
        valid = [run["valid"] for run in row["runs"].values()]
        row["valid"] = None if None in valid else sum(valid) / len(valid)
        print(f"{name:12s} {score_name}, mean of {len(scores)} seeds: {row['score']:.3f}")
        figures[name.replace("+", "_")] = suite.figure(
            row["score"],
            f"{name}: {score_name}, mean of {len(scores)} seeds",
            # bits per character to 3 decimals, perplexity, BLEU and F1 to 2
            3 if row["score"] < 10 else 2,
            spread={"kind": "min-max", "low": min(scores), "high": max(scores)},
            runs=scores,
        )
    budgeted = [name for name in figures if name != "constant"]
    suite.write_result(
        args,
        f"time_budget_{args.task}",
        f"{title}, {args.minutes:g} minutes each: budgeted schedules beside the constant "
        f"rate ({'lower' if lower else 'higher'} is better)",
        figures,
        # `--time-budget`'s default, else the last budgeted variant
        headline="cosine_find" if "cosine_find" in figures else (budgeted or [None])[-1],
        details={"config": config, "rate": rate, "variants": BUDGET_VARIANTS, "rows": rows},
    )
    return rows


def dig(results, path):
    """``results[path[0]][path[1]]...``, or None where a key is missing."""
    for key in path:
        if not isinstance(results, dict) or key not in results:
            return None
        results = results[key]
    return results


def read_config_rate(path):
    """The `learning_rate` of a shipped config, or the recipes' default (1e-3)."""
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8")).get("learning_rate", 1e-3)


# ------------------------------------------------------------------ translator (Multi30k)
# The notebooks' model: 256-d embeddings, 512-unit GRUs (encoder per direction), dropout
# 0.5, gradient clipping 1, words seen at least twice.
TRANSLATOR_CONFIG = {
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


def translator(argv=None):
    parser = suite.parser("translator", __doc__)
    parser.add_argument("--data", default=str(DATA / "multi30k"), help="the multi30k folder")
    parser.add_argument(
        "--train-pairs", type=int, default=0, help="train on the first N pairs only (0: all 29,000)"
    )
    parser.add_argument(
        "--test-sentences", type=int, default=0, help="score the first N test sentences (0: all)"
    )
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    from kerasrnn.data import load_parallel_text
    from recipes import common
    from recipes import translator as recipe

    config = common.load_config(recipe.DEFAULTS, overrides=overrides(TRANSLATOR_CONFIG, args.set))
    data = pathlib.Path(args.data)
    if not data.exists():
        sys.exit(f"Multi30k not found at {data} (set KERASRNN_DATA to the corpora folder)")
    splits = {
        name: load_parallel_text(data / f"{stem}.de.gz", data / f"{stem}.en.gz")
        for name, stem in (("train", "train"), ("valid", "val"), ("test", "test_2016_flickr"))
    }
    if args.train_pairs:
        splits["train"] = tuple(side[: args.train_pairs] for side in splits["train"])
    if args.test_sentences:
        splits["test"] = tuple(side[: args.test_sentences] for side in splits["test"])

    results, total = timing.timed(lambda: recipe.train(config, splits))
    test = results["test"]
    # `evaluate` names beam size 1 "greedy".
    beam = f"beam{config['beam_size']}" if config["beam_size"] > 1 else "greedy"
    beam_label = f"beam {config['beam_size']}"
    # With lowercase the references are lower-cased too (recipes.translator.translation_scores).
    case = "cased" if test.get("cased", True) else "case-insensitive"
    print(
        f"\ndata: {len(splits['train'][0])} training pairs "
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
    suite.write_result(
        args,
        "translation_de_en",
        "Multi30k German -> English, test_2016_flickr",
        {
            "bleu": suite.figure(test[beam]["bleu"], f"BLEU ({case}), {beam_label}"),
            "greedy_bleu": suite.figure(test["greedy"]["bleu"], f"BLEU ({case}), greedy"),
            "sentences_per_second": suite.figure(
                test[beam]["sentences_per_second"], f"{beam_label} sentences/s", 1
            ),
        },
        published=suite.figure(28.3, "PyTorch seq2seq notebooks' GRU, greedy", 1),
    )
    return results


def translator_lm(argv=None):
    """Multi30k De->En: test BLEU of a trained translator run with and without shallow
    fusion of a trained target-side LM run, lambda chosen on the validation set."""
    parser = suite.parser("translator_lm", __doc__)
    parser.add_argument("--data", default=str(DATA / "multi30k"), help="the multi30k folder")
    parser.add_argument("--run-dir", required=True, help="a translator run (translate_de_en)")
    parser.add_argument("--lm-dir", required=True, help="an LM run on its targets (--lm)")
    parser.add_argument("--weights", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.5])
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--sentences", type=int, default=0, help="first N of each split (0: all)")
    args = parser.parse_args(argv)
    from kerasrnn.data import load_parallel_text
    from kerasrnn.seq2seq import Seq2Seq
    from recipes import common
    from recipes import translator as recipe
    from recipes.decoding import generate_settings

    config = common.saved_config(recipe.DEFAULTS, args.run_dir, {"beam_size": args.beam_size})
    trained = Seq2Seq.from_preset(args.run_dir, compile=False)
    # the LM run checked up front (a forward LM of the translator's target vocabulary),
    # as the recipe's --lm is
    generate_settings(dict(config, lm=args.lm_dir), trained)
    data, n = pathlib.Path(args.data), args.sentences or None
    splits = {
        name: [side[:n] for side in load_parallel_text(data / f"{s}.de.gz", data / f"{s}.en.gz")]
        for name, s in (("valid", "val"), ("test", "test_2016_flickr"))
    }
    beam = f"beam{args.beam_size}"

    def bleu(split, weight):
        # the recipe's scores with the LM fused at `weight` (its `--lm`, `--lm-weight`)
        fused = dict(config, lm=args.lm_dir, lm_weight=weight)
        began = time.time()
        scores = recipe.translation_scores(trained, fused, *splits[split], [args.beam_size])
        score = scores[beam]["bleu"]
        print(
            f"{split} lambda={weight}: BLEU {score:.2f} ({time.time() - began:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
        return score

    valid = {w: bleu("valid", w) for w in sorted({0.0, *args.weights})}
    best = max(valid, key=lambda w: (valid[w], -w))
    # the LM's own best weight too, when no weight beats lambda = 0 on valid
    fused = max((w for w in valid if w > 0), key=lambda w: (valid[w], -w), default=best)
    test = {0.0: bleu("test", 0.0)}
    for weight in {best, fused} - {0.0}:
        test[weight] = bleu("test", weight)
    print(
        "| lambda | valid BLEU |\n|---|---|\n"
        + "\n".join(f"| {w} | {b:.2f} |" for w, b in valid.items())
    )
    print(
        f"test BLEU, {beam}: without the LM {test[0.0]:.2f}, lambda={best} {test[best]:.2f}"
        f" (best on valid), lambda={fused} {test[fused]:.2f} (the best LM weight on valid)"
    )
    suite.write_result(
        args,
        "translation_de_en_fusion",
        "Multi30k German -> English, test_2016_flickr, shallow fusion with a target-side LM",
        {
            "bleu": suite.figure(test[best], f"BLEU, {beam}, LM lambda={best} (best on valid)"),
            "change": suite.figure(test[best] - test[0.0], "BLEU change from the LM", signed=True),
            "fused": suite.figure(test[fused], f"BLEU, {beam}, LM lambda={fused} (best LM weight)"),
        },
        baseline=suite.figure(test[0.0], f"BLEU, {beam}, no LM"),
        notes=(
            f"Translator run {args.run_dir}, LM run {args.lm_dir} (trained on the "
            "translator's training targets with its target vocabulary); lambda from "
            f"{sorted(valid)} by validation BLEU; "
            f"{len(splits['test'][0])} test / {len(splits['valid'][0])} validation sentences."
        ),
        details={
            "valid_bleu": {str(w): b for w, b in valid.items()},
            "test_bleu": {str(w): b for w, b in test.items()},
            "lambda": best,
        },
    )
    return {"valid": valid, "test": test, "lambda": best}


def translator_subwords(argv=None):
    """Multi30k De->En with subword tokenizers against words: the shipped translation
    config (its time budget) trained per seed with `--tokenizer` on both sides, test BLEU
    (beam 5) beside the config's word-level results file."""
    parser = suite.parser("translator_subwords", __doc__)
    parser.add_argument("--config", default="recipes/configs/translation_de_en.yaml")
    parser.add_argument("--tokenizer", default="sentencepiece", choices=("sentencepiece", "bpe"))
    parser.add_argument("--vocab-size", type=int, default=8000, help="pieces per side")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1234, 2])
    parser.add_argument("--output-dir", default="runs/translation_de_en_subwords")
    args = parser.parse_args(argv)
    from recipes import translator as recipe

    scores = {}
    for seed in args.seeds:
        out = f"{args.output_dir}-seed{seed}"
        done = os.path.join(out, "results.json")
        if not os.path.exists(done):  # a finished seed is read back, not retrained
            flags = ["--config", args.config, "--output-dir", out, "--seed", str(seed)]
            for side in ("source", "target"):
                flags += [f"--{side}-tokenizer", args.tokenizer]
            code = recipe.main(["train", *flags, "--subword-vocab-size", str(args.vocab_size)])
            if code:
                sys.exit(code)
        with open(done) as f:
            results = json.load(f)
        with open(os.path.join(out, "config.json")) as f:
            test, beam = results["test"], f"beam{json.load(f)['beam_size']}"
        scores[seed] = (test[beam]["bleu"], test["greedy"]["bleu"], results["history"])
        print(f"seed {seed}: BLEU {scores[seed][0]:.2f} (greedy {scores[seed][1]:.2f})")
    words = json.loads((suite.RESULTS / "translation_de_en.json").read_text())["figures"]["bleu"]
    bleu = [s[0] for s in scores.values()]
    mean = sum(bleu) / len(bleu)
    print(f"{args.tokenizer} ({args.vocab_size} pieces a side): test BLEU {mean:.2f} "
          f"[{min(bleu):.2f}-{max(bleu):.2f}]; words {words['value']:.2f}")  # fmt: skip
    suite.write_result(
        args,
        "translation_de_en_subwords",
        f"Multi30k German -> English, test_2016_flickr, {args.tokenizer} subwords",
        {
            "bleu": suite.figure(
                mean,
                f"BLEU (cased), beam 5, {args.tokenizer} {args.vocab_size} pieces a side, "
                f"mean of {len(bleu)} seeds",
                spread={"kind": "min-max", "low": min(bleu), "high": max(bleu)},
                runs=bleu,
            ),
            "greedy_bleu": suite.figure(
                sum(s[1] for s in scores.values()) / len(bleu), "BLEU (cased), greedy, mean"
            ),
        },
        baseline=suite.figure(words["value"], f"words, the same config: {words['label']}"),
        train="\n".join(
            f"python -m recipes.translator train --config {args.config} --seed {seed} "
            f"--output-dir {args.output_dir}-seed{seed} --source-tokenizer {args.tokenizer} "
            f"--target-tokenizer {args.tokenizer} --subword-vocab-size {args.vocab_size}"
            for seed in args.seeds
        ),
        notes=(
            f"{args.config} with --source-tokenizer {args.tokenizer} --target-tokenizer "
            f"{args.tokenizer} --subword-vocab-size {args.vocab_size} (the same model and time "
            f"budget as the word baseline), seeds {args.seeds}; epochs run: "
            f"{[s[2]['epochs_run'] for s in scores.values()]}."
        ),
    )
    return scores


# ---- the diversity of the n best: diverse beam search against beam search ------------
def distinct_ngrams(hypotheses, n):
    """Distinct-n of one input's n-best list: the distinct word n-grams over all its
    hypotheses / all its n-grams (1.0: no n-gram repeated across the list)."""
    grams = [
        tuple(words[i : i + n])
        for words in (h.split() for h in hypotheses)
        for i in range(len(words) - n + 1)
    ]
    return len(set(grams)) / max(len(grams), 1)


def diverse_n_best(argv=None):
    """Multi30k De->En: how different the n best of a trained translator run are with
    diverse beam search (Vijayakumar et al. 2018) and with beam search of the same
    width: distinct n-grams across each input's n best, distinct hypotheses, and the
    test BLEU of the best and of the oracle (the n-best entry closest to the reference)."""
    parser = suite.parser("diverse_n_best", __doc__)
    parser.add_argument("--data", default=str(DATA / "multi30k"), help="the multi30k folder")
    parser.add_argument("--run-dir", required=True, help="a translator run (translate_de_en)")
    parser.add_argument("--beam-size", type=int, default=6)
    parser.add_argument("--groups", type=int, default=3)
    parser.add_argument("--diversity", type=float, nargs="+", default=[0.5, 1.0])
    parser.add_argument("--sentences", type=int, default=0, help="first N test pairs (0: all)")
    args = parser.parse_args(argv)
    import numpy as np
    import sacrebleu

    from kerasrnn import decoding
    from kerasrnn.data import load_parallel_text
    from kerasrnn.metrics import corpus_bleu
    from kerasrnn.seq2seq import Seq2Seq
    from recipes import common
    from recipes import translator as recipe
    from recipes.decoding import generate_settings

    config = common.saved_config(recipe.DEFAULTS, args.run_dir)
    trained = Seq2Seq.from_preset(args.run_dir, compile=False)
    settings = generate_settings(config, trained)  # the run's readout and --lm
    data = pathlib.Path(args.data)
    sources, references = load_parallel_text(
        data / "test_2016_flickr.de.gz", data / "test_2016_flickr.en.gz"
    )
    n = args.sentences or len(sources)
    sources, references = sources[:n], references[:n]
    k = args.beam_size
    searches = {f"beam {k}": decoding.BeamSearch(k, n_best=k)}
    for strength in args.diversity:
        searches[f"diverse {args.groups}x{k // args.groups}, lambda {strength}"] = (
            decoding.DiverseBeamSearch(k, args.groups, strength, n_best=k)
        )
    rows = []
    for name, search in searches.items():
        began = time.time()
        found = trained.generate(list(sources), search, return_scores=True, **settings)
        lists = [[h["text"] for h in row] for row in found]
        oracle = [
            max(hyps, key=lambda h: sacrebleu.sentence_bleu(h, [ref]).score)
            for hyps, ref in zip(lists, references)
        ]
        rows.append(
            {
                "search": name,
                "distinct_1": 100 * float(np.mean([distinct_ngrams(h, 1) for h in lists])),
                "distinct_2": 100 * float(np.mean([distinct_ngrams(h, 2) for h in lists])),
                "unique": float(np.mean([len(set(h)) for h in lists])),
                "bleu": corpus_bleu([h[0] for h in lists], references).score,
                "oracle_bleu": corpus_bleu(oracle, references).score,
                "seconds": time.time() - began,
            }
        )
        print(rows[-1], file=sys.stderr, flush=True)
    print(
        "| search | distinct-1 % | distinct-2 % | distinct hypotheses | BLEU (best) | "
        "oracle BLEU |\n|---|---|---|---|---|---|"
    )
    for r in rows:
        print(
            f"| {r['search']} | {r['distinct_1']:.1f} | {r['distinct_2']:.1f} | "
            f"{r['unique']:.2f} | {r['bleu']:.2f} | {r['oracle_bleu']:.2f} |"
        )
    suite.write_result(
        args,
        "diverse_n_best",
        f"Multi30k German -> English, test_2016_flickr: the {k} best, diverse against beam",
        {
            key: suite.figure(rows[-1][key], f"{rows[-1]['search']}: {label}", digits)
            for key, label, digits in (
                ("distinct_2", "distinct-2 %", 1),
                ("oracle_bleu", "oracle BLEU", 2),
                ("bleu", "BLEU of the best", 2),
            )
        },
        baseline=suite.figure(rows[0]["distinct_2"], f"{rows[0]['search']}: distinct-2 %", 1),
        notes=(
            f"Translator run {args.run_dir}; {n} test sentences; distinct-n: the distinct "
            "word n-grams of an input's n best over all their n-grams, averaged over inputs."
        ),
        details={"rows": rows},
        readme=False,
    )
    return rows


# ---- the search error of greedy and beam search (exhaustive search the reference) -----
def search_error(argv=None):
    """A date translator whose output is short enough to enumerate (the month and day of
    a written date as four digits, "12 march 2014" -> "0312": V = 14 target ids, L = 4,
    38,416 sequences): how often greedy search and small beams return a hypothesis less
    probable than exhaustive search's, and the exact match of each, all ranked by
    log p(y | x) itself."""
    parser = suite.parser("search_error", __doc__)
    parser.add_argument("--train-pairs", type=int, default=3000)
    parser.add_argument("--test-sentences", type=int, default=300)
    parser.add_argument("--epochs", type=int, nargs="+", default=[1, 3, 10])
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 2, 3, 5])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import keras
    import numpy as np

    from kerasrnn import decoding
    from kerasrnn.seq2seq import Seq2Seq
    from kerasrnn.tasks import date_translation_task
    from recipes import common
    from recipes import translator as recipe

    sources, dates = date_translation_task(args.train_pairs + args.test_sentences, args.seed)
    targets = [d[5:7] + d[8:10] for d in dates]  # "2014-03-12" -> "0312"
    split = args.train_pairs
    exact = decoding.Scorer(None)  # every search ranks by log p(y | x) itself
    rows = []
    for epochs in args.epochs:
        config = common.load_config(
            recipe.DEFAULTS,
            overrides=dict(
                output_dir=tempfile.mkdtemp(), source_tokenizer="word", target_tokenizer="char",
                lowercase=True, embedding_dim=32, encoder_units=32, decoder_units=64,
                attention_units=32, dropout=0.0, batch_size=64, learning_rate=3e-3,
                epochs=epochs, patience=0,
                bucket_boundaries=[], beam_size=1, max_source_length=12, max_decode_length=4,
                heatmaps=0, verbose=0, seed=args.seed,
            ),
        )  # fmt: skip
        recipe.train(config, {"train": (sources[:split], targets[:split]), "valid": None})
        trained = Seq2Seq.from_preset(config["output_dir"], compile=False)
        target = trained.preprocessor.target.vocabulary
        vocab = len(target)
        searches = {f"beam {k}" if k > 1 else "greedy": decoding.BeamSearch(k, scorer=exact)
                    for k in args.beams}  # fmt: skip
        searches["exhaustive"] = decoding.ExhaustiveSearch(vocab, 4, scorer=exact)
        found = {name: ([], []) for name in searches}
        for start in range(split, len(sources), 8):  # 8 x 38,416 rows a call
            batch = sources[start : start + 8]
            ids = trained.preprocessor.encode(batch, trained.max_source_length)[0]
            for name, search in searches.items():
                out = trained.generate(ids, search, 4, return_alignments=False)
                tokens = keras.ops.convert_to_numpy(out.tokens)[:, 0]
                found[name][0].extend(keras.ops.convert_to_numpy(out.log_probs)[:, 0])
                found[name][1].extend(
                    "".join(target.tokens[t] for t in row if t > 3) for row in tokens
                )
        best = np.asarray(found["exhaustive"][0])
        truth = targets[split:]
        for name, (log_probs, texts) in found.items():
            rows.append(
                {
                    "epochs": epochs,
                    "search": name,
                    "search_error": 100 * float(np.mean(np.asarray(log_probs) < best - 1e-4)),
                    "exact": 100 * float(np.mean([a == b for a, b in zip(texts, truth)])),
                    "mean_log_p": float(np.mean(log_probs)),
                }
            )
    table = suite.markdown_table(
        ["epochs", "search", "search error %", "exact match %", "mean log p"],
        [
            [r["epochs"], r["search"], f"{r['search_error']:.1f}", f"{r['exact']:.1f}",
             f"{r['mean_log_p']:.3f}"]
            for r in rows
        ],
    )  # fmt: skip
    print(table)
    short = [r for r in rows if r["epochs"] == args.epochs[0]]
    suite.write_result(
        args,
        "search_error",
        "search error against exhaustive search on a date translator (month and day)",
        {
            key: suite.figure(
                row["search_error"],
                f"{row['search']}, {args.epochs[0]} epoch(s) trained: search error %",
                1,
            )
            for key, row in (("greedy", short[0]), ("beam", short[-2]))
        },
        baseline=suite.figure(short[-1]["exact"], "exhaustive search: exact match %", 1),
        notes=(
            f"{args.train_pairs} training pairs of kerasrnn.tasks.date_translation_task "
            f"(seed {args.seed}), targets the month and day as four digits; "
            f"{args.test_sentences} test sentences; the models trained for {args.epochs} "
            "epochs; a search error is a hypothesis less probable than exhaustive search's."
        ),
        details={"rows": rows},
        tables={"rows": table},
        readme=False,
    )
    return rows


# ---- copy attention on a task whose outputs copy rare source words -------------------
COPY_TEMPLATES = (  # (source, target): a made-up source language, English targets
    ("{a} kauft {n} äpfel", "{a} buys {n} apples"),
    ("{a} trifft {b} in {c}", "{a} meets {b} in {c}"),
    ("{a} wohnt seit {n} jahren in {c}", "{a} has lived in {c} for {n} years"),
    ("{b} schreibt {a} einen brief", "{b} writes a letter to {a}"),
    ("in {c} sieht {a} {n} katzen", "in {c} , {a} sees {n} cats"),
    ("{a} und {b} fahren nach {c}", "{a} and {b} travel to {c}"),
    ("der zug nach {c} fährt um {n} uhr", "the train to {c} leaves at {n}"),
    ("{a} gibt {b} {n} bücher", "{a} gives {b} {n} books"),
)


def copy_task(pairs, seed, pool=2000):
    """`pairs` (source, target) sentences from COPY_TEMPLATES with names ({a}, {b}) and
    towns ({c}) drawn from a pool of `pool` random pseudo-words and numbers ({n}) from
    0..999: every name, town and number is copied unchanged into the target."""
    import random

    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "ni", "bru", "zem", "ola"]
    names = set()
    while len(names) < pool:
        names.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    names = sorted(names)
    out = []
    for _ in range(pairs):
        source, target = rng.choice(COPY_TEMPLATES)
        fill = {
            "a": rng.choice(names),
            "b": rng.choice(names),
            "c": rng.choice(names),
            "n": str(rng.randint(0, 999)),
        }
        out.append((source.format(**fill).split(), target.format(**fill).split()))
    return out


def copy_attention(argv=None):
    """Copy attention (`kerasrnn.seq2seq.CopyReadout`) against the plain softmax readout,
    the same model otherwise, on a generated template translation whose targets copy
    rare source words (names and numbers from large pools); greedy decoding."""
    parser = suite.parser("copy_attention", copy_attention.__doc__)
    parser.add_argument("--train-pairs", type=int, default=4000)
    parser.add_argument("--test-pairs", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--min-count", type=int, default=5, help="target vocabulary threshold")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    import keras

    from kerasrnn.data import Vocabulary, copy_decode, copy_target_ids, copy_vocabulary_map
    from kerasrnn.seq2seq import CopyReadout, Seq2Seq, Seq2SeqBackbone

    data = copy_task(args.train_pairs + args.test_pairs, args.seed)
    train, test = data[: args.train_pairs], data[args.train_pairs :]
    source_vocab = Vocabulary.build([s for s, _ in train])
    target_vocab = Vocabulary.build([t for _, t in train], min_freq=args.min_count)
    rare = {w for _, t in test for w in t if w not in target_vocab}

    def pad(rows):
        return keras.utils.pad_sequences(rows, padding="post")

    def arrays(pairs, copying):
        source = pad([source_vocab.encode(s) for s, _ in pairs])
        if copying:
            out = [copy_target_ids(s, t, source_vocab, target_vocab) for s, t in pairs]
        else:
            out = [target_vocab.encode(t, add_end=True) for _, t in pairs]
        target_in = [target_vocab.encode(t, add_start=True) for _, t in pairs]
        return {"source": source, "target_in": pad(target_in)}, pad(out)

    rows = []
    for copying in (False, True):
        keras.utils.set_random_seed(args.seed)
        backbone = Seq2SeqBackbone(
            len(source_vocab), len(target_vocab), embedding_dim=64, units=128
        )
        readout = CopyReadout(copy_vocabulary_map(source_vocab, target_vocab)) if copying else None
        model = Seq2Seq(backbone, max_target_length=16, copy_readout=readout)
        model.compile()
        x, y = arrays(train, copying)
        start = time.perf_counter()
        model.fit(x, y, batch_size=64, epochs=args.epochs, verbose=2)
        seconds = time.perf_counter() - start
        test_x, _ = arrays(test, copying)
        tokens, alignments = [], []
        for begin in range(0, len(test), 100):
            result = model.generate(test_x["source"][begin : begin + 100], "greedy")
            tokens.extend(keras.ops.convert_to_numpy(result.tokens)[:, 0])
            alignments.extend(keras.ops.convert_to_numpy(result.alignments)[:, 0])
        # the softmax readout twice: as it is, and with each [UNK] replaced by the
        # source word it attended to most (Luong et al. 2015's unknown-word replacement)
        for replace in (False, True) if not copying else (False,):
            exact = rare_hit = rare_total = 0
            for (source, target), ids, attended in zip(test, tokens, alignments):
                words = []
                for t, i in enumerate(ids):
                    if i == 1 and replace:
                        words.append(source[int(attended[t, : len(source)].argmax())])
                    elif i > 3:
                        words.extend(copy_decode([int(i)], source, target_vocab))
                exact += words == target
                for word in target:
                    if word in rare:
                        rare_total += 1
                        rare_hit += word in words
            name = "CopyReadout" if copying else "softmax" + (" + replace [UNK]" if replace else "")
            rows.append(
                {
                    "readout": name,
                    "exact": 100.0 * exact / len(test),
                    "rare": 100.0 * rare_hit / max(rare_total, 1),
                    "seconds": seconds,
                }
            )
    print(
        f"data: {len(train)} training / {len(test)} test pairs; vocabularies "
        f"{len(source_vocab)} (source) / {len(target_vocab)} (target, words seen "
        f">= {args.min_count} times); {len(rare)} test target words outside the target one"
    )
    columns = [
        ("readout", "readout", "s"),
        ("exact match %", "exact", ".1f"),
        ("rare words reproduced %", "rare", ".1f"),
        ("training s", "seconds", ".0f"),
    ]
    print(suite.format_table(rows, columns))
    table = suite.markdown_table(
        [header for header, _, _ in columns],
        [[format(row[key], spec) for _, key, spec in columns] for row in rows],
    )
    _, replaced, copied = rows
    suite.write_result(
        args,
        "copy_attention",
        "generated template translation copying rare names and numbers, greedy",
        {
            "exact": suite.figure(copied["exact"], "exact match %, copy attention", 1),
            "rare": suite.figure(copied["rare"], "rare target words reproduced %, copy", 1),
        },
        headline="exact",
        baseline=suite.figure(
            replaced["exact"], "exact match %, softmax readout with [UNK] replaced", 1
        ),
        details={"rows": rows, "train_pairs": len(train), "test_pairs": len(test)},
        tables={"rows": table},
        readme=False,
        notes=(
            "Targets copy names and towns from a pool of 2,000 random pseudo-words and "
            "numbers 0-999; the target vocabulary keeps words seen at least "
            f"{args.min_count} times in training, so most of them are outside it."
        ),
    )
    return rows
