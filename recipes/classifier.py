"""Sentence classification with a (bi)directional RNN of kerasrnn cells.

A command line over `kerasrnn.models.TextClassifier` (a `SentenceEncoder`: embedding,
stacked recurrent layers of any kerasrnn cell, the last states or a masked pooling;
then a softmax, optionally times a Naive Bayes n-gram expert) with its
`TextClassifierPreprocessor`; ``--pretrained-lm RUN_DIR`` starts it from a trained
language model (ULMFiT, `recipes.transfer`). Data: a TSV file (``label<TAB>text``), one
file per class, or ``tfds:NAME[:SPLIT]``; without `valid` (`test`), `valid_fraction`
(`test_fraction`) of the training examples are held out. The commands, options and
measured results: docs/recipes/classifier.md.
"""

import os
import sys

from recipes import common, transfer, vectors
from recipes.common import Option

POOLINGS = ("last", "mean", "max", "concat")
FORMATS = ("auto", "tsv", "class_files", "tfds")
OPTIONS = common.data_options(
    "runs/classifier",
    "a TSV file (label<TAB>text), a list of files one per class "
    "(label = extension), a {label: file} mapping, or tfds:NAME[:SPLIT]",
    holdouts=("valid", "test"),
    encoding=Option("utf-8", "text encoding of local files (sentence polarity: cp1252)"),
    format=Option("auto", "how to read the data (auto: by the spec's form)", FORMATS),
    valid_fraction=Option(0.1, "part of `train` held out without `valid`; 0: none"),
    test_fraction=Option(0.0, "part of `train` held out without `test`; 0: none"),
    **common.vocabulary_options(
        30000,
        300,
        lowercase=False,
        embedding_dropout=0.5,
        notes={"embedding_dim": "pretrained vectors fix it"},
    ),
    **vectors.EMBEDDING_OPTIONS,
    **common.cell_options("lstm", units=128, num_layers=1, bidirectional=True),
    dropout=Option(0.5, "dropout rate between recurrent layers and before the output"),
    pooling=Option("last", "the sentence vector: last states, mean, max or all", POOLINGS),
    **transfer.TRANSFER_OPTIONS,
    naive_bayes=Option(0, "a Naive Bayes expert over n-grams to this order; 0: off", (0, 1, 2)),
    naive_bayes_buckets=Option(1000003, "hash buckets of the Naive Bayes bigrams"),
    naive_bayes_scale=Option(1.0, "the Naive Bayes expert's exponent (< 1 tempers it)"),
    naive_bayes_counts_valid=Option(False, "the Naive Bayes expert counts `valid` too"),
    bucket_boundaries=Option([10, 20, 30, 45], "sentence lengths where buckets split; []: none"),
)
DEFAULTS = common.defaults_of(OPTIONS)


# ------------------------------------------------------------------------------ data


def load_examples(config, spec, split):
    """One data spec -> ``(texts, labels)`` (see the module docstring)."""
    from kerasrnn.data import loaders
    from kerasrnn.data.specs import tfds_spec

    fmt = config["format"]
    tfds = tfds_spec(spec, split)
    if fmt == "tfds" and tfds is None:
        tfds = tfds_spec(f"tfds:{spec}", split)
    if fmt in ("auto", "tfds") and tfds:
        return loaders.load_tfds_classification(*tfds, data_dir=config["tfds_data_dir"])
    if isinstance(spec, dict) or fmt == "class_files":
        return loaders.load_class_files(spec, config["encoding"])
    files = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    if fmt == "auto" and len(files) > 1:
        return loaders.load_class_files(files, config["encoding"])
    texts, labels = [], []
    for path in files:
        file_texts, file_labels = loaders.load_tsv(path, config["encoding"])
        texts += file_texts
        labels += file_labels
    return texts, labels


# ----------------------------------------------------------------------------- model


def build_model(config, vocab_size, num_classes, preprocessor=None):
    """The configured `kerasrnn.models.TextClassifier`: int32 ids (batch, time) -> class
    probabilities (batch, classes); with `preprocessor`, sentences -> labels too."""
    from kerasrnn.models import TextClassifier

    encoder = common.sentence_encoder(config, vocab_size)
    return TextClassifier(encoder, num_classes, config["dropout"], preprocessor=preprocessor)


# -------------------------------------------------------------------------- commands


class ClassifierRecipe(transfer.SentenceRecipe):
    """The classifier on the recipe skeleton (`common.Recipe`)."""

    name = "classifier"
    options = OPTIONS
    task = "TextClassifier"
    holdouts = ("test", "valid")

    load_examples = staticmethod(load_examples)

    def check_data(self, config, splits):
        labels = sorted(set(splits["train"][1]))
        if len(labels) < 2:
            raise common.RecipeError(
                f"the training data has a single label {labels}; a classifier needs 2+."
            )
        for name in ("valid", "test"):
            if splits.get(name):
                common.check_labels(labels, splits[name][1], name, config[name])

    def prepare(self, config, splits):
        from kerasrnn.data.tokenizers import tokenize
        from kerasrnn.models import TextClassifierPreprocessor

        texts, labels = splits["train"]
        label_names = sorted(set(labels))
        tokens = tokenize(texts, config["lowercase"])
        valid_texts = splits["valid"][0] if splits.get("valid") else []
        vocab, parts, info = self.vocabulary(
            config, tokens, tokenize(valid_texts, config["lowercase"])
        )
        with open(os.path.join(config["output_dir"], "labels.txt"), "w", encoding="utf-8") as f:
            f.write("".join(label + "\n" for label in label_names))
        preprocessor = TextClassifierPreprocessor(vocab, label_names, config["lowercase"])

        def dataset(split, shuffle):
            return preprocessor.dataset(
                *split,
                batch_size=config["batch_size"],
                shuffle=shuffle,
                seed=config["seed"],
                bucket_boundaries=config["bucket_boundaries"],
            )

        counted = [(tokens, labels)]
        if splits.get("valid") and config["naive_bayes_counts_valid"]:
            counted.append((tokenize(splits["valid"][0], config["lowercase"]), splits["valid"][1]))
        return common.Prepared(
            dataset(splits["train"], True),
            dataset(splits["valid"], False) if splits.get("valid") else None,
            {"preprocessor": preprocessor, "counted": counted, **parts},
            {
                "train_examples": len(texts),
                "vocabulary_size": len(vocab),
                "labels": label_names,
                **info,
            },
        )

    def build(self, config, prepared):
        parts = prepared.model
        preprocessor = parts["preprocessor"]
        model = build_model(
            vectors.width(config, parts["vectors"]),
            len(preprocessor.vocabulary),
            len(preprocessor.labels),
            preprocessor,
        )
        return self.start(model, config, parts, prepared.info["train_examples"])

    def monitor(self, config, prepared):
        return ("val_accuracy" if prepared.valid is not None else "accuracy"), "max"

    def after_fit(self, config, prepared, splits):
        """With `naive_bayes`: best.keras times a `NaiveBayesExpert` of the training
        sentences (`TextClassifier.with_expert`)."""
        if not config["naive_bayes"]:
            return
        from kerasrnn.callbacks import save_model_atomically
        from kerasrnn.layers import NaiveBayesExpert

        model = self.load(config)
        vocab, labels = model.preprocessor.vocabulary, model.preprocessor.labels
        expert = NaiveBayesExpert(
            len(vocab),
            model.num_classes,
            config["naive_bayes"],
            config["naive_bayes_buckets"],
            config["naive_bayes_scale"],
            name="naive_bayes",
        )
        counted = prepared.model["counted"]
        expert.estimate(
            [vocab.encode(t) for tokens, _ in counted for t in tokens],
            [labels.index(y) for _, split_labels in counted for y in split_labels],
        )
        best = common.run_files(config)["best"]
        save_model_atomically(model.with_expert(expert), best)

    def evaluate_run(self, trained, config, examples):
        """Accuracy and per-class precision/recall/F1 on labelled examples."""
        from kerasrnn.metrics import classification_scores

        texts, labels = examples
        names = trained.preprocessor.labels
        common.check_labels(names, labels, "evaluation")
        predicted = [p["label"] for p in trained.predict(list(texts), batch_size=256)]
        return classification_scores(labels, predicted, names)


RECIPE = ClassifierRecipe()
train, main = RECIPE.train, RECIPE.main  # the module's API: `train(config, splits)`


if __name__ == "__main__":
    sys.exit(main())
