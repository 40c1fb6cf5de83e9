"""Sequence tagging (POS, NER, chunking) with a bidirectional RNN of kerasrnn cells.

Model::

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
    python -m recipes.tagger export --output-dir runs/tagger

Data: CoNLL-U (`column`: upos or xpos), CoNLL-2003-style columns (`token_column`,
`tag_column`), or ``tfds:NAME[:SPLIT]`` (e.g. ``tfds:conll2003`` with `tfds_tags_key`
ner); gzip files are read transparently.
"""

import os
import re
import sys

import keras

from kerasrnn.layers import MergeBatchTime, SplitBatchTime, WordDropout
from recipes import common
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


def lowercase_tokens(sentences):
    """Lower-cases tokens with TensorFlow's Unicode lower-casing, exactly as the
    exported model does (Python's `str.lower` differs on a few characters)."""
    import tensorflow as tf

    flat = [t for s in sentences for t in s]
    if not flat:
        return [list(s) for s in sentences]
    lowered = iter(tf.strings.lower(flat, encoding="utf-8").numpy())
    return [[next(lowered).decode("utf-8") for _ in s] for s in sentences]


# A number, as the Penn Treebank LM text writes it: "N" (1, 3.5, 1,000, 12:30, 1/2, -4).
NUMBER = r"[+-]?[0-9]+([.,:/-][0-9]+)*|[+-]?[.,][0-9]+"


def lm_tokens(tokens):
    """The biLM's view of a tagger's tokens (a tf.string tensor of any shape): the
    Penn Treebank LM normalisation, lower-cased and every number written "N". EWT is
    cased and keeps its numbers, so its words are mapped the same way before their
    lookup in the biLM vocabulary (words it lacks are [UNK], as PTB's <unk>)."""
    import tensorflow as tf

    lowered = tf.strings.lower(tokens, encoding="utf-8")
    return tf.strings.regex_replace(lowered, f"^({NUMBER})$", "N")


def lm_sentences(sentences):
    """`lm_tokens` of token lists (Python strings in, Python strings out)."""
    import tensorflow as tf

    flat = [t for s in sentences for t in s]
    if not flat:
        return [list(s) for s in sentences]
    mapped = iter(lm_tokens(tf.constant(flat)).numpy())
    return [[next(mapped).decode("utf-8") for _ in s] for s in sentences]


class Encoder:
    """Token lists -> model inputs, in Python (for training) with the same vocabulary
    and character handling as the TensorFlow serving function."""

    def __init__(self, words, chars, lowercase, max_chars, lm_words=None):
        self.words, self.chars = words, chars
        self.lowercase, self.max_chars = lowercase, max_chars
        self.lm_words = lm_words  # the biLM's vocabulary, with --contextual-lm

    def inputs(self, sentences):
        keys = lowercase_tokens(sentences) if self.lowercase else sentences
        inputs = {"word_ids": [self.words.encode(s) for s in keys]}
        if self.chars is not None:
            inputs["char_ids"] = [
                [self.chars.encode(list(t)[: self.max_chars]) for t in s] for s in sentences
            ]
        if self.lm_words is not None:
            inputs["lm_ids"] = [self.lm_words.encode(s) for s in lm_sentences(sentences)]
        return inputs


# ----------------------------------------------------------------------------- model


def build_model(config, word_vocab_size, char_vocab_size, num_tags, bilm=None, allowed=None):
    """The tagger as a functional Keras model: ``{"word_ids": (batch, time),
    "char_ids": (batch, time, chars)}`` -> tag probabilities (batch, time, tags).
    `bilm` (a `kerasrnn.layers.BiLMFeatures`, with `contextual_lm`): its layers,
    mixed by `ScalarMix`, join the word features; input ``"lm_ids"`` (batch, time),
    the words' ids in the biLM vocabulary. `allowed` (with `crf`): the CRF's
    `allowed_transitions` matrix."""
    word_ids = keras.Input((None,), dtype="int32", name="word_ids")
    inputs = {"word_ids": word_ids}
    x = WordDropout(config["word_dropout"], seed=config["seed"], name="word_dropout")(word_ids)
    x = keras.layers.Embedding(
        word_vocab_size, config["embedding_dim"], mask_zero=True, name="word_embedding"
    )(x)
    if config["char_dim"]:
        char_ids = keras.Input((None, None), dtype="int32", name="char_ids")
        inputs["char_ids"] = char_ids
        c = MergeBatchTime(name="words_of_batch")(char_ids)
        c = keras.layers.Embedding(
            char_vocab_size, config["char_dim"], mask_zero=True, name="char_embedding"
        )(c)
        c = common.rnn_stack(
            c,
            config["cell"],
            config["char_units"],
            1,
            True,
            cell_options=config["cell_options"],
            return_sequences=False,
            name="char_rnn",
        )
        c = SplitBatchTime(name="char_features")([c, char_ids])
        x = keras.layers.Concatenate(name="word_features")([x, c])
    if bilm is not None:
        from kerasrnn.layers import ScalarMix

        lm_ids = keras.Input((None,), dtype="int32", name="lm_ids")
        inputs["lm_ids"] = lm_ids
        mixed = ScalarMix(name="bilm_mix")(bilm(lm_ids))
        x = keras.layers.Concatenate(name="contextual_word_features")([x, mixed])
    x = keras.layers.Dropout(config["embedding_dropout"], name="embedding_dropout")(x)
    x = common.rnn_stack(
        x,
        config["cell"],
        config["units"],
        config["num_layers"],
        True,
        config["dropout"],
        config["cell_options"],
    )
    x = keras.layers.Dropout(config["dropout"], name="output_dropout")(x)
    if config["crf"]:
        from kerasrnn.layers import CRF

        crf = CRF(num_tags, allowed_transitions=allowed, name="crf")
        return keras.Model(inputs, crf(x), name="tagger")
    probabilities = keras.layers.Dense(num_tags, activation="softmax", name="tags")(x)
    return keras.Model(inputs, probabilities, name="tagger")


# --------------------------------------------------------------------------- metrics

_BIO = re.compile(r"^(O|[BIES]-.+)$")


def is_bio(tags):
    """Whether every tag is ``O`` or ``B-X``, ``I-X`` (``E-X``, ``S-X``): entity tags."""
    tags = set(tags)
    return bool(tags) and all(_BIO.match(t) for t in tags) and any(t != "O" for t in tags)


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


def to_bio(schemes):
    """Whether predictions are written back from BIOES to BIO: trained in BIOES on a
    file in another scheme."""
    return schemes[1] == "BIOES" and schemes[0] != "BIOES"


def output_tags(tags, schemes):
    """The tag names the model's `tags` are reported as: with `to_bio`, S-X and E-X
    become B-X and I-X."""
    if not to_bio(schemes):
        return list(tags)
    return sorted({re.sub(r"^S-", "B-", re.sub(r"^E-", "I-", t)) for t in tags})


# --------------------------------------------------------------------------- tagger


def entity_outputs(tokens, tags):
    """The entities of tagged sentences, in the serving graph, read as conlleval (and
    `kerasrnn.metrics.entity_spans`) reads them: tokens and tags (batch, time) strings,
    "" on padding -> ``entity_start``, ``entity_end`` (exclusive) int32 (batch,
    entities), -1 on padding; ``entity_type`` and ``entity_text`` (the tokens joined by
    spaces), "" on padding."""
    import tensorflow as tf

    tags = tf.where(tags == "", "O", tags)
    prefix = tf.strings.substr(tags, 0, 1)
    kind = tf.strings.regex_replace(tf.strings.regex_replace(tags, "^.", ""), "^[^-]*-", "")
    kind = tf.where(kind == "", "_", kind)
    rows = tf.shape(tags)[0]

    def shift(x, fill, later):
        pad = tf.fill([rows, 1], fill)
        return tf.concat([x[:, 1:], pad], 1) if later else tf.concat([pad, x[:, :-1]], 1)

    def among(x, *values):
        return tf.reduce_any(tf.stack([x == v for v in values]), axis=0)

    previous, previous_kind = shift(prefix, "O", False), shift(kind, "", False)
    following, following_kind = shift(prefix, "O", True), shift(kind, "_", True)
    chunk = tf.logical_and(prefix != "O", prefix != ".")
    starts = (
        among(prefix, "B", "S")
        | (among(previous, "E", "S", "O") & among(prefix, "E", "I"))
        | (chunk & (previous_kind != kind))
    )
    ends = (
        among(prefix, "E", "S")
        | (among(prefix, "B", "I") & among(following, "B", "S", "O"))
        | (chunk & (kind != following_kind))
    )
    start_at, end_at = tf.where(starts), tf.where(ends)
    count = tf.shape(start_at)[0]
    inside = (
        tf.cumsum(tf.cast(starts, tf.int32), axis=1)
        - tf.cumsum(tf.cast(ends, tf.int32), axis=1, exclusive=True)
    ) > 0
    entity = tf.cumsum(tf.reshape(tf.cast(starts, tf.int32), [-1])) - 1
    flat_inside = tf.reshape(inside, [-1])
    text = tf.strings.unsorted_segment_join(
        tf.boolean_mask(tf.reshape(tokens, [-1]), flat_inside),
        tf.boolean_mask(entity, flat_inside),
        count,
        separator=" ",
    )

    def per_row(values, row_ids, default):
        ragged = tf.RaggedTensor.from_value_rowids(values, row_ids, nrows=tf.cast(rows, tf.int64))
        return ragged.to_tensor(default)

    return {
        "entity_start": per_row(tf.cast(start_at[:, 1], tf.int32), start_at[:, 0], -1),
        "entity_end": per_row(tf.cast(end_at[:, 1] + 1, tf.int32), end_at[:, 0], -1),
        "entity_type": per_row(tf.gather_nd(kind, start_at), start_at[:, 0], ""),
        "entity_text": per_row(text, start_at[:, 0], ""),
    }


class Tagger:
    """A trained tagger with its vocabularies and tag set: tokenized sentences in, tags
    and probabilities out (and, for entity tags, the entities). `serve` is the exact
    function the SavedModel exports. `schemes`: ``(file scheme, training scheme)`` of
    entity tags (`tag_schemes`); predictions of a BIOES model are written back in BIO."""

    def __init__(
        self,
        model,
        words,
        chars,
        tags,
        lowercase=True,
        max_chars=50,
        lm_words=None,
        schemes=(None, None),
    ):
        import tensorflow as tf

        self.model = model
        self.encoder = Encoder(words, chars, lowercase, max_chars, lm_words)
        self.tags = list(tags)
        self.schemes = tuple(schemes)
        self.output_tags = output_tags(self.tags, self.schemes)
        # a CRF model outputs pairwise potentials (batch, time, tags, tags)
        self.crf = len(model.outputs[0].shape) == 4
        self._word_lookup = words.lookup()
        self._char_lookup = chars.lookup() if chars is not None else None
        self._lm_lookup = lm_words.lookup() if lm_words is not None else None
        self._serve = tf.function(
            self.serve, input_signature=[tf.TensorSpec([None, None], tf.string, name="tokens")]
        )

    @classmethod
    def from_run(cls, config):
        if config["contextual_lm"]:
            import keras_hub  # noqa: F401 (a tied biLM embedding is keras-hub's)
        chars = None
        if config["char_dim"]:
            chars = common.load_vocabulary(config, "chars.txt")
        return cls(
            common.load_best_model(config),
            common.load_vocabulary(config, "vocab.txt"),
            chars,
            common.load_vocabulary(config, "tags.txt").tokens[4:],
            config["lowercase"],
            config["max_chars"],
            common.load_vocabulary(config, "lm_vocab.txt") if config["contextual_lm"] else None,
            common.read_json(os.path.join(config["output_dir"], "tag_schemes.json"))
            if os.path.exists(os.path.join(config["output_dir"], "tag_schemes.json"))
            else (None, None),
        )

    def serve(self, tokens):
        """tokens: (batch, time) strings, right-padded with "" -> tags (batch, time),
        "" on padding; probability; lengths; for entity tags the entities
        (`entity_outputs`)."""
        import tensorflow as tf

        from kerasrnn.data.tokenizers import encode_chars, encode_tokens
        from kerasrnn.export import sequence_outputs

        tokens = tf.convert_to_tensor(tokens, tf.string)
        lengths = tf.reduce_sum(tf.cast(tokens != "", tf.int32), axis=1)
        keys = tf.strings.lower(tokens, encoding="utf-8") if self.encoder.lowercase else tokens
        inputs = {"word_ids": encode_tokens(keys, self._word_lookup)}
        if self._char_lookup is not None:
            chars = tf.strings.substr(tokens, 0, self.encoder.max_chars, unit="UTF8_CHAR")
            inputs["char_ids"] = encode_chars(chars, self._char_lookup)
        if self._lm_lookup is not None:
            inputs["lm_ids"] = encode_tokens(lm_tokens(tokens), self._lm_lookup)
        outputs = self.model(inputs, training=False)
        if self.crf:
            outputs = self._crf_outputs(outputs, lengths)
        else:
            outputs = sequence_outputs(outputs, self.tags, lengths)
        if to_bio(self.schemes):
            # back to BIO: S-X -> B-X, E-X -> I-X (exact on the well-formed paths a
            # constrained CRF decodes)
            outputs["tags"] = tf.strings.regex_replace(
                tf.strings.regex_replace(outputs["tags"], "^S-", "B-"), "^E-", "I-"
            )
        if self.schemes[0] is not None:
            outputs.update(entity_outputs(tokens, outputs["tags"]))
        return outputs

    def _crf_outputs(self, potentials, lengths):
        """Viterbi tags and their posterior marginals, in the serving graph."""
        import tensorflow as tf

        from kerasrnn.export import ids_to_strings
        from kerasrnn.layers import crf_decode, crf_marginals

        mask = tf.sequence_mask(lengths, tf.shape(potentials)[1])
        best, _ = crf_decode(potentials, mask)
        marginal = tf.gather(crf_marginals(potentials, mask), best, batch_dims=2)
        return {
            "tags": tf.where(mask, ids_to_strings(best, self.tags), ""),
            "probability": tf.where(mask, marginal, 0.0),
            "lengths": tf.cast(lengths, tf.int32),
        }

    def serve_text(self, sentences):
        """Whitespace-tokenized sentences (batch,) -> the outputs of `serve`."""
        from kerasrnn.data.tokenizers import split_words

        return self.serve(split_words(sentences).to_tensor(default_value=""))

    def predict(self, sentences, batch_size=128):
        """Tags and their probabilities for tokenized sentences (lists of str); an
        empty sentence gets no tags, unknown words get tags from their characters."""
        results = []
        for start in range(0, len(sentences), batch_size):
            batch = [list(s) for s in sentences[start : start + batch_size]]
            width = max([len(s) for s in batch] + [1])
            out = self._serve([s + [""] * (width - len(s)) for s in batch])
            tags, probs = out["tags"].numpy(), out["probability"].numpy()
            for i, sentence in enumerate(batch):
                n = len(sentence)
                results.append(
                    {
                        "tags": [t.decode("utf-8") for t in tags[i, :n]],
                        "probabilities": [float(p) for p in probs[i, :n]],
                    }
                )
                if "entity_start" in out:
                    results[-1]["entities"] = [
                        {
                            "text": text.decode("utf-8"),
                            "type": kind.decode("utf-8"),
                            "start": int(start),
                            "end": int(end),
                        }
                        for start, end, kind, text in zip(
                            *(
                                out[k].numpy()[i]
                                for k in (
                                    "entity_start",
                                    "entity_end",
                                    "entity_type",
                                    "entity_text",
                                )
                            )
                        )
                        if start >= 0
                    ]
        return results

    def evaluate(self, sentences, gold_tags):
        common.check_labels(self.output_tags, [t for s in gold_tags for t in s], "evaluation")
        predicted = [p["tags"] for p in self.predict(sentences)]
        return tagging_scores(gold_tags, predicted, self.output_tags)

    def export(self, path):
        """Writes a SavedModel with two signatures: ``serving_default(tokens:
        string[batch, time], "" padding)`` and ``tag_text(text: string[batch])``
        (whitespace-tokenized), both -> tags, probability, lengths and, for entity
        tags, entity_start, entity_end, entity_type, entity_text."""
        import tensorflow as tf

        from kerasrnn.export import export_saved_model

        lookups = [
            lookup
            for lookup in (self._word_lookup, self._char_lookup, self._lm_lookup)
            if lookup is not None
        ]
        return export_saved_model(
            path,
            self.model,
            {
                "serving_default": (
                    self.serve,
                    [tf.TensorSpec([None, None], tf.string, name="tokens")],
                ),
                "tag_text": (self.serve_text, [tf.TensorSpec([None], tf.string, name="text")]),
            },
            track=lookups,
        )

    def export_runtime(self, path, format_name, sequence_length=64, quantization=None):
        """Writes the tagger for onnxruntime or LiteRT (`kerasrnn.export.export_bundle`):
        word ids (1, time) and character ids (1, time, max_chars) in; the tag probabilities
        out, or with a CRF the Viterbi path and each tag's posterior marginal (computed in
        the graph, as `serve` does); with the vocabularies, the tags and the numpy-only
        ``client.py`` (tags and probabilities; no entities). `quantization`: the weights, as
        `export_bundle` takes it."""
        import tensorflow as tf

        from kerasrnn.export.bundle import export_bundle

        if self._lm_lookup is not None:
            raise common.ConfigError(
                f"a tagger with --contextual-lm cannot be exported to {format_name!r} (the "
                "biLM's number normalisation is a string regex): use --format saved_model."
            )
        word_ids = keras.Input((None,), dtype="int32", name="word_ids")
        inputs, feed = [word_ids], {"word_ids": word_ids}
        signature = [tf.TensorSpec([None, None], tf.int32, name="word_ids")]
        vocabularies = {"words": self.encoder.words.tokens}
        if self._char_lookup is not None:
            chars = self.encoder.max_chars
            char_ids = keras.Input((None, chars), dtype="int32", name="char_ids")
            inputs.append(char_ids)
            feed["char_ids"] = char_ids
            signature.append(tf.TensorSpec([None, None, chars], tf.int32, name="char_ids"))
            vocabularies["chars"] = self.encoder.chars.tokens
        outputs = self.model(feed, training=False)
        if self.crf:
            outputs = ViterbiOutputs(name="viterbi")(outputs, word_ids)
        model = keras.Model(inputs, outputs, name="tagger_ids")
        metadata = {
            "task": "tagger",
            "lowercase": self.encoder.lowercase,
            "max_chars": self.encoder.max_chars,
            "crf": self.crf,
            "bio": to_bio(self.schemes),
            "tags": self.tags,
            "vocabularies": vocabularies,
        }
        return export_bundle(
            path,
            {"model": (model, signature)},
            format_name,
            metadata,
            sequence_length,
            quantization,
        )


class ViterbiOutputs(keras.layers.Layer):
    """A CRF tagger's outputs for a runtime without strings: the Viterbi path
    (`crf_decode`) and the posterior marginal of each of its tags (`crf_marginals`),
    0 on padding (word id 0), as `Tagger._crf_outputs` computes them."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True  # takes the potentials' mask; returns none

    def call(self, potentials, word_ids):
        import tensorflow as tf

        from kerasrnn.layers import crf_decode, crf_marginals

        mask = word_ids != 0
        best, _ = crf_decode(potentials, mask)
        marginal = tf.gather(crf_marginals(potentials, mask), best, batch_dims=2)
        return [tf.cast(best, "int32"), tf.where(mask, marginal, 0.0)]

    def compute_mask(self, inputs, mask=None):
        return None


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
                "tags": len(tag_names),
                "bilm": bilm,
                "allowed": constraints(config, tag_names, schemes[1]),
            },
            {
                "train_sentences": len(sentences),
                "vocabulary_size": len(words),
                "tags": tag_names,
                "tag_schemes": list(schemes),
            },
        )

    def build(self, config, prepared):
        sizes = prepared.model
        model = build_model(
            config, sizes["words"], sizes["chars"], sizes["tags"], sizes["bilm"], sizes["allowed"]
        )
        if config["crf"]:
            from kerasrnn.layers import CRFAccuracy, CRFLoss

            # the per-token weights of the dataset mark the real steps of each path
            loss, metric = CRFLoss(), CRFAccuracy(name="accuracy")
        else:
            loss, metric = "sparse_categorical_crossentropy", "accuracy"
        model.compile(optimizer=common.optimizer(config), loss=loss, weighted_metrics=[metric])
        return model

    def monitor(self, config, prepared):
        return ("val_accuracy" if prepared.valid is not None else "accuracy"), "max"

    def predict_arguments(self, parser):
        parser.add_argument("texts", nargs="*", help="whitespace-tokenized sentences to tag")
        parser.add_argument(
            "--input", help="a file with one whitespace-tokenized sentence per line"
        )

    def predict_rows(self, trained, texts):
        sentences = [text.split() for text in texts]
        return [{"tokens": s, **p} for s, p in zip(sentences, trained.predict(sentences))]


def constraints(config, tag_names, scheme):
    """The CRF's `allowed_transitions` matrix, or None (no CRF, constraints off, or tags
    that are not entity tags)."""
    if not config["crf"] or config["crf_constraints"] == "false" or scheme is None:
        return None
    from kerasrnn.layers import allowed_transitions

    return allowed_transitions(tag_names, scheme)


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
