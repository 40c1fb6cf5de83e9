"""Recurrent language model: word or character level, stateful truncated BPTT or padded
sentences, perplexity, generation and export.

A command line over `kerasrnn.models.LanguageModel` (an embedding, stacked recurrent
layers with AWD-LSTM's regularisers, a readout that may reuse the embedding; with
``--bidirectional true`` a biLM) with its `LanguageModelPreprocessor`, trained on
shifted targets by SGD with Zaremba et al.'s schedule or Adam. Perplexity is exp(mean
negative log-likelihood per token) over the whole stream, every `[END]` counted; at
character level bits per character = mean NLL / ln 2. The commands, options and
measured results: docs/recipes/language_model.md.
"""

import os
import sys

from recipes import common, decoding
from recipes.common import ConfigError, Option
from recipes.files import read_vocabulary

PTB = "corpus:ptb"  # kerasrnn.datasets: $KERASRNN_DATA/ptb, the cache, or a download
DIRECTIONS = ("forward", "backward")

OPTIONS = dict(
    common.COMMON_OPTIONS,
    output_dir=Option("runs/language_model", common.COMMON_OPTIONS["output_dir"].help),
    # data
    train_file=Option(f"{PTB}/ptb.train.txt", "training text, a sentence a line"),
    valid_file=Option(f"{PTB}/ptb.valid.txt", "validation text; empty: none"),
    test_file=Option(f"{PTB}/ptb.test.txt", "test text; empty: none"),
    level=Option("word", "tokens: whitespace-separated words or characters", ("word", "char")),
    unk_token=Option("<unk>", "the corpus' own rare-word marker, read as [UNK]"),
    vocabulary_file=Option(
        None, "a vocabulary file (a translator's target_vocab.txt); null: built"
    ),
    **common.vocabulary_options(
        0,
        0,
        notes={
            "max_vocab": "0: every training token (with min_freq)",
            "embedding_dim": "0: the same as units",
        },
    ),
    batching=Option("stream", "stateful BPTT windows or padded sentences", ("stream", "sentences")),
    steps=Option(20, "unrolled steps per window (stream)"),
    max_sentence_length=Option(0, "cut longer sentences (sentences); 0: no limit"),
    # model (Zaremba et al.'s "small" configuration by default)
    bidirectional=Option(False, "a biLM: forward and backward LMs sharing embedding and readout"),
    **common.cell_options("lstm", units=200, num_layers=2),
    dropout=Option(0.0, "dropout rate on the non-recurrent connections"),
    tie_embeddings=Option(False, "the readout reuses the embedding (embedding_dim == units)"),
    # AWD-LSTM's regularisers (Merity et al. 2018; kerasrnn.layers), all off by default
    weight_drop=Option(0.0, "DropConnect rate on the recurrent kernels (AWD-LSTM: 0.5)"),
    embedding_dropout=Option(0.0, "whole-word dropout rate on the embedding (AWD-LSTM: 0.1)"),
    locked_dropout=Option(0.0, "variational dropout rate: one mask per sequence, every step"),
    ar_alpha=Option(0.0, "AR: weight of the mean squared last-layer output (AWD-LSTM: 2)"),
    tar_beta=Option(0.0, "TAR: weight of the mean squared step-to-step change of it (AWD-LSTM: 1)"),
    init_scale=Option(0.1, "weights uniform in [-s, s]; 0: Keras' initializers"),
    unroll=Option(False, "unroll the RNN time loop (short windows only)"),
    jit_compile=Option(True, "compile the training step with XLA"),
    # training
    optimizer=Option("sgd", "the training optimizer: SGD or Adam", ("sgd", "adam")),
    **common.training_options(
        batch_size=20,
        learning_rate=1.0,
        clipnorm=Option(5.0, "clip the global gradient norm to this; 0: off"),
        epochs=13,
        patience=0,
    ),
    lr_decay=Option(0.5, "after `lr_decay_after` epochs, the rate's factor per epoch"),
    lr_decay_after=Option(4, "epochs at the initial rate before decaying"),
    loss_reduction=Option(
        "sum_over_time", "summed over a window (Zaremba) or per token", ("sum_over_time", "mean")
    ),
    evaluate_test_each_epoch=Option(False, "also measure the test perplexity after every epoch"),
    init_from=Option(None, "a trained LM's run folder to start from (vocabulary, weights)"),
    extend_vocabulary=Option(0, "with `init_from`: words seen this often join it (ULMFiT); 0: off"),
    # generation and export
    prompt=Option("", "generate: the prompt when none is given as an argument"),
    method=Option("greedy", "decoding (export: greedy or beam)", ("greedy", "sample", "beam")),
    gen_length=Option(30, "tokens generated at most"),
    **common.decoding_options(5, sampling=True),
)
DEFAULTS = common.defaults_of(OPTIONS)

# What `init_from` takes from the run it starts from: the options that shape the weights.
INIT_ARCHITECTURE = (
    "level bidirectional cell cell_options units num_layers embedding_dim tie_embeddings"
).split()


# ------------------------------------------------------------------------------ data


def read_splits(config, names=("train", "valid", "test")):
    """``{name: sentences}`` of the splits `names` (default all three): the corpora's
    sentences as token lists (valid and test None when their file option is empty)."""
    from kerasrnn.data.language_model import read_corpus

    def read(split):
        return read_corpus(config[f"{split}_file"], config["level"], config["unk_token"])

    return {s: read(s) if s == "train" or config[f"{s}_file"] else None for s in names}


def stream(config):
    return config["batching"] == "stream"


def data_of(config, sentences, vocabulary, shuffle=False, source=None):
    """``{direction: data}`` of `sentences` as the run reads them
    (`kerasrnn.data.language_model.language_model_data`): stateful windows (stream) or
    padded sentence batches; `source` (the file) names the data in errors."""
    from kerasrnn.data.language_model import language_model_data

    try:
        return language_model_data(
            sentences,
            vocabulary,
            config["batch_size"],
            config["steps"] if stream(config) else None,
            shuffle,
            config["seed"],
            config["max_sentence_length"] or None,
            config["bidirectional"],
        )
    except ValueError as error:  # a window longer than the corpus, no sentence
        raise common.RecipeError(f"{source or 'the corpus'}: {error}") from None


# ----------------------------------------------------------------------------- model


def build_model(config, preprocessor, stateful=False):
    """The configured `kerasrnn.models.LanguageModel` over a `LanguageModelBackbone`;
    `stateful` keeps each RNN's state across calls (the batch size fixed to
    `batch_size`), as stream training reads its windows."""
    import keras

    from kerasrnn.models import LanguageModel, LanguageModelBackbone
    from kerasrnn.models import LanguageModelRegularization as Regularization

    keys = ("dropout", "locked_dropout", "embedding_dropout", "weight_drop", "ar_alpha")
    scale = config["init_scale"]
    # one seed per weight matrix, counted from seed * 1000 (the backbone's copies)
    init = keras.initializers.RandomUniform(-scale, scale, seed=config["seed"] * 1000)
    options = {"unroll": config["unroll"], "stateful": stateful}
    if stateful:
        options["batch_size"] = config["batch_size"]
    try:
        backbone = LanguageModelBackbone(
            len(preprocessor.vocabulary),
            config["units"],
            config["num_layers"],
            common.make_cell(config["cell"], config["units"], **config["cell_options"]),
            config["embedding_dim"] or None,
            config["tie_embeddings"],
            Regularization(*(config[k] for k in keys), config["tar_beta"], config["seed"]),
            init if scale else None,
            config["bidirectional"],
            rnn_options=options,
        )
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return LanguageModel(
        backbone, max_length=config["gen_length"], preprocessor=preprocessor, name="language_model"
    )


def compile_model(model, config):
    """Compiles `model` with the run's optimizer (SGD or Adam at the rate schedule,
    gradients clipped), the token cross-entropy (summed over a window's steps with
    ``loss_reduction: sum_over_time``; a biLM's the mean of its two directions') and
    perplexity. XLA cannot reach the replicas' variable copies on other devices
    (TensorFlow's "tf.Variable on a different device"): a multi-device strategy trains
    without it."""
    import keras
    import tensorflow as tf

    from kerasrnn.losses import SequenceCrossEntropy

    optimizers = {"sgd": keras.optimizers.SGD, "adam": keras.optimizers.Adam}
    optimizer = optimizers[config["optimizer"]](
        common.learning_rate_schedule(config), global_clipnorm=config["clipnorm"] or None
    )

    loss = SequenceCrossEntropy(per_sequence=config["loss_reduction"] == "sum_over_time")
    multi_device = tf.distribute.get_strategy().num_replicas_in_sync > 1
    model.compile(
        optimizer,
        loss,
        jit_compile=False if multi_device else config["jit_compile"],
        sampler=decoding.strategy(config),
    )
    return model


def learning_rate(config, epoch):
    """The rate of (0-based) `epoch`: lr * lr_decay ** max(0, epoch + 1 - lr_decay_after)."""
    return config["learning_rate"] * config["lr_decay"] ** max(
        0, epoch + 1 - config["lr_decay_after"]
    )


def first_token(config):
    """What precedes a prompt: the sentence boundary the model was trained on, `[END]`
    in a stream (the previous sentence's end), `[START]` for per-sentence batches."""
    from kerasrnn.special_tokens import END_ID, START_ID

    return END_ID if stream(config) else START_ID


# ------------------------------------------------------------------------ evaluation


def evaluate(config, task, splits, names=("valid", "test")):
    """Perplexity (and bits per character at character level) of each split in `names`
    of `splits` (``{split: sentences}``), over each whole stream, keras-hub's
    `Perplexity` fed the same batches (``keras_hub_perplexity``); for a biLM per
    direction too."""
    import keras_hub

    from kerasrnn.callbacks import language_model_perplexity

    results = {}
    for split in (name for name in names if splits.get(name)):
        data = data_of(
            config, splits[split], task.preprocessor.vocabulary, source=config[f"{split}_file"]
        )
        metric = keras_hub.metrics.Perplexity(
            from_logits=True, mask_token_id=0, name="keras_hub_perplexity"
        )
        result = language_model_perplexity(
            task, data, config["batch_size"], stream(config), [metric]
        )
        if config["level"] == "char":
            for part in [result] + [result.get(d) for d in DIRECTIONS]:
                if part:
                    part["bits_per_character"] = part.pop("bits_per_token")
        results[split] = result
    return results


def print_epoch(epoch, row):
    print(
        f"epoch={epoch} "
        + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
        file=sys.stderr,
        flush=True,
    )


# -------------------------------------------------------------------------- commands


class LanguageModelRecipe(common.Recipe):
    """The language model on the recipe skeleton (`common.Recipe`): its data are
    sentence lists (`read_splits`), its validation the per-epoch perplexity
    (`kerasrnn.callbacks.LanguageModelEvaluation`), its task
    `kerasrnn.models.LanguageModel`."""

    name = "language_model"
    options = OPTIONS
    task = "LanguageModel"
    metric = "perplexity"
    predict_command = "generate"
    run_options = (
        "valid_file test_file unk_token prompt method gen_length temperature top_k top_p "
        "beam_size length_normalization"
    ).split()

    def check_config(self, config):
        if config["strategy"] in ("mirrored", "multi_worker") and stream(config):
            # A stateful RNN carries each row's state into the next window of the same
            # row; split over replicas, its fixed-batch state variables would be
            # mirrored, not kept per row.
            raise ConfigError(
                f"`strategy: {config['strategy']}` does not work with `batching: stream` "
                "(stateful windows carry each row's RNN state, which replicas cannot "
                "share); use `batching: sentences` or `strategy: default`."
            )
        if config["extend_vocabulary"] and not config["init_from"]:
            raise ConfigError("`extend_vocabulary` needs `init_from` (the vocabulary to extend).")
        if config["vocabulary_file"] and config["init_from"]:
            raise ConfigError("`vocabulary_file` and `init_from` exclude each other: choose one.")

    def load_splits(self, config):
        return read_splits(config)

    def train(self, config, splits=None, callbacks=(), continue_run=False):
        if config["init_from"]:  # the architecture of the run it starts from
            stored = common.saved_config(OPTIONS, config["init_from"])
            config = dict(config, **{key: stored[key] for key in INIT_ARCHITECTURE})
        return super().train(config, splits, callbacks, continue_run)

    def prepare(self, config, splits):
        """The preprocessor (the vocabulary, also in vocabulary.txt; `init_from`'s when
        given) and the training windows or batches."""
        from kerasrnn.data import Vocabulary
        from kerasrnn.data.language_model import bidirectional_data
        from kerasrnn.models import LanguageModelPreprocessor
        from kerasrnn.special_tokens import SPECIAL_TOKENS

        if config["vocabulary_file"]:  # e.g. a translator's target vocabulary (fusion)
            vocabulary = read_vocabulary(config["vocabulary_file"])
        elif config["init_from"]:
            vocabulary = self.load(
                dict(config, output_dir=config["init_from"])
            ).preprocessor.vocabulary
            if config["extend_vocabulary"]:
                frequent = Vocabulary.build(splits["train"], min_freq=config["extend_vocabulary"])
                new = [t for t in frequent.tokens[len(SPECIAL_TOKENS) :] if t not in vocabulary]
                vocabulary = Vocabulary(vocabulary.tokens + new)
        else:
            vocabulary = Vocabulary.build(
                splits["train"], config["max_vocab"] or None, config["min_freq"]
            )
        vocabulary.save(os.path.join(config["output_dir"], "vocabulary.txt"))
        preprocessor = LanguageModelPreprocessor(vocabulary, config["level"], first_token(config))
        train = data_of(config, splits["train"], vocabulary, True, config["train_file"])
        eval_splits = {"valid": splits["valid"]} if splits.get("valid") else {}
        if config["evaluate_test_each_epoch"] and splits.get("test"):
            eval_splits["test"] = splits["test"]
        evaluated = {
            k: data_of(config, v, vocabulary, source=config[f"{k}_file"])
            for k, v in eval_splits.items()
        }
        if stream(config):  # predicted tokens (of each direction)
            tokens = int((train["forward"][1] != 0).sum())
        else:
            tokens = sum(len(s) + 1 for s in splits["train"])
        return common.Prepared(
            bidirectional_data(train) if config["bidirectional"] else train["forward"],
            None,
            {"preprocessor": preprocessor, "evaluated": evaluated, "tokens": tokens},
            {"vocabulary_size": len(vocabulary)},
        )

    def build(self, config, prepared):
        from kerasrnn.models.language_model import extended_weights

        model = build_model(config, prepared.model["preprocessor"], stateful=stream(config))
        if config["init_from"]:
            start = self.load(dict(config, output_dir=config["init_from"]))
            try:
                model.set_weights(
                    extended_weights(
                        start.get_weights(),
                        [w.shape for w in model.get_weights()],
                        len(start.preprocessor.vocabulary),
                    )
                )
            except ValueError as error:
                raise ConfigError(f"`init_from` {config['init_from']}: {error}") from None
        return compile_model(model, config)

    def fit_callbacks(self, config, prepared):
        import keras

        from kerasrnn.callbacks import LanguageModelEvaluation

        # Order matters at each epoch end: the evaluation puts valid_perplexity in the
        # logs for the checkpoint.
        callbacks = [
            LanguageModelEvaluation(
                prepared.model["evaluated"], config["batch_size"], stream(config), print_epoch
            )
        ]
        if not config["time_budget"]:  # with one, the budget's schedule sets the rate
            callbacks.append(
                keras.callbacks.LearningRateScheduler(lambda epoch: learning_rate(config, epoch))
            )
        return callbacks

    def monitor(self, config, prepared):
        if prepared.model["evaluated"].get("valid") is not None:
            return "valid_perplexity", "min"
        return "perplexity", "min"

    def summarize(self, config, prepared, results, rows):
        """`epochs` (their rows), `train_seconds` and `tokens_per_second` of the training
        passes alone (a resume's earlier epochs too), `wall_seconds` of this `fit`."""
        results.pop("history")
        results["wall_seconds"] = results.pop("train_seconds")
        train_seconds = sum(row["train_seconds"] for row in rows)
        results["epochs"] = rows
        results["train_seconds"] = train_seconds
        results["tokens_per_second"] = (
            prepared.model["tokens"] * len(rows) / train_seconds if train_seconds else None
        )
        return results

    def after_fit(self, config, prepared, splits):
        """A model of stateful windows is saved stateless, for any batch size."""
        if stream(config):
            from kerasrnn.callbacks import save_model_atomically

            save_model_atomically(self.load(config).stateless(), common.run_files(config)["best"])

    def evaluate_splits(self, config, splits):
        return evaluate(config, self.load(config), splits)

    def predict_arguments(self, parser):
        parser.add_argument(
            "texts", nargs="*", metavar="prompts", help="prompts (default: --prompt)"
        )
        parser.add_argument("--input", help="a file with one prompt per line")

    def predict_rows(self, trained, config, texts, args=None):
        """Each prompt's continuation and how many of its tokens are unknown."""
        prompts = list(texts) or [config["prompt"]]
        continuations = trained.generate(
            prompts, decoding.strategy(config), max_length=config["gen_length"]
        )
        return [
            {
                "prompt": prompt,
                "continuation": continuation,
                "unknown_prompt_tokens": trained.preprocessor.unknown_tokens(prompt),
            }
            for prompt, continuation in zip(prompts, continuations)
        ]

    def export_options(self, config):
        if config["method"] not in ("greedy", "beam"):
            raise ConfigError(
                f"export supports method 'greedy' or 'beam', got {config['method']!r}."
            )
        return {"strategy": decoding.strategy(config), "max_length": config["gen_length"]}

    def extra_commands(self):
        def evaluate_arguments(parser):
            parser.add_argument("--split", choices=["valid", "test"], help="default: both")

        def run_evaluate(config, args):
            config = self.stored(config, args)
            names = (args.split,) if args.split else ("valid", "test")
            return evaluate(config, self.load(config), read_splits(config, names), names)

        def embeddings_arguments(parser):
            parser.add_argument(
                "run", nargs="?", metavar="RUN", help="the LM's run folder (default: --output-dir)"
            )
            parser.add_argument("out", metavar="OUT.vec", help="the .vec file to write")

        def run_embeddings(config, args):
            if args.run:
                config = dict(config, output_dir=args.run)
            config = self.stored(config, args)
            try:
                return self.load(config).export_embeddings(args.out)
            except ValueError as error:  # a character-level run
                raise ConfigError(f"{config['output_dir']}: {error}") from None

        return {
            "evaluate": (
                "perplexity of a trained model on the valid/test streams",
                evaluate_arguments,
                run_evaluate,
                self.options_of("evaluate"),
            ),
            "export-embeddings": (
                "write the trained input embedding as a word2vec / fastText .vec text file "
                "(every recipe's --embeddings reads it)",
                embeddings_arguments,
                run_embeddings,
                self.options_of("export-embeddings"),
            ),
        }


RECIPE = LanguageModelRecipe()
train, main = RECIPE.train, RECIPE.main  # the module's API: `train(config, splits)`


if __name__ == "__main__":
    sys.exit(main())
