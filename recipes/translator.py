"""Attention encoder-decoder translation with kerasrnn cells.

Model::

    source ids -> Embedding -> bidirectional (optionally stacked) RNN of any kerasrnn
               cell -> memory h_1..h_Tx and final states (forward; backward)
    s_0 = tanh(W_s [h_fwd; h_bwd] + b)   (the learned bridge, one per decoder state)
    target ids [START] y_1 .. y_n -> Embedding -> AttentiveRNN(AttentionCell(cell,
               Bahdanau or Luong attention)) -> dropout -> Dense -> logits for
               y_1 .. y_n [END]

trained with teacher forcing (optionally two-pass scheduled sampling, see
`TranslatorModel`) on the masked, optionally label-smoothed cross-entropy
(`model.fit`, gradient-norm clipping, best checkpoint, BackupAndRestore,
``--strategy mirrored``). Translation decodes step by step with the same layers
(`kerasrnn.decoding` greedy or beam search); BLEU is sacreBLEU's corpus BLEU
(`kerasrnn.metrics.corpus_bleu`).

Command line::

    python -m recipes.translator demo                        # the self-contained demo
    python -m recipes.translator demo --data my.src my.tgt   # the demo on your corpus
    python -m recipes.translator train --train '[train.de.gz, train.en.gz]' \\
        --valid '[val.de.gz, val.en.gz]' --test '[test.de.gz, test.en.gz]' \\
        --output-dir runs/t
    python -m recipes.translator evaluate --output-dir runs/t --test '[a.de, a.en]'
    python -m recipes.translator translate --output-dir runs/t "ein Mann läuft ."
    python -m recipes.translator heatmap --output-dir runs/t "ein Mann läuft ." \
        [--input FILE]                                       # runs/t/heatmap_0.png ...
    python -m recipes.translator export --output-dir runs/t --export-dir runs/t/sm

Data (`train`, `valid`, `test`): ``[SOURCE_FILE, TARGET_FILE]``, two files with one
sentence per line (plain or gzip, aligned line by line), or ``tfds:NAME[:SPLIT]`` (e.g.
``tfds:ted_hrlr_translate/pt_to_en``). Tokenisers: ``word`` (punctuation split off
words, then whitespace), ``char`` (characters, the space as ``▁``) or ``wordpiece``
(keras-hub WordPiece subwords, the vocabulary learned from the training side), chosen
per side.
"""
import os
import sys
import time

import keras
from keras import ops

from recipes import common

DEFAULTS = dict(
    common.COMMON_DEFAULTS,
    output_dir="runs/translator",
    train=None,  # [SOURCE_FILE, TARGET_FILE] or "tfds:NAME[:SPLIT]"
    valid=None,
    test=None,
    encoding="utf-8",
    tfds_data_dir=None,
    valid_fraction=0.05,  # held out of `train` when `valid` is not given
    source_tokenizer="word",  # word | char | wordpiece
    target_tokenizer="word",
    lowercase=False,
    max_source_length=50,  # longer training pairs (in tokens) are dropped
    max_target_length=50,
    max_vocab=30000,  # word / char: per side, including the 4 special tokens
    min_freq=1,  # word / char
    wordpiece_vocab_size=8000,  # wordpiece: learned pieces per side, specials included
    embedding_dim=256,
    cell="gru",  # lstm | gru | simple | layer_norm_lstm | layer_norm_simple
    cell_options={},
    encoder_units=256,  # per direction
    num_layers=1,  # encoder depth
    decoder_units=512,
    attention="bahdanau",  # bahdanau | luong
    attention_units=256,  # Bahdanau's W_a width
    luong_score="general",  # dot | general | concat
    input_feeding=True,  # Luong only
    attention_layer_size=None,  # width of tanh(W_c [c; h]); None: the mode's default
    dropout=0.2,
    label_smoothing=0.0,
    # Scheduled sampling (two-pass, see `TranslatorModel`): p by training step.
    scheduled_sampling="off",  # off | constant | linear | inverse_sigmoid
    sampling_probability=0.25,  # the p the schedule grows to
    sampling_steps=5000,  # linear: steps to reach it; inverse_sigmoid: to reach half
    bucket_boundaries=[10, 20, 30, 40],  # source lengths; [] for plain batching
    beam_size=5,
    length_normalization="average",  # null | average | gnmt
    max_decode_length=80,  # tokens generated at most
    max_length_ratio=0.0,  # >0: at most ceil(ratio * source length) tokens
    heatmaps=3,  # evaluate/demo: heatmap PNGs of the first N test sentences
)
TOKENIZERS = ("word", "char", "wordpiece")
ATTENTIONS = ("bahdanau", "luong")
SCHEDULES = ("off", "constant", "linear", "inverse_sigmoid")
SPACE = "\u2581"  # the space, as a character token
# Detokenisation of the "word" (and WordPiece) tokens, in this order: hyphens and
# apostrophes between two letters or digits are rejoined ("t - shirt" -> "t-shirt",
# "man ' s" -> "man's"), as sacreBLEU's 13a tokeniser keeps them inside words; no space
# before closing punctuation, none after an opening bracket, none inside a pair of
# double quotes. The tokeniser splits all of them off, so the rules guess; on Multi30k
# English they restore >99% of lines exactly (a spaced "a - b" or "dogs' toys" is what
# they get wrong).
_JOINER = "[-'\u2019]"  # ' and the typographic ’
_ALNUM = r"[\pL\pN]"
# RE2 has no lookaround, so a match cannot check the letter after a joiner without
# consuming it, which would break chains ("mother - in - law"): mark the joiners with a
# letter on their right first, then join the marked ones with a letter on their left.
_MARK = "\ue000"  # a private-use character, not in any text
_CLOSING = r" ([.,!?;:%)\]}])"
_OPENING = r"([(\[{]) "
_QUOTED = r'" ([^"]*) "'

DEMO_DEFAULTS = dict(
    output_dir="runs/translator-demo",
    source_tokenizer="word",
    target_tokenizer="char",
    lowercase=True,
    max_source_length=20,
    max_target_length=20,
    embedding_dim=32,
    encoder_units=64,
    decoder_units=128,
    attention_units=64,
    dropout=0.0,
    batch_size=64,
    learning_rate=3e-3,
    epochs=3,
    patience=2,
    bucket_boundaries=[],
    beam_size=4,
    max_decode_length=12,
    verbose=2,
)


# ----------------------------------------------------------------------- tokenising


def tokenize_graph(texts, kind, lowercase=False, wordpiece=None):
    """Strings (batch,) -> a ragged string tensor of tokens, as TensorFlow ops (the
    same function runs in the data pipeline and inside the SavedModel). "wordpiece"
    needs the side's `wordpiece` tokenizer (`side_wordpieces`), which lower-cases
    itself."""
    import tensorflow as tf

    from kerasrnn.data.tokenizers import split_wordpieces

    texts = tf.convert_to_tensor(texts, tf.string)
    if kind == "wordpiece":
        if wordpiece is None:
            raise ValueError("the wordpiece tokenizer needs its `wordpiece` tokenizer.")
        return split_wordpieces(texts, wordpiece)
    if lowercase:
        texts = lower_graph(texts)
    if kind == "word":
        return tf.strings.split(tf.strings.regex_replace(texts, r"(\pP)", r" \1 "))
    if kind == "char":
        spaced = tf.strings.regex_replace(tf.strings.strip(texts), r"\s+", SPACE)
        return tf.strings.unicode_split(spaced, "UTF-8", errors="replace")
    raise common.ConfigError(f"tokenizers must be one of {TOKENIZERS}, got {kind!r}.")


def lower_graph(texts, kind="word"):
    """Lower-cases strings (batch,) as the `kind` tokeniser does: keras-hub's WordPiece
    case-folds (NFKC casefold, "ß" -> "ss"), the others use `tf.strings.lower`."""
    import tensorflow as tf

    texts = tf.convert_to_tensor(texts, tf.string)
    if kind == "wordpiece":
        import tensorflow_text

        return tensorflow_text.case_fold_utf8(texts)
    return tf.strings.lower(texts, encoding="utf-8")


def detokenize_graph(tokens, kind):
    """A ragged string tensor of tokens -> strings (batch,)."""
    import tensorflow as tf

    from kerasrnn.data.tokenizers import join_wordpieces

    if kind == "char":
        joined = tf.strings.reduce_join(tokens, axis=-1)
        return tf.strings.regex_replace(joined, SPACE, " ")
    if kind == "wordpiece":
        joined = join_wordpieces(tokens)
    else:
        joined = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
    text = tf.strings.regex_replace(joined, f" ({_JOINER}) ({_ALNUM})",
                                    rf" \1{_MARK}\2")
    text = tf.strings.regex_replace(text, f"({_ALNUM}) ({_JOINER}){_MARK}", r"\1\2")
    text = tf.strings.regex_replace(text, _MARK, " ")
    text = tf.strings.regex_replace(text, _CLOSING, r"\1")
    text = tf.strings.regex_replace(text, _OPENING, r"\1")
    return tf.strings.regex_replace(text, _QUOTED, r'"\1"')


def tokenize(texts, kind, lowercase=False, wordpiece=None, batch=4096):
    """Python lists: strings -> token lists, with exactly `tokenize_graph`."""
    rows = []
    for start in range(0, len(texts), batch):
        ragged = tokenize_graph(list(texts[start:start + batch]), kind, lowercase,
                                wordpiece)
        rows += [[t.decode("utf-8") for t in row] for row in ragged.to_list()]
    return rows


def build_vocabulary(config, side, texts):
    """The side's vocabulary from its training sentences: counted word / char tokens
    (`max_vocab`, `min_freq`) or a learned WordPiece vocabulary
    (`wordpiece_vocab_size`)."""
    from kerasrnn.data import Vocabulary
    from kerasrnn.data.tokenizers import learn_wordpiece_vocabulary

    kind = config[f"{side}_tokenizer"]
    if kind == "wordpiece":
        try:
            return learn_wordpiece_vocabulary(texts, config["wordpiece_vocab_size"],
                                              config["lowercase"])
        except ValueError as error:
            raise common.ConfigError(f"{side} side: {error}") from None
    tokens = tokenize(texts, kind, config["lowercase"])
    return Vocabulary.build(tokens, config["max_vocab"], config["min_freq"])


def side_wordpieces(config, vocabs):
    """(source, target) WordPiece tokenizers over `vocabs`; None for a side that
    uses another tokeniser."""
    from kerasrnn.data.tokenizers import wordpiece_tokenizer

    return tuple(
        wordpiece_tokenizer(vocab, config["lowercase"])
        if config[f"{side}_tokenizer"] == "wordpiece" else None
        for side, vocab in zip(("source", "target"), vocabs)
    )


# ------------------------------------------------------------------------------ data


def load_pairs(config, spec, split):
    """One data spec -> ``(sources, targets)``."""
    from kerasrnn.data import loaders

    if isinstance(spec, str) and spec.startswith("tfds:"):
        name, _, tfds_split = spec.removeprefix("tfds:").partition(":")
        return loaders.load_tfds_translation(
            name, tfds_split or split, data_dir=config["tfds_data_dir"]
        )
    if not isinstance(spec, (list, tuple)) or len(spec) != 2:
        raise common.ConfigError(
            f"`{split}` must be [SOURCE_FILE, TARGET_FILE] or 'tfds:NAME[:SPLIT]'; got "
            f"{spec!r}."
        )
    return loaders.load_parallel_text(spec[0], spec[1], config["encoding"])


def load_splits(config):
    """The train / valid / test pairs the config describes (test may be None)."""
    from recipes.classifier import holdout

    if config["train"] is None:
        raise common.ConfigError("`train` is required: [SOURCE_FILE, TARGET_FILE].")
    splits = {"train": load_pairs(config, config["train"], "train")}
    splits["test"] = load_pairs(config, config["test"], "test") if config["test"] else None
    if config["valid"]:
        splits["valid"] = load_pairs(config, config["valid"], "validation")
    else:
        splits["train"], splits["valid"] = holdout(
            *splits["train"], config["valid_fraction"], config["seed"] + 2
        )
    return splits


def encode_pairs(config, source_vocab, target_vocab, sources, targets, filter_lengths):
    """Token ids for teacher forcing: source, [START] y, y [END]. With `filter_lengths`
    drops pairs with an empty source or a side longer than its maximum."""
    wordpieces = side_wordpieces(config, (source_vocab, target_vocab))
    src_tokens = tokenize(sources, config["source_tokenizer"], config["lowercase"],
                          wordpieces[0])
    tgt_tokens = tokenize(targets, config["target_tokenizer"], config["lowercase"],
                          wordpieces[1])
    columns = ([], [], [])
    for src, tgt in zip(src_tokens, tgt_tokens):
        if filter_lengths and not (
            1 <= len(src) <= config["max_source_length"]
            and len(tgt) <= config["max_target_length"]
        ):
            continue
        ids = target_vocab.encode(tgt)
        columns[0].append(source_vocab.encode(src) or [0])
        columns[1].append(target_vocab.encode([], add_start=True) + ids)
        columns[2].append(ids + target_vocab.encode([], add_end=True))
    return columns


def make_dataset(config, columns, shuffle):
    from kerasrnn.data import sequence_dataset

    if not columns[0]:
        raise common.RecipeError(
            "no sentence pair is left after length filtering (max_source_length="
            f"{config['max_source_length']}, max_target_length="
            f"{config['max_target_length']})."
        )
    return sequence_dataset(
        {"source": columns[0], "target_in": columns[1]}, columns[2],
        batch_size=config["batch_size"], shuffle=shuffle, seed=config["seed"],
        bucket_boundaries=config["bucket_boundaries"] or None, length_key="source",
        target_weights=False,
    )


# ----------------------------------------------------------------------------- model


@keras.saving.register_keras_serializable(package="kerasrnn")
class MaskedSequenceCrossEntropy(keras.losses.Loss):
    """Mean token cross-entropy over the non-[PAD] targets, with label smoothing:

        L = 1/|M| sum_{(b,t) in M} [(1 - eps) (-log p(y_bt)) + eps mean_v (-log p(v))]

    where M holds the positions whose target id is not 0 ([PAD]). (Ours because Keras'
    sparse cross-entropy has no label smoothing, and its categorical one would need the
    one-hot targets of the whole target vocabulary per token.)"""

    def __init__(self, label_smoothing=0.0, name="masked_cross_entropy", **kwargs):
        super().__init__(name=name, **kwargs)
        if not 0.0 <= label_smoothing < 1.0:
            raise common.ConfigError(
                f"`label_smoothing` must be in [0, 1), got {label_smoothing!r}."
            )
        self.label_smoothing = float(label_smoothing)

    def __call__(self, y_true, y_pred, sample_weight=None):
        # The mask is the targets' [PAD]; Keras' own mask/weight reduction (which
        # would re-weight this already reduced scalar) is bypassed.
        if sample_weight is not None:
            raise ValueError("MaskedSequenceCrossEntropy masks by the [PAD] targets; "
                             "it takes no `sample_weight`.")
        loss = self.call(y_true, y_pred)
        # Keras' own `Loss.__call__` divides by the replica count under tf.distribute
        # (replica gradients are summed, the logged loss multiplied back); so must this.
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            replicas = tf.distribute.get_strategy().num_replicas_in_sync
            if replicas > 1:
                loss = loss / replicas
        return loss

    def call(self, y_true, y_pred):
        y_true = ops.cast(y_true, "int32")
        log_p = ops.log_softmax(ops.cast(y_pred, "float32"), axis=-1)
        loss = -ops.take_along_axis(log_p, y_true[..., None], axis=-1)[..., 0]
        if self.label_smoothing:
            loss = (1.0 - self.label_smoothing) * loss - self.label_smoothing * ops.mean(
                log_p, axis=-1
            )
        mask = ops.cast(ops.not_equal(y_true, 0), "float32")
        return ops.sum(loss * mask) / ops.maximum(ops.sum(mask), 1.0)

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}


@keras.saving.register_keras_serializable(package="kerasrnn")
class MaskedAccuracy(keras.metrics.Metric):
    """Token accuracy over the non-[PAD] targets (counts, not a mean of batch means).
    (Ours because Keras' accuracy with a padding mask averages per batch, weighting
    batches by their padded length, not by their real tokens.)"""

    def __init__(self, name="accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.hits = self.add_variable((), initializer="zeros", name="hits")
        self.count = self.add_variable((), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        mask = ops.cast(ops.not_equal(y_true, 0), "float32")
        best = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        self.hits.assign_add(ops.sum(ops.cast(ops.equal(best, y_true), "float32") * mask))
        self.count.assign_add(ops.sum(mask))

    def result(self):
        return self.hits / ops.maximum(self.count, 1.0)

    def reset_state(self):
        self.hits.assign(0.0)
        self.count.assign(0.0)


@keras.saving.register_keras_serializable(package="kerasrnn")
class NotPadding(keras.layers.Layer):
    """ids -> ids != 0 ([PAD]): the source mask the attention needs."""

    def call(self, ids):
        return ops.not_equal(ids, 0)

    def compute_output_shape(self, input_shape):
        return input_shape


def sampling_probability(step, schedule, probability, steps):
    """Scheduled sampling's p at training step `step` (a tensor; keras.ops):

    * ``constant``: p = p_max;
    * ``linear``: p = p_max min(1, i / S);
    * ``inverse_sigmoid``: Bengio et al.'s teacher-forcing probability
      eps_i = k / (k + exp(i / k)) turned into p = p_max (1 - eps_i)
      = p_max sigmoid((i - k ln k) / k), with k chosen so that k ln k = S: p reaches
      p_max / 2 at step S;
    * ``off``: p = 0.
    """
    import math

    step = ops.cast(step, "float32")
    if schedule == "off":
        return ops.zeros_like(step)
    if schedule == "constant":
        return ops.full_like(step, probability)
    if schedule == "linear":
        return probability * ops.minimum(1.0, step / steps)
    k = steps + 2.0
    for _ in range(50):  # Newton's method on k ln k = S (k > 1)
        k = (k + steps) / (math.log(k) + 1.0)
    return probability * ops.sigmoid((step - steps) / k)


@keras.saving.register_keras_serializable(package="kerasrnn")
class TranslatorModel(keras.Model):
    """The functional teacher-forced translator, whose `train_step` can do scheduled
    sampling (Bengio et al., 2015): decoder input y_{t-1} is, with probability p, the
    model's own previous prediction instead of the gold token.

    Bengio et al. sample inside the decoding loop, step by step. Here the decoder
    runs over the whole target sequence in one `keras.layers.RNN` call, with the
    embedding and output layer outside the cell, so this is the two-pass ("parallel")
    form of Duckworth et al. (2019): a first teacher-forced pass (inference mode, no
    gradient) gives the argmax predictions yhat_t; each gold input y_{t-1}, t >= 1, is
    replaced by yhat_{t-1} with probability p ([START] and [PAD] inputs never are,
    and [PAD] is never predicted, so masks stay as they were); the loss and gradient
    come from a second pass on the mixed inputs. The predictions condition on gold
    prefixes rather than on earlier sampled ones, which keeps training one parallel
    pass per step. Evaluation (`test_step`) stays teacher-forced.

    `set_scheduled_sampling` configures it (default: off, pure teacher forcing); the
    setting is not saved with the model (a loaded model trains teacher-forced).
    """

    _sampling = ("off", 0.0, 1, 0)

    def set_scheduled_sampling(self, schedule="off", probability=0.25, steps=5000,
                               seed=0):
        if schedule not in SCHEDULES:
            raise common.ConfigError(
                f"`scheduled_sampling` must be one of {SCHEDULES}, got {schedule!r}."
            )
        if not 0.0 <= probability <= 1.0:
            raise common.ConfigError(
                f"`sampling_probability` must be in [0, 1], got {probability!r}."
            )
        if steps < 1:
            raise common.ConfigError(f"`sampling_steps` must be >= 1, got {steps!r}.")
        self._sampling = (schedule, float(probability), int(steps), int(seed))

    def sampled_inputs(self, inputs, probability, seed):
        """`inputs` with each non-[START], non-[PAD] target input replaced, with
        probability `probability`, by the model's teacher-forced prediction of it.
        `seed`: two int32s for the stateless draw."""
        import tensorflow as tf

        from kerasrnn.data import PAD_ID

        inputs = {name: ops.convert_to_tensor(value) for name, value in inputs.items()}
        target_in = ops.cast(inputs["target_in"], "int32")
        logits = ops.stop_gradient(self(inputs, training=False))
        predicted = ops.cast(ops.argmax(logits[..., PAD_ID + 1:], axis=-1), "int32") + 1
        previous = ops.concatenate([target_in[:, :1], predicted[:, :-1]], axis=1)
        draw = tf.random.stateless_uniform(ops.shape(target_in), seed)
        replace = (
            (draw < probability)
            & (ops.arange(ops.shape(target_in)[1]) >= 1)[None, :]
            & ops.not_equal(target_in, PAD_ID)
        )
        return {**inputs, "target_in": ops.where(replace, previous, target_in)}

    def train_step(self, data):
        schedule, probability, steps, seed = self._sampling
        if schedule == "off":
            return super().train_step(data)
        step = self.optimizer.iterations
        p = sampling_probability(step, schedule, probability, steps)
        inputs, *rest = data
        seeds = ops.stack([ops.convert_to_tensor(seed, "int32"), ops.cast(step, "int32")])
        logs = super().train_step((self.sampled_inputs(inputs, p, seeds), *rest))
        return {**logs, "sampling_probability": p}


def _attention_cell(config):
    import kerasrnn

    if config["attention"] not in ATTENTIONS:
        raise common.ConfigError(
            f"`attention` must be one of {ATTENTIONS}, got {config['attention']!r}."
        )
    cell = common.make_cell(config["cell"], config["decoder_units"], **config["cell_options"])
    if config["attention"] == "bahdanau":
        attention = kerasrnn.BahdanauAttention(config["attention_units"])
    else:
        attention = kerasrnn.LuongAttention(config["luong_score"])
    return kerasrnn.AttentionCell(
        cell, attention, mode=config["attention"],
        attention_layer_size=config["attention_layer_size"],
        input_feeding=config["input_feeding"],
    )


def build_encoder(config, vocab_size):
    """source ids -> [memory (batch, Tx, 2 units), final forward states..., final
    backward states...] as a nested functional model named "encoder"."""
    import kerasrnn

    if config["num_layers"] < 1:
        raise common.ConfigError(f"`num_layers` must be >= 1, got {config['num_layers']}.")
    ids = keras.Input((None,), dtype="int32", name="source_ids")
    x = keras.layers.Embedding(vocab_size, config["embedding_dim"], mask_zero=True,
                               name="source_embedding")(ids)
    x = keras.layers.Dropout(config["dropout"])(x)
    for index in range(config["num_layers"]):
        last = index == config["num_layers"] - 1
        cell = common.make_cell(config["cell"], config["encoder_units"],
                                **config["cell_options"])
        x = keras.layers.Bidirectional(
            kerasrnn.RNN(cell, return_sequences=True, return_state=last),
            name=f"encoder_{index}",
        )(x)
        if not last:
            x = keras.layers.Dropout(config["dropout"])(x)
    return keras.Model(ids, x, name="encoder")


def build_model(config, source_vocab_size, target_vocab_size):
    """The teacher-forced translator as a functional Keras model:
    ``{"source": (batch, Tx), "target_in": (batch, Ty)}`` int32 ids -> logits
    (batch, Ty, target_vocab_size). Its layers "encoder", "target_embedding",
    "decoder" and "output_projection" are what `Translator` decodes with."""
    import kerasrnn

    source = keras.Input((None,), dtype="int32", name="source")
    target_in = keras.Input((None,), dtype="int32", name="target_in")
    memory, *encoder_states = build_encoder(config, source_vocab_size)(source)
    y = keras.layers.Embedding(target_vocab_size, config["embedding_dim"], mask_zero=True,
                               name="target_embedding")(target_in)
    y = keras.layers.Dropout(config["dropout"])(y)
    decoder = kerasrnn.AttentiveRNN(
        _attention_cell(config), return_alignments=True, bridge=True, name="decoder"
    )
    outputs, _ = decoder(y, memory, initial_state=encoder_states,
                         memory_mask=NotPadding(name="source_mask")(source))
    outputs = keras.layers.Dropout(config["dropout"])(outputs)
    logits = keras.layers.Dense(target_vocab_size, name="output_projection")(outputs)
    model = TranslatorModel({"source": source, "target_in": target_in}, logits,
                            name="translator")
    model.set_scheduled_sampling(config["scheduled_sampling"],
                                 config["sampling_probability"], config["sampling_steps"],
                                 config["seed"])
    return model


def compile_model(model, config):
    model.compile(
        optimizer=common.optimizer(config),
        loss=MaskedSequenceCrossEntropy(config["label_smoothing"]),
        metrics=[MaskedAccuracy()],
    )


# ------------------------------------------------------------------------ translator


class Translator:
    """A trained translator with its vocabularies: raw strings in, translations out.

    `serve(texts, beam_size)` is the exact graph the SavedModel exports: tokenising,
    encoding, greedy (beam_size 1) or beam search, detokenising."""

    def __init__(self, model, source_vocab, target_vocab, config):
        import tensorflow as tf

        self.model = model
        self.config = config
        self.source_vocab, self.target_vocab = source_vocab, target_vocab
        self.encoder = model.get_layer("encoder")
        self.target_embedding = model.get_layer("target_embedding")
        self.decoder = model.get_layer("decoder")
        self.projection = model.get_layer("output_projection")
        self._source_lookup = source_vocab.lookup()
        self._wordpieces = side_wordpieces(config, (source_vocab, target_vocab))
        self._target_tokens = tf.constant(target_vocab.tokens, tf.string)
        self._functions = {}
        self._alignments = keras.Model(model.inputs, self.decoder.output[1])

    @classmethod
    def from_run(cls, config):
        from kerasrnn.data import Vocabulary

        out = config["output_dir"]
        return cls(
            common.load_best_model(config),
            Vocabulary.load(os.path.join(out, "source_vocab.txt")),
            Vocabulary.load(os.path.join(out, "target_vocab.txt")),
            config,
        )

    # ---- decoding ----------------------------------------------------------------
    def start(self, source_ids):
        """Encodes a batch: (prepared memory, decoder initial states, source lengths)."""
        memory, *states = self.encoder(source_ids, training=False)
        mask = ops.not_equal(source_ids, 0)
        prepared = self.decoder.prepare_memory(memory, mask=mask)
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
        return prepared, self.decoder.initial_state_from(states), lengths

    def step_function(self, memory):
        """The decoder as `kerasrnn.decoding`'s (tokens, states) -> (logits, states)."""

        def step(tokens, states):
            output, states, _ = self.decoder.step(self.target_embedding(tokens), states,
                                                  memory)
            return self.projection(output), states

        return step

    def decode_ids(self, source_ids, beam_size=1):
        """Source ids (batch, Tx) -> output ids (batch, max_decode_length), the end
        token included, [PAD] after it."""
        from kerasrnn import decoding
        from kerasrnn.data import END_ID, START_ID

        config = self.config
        memory, states, lengths = self.start(source_ids)
        starts = ops.full((ops.shape(source_ids)[0],), START_ID, "int32")
        limits = {}
        if config["max_length_ratio"]:
            limits = {"source_lengths": ops.maximum(lengths, 1),
                      "max_length_ratio": config["max_length_ratio"]}
        if beam_size <= 1:
            return decoding.greedy_search(
                self.step_function(memory), starts, states, config["max_decode_length"],
                END_ID, **limits,
            ).tokens
        result = decoding.beam_search(
            self.step_function(memory.repeat(beam_size)), starts, states,
            # n_best=k: stopping at the first complete hypothesis (n_best=1) would
            # return whichever ends first, often a short one.
            config["max_decode_length"], END_ID, beam_size=beam_size, n_best=beam_size,
            length_normalization=config["length_normalization"], **limits,
        )
        return result.tokens[:, 0]

    def source_ids(self, texts):
        from kerasrnn.data.tokenizers import encode_tokens

        tokens = tokenize_graph(texts, self.config["source_tokenizer"],
                                self.config["lowercase"], self._wordpieces[0])
        return encode_tokens(tokens, self._source_lookup)

    def serve(self, texts, beam_size=None):
        """Strings (batch,) -> {"translation": strings (batch,)} (TensorFlow ops)."""
        import tensorflow as tf

        from kerasrnn.data import END_ID, PAD_ID, START_ID

        beam_size = self.config["beam_size"] if beam_size is None else beam_size
        ids = self.decode_ids(self.source_ids(texts), beam_size)
        keep = (ids != PAD_ID) & (ids != START_ID) & (ids != END_ID)
        tokens = tf.gather(self._target_tokens, tf.ragged.boolean_mask(ids, keep))
        return {"translation": detokenize_graph(tokens, self.config["target_tokenizer"])}

    def translate(self, texts, beam_size=None, batch_size=64):
        """Python strings -> translations (list of str)."""
        import tensorflow as tf

        beam_size = self.config["beam_size"] if beam_size is None else int(beam_size)
        if beam_size not in self._functions:
            self._functions[beam_size] = tf.function(
                lambda t: self.serve(t, beam_size),
                input_signature=[tf.TensorSpec([None], tf.string)],
            )
        fn, results = self._functions[beam_size], []
        for start in range(0, len(texts), batch_size):
            out = fn(tf.constant(list(texts[start:start + batch_size]), tf.string))
            results += [t.decode("utf-8") for t in out["translation"].numpy()]
        return results

    # ---- evaluation ----------------------------------------------------------------
    def evaluate(self, sources, references, beam_sizes=None):
        """BLEU (sacreBLEU's corpus BLEU), exact match and speed, per beam size.

        With `lowercase` the translations can only be lower-case, so the references
        are lower-cased too: the scores are then case-insensitive (``"cased": false``
        in the results)."""
        from kerasrnn.metrics import corpus_bleu

        beam_sizes = beam_sizes or sorted({1, self.config["beam_size"]})
        cased = not self.config["lowercase"]
        if not cased:
            # As the target tokeniser lower-cases, which is not quite str.lower.
            lowered = lower_graph(list(references), self.config["target_tokenizer"])
            references = [r.decode("utf-8") for r in lowered.numpy()]
        results = {"examples": len(sources), "cased": cased}
        for beam in beam_sizes:
            self.translate(sources[:2], beam)  # trace outside the timing
            began = time.perf_counter()
            hypotheses = self.translate(sources, beam)
            seconds = time.perf_counter() - began
            name = "greedy" if beam == 1 else f"beam{beam}"
            results[name] = {
                "bleu": corpus_bleu(hypotheses, references).score,
                "exact_match": sum(h == r for h, r in zip(hypotheses, references))
                / max(len(references), 1),
                "sentences_per_second": len(sources) / seconds,
                "samples": [{"source": s, "reference": r, "translation": h}
                            for s, r, h in list(zip(sources, references, hypotheses))[:5]],
            }
        return results

    def alignments(self, text, translation):
        """Attention weights (target tokens + [END]) x (source tokens) for a source
        and its translation, with both token lists."""
        import numpy as np

        cfg = self.config
        src = tokenize([text], cfg["source_tokenizer"], cfg["lowercase"],
                       self._wordpieces[0])[0]
        tgt = tokenize([translation], cfg["target_tokenizer"], cfg["lowercase"],
                       self._wordpieces[1])[0]
        inputs = {
            "source": np.array([self.source_vocab.encode(src) or [0]], "int32"),
            "target_in": np.array(
                [self.target_vocab.encode([], add_start=True) + self.target_vocab.encode(tgt)],
                "int32",
            ),
        }
        weights = ops.convert_to_numpy(self._alignments(inputs, training=False))[0]
        return weights[:, : max(len(src), 1)], src, tgt + ["[END]"]

    def heatmap(self, text, path, beam_size=None, translation=None):
        """Writes the alignment matrix of `text` and its translation (decoded with
        `beam_size` unless given) as a PNG: source tokens x translation tokens."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        if translation is None:
            translation = self.translate([text], beam_size)[0]
        weights, src, tgt = self.alignments(text, translation)
        fig, ax = plt.subplots(figsize=(1 + 0.45 * len(src), 1 + 0.35 * len(tgt)))
        ax.imshow(weights, cmap="Greys", vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(len(src)), src, rotation=60, ha="right")
        ax.set_yticks(range(len(tgt)), tgt)
        ax.set_xlabel("source")
        ax.set_ylabel("translation")
        fig.tight_layout()
        folder = os.path.dirname(os.fspath(path))
        if folder:
            os.makedirs(folder, exist_ok=True)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path

    def export(self, path):
        """A SavedModel with ``translate(text: string[batch]) -> {"translation":
        string[batch]}`` (beam search with the configured beam size)."""
        import tensorflow as tf

        from kerasrnn.export import export_saved_model

        signature = [tf.TensorSpec([None], tf.string, name="text")]
        return export_saved_model(
            path, self.model, {"translate": (lambda t: self.serve(t), signature)},
            track=[self._source_lookup],
        )


def write_heatmaps(translator, sources, folder):
    return [
        translator.heatmap(text, os.path.join(folder, f"attention_{i}.png"))
        for i, text in enumerate(sources[: translator.config["heatmaps"]])
    ]


# -------------------------------------------------------------------------- commands


def train(config, splits=None, callbacks=()):
    """Trains a translator as configured and writes to ``config["output_dir"]``:
    ``config.json``, ``source_vocab.txt``, ``target_vocab.txt``, ``best.keras`` and
    ``results.json`` (history; BLEU on the test set with greedy and beam search).

    Args:
        splits: optional ``{"train": (sources, targets), "valid": ..., "test": ...}``
            instead of the config's data.
    """
    # First: "mirrored" on CPU must split the device before any TensorFlow op runs.
    strategy = common.distribution_strategy(config["strategy"], config["mirrored_cpus"])
    config = common.for_worker(config, strategy)  # multi_worker: a folder per worker
    common.set_seed(config["seed"])
    for side in ("source", "target"):
        if config[f"{side}_tokenizer"] not in TOKENIZERS:
            raise common.ConfigError(
                f"`{side}_tokenizer` must be one of {TOKENIZERS}, got "
                f"{config[side + '_tokenizer']!r}."
            )
    splits = splits or load_splits(config)
    out = config["output_dir"]
    os.makedirs(out, exist_ok=True)
    common.write_json(os.path.join(out, "config.json"), config)

    sources, targets = splits["train"]
    vocabs = []
    for side, texts in (("source", sources), ("target", targets)):
        vocab = build_vocabulary(config, side, texts)
        vocab.save(os.path.join(out, f"{side}_vocab.txt"))
        vocabs.append(vocab)
    train_columns = encode_pairs(config, *vocabs, sources, targets, filter_lengths=True)
    train_data = make_dataset(config, train_columns, shuffle=True)
    valid_data = make_dataset(
        config, encode_pairs(config, *vocabs, *splits["valid"], filter_lengths=True),
        shuffle=False,
    )
    with strategy.scope():
        model = build_model(config, len(vocabs[0]), len(vocabs[1]))
        compile_model(model, config)
    began = time.perf_counter()
    history = common.fit(model, config, train_data, valid_data, "val_loss", "min",
                         callbacks)
    results = {
        "train_pairs": len(sources),
        "train_pairs_used": len(train_columns[0]),
        "source_vocabulary": len(vocabs[0]),
        "target_vocabulary": len(vocabs[1]),
        "parameters": model.count_params(),
        "replicas": strategy.num_replicas_in_sync,
        "train_seconds": time.perf_counter() - began,
        "history": history,
    }
    if splits.get("test"):
        translator = Translator.from_run(config)
        results["test"] = translator.evaluate(*splits["test"])
        results["heatmaps"] = write_heatmaps(translator, splits["test"][0], out)
    common.write_json(os.path.join(out, "results.json"), results)
    return results


def _run_train(config, args):
    return train(config)


def _run_evaluate(config, args):
    config = common.saved_config(DEFAULTS, config["output_dir"], args.overrides)
    if not config["test"]:
        raise common.ConfigError("evaluate needs `--test` ([SOURCE_FILE, TARGET_FILE]).")
    sources, references = load_pairs(config, config["test"], "test")
    translator = Translator.from_run(config)
    results = translator.evaluate(sources, references)
    results["heatmaps"] = write_heatmaps(translator, sources, config["output_dir"])
    common.write_json(os.path.join(config["output_dir"], "evaluation.json"), results)
    return results


def _translate_arguments(parser):
    parser.add_argument("texts", nargs="*", help="sentences to translate")
    parser.add_argument("--input", help="a file with one sentence per line")


def _run_translate(config, args):
    from kerasrnn.data.loaders import read_lines

    config = common.saved_config(DEFAULTS, config["output_dir"], args.overrides)
    texts = list(args.texts)
    if args.input:
        texts += [line for _, line in read_lines(args.input, config["encoding"])]
    translations = Translator.from_run(config).translate(texts)
    return [{"text": s, "translation": t} for s, t in zip(texts, translations)]


def _heatmap_arguments(parser):
    parser.add_argument("texts", nargs="*", help="source sentences to plot")
    parser.add_argument("--input", help="a file with one source sentence per line")


def _run_heatmap(config, args):
    """One attention heatmap PNG per given sentence, ``heatmap_<i>.png`` in the run
    folder, from the translation `translate` gives (beam search, `beam_size`)."""
    from kerasrnn.data.loaders import read_lines

    config = common.saved_config(DEFAULTS, config["output_dir"], args.overrides)
    texts = list(args.texts)
    if args.input:
        texts += [line for _, line in read_lines(args.input, config["encoding"])]
    if not texts:
        raise common.ConfigError("heatmap needs sentences: as arguments or --input FILE.")
    translator = Translator.from_run(config)
    translations = translator.translate(texts)
    return [
        {"text": text, "translation": translation,
         "heatmap": translator.heatmap(
             text, os.path.join(config["output_dir"], f"heatmap_{i}.png"),
             translation=translation)}
        for i, (text, translation) in enumerate(zip(texts, translations))
    ]


def _demo_arguments(parser):
    parser.add_argument("--data", nargs=2, metavar=("SOURCE", "TARGET"),
                        help="train on these parallel files instead of generated dates")
    parser.add_argument("--examples", type=int, default=30000,
                        help="generated date pairs (train + valid + test)")
    parser.add_argument("--test-examples", type=int, default=1000,
                        help="held-out pairs for the final scores")


def demo(config, data=None, examples=30000, test_examples=1000, log=print):
    """The main job: trains on generated dates (or the `data` files), scores the
    held-out pairs, prints beam-search translations, writes an attention heatmap and
    exports the SavedModel. Returns the summary (also in ``demo.json``)."""
    from recipes.classifier import holdout

    from kerasrnn.data import load_parallel_text
    from kerasrnn.tasks import date_translation_task

    if data:
        sources, targets = load_parallel_text(*data, encoding=config["encoding"])
    else:
        sources, targets = date_translation_task(examples, seed=config["seed"])
    if len(sources) < 3:
        raise common.RecipeError(f"the demo needs at least 3 sentence pairs, got {len(sources)}.")
    fraction = min(0.5, test_examples / len(sources))
    train_pairs, test_pairs = holdout(sources, targets, fraction, config["seed"] + 1)
    splits = {"train": train_pairs, "test": None}
    splits["train"], splits["valid"] = holdout(
        *train_pairs, min(0.5, config["valid_fraction"]), config["seed"] + 2
    )
    log(f"training on {len(splits['train'][0])} pairs "
        f"({'generated dates' if not data else ' / '.join(data)}), "
        f"validating on {len(splits['valid'][0])}, testing on {len(test_pairs[0])}")
    results = train(config, splits)
    translator = Translator.from_run(config)
    scores = translator.evaluate(*test_pairs)
    beam = f"beam{config['beam_size']}" if config["beam_size"] > 1 else "greedy"
    log(f"held-out exact match: greedy {scores['greedy']['exact_match']:.2%}, "
        f"beam search {scores[beam]['exact_match']:.2%}; BLEU greedy "
        f"{scores['greedy']['bleu']:.2f}, beam {scores[beam]['bleu']:.2f}")
    for sample in scores[beam]["samples"]:
        log(f"  {sample['source']!r:40} -> {sample['translation']!r}"
            f"   (reference {sample['reference']!r})")
    out = config["output_dir"]
    heatmaps = write_heatmaps(translator, test_pairs[0], out)
    saved_model = translator.export(os.path.join(out, "saved_model"))
    log(f"attention heatmaps: {', '.join(heatmaps)}; SavedModel: {saved_model}")
    summary = {
        "train_seconds": results["train_seconds"],
        "epochs_run": results["history"]["epochs_run"],
        "test": {k: v for k, v in scores.items()},
        "heatmaps": heatmaps,
        "saved_model": saved_model,
    }
    common.write_json(os.path.join(out, "demo.json"), summary)
    return summary


def _run_demo(config, args):
    overrides = dict(args.overrides)
    if not args.data:  # the generated task has its own tuned defaults
        overrides = {**DEMO_DEFAULTS, **overrides}
    config = common.load_config(DEFAULTS, args.config, overrides)
    summary = demo(config, args.data, args.examples, args.test_examples,
                   log=lambda line: print(line, file=sys.stderr))
    return {
        "exact_match": {k: v["exact_match"] for k, v in summary["test"].items()
                        if isinstance(v, dict)},
        "bleu": {k: v["bleu"] for k, v in summary["test"].items() if isinstance(v, dict)},
        "train_seconds": summary["train_seconds"],
        "heatmaps": summary["heatmaps"],
        "saved_model": summary["saved_model"],
    }


COMMANDS = {
    "train": ("train a translator (and score it on --test)", None, _run_train),
    "evaluate": ("BLEU of a trained translator on --test, greedy and beam search",
                 None, _run_evaluate),
    "translate": ("translate sentences", _translate_arguments, _run_translate),
    "heatmap": ("attention heatmap PNGs (source x translation tokens) of chosen "
                "sentences, written to the run folder", _heatmap_arguments, _run_heatmap),
    "export": ("export a SavedModel: translate(text) -> translation",
               common.export_arguments,
               common.export_command(DEFAULTS, Translator.from_run)),
    "demo": ("the self-contained demo: dates written many ways -> ISO dates",
             _demo_arguments, _run_demo),
}


def main(argv=None):
    return common.main(argv, "recipes.translator", __doc__.splitlines()[0], DEFAULTS,
                       COMMANDS)


if __name__ == "__main__":
    sys.exit(main())
