"""Recurrent language model: word or character level, stateful truncated BPTT or padded
sentences, perplexity, generation and SavedModel export.

    embedding -> dropout -> [RNN(cell) -> dropout] x num_layers -> softmax over the vocabulary

(dropout on the non-recurrent connections only, Zaremba et al. 2014; optionally the
output layer reuses the embedding matrix, Press & Wolf 2017). Trained on shifted targets
with masked cross-entropy, by SGD with the paper's schedule (lr constant for
`lr_decay_after` epochs, then multiplied by `lr_decay` every epoch) or Adam, gradients
clipped by global norm.

With ``--bidirectional true`` a biLM (Peters et al. 2018): a forward and a backward LM
over the shared embedding and output layer, separate recurrent stacks; the backward one
reads the text reversed and predicts the previous token (`backward_stream` states the
exact layout). The loss is the mean of the two; perplexity is reported per direction and
together. `generate` and `export` use the forward LM. `kerasrnn.layers.BiLMFeatures` gives
a trained biLM's per-layer contextual features (the tagger's ``--contextual-lm``, read
from the run's files by `recipes.contextual`).

Command line::

    python -m recipes.language_model train    --output-dir runs/ptb [--config FILE] [--flags]
    python -m recipes.language_model evaluate --output-dir runs/ptb [--split test]
    python -m recipes.language_model generate --output-dir runs/ptb --prompt "the market" \
        [--method greedy|sample|beam] [--temperature 0.8] [--top-k 40] [--top-p 0.9]
    python -m recipes.language_model export   --output-dir runs/ptb --export-dir runs/ptb/saved

Ready configs (run from the repository root; the data paths are relative to it):
`recipes/configs/zaremba_small.yaml` and `recipes/configs/zaremba_medium.yaml`, Zaremba et
al.'s "small" (CPU) and "medium" (GPU) Penn Treebank models, e.g.
``python -m recipes.language_model train --config recipes/configs/zaremba_small.yaml``.

Perplexity is exp(mean negative log-likelihood per token) over the whole stream, every
`[END]` (`<eos>`) counted; at character level bits per character = mean NLL / ln 2.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402

import kerasrnn.models  # noqa: E402
from kerasrnn.export.language_model import TextGenerator  # noqa: E402
from recipes import common, lm_training  # noqa: E402
from recipes.common import ConfigError, Option  # noqa: E402
from recipes.config import count_or_zero  # noqa: E402
from recipes.lm_training import (  # noqa: E402,F401 (the recipe's parts, by their old names)
    DIRECTIONS,
    VOCABULARY_OPTION,
    EpochEvaluation,
    backward_stream,
    batches,
    build_model,
    compile_model,
    decoding_strategy,
    direction_batches,
    direction_model,
    direction_perplexity,
    extended_weights,
    first_token,
    learning_rate,
    load_data,
    make_loss,
    perplexity,
    prepare_data,
    read_splits,
    rnn_layers,
    training_data,
)

PTB = "corpus:ptb"  # kerasrnn.datasets: $KERASRNN_DATA/ptb, the cache, or a download

OPTIONS = dict(
    common.COMMON_OPTIONS,
    output_dir=Option("runs/language_model", common.COMMON_OPTIONS["output_dir"].help),
    # data
    train_file=Option(
        f"{PTB}/ptb.train.txt",
        "training text, one sentence per line "
        "(plain or gzip; corpus:NAME/FILE: a kerasrnn.datasets corpus)",
    ),
    valid_file=Option(f"{PTB}/ptb.valid.txt", "validation text; empty: none"),
    test_file=Option(f"{PTB}/ptb.test.txt", "test text; empty: none"),
    level=Option("word", "tokens: whitespace-separated words or characters", ("word", "char")),
    unk_token=Option("<unk>", "the corpus' own rare-word marker, read as [UNK]"),
    **VOCABULARY_OPTION,
    **common.vocabulary_options(
        0,
        0,
        notes={
            "max_vocab": "0: every training token (with min_freq)",
            "embedding_dim": "0: the same as units",
        },
    ),
    batching=Option(
        "stream",
        "stream: the corpus as one stream in stateful truncated-"
        "BPTT windows; sentences: padded sentence batches",
        ("stream", "sentences"),
    ),
    steps=Option(20, "unrolled steps per window (stream)"),
    max_sentence_length=Option(0, "cut longer sentences (sentences); 0: no limit"),
    # model (Zaremba et al.'s "small" configuration by default)
    bidirectional=Option(
        False,
        "train a biLM: a forward and a backward LM (the backward "
        "reads the text reversed and predicts the previous token) with "
        "shared embedding and output layers; loss = the mean of the two; "
        "generate/export use the forward LM only",
    ),
    **common.cell_options("lstm", units=200, num_layers=2),
    dropout=Option(0.0, "dropout rate on the non-recurrent connections"),
    tie_embeddings=Option(
        False, "the output layer reuses the embedding matrix (needs embedding_dim == units)"
    ),
    # AWD-LSTM's regularisers (Merity et al. 2018; kerasrnn.layers), all off by default
    weight_drop=Option(
        0.0, "DropConnect rate on each layer's recurrent kernel (WeightDrop; AWD-LSTM: 0.5)"
    ),
    embedding_dropout=Option(
        0.0, "whole-word dropout rate on the embedding rows (EmbeddingDropout; AWD-LSTM: 0.1)"
    ),
    locked_dropout=Option(
        0.0,
        "locked (variational) dropout rate, one mask per sequence shared over time "
        "(SpatialDropout1D), on the embeddings and after each layer, beside `dropout`",
    ),
    ar_alpha=Option(0.0, "AR: weight of the mean squared last-layer output (AWD-LSTM: 2)"),
    tar_beta=Option(0.0, "TAR: weight of the mean squared step-to-step change of it (AWD-LSTM: 1)"),
    init_scale=Option(0.1, "weights uniform in [-s, s]; 0: Keras' initializers"),
    unroll=Option(False, "unroll the RNN time loop (short windows only)"),
    jit_compile=Option(
        True,
        "compile the training step with XLA (on a 2-core CPU it "
        "measured 1.2-1.3x faster for the small LSTM: bench/README.md)",
    ),
    # training
    optimizer=Option("sgd", "the training optimizer: SGD or Adam", ("sgd", "adam")),
    **common.training_options(
        batch_size=20,
        learning_rate=1.0,
        clipnorm=Option(5.0, "clip the global gradient norm to this; 0 disables clipping"),
        epochs=13,
        patience=0,
    ),
    lr_decay=Option(
        0.5,
        "after `lr_decay_after` epochs the rate is multiplied by this every epoch "
        "(not with a `time_budget`, whose schedule sets the rate)",
    ),
    lr_decay_after=Option(4, "epochs at the initial rate before decaying"),
    loss_reduction=Option(
        "sum_over_time",
        "sum_over_time: the paper's loss (summed over "
        "the unrolled steps, averaged over the batch); mean: per token",
        ("sum_over_time", "mean"),
    ),
    evaluate_test_each_epoch=Option(False, "also measure the test perplexity after every epoch"),
    init_from=Option(
        None,
        "run folder of a trained LM to start from (its vocabulary, architecture and best "
        "weights; e.g. fine-tuning it on new text, ULMFiT's second stage); null: "
        "random weights and a vocabulary of `train_file`",
    ),
    extend_vocabulary=Option(
        0,
        "with `init_from`: the words of `train_file` seen at least this many times that "
        "its vocabulary lacks join it, their embedding and output rows starting at the "
        "mean of its rows (ULMFiT's target vocabulary); 0: its vocabulary as it is",
        check=count_or_zero("0: off"),
    ),
    # generation and export
    prompt=Option("", "generate: the prompt when none is given as an argument"),
    method=Option(
        "greedy",
        "generate / export decoding (export: greedy or beam)",
        ("greedy", "sample", "beam"),
    ),
    gen_length=Option(30, "tokens generated at most"),
    **common.decoding_options(5, sampling=True),
)
DEFAULTS = common.defaults_of(OPTIONS)


# -------------------------------------------------------------------------- the model


class LanguageModel:
    """A trained language model with its vocabulary: perplexity, generation, export.
    `model` is the trained `LanguageModelBackbone` (`variant` rebuilds it stateful);
    `task` the `kerasrnn.models.LanguageModel` around it; `text()` its
    `kerasrnn.export.TextGenerator` with the configured decoding."""

    def __init__(self, model, vocabulary, config):
        self.model, self.vocabulary, self.config = model, vocabulary, config

    @classmethod
    def from_run(cls, config):
        """The vocabulary and best model of a `train` run: ``best.keras``; a run of
        the previous layout (``best.weights.h5`` / ``model.weights.h5``) loads too."""
        from kerasrnn.data.vocabulary import Vocabulary

        out = config["output_dir"]
        vocabulary = Vocabulary.load(os.path.join(out, "vocabulary.txt"))
        model = build_model(config, len(vocabulary))
        best = os.path.join(out, "best.keras")
        if os.path.exists(best):
            import keras_hub  # noqa: F401 (registers the ReversibleEmbedding of older runs)

            model.set_weights(keras.saving.load_model(best, compile=False).get_weights())
            return cls(model, vocabulary, config)
        for old in ("best.weights.h5", "model.weights.h5"):  # the layout before best.keras
            if os.path.exists(os.path.join(out, old)):
                model.load_weights(os.path.join(out, old))
                return cls(model, vocabulary, config)
        raise FileNotFoundError(f"no trained model at {best}; run `train` first.")

    def variant(self, batch_size=None, stateful=False):
        """The trained weights in a model with a fixed batch size / stateful RNNs."""
        if batch_size is None and not stateful:
            return self.model
        model = build_model(self.config, len(self.vocabulary), batch_size, stateful)
        model.set_weights(self.model.get_weights())
        return model

    def evaluate(self, splits, names=("valid", "test")):
        """Perplexity (and bits per character at character level) of each split in
        `names` of `splits` (``{split: sentences}``), over each whole stream; for a
        biLM per direction too (`direction_perplexity`)."""
        config = self.config
        stream, batch = config["batching"] == "stream", config["batch_size"]
        model = self.variant(batch if stream else None, stream)
        results = {}
        for split in (name for name in names if splits.get(name)):
            source = config[f"{split}_file"]
            data = direction_batches(config, splits[split], self.vocabulary, batch, source=source)
            result = direction_perplexity(model, data, config)
            if config["level"] == "char":
                for part in [result] + [result.get(d) for d in DIRECTIONS]:
                    if part:
                        part["bits_per_character"] = part.pop("bits_per_token")
            results[split] = result
        return results

    @property
    def task(self):
        return kerasrnn.models.LanguageModel(self.model, max_length=self.config["gen_length"])

    def text(self, config=None):
        config = config or self.config
        strategy, size = decoding_strategy(config), config["gen_length"]
        level, first = config["level"], first_token(config)
        return TextGenerator(self.task, self.vocabulary, strategy, size, level, first)

    def generate(self, prompts=None):
        """Continuations of `prompts` (see the module function `generate`)."""
        return generate(self.config, prompts, self.vocabulary, self.model)

    def export(self, path):
        """The SavedModel of the module function `export`."""
        return export(self.config, path, self)

    def export_runtime(self, path, format_name, sequence_length=64, quantization=None):
        """The onnxruntime or LiteRT bundle of `TextGenerator.export_runtime`."""
        config = self.config
        if config["bidirectional"] or config["method"] not in ("greedy", "beam"):
            raise ConfigError(
                f"the {format_name} export takes a forward language model decoding with "
                "method greedy or beam: use --format saved_model for a biLM, or pass "
                "--method greedy."
            )
        return self.text().export_runtime(path, format_name, sequence_length, quantization)


def load_trained(config, batch_size=None, stateful=False):
    """The vocabulary and a model with the trained (best) weights."""
    trained = LanguageModel.from_run(config)
    return trained.vocabulary, trained.variant(batch_size, stateful)


def evaluate(config, splits=None, vocabulary=None, names=("valid", "test")):
    """Valid and test perplexity (and bits per character at character level) of the
    trained model, over each whole stream."""
    trained = LanguageModel.from_run(config)
    if splits is None:
        splits, _ = load_data(config, trained.vocabulary)
    return trained.evaluate(splits, names)


# ----------------------------------------------------------------------------- train


class LanguageModelRecipe(common.Recipe):
    """The language model on the recipe skeleton (`common.Recipe`): its data are
    sentence lists (`load_data`), its validation the per-epoch perplexity
    (`EpochEvaluation`), its trained-model object `LanguageModel`."""

    name = "language_model"
    options = OPTIONS
    predictor = LanguageModel
    metric = "perplexity"
    predict_command = "generate"
    run_options = (
        "valid_file",
        "test_file",
        "unk_token",
        "prompt",
        "method",
        "gen_length",
        "temperature",
        "top_k",
        "top_p",
        "beam_size",
        "length_normalization",
    )

    def check_config(self, config):
        if config["strategy"] in ("mirrored", "multi_worker") and config["batching"] == "stream":
            # A stateful RNN carries each row's state into the next window of the same
            # row; split over replicas, its fixed-batch state variables would be
            # mirrored, not kept per row.
            raise ConfigError(
                f"`strategy: {config['strategy']}` does not work with `batching: stream` "
                "(stateful windows carry each row's RNN state, which replicas cannot "
                "share); use "
                "`batching: sentences` or `strategy: default`."
            )
        if config["extend_vocabulary"] and not config["init_from"]:
            raise ConfigError("`extend_vocabulary` needs `init_from` (the vocabulary to extend).")

    def load_splits(self, config):
        return read_splits(config)

    def train(self, config, splits=None, callbacks=(), continue_run=False):
        if config["init_from"]:  # the architecture of the run it starts from
            stored = common.saved_config(OPTIONS, config["init_from"])
            config = dict(config, **{key: stored[key] for key in INIT_ARCHITECTURE})
        return super().train(config, splits, callbacks, continue_run)

    def prepare(self, config, splits):
        return prepare_data(config, splits)

    def build(self, config, prepared):
        stream = config["batching"] == "stream"
        batch = config["batch_size"] if stream else None
        size = len(prepared.model["vocabulary"])
        model = build_model(config, size, batch, stream)
        if config["init_from"]:
            start = LanguageModel.from_run(common.saved_config(OPTIONS, config["init_from"]))
            model.set_weights(
                extended_weights(
                    start.model.get_weights(),
                    [w.shape for w in model.get_weights()],
                    len(start.vocabulary),
                    config["init_from"],
                )
            )
        return compile_model(model, config)

    def fit_callbacks(self, config, prepared):
        stream = config["batching"] == "stream"
        # The per-epoch evaluation's copy of the weights, outside the strategy's scope:
        # it runs predict on whole batches.
        eval_model = build_model(
            config,
            len(prepared.model["vocabulary"]),
            config["batch_size"] if stream else None,
            stream,
        )
        # Order matters at each epoch end: the evaluation puts valid_perplexity in the
        # logs for the checkpoint.
        callbacks = [EpochEvaluation(config, eval_model, prepared.model["eval_data"])]
        if not config["time_budget"]:  # with one, the budget's schedule sets the rate
            callbacks.append(
                keras.callbacks.LearningRateScheduler(lambda epoch: learning_rate(config, epoch))
            )
        return callbacks

    def monitor(self, config, prepared):
        if prepared.model["eval_data"].get("valid") is not None:
            return "valid_perplexity", "min"
        return "perplexity", "min"

    def summarize(self, config, prepared, results, rows):
        """`epochs` (one row per epoch), `train_seconds` and `tokens_per_second` of the
        training passes only (summed over the epochs, before a resume too),
        `wall_seconds` (this call's `fit`, per-epoch evaluation included)."""
        results.pop("history")
        results["wall_seconds"] = results.pop("train_seconds")
        train_seconds = sum(row["train_seconds"] for row in rows)
        results["epochs"] = rows
        results["train_seconds"] = train_seconds
        results["tokens_per_second"] = (
            prepared.model["tokens"] * len(rows) / train_seconds if train_seconds else None
        )
        return results

    def evaluate_splits(self, config, splits):
        return LanguageModel.from_run(config).evaluate(splits)

    def predict_arguments(self, parser):
        parser.add_argument(
            "texts", nargs="*", metavar="prompts", help="prompts (default: --prompt)"
        )
        parser.add_argument("--input", help="a file with one prompt per line")

    def predict_rows(self, trained, texts):
        return trained.generate(texts or None)

    def extra_commands(self):
        def evaluate_arguments(parser):
            parser.add_argument("--split", choices=["valid", "test"], help="default: both")

        def run_evaluate(config, args):
            config = self.stored(config, args)
            return evaluate(config, names=(args.split,) if args.split else ("valid", "test"))

        return {
            "evaluate": (
                "perplexity of a trained model on the valid/test streams",
                evaluate_arguments,
                run_evaluate,
                self.options_of("evaluate"),
            ),
            **lm_training.export_embeddings_command(self, LanguageModel.from_run),
        }


# What `init_from` takes from the run it starts from: the options that shape the weights.
INIT_ARCHITECTURE = (
    "level",
    "bidirectional",
    "cell",
    "cell_options",
    "units",
    "num_layers",
    "embedding_dim",
    "tie_embeddings",
)

RECIPE = LanguageModelRecipe()


def train(config, splits=None, callbacks=(), continue_run=False):
    """Trains, evaluates valid/test perplexity after each epoch, saves the vocabulary,
    the best model by validation perplexity (``best.keras``), the last epoch's weights
    and optimizer state, ``results.json`` and ``training_curves.png``. Re-running an
    interrupted run with the same config resumes it (`BackupAndRestore`), epoch rows and
    best score included; `continue_run` extends a finished one.

    Args:
        config: a complete config (`common.load_config(OPTIONS, ...)`).
        splits: optional ``{"train": sentences, "valid": ..., "test": ...}`` (token
            lists) instead of the config's files.
        callbacks: extra Keras callbacks.
        continue_run: extend the finished run from its last epoch to ``epochs``.
    """
    return RECIPE.train(config, splits, callbacks, continue_run)


# ------------------------------------------------------------------------ generation


def generate(config, prompts=None, vocabulary=None, model=None):
    """Continues each prompt (a string; "" starts a new sentence) with up to `gen_length`
    tokens, stopping at the sentence's end (`kerasrnn.export.TextGenerator.generate`).
    Returns a list of dicts with the continuation and how many prompt tokens were unknown."""
    if vocabulary is None or model is None:
        vocabulary, model = load_trained(config)
    prompts = [config["prompt"]] if prompts is None else list(prompts)
    return LanguageModel(model, vocabulary, config).text().generate(prompts)


# ---------------------------------------------------------------------------- export


def export(config, export_dir, trained=None):
    """A SavedModel with `serving_default(prompt: tf.string[batch]) ->
    {"continuation": tf.string[batch]}` and the streaming ``step`` signature
    (`kerasrnn.export.TextGenerator.export`; `method` greedy or beam: sampling is not
    exported). `trained`: the `LanguageModel` (default: the run's, loaded)."""
    if config["method"] not in ("greedy", "beam"):
        raise ConfigError(f"export supports method 'greedy' or 'beam', got {config['method']!r}.")
    trained = trained or LanguageModel.from_run(config)
    trained.text(config).export(export_dir)
    return {"export_dir": export_dir}


# ------------------------------------------------------------------------------- CLI


def main(argv=None):
    return RECIPE.main(argv)


if __name__ == "__main__":
    sys.exit(main())
