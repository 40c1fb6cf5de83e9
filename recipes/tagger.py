"""Sequence tagging (POS, NER, chunking) with a bidirectional RNN of kerasrnn cells.

A command line over `kerasrnn.models.SequenceTagger` (words and their characters, a
stacked BiRNN of any kerasrnn cell, a softmax or with ``--crf true`` a linear-chain CRF
constrained to the tag scheme; ``--contextual-lm RUN_DIR`` adds a biLM's features) with
its `SequenceTaggerPreprocessor`. ``--tag-scheme bioes`` trains on BIOES tags and
writes predictions back in the file's BIO. Evaluation: token accuracy, per-tag scores
and, for entity tags, conlleval's entity scores. Data: CoNLL-U, CoNLL-2003-style
columns, or ``tfds:NAME[:SPLIT]``. The commands, options and measured results:
docs/recipes/tagger.md.
"""

import os
import sys

from recipes import common, vectors
from recipes.common import Option

FORMATS = ("auto", "conllu", "columns", "tfds")
TAG_SCHEMES = ("auto", "iob1", "bio", "bioes")
BOOLEAN_OR_AUTO = ("auto", "true", "false")
OPTIONS = common.data_options(
    "runs/tagger",
    "a CoNLL-U file, a CoNLL-2003-style column file, or tfds:NAME[:SPLIT]",
    format=Option("auto", "how to read the data (auto: by the spec's name)", FORMATS),
    column=Option("upos", "CoNLL-U tag column", ("upos", "xpos")),
    token_column=Option(0, "column files: the token's column"),
    tag_column=Option(-1, "column files: the tag's column (negative: from the right)"),
    tfds_tags_key=Option("ner", "the tensorflow-datasets feature of the tags (ner, pos ...)"),
    **common.vocabulary_options(
        50000,
        100,
        lowercase=True,
        embedding_dropout=0.25,
        notes={
            "lowercase": "characters keep their case",
            "embedding_dropout": "and on the character features",
        },
    ),
    **vectors.EMBEDDING_OPTIONS,
    word_dropout=Option(0.1, "training: replace words by [UNK] with this probability"),
    char_dim=Option(32, "character embedding width; 0: no character features"),
    char_units=Option(32, "units of the character BiRNN (per direction)"),
    max_chars=Option(50, "characters of a word at most (longer words are cut)"),
    **common.cell_options(
        "lstm",
        units=128,
        num_layers=1,
        notes={"units": "the sentence BiRNN's (the characters': `char_units`)"},
    ),
    dropout=Option(0.33, "dropout rate between recurrent layers and before the output"),
    crf=Option(False, "a linear-chain CRF output layer (Viterbi decoding)"),
    tag_scheme=Option("auto", "entity tags' scheme (bioes: trained as BIOES)", TAG_SCHEMES),
    crf_constraints=Option("auto", "with --crf: forbid impossible transitions", BOOLEAN_OR_AUTO),
    contextual_lm=Option("", "a biLM's run folder: its layer mix joins the words'; empty: none"),
    contextual_lm_trainable=Option(False, "fine-tune the biLM too (else frozen)"),
    bucket_boundaries=Option([10, 20, 30, 50], "sentence lengths where buckets split; []: none"),
    **common.training_options(epochs=20),
)
DEFAULTS = common.defaults_of(OPTIONS)


# ------------------------------------------------------------------------------ data


def load_examples(config, spec, split):
    """One data spec -> ``(sentences, tags)``."""
    from kerasrnn.data import loaders
    from kerasrnn.data.specs import tfds_spec

    fmt = config["format"]
    tfds = tfds_spec(str(spec), split)
    if fmt == "tfds" and tfds is None:
        tfds = tfds_spec(f"tfds:{spec}", split)
    if fmt in ("auto", "tfds") and tfds:
        return loaders.load_tfds_tagging(
            *tfds, data_dir=config["tfds_data_dir"], tags_key=config["tfds_tags_key"]
        )
    path = os.fspath(spec)
    conllu = fmt == "conllu" or (fmt == "auto" and ".conllu" in os.path.basename(path))
    if conllu:
        return loaders.load_conllu(path, config["column"], config["encoding"])
    return loaders.load_conll_columns(
        path, config["token_column"], config["tag_column"], config["encoding"]
    )


# ----------------------------------------------------------------------------- model


def build_model(config, preprocessor, tags, bilm=None, scheme=None):
    """The configured `kerasrnn.models.SequenceTagger` of `tags` over `preprocessor`;
    `bilm`: a `kerasrnn.layers.BiLMFeatures` whose features join the words'; `scheme`:
    the tag scheme whose transitions constrain the CRF."""
    from kerasrnn.models import SequenceTagger, SequenceTaggerBackbone

    def cell(units):
        return common.make_cell(config["cell"], units, **(config["cell_options"] or {}))

    chars = preprocessor.chars
    backbone = SequenceTaggerBackbone(
        len(preprocessor.words),
        config["embedding_dim"],
        cell(config["units"]),
        config["num_layers"],
        len(chars) if chars is not None else 0,
        config["char_dim"],
        cell(config["char_units"]),
        bilm,
        config["dropout"],
        config["word_dropout"],
        config["embedding_dropout"],
        config["seed"],
    )
    return SequenceTagger(
        backbone, tags, config["crf"], scheme, config["dropout"], preprocessor=preprocessor
    )


def contextual_lm(run_dir):
    """The biLM of ``--contextual-lm``: a word-level bidirectional language model whose
    layers have one width (to be mixed), else a one-line `ConfigError`."""
    from kerasrnn.models import LanguageModel, PresetError

    try:
        lm = LanguageModel.from_preset(run_dir, compile=False)
    except PresetError as error:
        raise common.ConfigError(f"`contextual_lm`: {error}") from None
    backbone, why = lm.backbone, None
    if not backbone.bidirectional:
        why = "not bidirectional; train one with --bidirectional true"
    elif lm.preprocessor.level != "word":
        why = f"{lm.preprocessor.level}-level; contextual word features need a word-level biLM"
    elif backbone.embedding_dim != backbone.units:
        why = (
            f"of embedding_dim {backbone.embedding_dim} != units {backbone.units}; its "
            "layers' features must have one width to be mixed"
        )
    if why:
        raise common.ConfigError(f"`contextual_lm`: the language model in {run_dir!r} is {why}.")
    return lm


def tag_schemes(config, tags):
    """``(file scheme, training scheme)`` of the training tags (`training_schemes`)."""
    from kerasrnn.layers import training_schemes

    declared = config["tag_scheme"]
    try:
        schemes = training_schemes(tags, declared)
    except ValueError as error:
        raise common.ConfigError(f"--tag-scheme {declared}: {error}") from None
    if schemes[0] is None and config["crf_constraints"] == "true":
        raise common.ConfigError(
            "--crf-constraints true needs entity tags (O, B-X, I-X ...) in IOB1, BIO or "
            f"BIOES; the training tags are not (e.g. {sorted({t for s in tags for t in s})[:3]})."
        )
    return schemes


# -------------------------------------------------------------------------- commands


class TaggerRecipe(common.Recipe):
    """The tagger on the recipe skeleton (`common.Recipe`)."""

    name = "tagger"
    options = OPTIONS
    task = "SequenceTagger"
    test_help = "the tagged data"

    load_examples = staticmethod(load_examples)

    def check_config(self, config):
        if config["contextual_lm"]:
            contextual_lm(config["contextual_lm"])  # one-line errors early

    def check_data(self, config, splits):
        tag_schemes(config, splits["train"][1])  # one-line errors before training
        tags = [t for s in splits["train"][1] for t in s]
        for name in ("valid", "test"):
            if splits.get(name):
                common.check_labels(
                    tags, [t for s in splits[name][1] for t in s], name, config[name]
                )

    def prepare(self, config, splits):
        from kerasrnn.data import Vocabulary
        from kerasrnn.data.tagging import lowercase_tokens
        from kerasrnn.layers import convert_tags
        from kerasrnn.models import SequenceTaggerPreprocessor

        out = config["output_dir"]
        sentences, tags = splits["train"]
        schemes = tag_schemes(config, tags)
        if schemes[1] == "BIOES":
            splits = {
                name: split
                if not split
                else (split[0], [convert_tags(s, "BIOES") for s in split[1]])
                for name, split in splits.items()
            }
            tags = splits["train"][1]
        keys = lowercase_tokens(sentences) if config["lowercase"] else sentences
        words = Vocabulary.build(keys, config["max_vocab"], config["min_freq"])
        pretrained = vectors.load(config, words, lowercase=config["lowercase"])
        words = pretrained.vocabulary if pretrained else words  # with `embeddings_extend`
        words.save(os.path.join(out, "vocab.txt"))
        chars = None
        if config["char_dim"]:
            chars = Vocabulary.build(t for s in sentences for t in s)
            chars.save(os.path.join(out, "chars.txt"))
        tag_names = sorted({t for s in tags for t in s})
        Vocabulary(tag_names).save(os.path.join(out, "tags.txt"))
        tag_index = {t: i for i, t in enumerate(tag_names)}
        bilm = lm_words = None
        if config["contextual_lm"]:
            from kerasrnn.layers import BiLMFeatures

            # the biLM's weights travel in the tagger's best.keras, its vocabulary in
            # the preprocessor
            lm = contextual_lm(config["contextual_lm"])
            bilm = BiLMFeatures.from_model(
                lm.backbone,
                lm.preprocessor.boundary_id,
                trainable=config["contextual_lm_trainable"],
                name="bilm",
            )
            lm_words = lm.preprocessor.vocabulary
        preprocessor = SequenceTaggerPreprocessor(
            words,
            chars,
            lm_words,
            config["lowercase"],
            config["max_chars"],
            # trained in BIOES on a file in another scheme: predictions written in BIO
            bio_output=schemes[1] == "BIOES" and schemes[0] != "BIOES",
        )

        def dataset(split, shuffle):
            return preprocessor.dataset(
                split[0],
                [[tag_index[t] for t in s] for s in split[1]],
                batch_size=config["batch_size"],
                shuffle=shuffle,
                seed=config["seed"],
                bucket_boundaries=config["bucket_boundaries"],
            )

        constrained = config["crf"] and config["crf_constraints"] != "false"
        return common.Prepared(
            dataset(splits["train"], True),
            dataset(splits["valid"], False) if splits.get("valid") else None,
            {
                "preprocessor": preprocessor,
                "tags": tag_names,
                "bilm": bilm,
                "scheme": schemes[1] if constrained else None,
                "vectors": pretrained,
            },
            {
                "train_sentences": len(sentences),
                "vocabulary_size": len(words),
                "tags": tag_names,
                "tag_schemes": list(schemes),
                **vectors.info({"embeddings": pretrained}),
            },
        )

    def build(self, config, prepared):
        parts = prepared.model
        model = build_model(
            vectors.width(config, parts["vectors"]),
            *(parts[key] for key in ("preprocessor", "tags", "bilm", "scheme")),
        )
        vectors.apply(model, config, {"word_embedding": parts["vectors"]})
        # the masked token loss (a CRF's path NLL) and token accuracy, a weighted metric:
        # the per-token weights of the dataset mark the real steps of each path
        model.compile(optimizer=common.optimizer(config))
        return model

    def monitor(self, config, prepared):
        return ("val_accuracy" if prepared.valid is not None else "accuracy"), "max"

    def evaluate_run(self, trained, config, examples):
        """Token accuracy, per-tag and (entity tags) entity scores of the best model."""
        from kerasrnn.metrics import tagging_scores

        sentences, gold = examples
        names = trained.preprocessor.reported_names(trained.tags)
        common.check_labels(names, [t for s in gold for t in s], "evaluation")
        predicted = [p["tags"] for p in trained.predict(list(sentences), batch_size=128)]
        return tagging_scores(gold, predicted, names)

    def predict_arguments(self, parser):
        parser.add_argument("texts", nargs="*", help="whitespace-tokenized sentences to tag")
        parser.add_argument(
            "--input", help="a file with one whitespace-tokenized sentence per line"
        )
        parser.add_argument(
            "--n-best",
            type=int,
            default=1,
            metavar="K",
            help="the K best tag sequences of each sentence with their scores; 1: the best",
        )

    def predict_rows(self, trained, config, texts, args=None):
        n_best = 1 if args is None else args.n_best
        if n_best < 1:
            raise common.ConfigError(f"--n-best must be 1 or more; got {n_best}.")
        # the texts as strings (the task splits them on whitespace): a blank one is
        # text, where its empty token list alone is not
        texts = list(texts)
        if not texts:
            return []
        if n_best != 1:
            found = trained.predict_n_best(texts, n_best)
            return [{"tokens": t.split(), "n_best": n} for t, n in zip(texts, found)]
        return trained.predict(texts)


RECIPE = TaggerRecipe()
train, main = RECIPE.train, RECIPE.main  # the module's API: `train(config, splits)`


if __name__ == "__main__":
    sys.exit(main())
