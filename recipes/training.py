"""The recipes' training flow over the library: the config's cell (`make_cell`), encoder
(`sentence_encoder`), optimizer and schedule, the data splits (`load_splits`) and `fit`
(`model.fit` with the standard callbacks of `training_callbacks`: the crash-safe
checkpoints and backup of `kerasrnn.callbacks`, early stopping, weight averaging, the
epoch log, the training curves)."""

import os
import sys

from recipes.config import ConfigError, RecipeError
from recipes.files import read_json, run_files, write_json


def make_cell(name, units, **options):
    """The config's cell (`kerasrnn.cells.get`), an error of its options one line."""
    import kerasrnn

    try:
        return kerasrnn.cells.get(name, units, **options)
    except ValueError as error:
        raise ConfigError(f"`cell` / `cell_options`: {error}") from None


def sentence_encoder(config, vocabulary_size, embedding_matrix=None):
    """The configured `kerasrnn.models.SentenceEncoder` (embedding, embedding dropout,
    a `kerasrnn.RNNStack`, then its final state or a masked pooling of its outputs): the
    backbone of the classifier and of each side of the pair classifier.
    `embedding_matrix` (pretrained vectors) initialises the embedding and fixes its
    width; ``freeze_embeddings`` keeps it fixed."""
    import keras

    from kerasrnn.models import SentenceEncoder

    if config["num_layers"] < 1:
        raise ConfigError(f"`num_layers` must be >= 1, got {config['num_layers']}.")
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
    """The optimizer's learning rate: ``config["learning_rate"]``, or with a
    `time_budget` the `budget_schedule` peaking at it (a `kerasrnn.callbacks`
    `WarmupCosineDecay` or `OneCycle` whose length `fit`'s `TimeBudget` sets from the
    measured speed; until then it is a long guess, so the first steps stay in the
    warmup)."""
    from kerasrnn.callbacks import OneCycle, WarmupCosineDecay, WarmupStableDecay

    if not config.get("time_budget") or config["budget_schedule"] == "constant":
        return config["learning_rate"]
    schedules = {"cosine": WarmupCosineDecay, "wsd": WarmupStableDecay, "one_cycle": OneCycle}
    schedule = schedules[config["budget_schedule"]]
    return schedule(config["learning_rate"], total_steps=10**6, warmup=config["warmup"])


def find_peak(model, config, train_data, continue_run=False):
    """With a `time_budget` and `find_lr`: the budget's peak rate by the range test
    (`kerasrnn.callbacks.find_budget_peak`), set on the compiled `model`'s schedule;
    returns the `LearningRateSearch` (None when off). A continued run keeps the peak
    its first run picked (results.json's ``find_lr``)."""
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
    """Adam with the configured `learning_rate` (a schedule with a `time_budget`) and
    gradient-norm clipping."""
    import keras

    clipnorm = config["clipnorm"] or None
    return keras.optimizers.Adam(learning_rate_schedule(config), clipnorm=clipnorm)


def averaging_callbacks(config, monitor="val_loss", mode="min"):
    """``(average, trigger)`` for ``config["averaging"]``: a `PolyakAveraging` (an
    `ExponentialAveraging` for ``ema``) with ``swap_on_epoch=True`` (listed before the
    checkpoints and the recipe's evaluation, which then see the average) and the
    `StartAveraging` that starts it (listed after the callbacks that put `monitor` into
    the logs): at the end of the first epoch (``polyak``, ``ema``) or by NT-ASGD's rule
    (``ntasgd``); ``(None, None)`` for ``none``."""
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


def training_callbacks(
    config, monitor="val_loss", mode="min", extra=(), best=None, rows=(), before=(), save_best=True
):
    """The standard callbacks, writing under ``config["output_dir"]``, in this order:

    * `TimeBudget` when ``config["time_budget"]`` (it stretches the optimizer's
      schedule over the budget and stops training when it is spent);
    * the weight average of ``config["averaging"]`` (`averaging_callbacks`);
    * `before` (callbacks that put the monitored value into the logs), then the
      trigger of the average;
    * ``ModelCheckpoint`` -> ``best.keras``, the model with the best `monitor` value
      (`best`: the best value of earlier epochs, after a resume or a continue);
    * ``ModelCheckpoint`` -> ``last.weights.h5``: the last epoch's weights and
      optimizer state, for ``train --continue``;
    * ``EarlyStopping`` on `monitor` (``patience`` epochs; restores the best weights);
    * `EpochLog` -> ``backup/epochs.json`` (`rows`: the earlier epochs);
    * ``BackupAndRestore`` -> ``backup/``: a run that is killed resumes, when re-run
      with the same command, from the last finished epoch, with its weight average
      (the backup is deleted when training completes);
    * ``TerminateOnNaN``; ``TensorBoard`` -> ``logs/`` when ``config["tensorboard"]``;
    * `extra`.

    With ``save_best=False`` there is no ``best.keras`` checkpoint (a recipe that
    saves its best model itself).
    """
    import keras

    from kerasrnn.callbacks import AtomicBackupAndRestore, AtomicModelCheckpoint, EpochLog

    files = run_files(config)
    callbacks = []
    if config.get("time_budget"):
        from kerasrnn.callbacks import TimeBudget

        callbacks.append(TimeBudget(config["time_budget"]))
    average, trigger = averaging_callbacks(config, monitor, mode)
    callbacks += ([average] if average else []) + list(before) + ([trigger] if trigger else [])
    if save_best:
        callbacks.append(
            AtomicModelCheckpoint(
                files["best"],
                monitor=monitor,
                mode=mode,
                save_best_only=True,
                initial_value_threshold=best,
            )
        )
    callbacks.append(AtomicModelCheckpoint(files["last"], save_weights_only=True))
    if config["patience"]:
        callbacks.append(
            keras.callbacks.EarlyStopping(
                monitor=monitor,
                mode=mode,
                patience=config["patience"],
                restore_best_weights=True,
            )
        )
    callbacks += [
        EpochLog(files["epochs"], rows, write=write_json),  # numbers as in every run file
        # the average and its trigger resume with the run
        AtomicBackupAndRestore(files["backup"], stateful=[c for c in (average, trigger) if c]),
        keras.callbacks.TerminateOnNaN(),
    ]
    if config["tensorboard"]:
        callbacks.append(keras.callbacks.TensorBoard(os.path.join(config["output_dir"], "logs")))
    return callbacks + list(extra)


def earlier_epochs(config, continue_run=False):
    """The epoch rows a `fit` starts from: those of an interrupted run (its backup), of
    the finished run that `continue_run` extends, or none."""
    files = run_files(config)
    if os.path.exists(files["epochs"]) and os.path.exists(files["backup"]):
        return read_json(files["epochs"], ("rows",), dict)["rows"]
    if continue_run:
        return read_json(files["history"], ("rows",), dict)["rows"]
    return []


def restore_last_epoch(model, config):
    """Loads the last finished epoch's weights and optimizer state into `model` (built
    and compiled as the run was), for ``train --continue``."""
    path = run_files(config)["last"]
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no last-epoch checkpoint at {path}: `--continue` extends a run trained "
            "by this version; train it again without --continue."
        )
    model.optimizer.build(model.trainable_variables)
    model.load_weights(path)


def fit(
    model,
    config,
    train_data,
    valid_data,
    monitor="val_loss",
    mode="min",
    callbacks=(),
    continue_run=False,
    before=(),
    save_best=True,
    metric=None,
):
    """`model.fit` with the standard callbacks (`training_callbacks`).

    `train_data` is a `tf.data.Dataset` or an ``(x, y)`` pair of arrays (batched by
    ``config["batch_size"]``, not shuffled). With `continue_run` training starts after
    the run's last finished epoch (the model must hold its state: `restore_last_epoch`)
    and goes on to ``config["epochs"]``. Writes ``history.json`` (the rows of every
    epoch) and ``training_curves.png`` (`plot_training_curves`, loss and `metric`).

    Returns the history of every epoch of the run as a dict of lists, plus
    ``epochs_run`` (the epochs this call trained: fewer than ``epochs`` after a resume,
    a continue, an early stop or a spent `time_budget`), ``first_epoch`` (the first of
    them, 1-based) and, with a `time_budget`, ``time_budget``: ``{minutes,
    seconds_used, steps, planned_steps, stopped_by_budget}`` (`TimeBudget.summary`)
    and, with `find_lr` too, ``find_lr``: the range test that picked the schedule's
    peak (`find_peak`; its seconds are part of ``seconds_used``).
    """
    files = run_files(config)
    rows = earlier_epochs(config, continue_run)
    initial_epoch = 0
    if continue_run:
        initial_epoch = max((r["epoch"] for r in rows), default=0)
        if config["epochs"] <= initial_epoch:
            raise ConfigError(
                f"the run in {config['output_dir']} has trained {initial_epoch} epoch(s); "
                f"--continue needs `epochs` above that, got {config['epochs']}."
            )
    search = find_peak(model, config, train_data, continue_run)
    scores = [r[monitor] for r in rows if isinstance(r.get(monitor), float)]
    best = (min if mode == "min" else max)(scores) if scores else None
    all_callbacks = training_callbacks(
        config, monitor, mode, callbacks, best, rows, before, save_best
    )
    from kerasrnn.callbacks import EpochLog, TimeBudget, plot_training_curves

    log = next(c for c in all_callbacks if isinstance(c, EpochLog))
    budget = next((c for c in all_callbacks if isinstance(c, TimeBudget)), None)
    if budget is not None and search is not None:
        budget.spent_seconds = search.seconds  # the range test counts in the budget
    if isinstance(train_data, tuple):
        x, y = train_data
        data = dict(x=x, y=y, batch_size=config["batch_size"])
    else:
        data = dict(x=train_data)
    history = model.fit(
        **data,
        validation_data=valid_data,
        epochs=config["epochs"],
        initial_epoch=initial_epoch,
        shuffle=False,  # the tf.data pipeline shuffles (Keras can't shuffle a Dataset)
        callbacks=all_callbacks,
        verbose=min(config["verbose"], 2),  # 3: TensorFlow's own logs too
    )
    write_json(files["history"], {"rows": log.rows})
    result = {}
    for row in log.rows:
        for key in row:
            if key != "epoch":
                result.setdefault(key, [])
    for key in result:
        result[key] = [row.get(key) for row in log.rows]
    result["epochs_run"] = len(history.epoch)
    result["first_epoch"] = history.epoch[0] + 1 if history.epoch else None
    if budget is not None:
        result["time_budget"] = budget.summary
    if search is not None:
        result["find_lr"] = dict(search)
    plot_training_curves(log.rows, files["curves"], metric or _metric_of(monitor))
    return result


def _metric_of(monitor):
    for prefix in ("val_", "valid_"):
        monitor = monitor.removeprefix(prefix)
    return monitor


def set_seed(seed):
    import keras

    keras.utils.set_random_seed(int(seed))


def load_splits(config, load_examples, holdouts=()):
    """The train / valid / test examples the config describes (None where absent).

    ``load_examples(config, spec, split)`` reads one data spec. A split in `holdouts`
    ("test", "valid") without its own data is held out of the training data when its
    ``<split>_fraction`` option is set (seeded by ``seed`` + 1 for test, + 2 for valid).
    """
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
    """``(strategy, config)``: the config's `kerasrnn.distribute` strategy and the config
    of this process (`output_dir` a worker's own folder on the non-chief workers of a
    multi-worker run). First thing: "mirrored" on CPU must split the device before any
    TensorFlow op runs."""
    from kerasrnn.distribute import distribution_strategy, worker_output_dir

    try:
        strategy = distribution_strategy(config["strategy"], config["mirrored_cpus"])
    except ValueError as error:
        raise ConfigError(f"--strategy {config['strategy']}: {error}") from None
    except RuntimeError as error:
        raise RecipeError(f"--strategy {config['strategy']}: {error}") from None
    return strategy, dict(config, output_dir=worker_output_dir(config["output_dir"], strategy))
