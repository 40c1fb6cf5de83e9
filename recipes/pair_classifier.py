"""Sentence pairs (entailment, relatedness) with a shared recurrent sentence encoder.

A command line over `kerasrnn.models.PairClassifier` (InferSent's classifier over one
`SentenceEncoder` for both sentences: [u; v; |u - v|; u * v], a tanh layer, then the
head) with its `PairClassifierPreprocessor`. ``--task entailment``: a softmax over the
three judgments; ``--task relatedness``: a score in [1, 5], regressed (``score``) or as
Tai et al.'s distribution over the grades (``distribution``). Data: SICK's
tab-separated files (the header names the columns). The commands, options and measured
results: docs/recipes/pair_classifier.md.
"""

import sys

import numpy as np

from recipes import common, transfer, vectors
from recipes.common import Option

TASKS = ("entailment", "relatedness")
TARGETS = ("score", "distribution")
POOLINGS = ("last", "mean", "max", "concat")
LABELS = ("CONTRADICTION", "ENTAILMENT", "NEUTRAL")  # = kerasrnn.data.loaders.SICK_LABELS
OPTIONS = {
    key: option
    for key, option in common.data_options(
        "runs/pair",
        "a SICK-style tab-separated file (sentence_A, sentence_B, relatedness_score and "
        "entailment_judgment columns)",
        task=Option("entailment", "the head: 3 judgments, or a score in [1, 5]", TASKS),
        relatedness_target=Option(
            "score", "the relatedness head: a score, or Tai et al.'s distribution", TARGETS
        ),
        **common.vocabulary_options(30000, 100, lowercase=True, embedding_dropout=0.2),
        **vectors.EMBEDDING_OPTIONS,
        **common.cell_options("lstm", units=128, num_layers=1, bidirectional=True),
        pooling=Option("max", "the sentence vector: last states, mean, max or all", POOLINGS),
        hidden_units=Option(128, "width of the tanh layer over the pair features"),
        dropout=Option(0.2, "dropout between recurrent layers, on the features and hidden layer"),
        max_length=Option(100, "tokens kept of each sentence (longer ones are cut)"),
        **transfer.TRANSFER_OPTIONS,
    ).items()
    if key != "tfds_data_dir"  # SICK comes as files only
}
DEFAULTS = common.defaults_of(OPTIONS)


# ------------------------------------------------------------------------------ data


def build_model(config, preprocessor):
    """The configured `kerasrnn.models.PairClassifier` over `preprocessor`: entailment
    probabilities (batch, 3) or the relatedness score (batch, 1) (and distribution)."""
    from kerasrnn.models import PairClassifier

    head, classes = "classes", len(LABELS)
    if config["task"] == "relatedness":
        head, classes = config["relatedness_target"], 5
    encoder = common.sentence_encoder(config, len(preprocessor.vocabulary))
    return PairClassifier(
        encoder,
        head,
        classes,
        config["hidden_units"],
        config["dropout"],
        preprocessor=preprocessor,
    )


def baselines(train_split, split):
    """Simple reference points on `split`: the training data's majority judgment and
    mean score, and the correlations of the sentences' word overlap (Jaccard)."""
    from kerasrnn.metrics import relatedness_scores

    _, _, train_scores, train_labels = train_split
    a, b, scores, labels = split
    majority = max(LABELS, key=train_labels.count)
    overlap = []
    for x, y in zip(a, b):
        x, y = set(x.lower().split()), set(y.lower().split())
        overlap.append(len(x & y) / max(len(x | y), 1))
    mean = float(np.mean(train_scores))
    # the overlap is in [0, 1], not on the 1-5 scale: only its correlations mean anything
    correlations = relatedness_scores(scores, overlap)
    return {
        "majority_judgment": majority,
        "majority_accuracy": float(np.mean([label == majority for label in labels])),
        "mean_score_mse": float(np.mean((np.asarray(scores) - mean) ** 2)),
        "word_overlap": {k: correlations[k] for k in ("pearson", "spearman")},
    }


def targets_of(config, split):
    """The split's targets for the configured head: its judgments, its scores, or
    Tai et al.'s score distribution beside the scores."""
    from kerasrnn.models import score_distribution

    _, _, scores, labels = split
    if config["task"] == "entailment":
        return labels
    scores = np.asarray(scores, np.float32)
    if config["relatedness_target"] == "score":
        return scores
    return {"distribution": score_distribution(scores), "score": scores}


# -------------------------------------------------------------------------- commands


class PairRecipe(transfer.SentenceRecipe):
    """The sentence-pair model on the recipe skeleton (`common.Recipe`)."""

    name = "pair_classifier"
    options = OPTIONS
    task = "PairClassifier"
    test_help = "a file of scored and judged pairs"

    def load_examples(self, config, spec, split):
        from kerasrnn.data.loaders import load_sick

        return load_sick(spec, config["encoding"])

    def prepare(self, config, splits):
        from kerasrnn.data.tokenizers import tokenize
        from kerasrnn.models import PairClassifierPreprocessor

        a, b = splits["train"][:2]
        tokens = tokenize(list(a) + list(b), config["lowercase"])
        valid = splits.get("valid")
        valid_texts = list(valid[0]) + list(valid[1]) if valid else []
        vocab, parts, info = self.vocabulary(
            config, tokens, tokenize(valid_texts, config["lowercase"])
        )
        labels = LABELS if config["task"] == "entailment" else None
        preprocessor = PairClassifierPreprocessor(
            vocab, labels, config["lowercase"], config["max_length"]
        )

        def dataset(split, shuffle):
            pairs = {"sentence_a": split[0], "sentence_b": split[1]}
            return preprocessor.dataset(
                pairs, targets_of(config, split), config["batch_size"], shuffle, config["seed"]
            )

        return common.Prepared(
            dataset(splits["train"], True),
            dataset(valid, False) if valid else None,
            {"preprocessor": preprocessor, **parts},
            {
                "task": config["task"],
                "train_pairs": len(a),
                "vocabulary_size": len(vocab),
                **info,
            },
        )

    def build(self, config, prepared):
        parts = prepared.model
        model = build_model(vectors.width(config, parts["vectors"]), parts["preprocessor"])
        return self.start(model, config, parts, prepared.info["train_pairs"])

    def monitor(self, config, prepared):
        monitor, mode = ("accuracy", "max") if config["task"] == "entailment" else ("loss", "min")
        return ("val_" + monitor if prepared.valid is not None else monitor), mode

    def curve_metric(self, config):
        if config["task"] == "entailment":
            return "accuracy"
        # the squared error of the score: the loss itself, or beside the KL loss
        return "loss" if config["relatedness_target"] == "score" else "score_mse"

    def evaluate_run(self, trained, config, examples):
        """Accuracy and per-class scores (entailment), or the correlations (relatedness)."""
        from kerasrnn.metrics import classification_scores, relatedness_scores

        a, b, scores, labels = examples
        predicted = trained.predict(list(zip(a, b)), batch_size=256)
        if config["task"] == "relatedness":
            return relatedness_scores(scores, [p["score"] for p in predicted])
        found = classification_scores(labels, [p["label"] for p in predicted], LABELS)
        found["pairs"] = found.pop("examples")
        return found

    def evaluate_splits(self, config, splits):
        """The scores of the best model, each beside the simple `baselines`."""
        results = super().evaluate_splits(config, splits)
        for name, scores in results.items():
            scores["baselines"] = baselines(splits["train"], splits[name])
        return results

    def predict_arguments(self, parser):
        parser.add_argument(
            "texts",
            nargs="*",
            metavar="sentences",
            help="sentence pairs: first and second sentence, alternating",
        )
        parser.add_argument(
            "--input", help="a file with one pair per line, the two sentences separated by a tab"
        )

    def inputs_of(self, config, args):
        """The pairs of the positional sentences, then those of ``--input``."""
        texts = list(args.texts)
        if len(texts) % 2:
            raise common.RecipeError(
                f"predict takes sentences in pairs (first, second, first, second, ...); "
                f"got {len(texts)}, an odd number."
            )
        pairs = list(zip(texts[::2], texts[1::2]))
        if args.input:
            from kerasrnn.data.loaders import load_sentence_pairs

            pairs += load_sentence_pairs(args.input, config["encoding"])
        return pairs

    def predict_rows(self, trained, config, pairs, args=None):
        if not pairs:
            return []
        predictions = trained.predict(pairs)
        return [{"sentence_a": a, "sentence_b": b, **p} for (a, b), p in zip(pairs, predictions)]


RECIPE = PairRecipe()
train, main = RECIPE.train, RECIPE.main  # the module's API: `train(config, splits)`


if __name__ == "__main__":
    sys.exit(main())
