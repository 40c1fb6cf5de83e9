"""The option tables of the recipes: the groups of options they share, each defined
once (`COMMON_OPTIONS`, `data_options`, `training_options`, `vocabulary_options`,
`cell_options`, `decoding_options`; `retuned` gives a group with a recipe's own
defaults, `with_defaults` a table with a command's), and the ``--help`` group of every
option (`GROUPS`, `group_of`). Imports neither TensorFlow nor Keras."""

from recipes.config import Option, defaults_of

STRATEGIES = ("default", "mirrored", "multi_worker")

# The ``--help`` groups, in the order ``--help`` lists them, with what each holds.
GROUPS = {
    "data": "where the examples are and how they become tokens",
    "model": "the network: its layers, sizes and regularisers",
    "training": "the optimizer, its schedule, early stopping and averaging",
    "decoding": "how a trained model generates its outputs",
    "export": "the exported model",
    "run": "the run folder, seed, devices and logging",
}

# The group of every option the recipes have, by name (an `Option` may give its own
# `group` instead; an option in neither is a "model" option). tests/recipes/test_cli.py
# checks that every option of every recipe has one here or its own.
GROUP_OF = {
    **dict.fromkeys(
        (
            "train valid test encoding tfds_data_dir format valid_fraction test_fraction column "
            "token_column tag_column tfds_tags_key tag_scheme train_file valid_file test_file "
            "level unk_token batching steps max_sentence_length source_tokenizer target_tokenizer "
            "max_source_length max_target_length subword_vocab_size lowercase max_vocab "
            "min_freq max_chars max_length bucket_boundaries task vocabulary_file"
        ).split(),
        "data",
    ),
    **dict.fromkeys(
        (
            "embedding_dim embeddings freeze_embeddings embeddings_extend source_embeddings "
            "target_embeddings embedding_dropout word_dropout char_dim "
            "char_units cell cell_options units num_layers bidirectional dropout pooling "
            "naive_bayes naive_bayes_buckets naive_bayes_scale naive_bayes_counts_valid crf "
            "crf_constraints contextual_lm contextual_lm_trainable tie_embeddings weight_drop "
            "locked_dropout init_scale unroll encoder_units decoder_units attention "
            "attention_units luong_score input_feeding attention_layer_size relatedness_target "
            "hidden_units pretrained_lm init_from copy_attention coverage_weight"
        ).split(),
        "model",
    ),
    **dict.fromkeys(
        (
            "batch_size epochs learning_rate clipnorm patience time_budget budget_schedule warmup "
            "find_lr "
            "averaging ema_momentum optimizer lr_decay lr_decay_after loss_reduction ar_alpha "
            "tar_beta jit_compile evaluate_test_each_epoch extend_vocabulary label_smoothing "
            "scheduled_sampling sampling_probability sampling_steps sampling_mode "
            "lm_finetune_epochs lm_extend_vocabulary lr_schedule discriminative_decay "
            "gradual_unfreezing"
        ).split(),
        "training",
    ),
    **dict.fromkeys(
        (
            "prompt method gen_length temperature top_k top_p beam_size length_normalization "
            "max_decode_length max_length_ratio readout_dtype n_best replace_unk lm lm_weight "
            "beam_groups beam_diversity"
        ).split(),
        "decoding",
    ),
    **dict.fromkeys(
        ("output_dir seed tensorboard strategy mirrored_cpus verbose heatmaps").split(),
        "run",
    ),
}


def group_of(key, option):
    """The ``--help`` group of an option: its own `group`, else `GROUP_OF`'s for its
    name, else "model"."""
    group = option.group if isinstance(option, Option) else None
    return group or GROUP_OF.get(key, "model")


def retuned(table, changes):
    """`table` with `changes`: a value replaces an option's default, an `Option` the
    option; a name not in `table` is a TypeError (a typo must not add an option)."""
    unknown = sorted(set(changes) - set(table))
    if unknown:
        raise TypeError(f"{unknown} not in the option group {sorted(table)}")
    return {
        key: (
            changes[key]
            if isinstance(changes.get(key), Option)
            else option._replace(default=changes[key])
            if key in changes
            else option
        )
        for key, option in table.items()
    }


def with_defaults(options, defaults):
    """`options` with the `defaults` of a command that has its own (the demo's)."""
    return {
        key: option._replace(default=defaults[key]) if key in defaults else option
        for key, option in options.items()
    }


# The training group every recipe takes: `training_options` gives it with a recipe's
# own defaults.
_TRAINING = {
    "batch_size": Option(32, "examples per training batch (the global batch, over all replicas)"),
    "epochs": Option(10, "epochs to train at most (with --continue: the new total)"),
    "learning_rate": Option(1e-3, "the optimizer's learning rate"),
    "clipnorm": Option(5.0, "clip each gradient to this norm; 0 disables clipping"),
    "patience": Option(3, "early stopping: epochs without a better validation metric; 0: off"),
    "time_budget": Option(0.0, "minutes of training, the rate scheduled to fit them; 0: off"),
    "budget_schedule": Option(
        "cosine",
        "`time_budget`'s schedule: warmup + cosine, warmup-stable-decay, one-cycle, constant",
        ("cosine", "wsd", "one_cycle", "constant"),
    ),
    "warmup": Option(0.05, "with `time_budget`: the fraction of steps rising to the peak"),
    "find_lr": Option(True, "with `time_budget`: the peak by a range test in a tenth of it"),
    "averaging": Option(
        "none",
        "weight averaging from epoch 2 (polyak, ema) or once validation stalls (ntasgd)",
        ("none", "polyak", "ema", "ntasgd"),
    ),
    "ema_momentum": Option(0.999, "with `averaging: ema`: the moving average's momentum"),
}


def training_options(**changes):
    """The training group with the recipe's `changes` (``training_options(epochs=20)``)."""
    return retuned(_TRAINING, changes)


COMMON_OPTIONS = {
    "output_dir": Option("runs/model", "the run folder (a preset of the trained task)"),
    "seed": Option(1234, "random seed of weights, shuffling, dropout and held-out splits"),
    **_TRAINING,
    "tensorboard": Option(False, "write TensorBoard logs to <output_dir>/logs"),
    "strategy": Option(
        "default", "one device, all GPUs (or CPU replicas), the TF_CONFIG workers", STRATEGIES
    ),
    "mirrored_cpus": Option(2, "CPU replicas of `strategy: mirrored` on a machine without GPUs"),
    "verbose": Option(1, "0 silent, 1 bar, 2 a line per epoch, 3 TensorFlow's logs", (0, 1, 2, 3)),
}


def data_options(output_dir, train, holdouts=(), **more):
    """A recipe's options: `COMMON_OPTIONS`, its `output_dir`, the data specs (`train`
    says what one may be; the splits in `holdouts` are held out of it when not given),
    `encoding`, `tfds_data_dir`, then its own options (`more`)."""

    def other(split, name):
        absent = f"hold out `{split}_fraction` of `train`" if split in holdouts else "none"
        return Option(None, f"{name} data, in the forms of `train`; null: {absent}")

    return {
        **COMMON_OPTIONS,
        "output_dir": Option(output_dir, COMMON_OPTIONS["output_dir"].help),
        "train": Option(None, f"training data: {train}; a file may be corpus:NAME/FILE"),
        "valid": other("valid", "validation"),
        "test": other("test", "test"),
        "encoding": Option("utf-8", "text encoding of local files"),
        "tfds_data_dir": Option(None, "tensorflow-datasets data folder; null: its default"),
        **more,
    }


COMMON_DEFAULTS = defaults_of(COMMON_OPTIONS)


CELLS = {
    "lstm": "LSTMCell",
    "gru": "GRUCell",
    "simple": "SimpleRNNCell",
    "layer_norm_lstm": "LayerNormLSTMCell",
    "layer_norm_simple": "LayerNormSimpleRNNCell",
}


def _noted(option, note):
    return option._replace(help=f"{option.help}; {note}") if note else option


def _group(options, notes):
    """The options that are not None, each help with the recipe's note on it."""
    notes = notes or {}
    unknown = sorted(set(notes) - {k for k, v in options.items() if v is not None})
    if unknown:
        raise TypeError(f"notes on {unknown}, which are not in the group")
    return {k: _noted(v, notes.get(k)) for k, v in options.items() if v is not None}


def cell_options(default, units=None, num_layers=None, bidirectional=None, notes=None):
    """`cell` (default `default`), `cell_options` and, where not None, `units`,
    `num_layers` and `bidirectional`; `notes` (``{name: text}``) extend their help."""
    return _group(
        {
            "cell": Option(default, "the recurrent cell (simple: Elman)", tuple(CELLS)),
            "cell_options": Option({}, "the cell's arguments, e.g. {recurrent_dropout: 0.1}"),
            "units": None
            if units is None
            else Option(units, "cell units per layer (per direction when bidirectional)"),
            "num_layers": None
            if num_layers is None
            else Option(num_layers, "stacked recurrent layers"),
            "bidirectional": None
            if bidirectional is None
            else Option(bidirectional, "read the text in both directions"),
        },
        notes,
    )


def vocabulary_options(
    max_vocab, embedding_dim, lowercase=None, min_freq=1, embedding_dropout=None, notes=None
):
    """`max_vocab`, `min_freq`, `embedding_dim` and, where not None, `lowercase` and
    `embedding_dropout`; `notes` (``{name: text}``) extend their help."""
    return _group(
        {
            "lowercase": None
            if lowercase is None
            else Option(lowercase, "lower-case the text before tokenising"),
            "max_vocab": Option(max_vocab, "vocabulary size at most, with the 4 special tokens"),
            "min_freq": Option(min_freq, "tokens seen fewer times in training are [UNK]"),
            "embedding_dim": Option(embedding_dim, "token embedding width"),
            "embedding_dropout": None
            if embedding_dropout is None
            else Option(embedding_dropout, "dropout rate on the token embeddings"),
        },
        notes,
    )


LENGTH_NORMALIZATIONS = (None, "average", "gnmt")


def decoding_options(beam_size, length_normalization="average", sampling=False, notes=None):
    """`beam_size`, `length_normalization` and, with `sampling`, `temperature`, `top_k`
    and `top_p`; `notes` (``{name: text}``) extend their help."""
    options = {
        "beam_size": Option(beam_size, "beam width of beam search"),
        "length_normalization": Option(
            length_normalization, "null, score / length, or GNMT's penalty", LENGTH_NORMALIZATIONS
        ),
    }
    if sampling:
        options.update(
            temperature=Option(1.0, "sampling: logits / this (< 1 sharper, > 1 flatter)"),
            top_k=Option(0, "sampling: only the k most likely tokens; 0: all"),
            top_p=Option(0.0, "sampling: the fewest tokens with this probability; 0: all"),
        )
    return _group(options, notes)
