"""Sequence tagging (POS, NER, chunking) with a bidirectional RNN of kerasrnn cells.

Model (`kerasrnn.models.SequenceTagger` over a `SequenceTaggerBackbone`)::

    words  -> word embedding ----------------------------------------.
    chars  -> char embedding -> BiRNN over each word's characters ---+-> concat -> dropout
           -> stacked BiRNN (any kerasrnn cell) -> dropout -> Dense + softmax per token
                                                       (or, with --crf, a linear-chain CRF)

The character BiRNN (its final states [h_fwd ; h_bwd] per word; `char_dim: 0` turns it
off) gives unknown and rare words a representation built from their spelling. The loss
and the accuracy are masked: padding tokens count in neither.

With ``--crf true`` the output is `kerasrnn.layers.CRF` (Huang et al. 2015's BiLSTM-CRF):
trained on the negative log-likelihood of whole tag paths, decoded with Viterbi (in
`predict`, `evaluate` and the exported SavedModel); a tag's reported probability is then
its posterior marginal (forward-backward).

With ``--contextual-lm RUN_DIR`` (a biLM trained by ``recipes.language_model train
--bidirectional true``) the word features also get the biLM's layers mixed by a learned
`kerasrnn.layers.ScalarMix` (ELMo, Peters et al. 2018): frozen by default, fine-tuned
with ``--contextual-lm-trainable true``. The words are looked up in the biLM vocabulary
after `lm_tokens` (lower-cased, numbers "N", as the Penn Treebank LM text); the biLM's
weights are saved inside the tagger's model and SavedModel.

Evaluation reports token accuracy, per-tag precision/recall/F1 and, when the tags are
entity tags (IOB1, BIO or BIOES: ``B-X``, ``I-X``, ``O`` ...), entity-level
precision/recall/F1 overall and per type, counted as conlleval does
(`kerasrnn.metrics.entity_scores`: an entity is correct only when its type and both
boundaries are).

Named entities: ``--tag-scheme bioes`` trains on BIOES tags (converted from the file's)
and writes predictions back in BIO (S-X -> B-X, E-X -> I-X), the file's tags;
``--crf-constraints`` (on by default with ``--crf`` when the tags are entity tags)
forbids the scheme's impossible transitions (``O I-PER``, ``B-ORG I-LOC``) in training
and Viterbi (`kerasrnn.layers.allowed_transitions`). `predict` and the SavedModel's
serving output give the entities (text, type, start, end) beside the tags.

Command line::

    python -m recipes.tagger train --train train.conllu --valid dev.conllu --test test.conllu
    python -m recipes.tagger evaluate --output-dir runs/tagger --test other.conllu
    python -m recipes.tagger predict --output-dir runs/tagger "The cat sat ." "Hi !"
    python -m recipes.tagger predict --output-dir runs/tagger --n-best 5 "EU rejects it ."
    python -m recipes.tagger export --output-dir runs/tagger

Data: CoNLL-U (`column`: upos or xpos), CoNLL-2003-style columns (`token_column`,
`tag_column`), or ``tfds:NAME[:SPLIT]`` (e.g. ``tfds:conll2003`` with `tfds_tags_key`
ner); gzip files are read transparently.
"""

import os
import sys

from kerasrnn.data.tagging import TaggerInputs as Encoder  # noqa: F401
from kerasrnn.data.tagging import lm_sentences, lm_tokens, lowercase_tokens  # noqa: F401
from kerasrnn.export.tagger import TextTagger, entity_outputs, output_tags, to_bio  # noqa: F401
from kerasrnn.layers import MergeBatchTime, SplitBatchTime  # noqa: F401
from kerasrnn.models.sequence_tagger import is_entity_tags as is_bio
from recipes import common, vectors
from recipes.common import Option

FORMATS = ("auto", "conllu", "columns", "tfds")
OPTIONS = common.data_options(
    "runs/tagger",
    "a CoNLL-U file, a CoNLL-2003-style column file, or tfds:NAME[:SPLIT]",
    format=Option(
        "auto",
        "how to read the data (auto: tfds: prefix, .conllu in the name -> conllu, else columns)",
        FORMATS,
    ),
    column=Option("upos", "CoNLL-U tag column", ("upos", "xpos")),
    token_column=Option(0, "column files: the token's column"),
    tag_column=Option(-1, "column files: the tag's column (negative: from the right)"),
    tfds_tags_key=Option(
        "ner", "tensorflow-datasets feature holding the tags (e.g. ner, pos, chunks)"
    ),
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
    crf=Option(
        False,
        "a linear-chain CRF output layer (NLL training, Viterbi decoding, "
        "marginal probabilities per tag)",
    ),
    tag_scheme=Option(
        "auto",
        "entity tags: the scheme of the training tags (auto: the "
        "file's, detected; iob1/bio: the file's, checked; bioes: converted "
        "from the file's to BIOES for training, predictions written back in "
        "BIO)",
        ("auto", "iob1", "bio", "bioes"),
    ),
    crf_constraints=Option(
        "auto",
        "with --crf: forbid the tag scheme's impossible "
        "transitions in training and Viterbi (auto: when the tags are "
        "entity tags)",
        ("auto", "true", "false"),
    ),
    contextual_lm=Option(
        "",
        "a biLM run directory (recipes.language_model train "
        "--bidirectional true): its layers' features, mixed by a learned "
        "ScalarMix, join the word features; empty: none",
    ),
    contextual_lm_trainable=Option(
        False,
        "fine-tune the biLM with the tagger (else it stays frozen; the mix is learned either way)",
    ),
    bucket_boundaries=Option(
        [10, 20, 30, 50],
        "sentence lengths (tokens) where length buckets split; [] for plain batching",
    ),
    **common.training_options(epochs=20),
)
DEFAULTS = common.defaults_of(OPTIONS)


# ------------------------------------------------------------------------------ data


def load_examples(config, spec, split):
    """One data spec -> ``(sentences, tags)``."""
    from kerasrnn.data import loaders
    from kerasrnn.data.specs import tfds_spec

    fmt = config["format"]
    if fmt not in FORMATS:
        raise common.ConfigError(f"`format` must be one of {FORMATS}, got {fmt!r}.")
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


def load_splits(config):
    """The train / valid / test examples the config describes (None where absent)."""
    return common.load_splits(config, load_examples)


# ----------------------------------------------------------------------------- model


def build_model(config, word_vocab_size, char_vocab_size, tags, bilm=None, scheme=None):
    """The configured `kerasrnn.models.SequenceTagger`: ``{"word_ids": (batch, time),
    "char_ids": (batch, time, chars)}`` -> tag probabilities (batch, time, tags) (with
    `crf`, the CRF's potentials). `tags`: the tag names (or their number); `bilm` (a
    `kerasrnn.layers.BiLMFeatures`, with `contextual_lm`): its layers, mixed by
    `ScalarMix`, join the word features (input ``"lm_ids"``, the words' ids in the biLM
    vocabulary); `scheme` (with `crf`): the tag scheme whose transitions constrain it."""
    from kerasrnn.models import SequenceTagger, SequenceTaggerBackbone

    def cell(units):
        return common.make_cell(config["cell"], units, **(config["cell_options"] or {}))

    if config["num_layers"] < 1:
        raise common.ConfigError(f"`num_layers` must be >= 1, got {config['num_layers']}.")
    backbone = SequenceTaggerBackbone(
        word_vocab_size,
        config["embedding_dim"],
        cell(config["units"]),
        config["num_layers"],
        char_vocab_size if config["char_dim"] else 0,
        config["char_dim"],
        cell(config["char_units"]),
        bilm,
        config["dropout"],
        config["word_dropout"],
        config["embedding_dropout"],
        config["seed"],
    )
    names = [f"tag_{i}" for i in range(tags)] if isinstance(tags, int) else tags
    return SequenceTagger(backbone, names, config["crf"], scheme, config["dropout"])


# --------------------------------------------------------------------------- metrics


def bio_entities(tags):
    """The entities of one tagged sentence as a set of (start, end, type), end
    exclusive, read as conlleval reads them (`kerasrnn.metrics.entity_spans`)."""
    from kerasrnn.metrics import entity_spans

    return set(entity_spans(tags))


def tagging_scores(gold, predicted, tag_names):
    """Token accuracy, per-tag P/R/F1 and (entity tags) entity-level P/R/F1, overall
    and per type (conlleval's counts)."""
    from kerasrnn.metrics import entity_scores

    flat_gold = [t for s in gold for t in s]
    flat_pred = [t for s in predicted for t in s]
    correct = sum(g == p for g, p in zip(flat_gold, flat_pred))
    scores = {
        "sentences": len(gold),
        "tokens": len(flat_gold),
        "accuracy": correct / max(len(flat_gold), 1),
        "per_tag": common.per_class_scores(flat_gold, flat_pred, tag_names),
    }
    if is_bio(tag_names):
        scores["entities"] = entity_scores(gold, predicted)
    return scores


def tag_schemes(config, tags):
    """``(file scheme, training scheme)`` of the training tags (None, None for tags that
    are not entity tags), or a ConfigError for a declared scheme the file does not fit."""
    from kerasrnn.layers import check_tags, detect_scheme

    declared = config["tag_scheme"]
    found = detect_scheme(tags) if is_bio({t for s in tags for t in s}) else None
    if declared in ("iob1", "bio"):
        try:
            check_tags(tags, declared.upper(), "train")
        except ValueError as error:
            raise common.ConfigError(f"--tag-scheme {declared}: {error}") from None
        found = declared.upper()
    if found is None:
        if declared == "bioes" or config["crf_constraints"] == "true":
            option = "--tag-scheme bioes" if declared == "bioes" else "--crf-constraints true"
            raise common.ConfigError(
                f"{option} needs entity tags (O, B-X, I-X ...) in IOB1, BIO or BIOES; the "
                f"training tags are not (e.g. {sorted({t for s in tags for t in s})[:3]})."
            )
        return None, None
    return found, ("BIOES" if declared == "bioes" else found)


# --------------------------------------------------------------------------- tagger


class Tagger(TextTagger):
    """A trained tagger of a run (`kerasrnn.export.TextTagger`: tokenized sentences in,
    tags, probabilities and entities out; `serve` is the exact function the SavedModel
    exports), with `from_run` and `evaluate`."""

    @classmethod
    def from_run(cls, config):
        if config["contextual_lm"]:
            import keras_hub  # noqa: F401 (a tied biLM embedding is keras-hub's)
        chars = None
        if config["char_dim"]:
            chars = common.load_vocabulary(config, "chars.txt")
        schemes = os.path.join(config["output_dir"], "tag_schemes.json")
        return cls(
            common.load_best_model(config),
            common.load_vocabulary(config, "vocab.txt"),
            chars,
            common.load_vocabulary(config, "tags.txt").tokens[4:],
            config["lowercase"],
            config["max_chars"],
            common.load_vocabulary(config, "lm_vocab.txt") if config["contextual_lm"] else None,
            common.read_json(schemes) if os.path.exists(schemes) else (None, None),
        )

    def evaluate(self, sentences, gold_tags):
        common.check_labels(self.output_tags, [t for s in gold_tags for t in s], "evaluation")
        predicted = [p["tags"] for p in self.predict(sentences)]
        return tagging_scores(gold_tags, predicted, self.output_tags)

    def export_runtime(self, path, format_name, sequence_length=64, quantization=None):
        if self._lm_lookup is not None:
            raise common.ConfigError(
                f"a tagger with --contextual-lm cannot be exported to {format_name!r} (the "
                "biLM's number normalisation is a string regex): use --format saved_model."
            )
        return super().export_runtime(path, format_name, sequence_length, quantization)


# -------------------------------------------------------------------------- commands


class TaggerRecipe(common.Recipe):
    """The tagger on the recipe skeleton (`common.Recipe`)."""

    name = "tagger"
    options = OPTIONS
    predictor = Tagger
    test_help = "the tagged data"

    def load_examples(self, config, spec, split):
        return load_examples(config, spec, split)

    def check_config(self, config):
        if config["contextual_lm"]:
            from recipes.contextual import language_model_run_config

            language_model_run_config(config["contextual_lm"])  # one-line errors early

    def check_data(self, config, splits):
        tag_schemes(config, splits["train"][1])  # one-line errors before training
        tags = [t for s in splits["train"][1] for t in s]
        for name in ("valid", "test"):
            if splits.get(name):
                common.check_labels(
                    tags, [t for s in splits[name][1] for t in s], name, config[name]
                )

    def prepare(self, config, splits):
        """Word and character vocabularies (vocab.txt, chars.txt) and the tag set
        (tags.txt)."""
        from kerasrnn.data import Vocabulary, sequence_dataset

        out = config["output_dir"]
        sentences, tags = splits["train"]
        schemes = tag_schemes(config, tags)
        common.write_json(os.path.join(out, "tag_schemes.json"), list(schemes))
        if schemes[1] == "BIOES":
            from kerasrnn.layers import convert_tags

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
        # Sorted tags after the special ids, so that tag id = Vocabulary id - 4.
        tag_vocab = Vocabulary(sorted({t for s in tags for t in s}))
        tag_vocab.save(os.path.join(out, "tags.txt"))
        tag_names = tag_vocab.tokens[4:]
        tag_index = {t: i for i, t in enumerate(tag_names)}
        bilm = lm_words = None
        if config["contextual_lm"]:
            from recipes.contextual import contextual_features

            # the biLM's weights travel in the tagger's best.keras, its vocabulary here
            bilm, lm_words = contextual_features(
                config["contextual_lm"], trainable=config["contextual_lm_trainable"], name="bilm"
            )
            lm_words.save(os.path.join(out, "lm_vocab.txt"))
        encoder = Encoder(words, chars, config["lowercase"], config["max_chars"], lm_words)

        def dataset(split, shuffle):
            return sequence_dataset(
                encoder.inputs(split[0]),
                [[tag_index[t] for t in s] for s in split[1]],
                batch_size=config["batch_size"],
                shuffle=shuffle,
                seed=config["seed"],
                bucket_boundaries=config["bucket_boundaries"] or None,
                length_key="word_ids",
            )

        return common.Prepared(
            dataset(splits["train"], True),
            dataset(splits["valid"], False) if splits.get("valid") else None,
            {
                "words": len(words),
                "chars": len(chars) if chars else 0,
                "tags": tag_names,
                "bilm": bilm,
                "scheme": constrained_scheme(config, schemes[1]),
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
        sizes = prepared.model
        model = build_model(
            vectors.width(config, sizes["vectors"]),
            *(sizes[key] for key in ("words", "chars", "tags", "bilm", "scheme")),
        )
        vectors.apply(model, config, {"word_embedding": sizes["vectors"]})
        # the masked token loss (a CRF's path NLL) and token accuracy, a weighted metric:
        # the per-token weights of the dataset mark the real steps of each path
        model.compile(optimizer=common.optimizer(config))
        return model

    def monitor(self, config, prepared):
        return ("val_accuracy" if prepared.valid is not None else "accuracy"), "max"

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
            help="the K best tag sequences of each sentence, best first, each with its "
            "score and probability (list Viterbi with --crf); 1: the best one's tags and "
            "per-tag probabilities",
        )

    def predict_rows(self, trained, texts, n_best=1):
        sentences = [text.split() for text in texts]
        if n_best != 1:
            found = trained.predict_n_best(sentences, n_best)
            return [{"tokens": s, "n_best": n} for s, n in zip(sentences, found)]
        return [{"tokens": s, **p} for s, p in zip(sentences, trained.predict(sentences))]

    def _predict(self, config, args):
        if args.n_best < 1:
            raise common.ConfigError(f"--n-best must be 1 or more; got {args.n_best}.")
        config = self.stored(config, args)
        return self.predict_rows(
            self.predictor.from_run(config), self.inputs_of(config, args), args.n_best
        )


def constrained_scheme(config, scheme):
    """The tag scheme whose transitions constrain the CRF, or None (no CRF, constraints
    off, or tags that are not entity tags)."""
    if not config["crf"] or config["crf_constraints"] == "false" or scheme is None:
        return None
    return scheme


RECIPE = TaggerRecipe()


def train(config, splits=None, callbacks=(), continue_run=False):
    """Trains a tagger as configured and writes to ``config["output_dir"]``:
    ``config.json``, ``vocab.txt``, ``chars.txt``, ``tags.txt``, ``best.keras``,
    ``results.json`` (history, valid and test scores) and ``training_curves.png``.
    Returns the results dict (see `common.Recipe.train` for the arguments)."""
    return RECIPE.train(config, splits, callbacks, continue_run)


def main(argv=None):
    return RECIPE.main(argv)


if __name__ == "__main__":
    sys.exit(main())
