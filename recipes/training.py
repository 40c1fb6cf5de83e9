"""The recipes' training flow over the library: the config's cell, encoder, optimizer
and schedule, data splits and strategy, and `fit` (a `kerasrnn.callbacks.TrainingRun`
with the configured callbacks)."""

import os
import sys

from recipes.config import ConfigError, RecipeError
from recipes.files import read_json, run_files


def make_cell(name, units, **options):
    """The config's cell (`kerasrnn.cells.get`), an error of its options one line."""
    import kerasrnn

    try:
        return kerasrnn.cells.get(name, units, **options)
    except ValueError as error:
        raise ConfigError(f"`cell` / `cell_options`: {error}") from None


def sentence_encoder(config, vocabulary_size, embedding_matrix=None):
    """The configured `kerasrnn.models.SentenceEncoder` of the classifier and the pair
    model; `embedding_matrix` (pretrained vectors) initialises the embedding."""
    import keras

    from kerasrnn.models import SentenceEncoder

    initializer, dim = "uniform", config["embedding_dim"]
    if embedding_matrix is not None:
        initializer = keras.initializers.Constant(embedding_matrix)
        dim = embedding_matrix.shape[1]
    return SentenceEncoder(
        vocabulary_size,
        dim,
        make_cell(config["cell"], config["units"], **(config["cell_options"] or {})),
        config["num_layers"],
        config["bidirectional"],
        config["pooling"],
        config["dropout"],
        config["embedding_dropout"],
        initializer,
        not config.get("freeze_embeddings", False),
    )


def learning_rate_schedule(config):
    """``learning_rate``, or with a `time_budget` the `budget_schedule` peaking at it
    (its length set by `fit`'s `TimeBudget` from the measured speed)."""
    from kerasrnn.callbacks import OneCycle, WarmupCosineDecay, WarmupStableDecay

    if not config.get("time_budget") or config["budget_schedule"] == "constant":
        return config["learning_rate"]
    schedules = {"cosine": WarmupCosineDecay, "wsd": WarmupStableDecay, "one_cycle": OneCycle}
    schedule = schedules[config["budget_schedule"]]
    return schedule(config["learning_rate"], total_steps=10**6, warmup=config["warmup"])


def find_peak(model, config, train_data, continue_run=False):
    """With a `time_budget` and `find_lr`: `find_budget_peak`'s rate set on `model`'s
    schedule (a continued run keeps its first pick); the search, or None."""
    from kerasrnn.callbacks import LearningRateSearch, find_budget_peak, set_peak

    if not (config.get("time_budget") and config.get("find_lr")):
        return None
    files = run_files(config)
    if continue_run and os.path.exists(files["results"]):
        earlier = read_json(files["results"], (), dict).get("find_lr")
        if earlier:
            set_peak(model, earlier["pick"])
            return LearningRateSearch(earlier, seconds=0.0)
    x, y = train_data if isinstance(train_data, tuple) else (train_data, None)
    search = find_budget_peak(
        model,
        x,
        y,
        config["batch_size"] if y is not None else None,
        config["learning_rate"],
        60.0 * config["time_budget"],
    )
    print(search.line(), file=sys.stderr, flush=True)
    return search


def optimizer(config):
    """Adam at `learning_rate_schedule`, clipped to ``clipnorm``."""
    import keras

    clipnorm = config["clipnorm"] or None
    return keras.optimizers.Adam(learning_rate_schedule(config), clipnorm=clipnorm)


def averaging_callbacks(config, monitor="val_loss", mode="min"):
    """``(average, trigger)`` of ``averaging``: the weight average the checkpoints see
    and the `StartAveraging` that starts it (after the first epoch, or by NT-ASGD)."""
    from kerasrnn.callbacks import NTASGD, ExponentialAveraging, PolyakAveraging, StartAveraging

    if config.get("averaging", "none") == "none":
        return None, None
    if config["averaging"] == "ema":
        average = ExponentialAveraging(config["ema_momentum"], start=None, swap_on_epoch=True)
    else:
        average = PolyakAveraging(start=None, swap_on_epoch=True)
    rule = None
    if config["averaging"] == "ntasgd":
        # NT-ASGD's interval n must be below early stopping's patience p - 1: NT-ASGD
        # switches on n + 1 epochs after the best, early stopping stops p epochs after it
        rule = NTASGD(max(config["patience"] - 2, 0) if config["patience"] else 5, monitor, mode)
    return average, StartAveraging(average, rule)


def fit(model, config, train_data, valid_data, monitor="val_loss", mode="min", **options):
    """`model.fit` as a `TrainingRun` in the run folder with the config's callbacks
    (time budget, weight averaging, `options`' ``before`` ones that log `monitor`,
    early stopping, TensorBoard, `options`' ``callbacks``); `train_data`: a dataset or
    an ``(x, y)`` pair. `options`: also ``continue_run`` and ``metric`` (the curves').
    Returns the history, with ``time_budget`` and ``find_lr`` when they ran."""
    import keras

    from kerasrnn.callbacks import TimeBudget, TrainingRun

    continue_run = options.get("continue_run", False)
    run = TrainingRun(config["output_dir"], monitor, mode)
    search = find_peak(model, config, train_data, continue_run)
    budget = TimeBudget(config["time_budget"]) if config.get("time_budget") else None
    if budget is not None and search is not None:
        budget.spent_seconds = search.seconds  # the range test counts in the budget
    average, trigger = averaging_callbacks(config, monitor, mode)
    first = [budget, average, *options.get("before", ()), trigger]
    then = [
        keras.callbacks.EarlyStopping(monitor, patience=p, mode=mode, restore_best_weights=True)
        for p in [config["patience"]]
        if p
    ]
    last = [keras.callbacks.TensorBoard(os.path.join(config["output_dir"], "logs"))]
    callbacks = {
        "first": [c for c in first if c is not None],
        "then": then,
        "last": (last if config["tensorboard"] else []) + list(options.get("callbacks", ())),
        "stateful": [c for c in (average, trigger) if c],  # they resume with the run
    }
    x, y = train_data if isinstance(train_data, tuple) else (train_data, None)
    try:
        result = run.fit(
            model,
            x,
            y,
            epochs=config["epochs"],
            continue_run=continue_run,
            callbacks=callbacks,
            curve_metric=options.get("metric"),
            batch_size=config["batch_size"] if y is not None else None,
            validation_data=valid_data,
            shuffle=False,  # the tf.data pipeline shuffles (Keras can't shuffle a Dataset)
            verbose=min(config["verbose"], 2),  # 3: TensorFlow's own logs too
        )
    except ValueError as error:  # a continue to no more epochs, a damaged backup
        raise ConfigError(f"--continue: {error}") from None
    if budget is not None:
        result["time_budget"] = budget.summary
    if search is not None:
        result["find_lr"] = dict(search)
    return result


def set_seed(seed):
    import keras

    keras.utils.set_random_seed(int(seed))


def load_splits(config, load_examples, holdouts=()):
    """The train / valid / test examples (None where absent), each spec read by
    ``load_examples(config, spec, split)``; a split of `holdouts` without data is held
    out of the training data by its ``<split>_fraction``."""
    from kerasrnn.data.specs import holdout

    if config["train"] is None:
        raise ConfigError("`train` is required: the training data (see --help).")
    splits = {"train": load_examples(config, config["train"], "train")}
    for name, seed_offset in (("test", 1), ("valid", 2)):
        fraction = config.get(f"{name}_fraction") if name in holdouts else None
        if config[name]:
            splits[name] = load_examples(config, config[name], name)
        elif fraction:
            try:
                splits["train"], splits[name] = holdout(
                    *splits["train"],
                    fraction,
                    config["seed"] + seed_offset,
                    option=f"{name}_fraction",
                )
            except ValueError as error:
                raise ConfigError(str(error)) from None
        else:
            splits[name] = None
    return splits


def distribution(config):
    """``(strategy, config)``: the configured strategy and this worker's config (its
    own `output_dir` on a non-chief worker). First: a CPU split precedes any op."""
    from kerasrnn.distribute import distribution_strategy, worker_output_dir

    try:
        strategy = distribution_strategy(config["strategy"], config["mirrored_cpus"])
    except ValueError as error:
        raise ConfigError(f"--strategy {config['strategy']}: {error}") from None
    except RuntimeError as error:
        raise RecipeError(f"--strategy {config['strategy']}: {error}") from None
    return strategy, dict(config, output_dir=worker_output_dir(config["output_dir"], strategy))
