"""`LanguageModelEvaluation`: a language model's perplexity on held-out text after
every epoch, into the logs (what Keras' `validation_data` cannot do for a stateful
stream, whose windows must run in order, their states carried)."""

import math
import time

import keras

DIRECTIONS = ("forward", "backward")


class LanguageModelEvaluation(keras.callbacks.Callback):
    """Measures a `kerasrnn.models.LanguageModel`'s perplexity after every epoch.

    At each epoch's start the model's stateful recurrent layers are reset (a stream is
    read from its beginning every epoch). At its end, for each split of `splits`, the
    trained model's `perplexity` (stateful over the windows when `stateful`) goes into
    the logs as ``<split>_perplexity`` (a biLM's also per direction,
    ``<split>_<direction>_perplexity``), with the epoch's ``learning_rate``,
    ``train_perplexity`` (the training metric; a biLM's the geometric mean of its two
    directions'), ``train_seconds`` (the training pass) and ``eval_seconds`` (this
    evaluation). A checkpoint listed after it can monitor ``valid_perplexity``.

    Args:
        splits: ``{name: data}``, data per direction as
            `kerasrnn.data.language_model.language_model_data` gives it (``{"forward":
            (x, y)}``, and ``"backward"`` for a biLM; windows or a dataset).
        batch_size: the rows per batch of the windows (the stateful model's batch).
        stateful: the windows are consecutive parts of `batch_size` streams.
        log: None, or a function called with each epoch's number (1-based) and row
            (e.g. to print it).
    """

    def __init__(self, splits, batch_size, stateful=False, log=None):
        super().__init__()
        self.splits, self.batch_size, self.stateful = dict(splits), batch_size, stateful
        self.log, self.started = log, None

    def on_epoch_begin(self, epoch, logs=None):
        self.started = time.time()
        for layer in self.model.backbone.layers:
            if getattr(layer, "stateful", False):
                layer.reset_state()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        rate = keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)
        row = {"learning_rate": float(rate)}
        if self.model.backbone.bidirectional:
            nan = float("nan")
            both = [float(logs.get(f"{d}_perplexity", nan)) for d in DIRECTIONS]
            row["train_perplexity"] = math.exp(sum(math.log(p) for p in both) / 2)
            row.update({f"train_{d}_perplexity": p for d, p in zip(DIRECTIONS, both)})
        else:
            row["train_perplexity"] = float(logs.get("perplexity", float("nan")))
        row["train_seconds"] = time.time() - self.started
        began = time.time()
        for split, data in self.splits.items():
            result = self.perplexity(data)
            row[f"{split}_perplexity"] = result["perplexity"]
            if self.model.backbone.bidirectional:
                for d in DIRECTIONS:
                    row[f"{split}_{d}_perplexity"] = result[d]["perplexity"]
        row["eval_seconds"] = time.time() - began
        logs.update(row)
        if self.log is not None:
            self.log(epoch + 1, row)

    def perplexity(self, data, metrics=()):
        """The model's `perplexity` on one split's data (by direction)."""
        return language_model_perplexity(self.model, data, self.batch_size, self.stateful, metrics)


def language_model_perplexity(task, data, batch_size, stateful=False, metrics=()):
    """`task.perplexity` (a `LanguageModel`) on data by direction, as
    `kerasrnn.data.language_model.language_model_data` gives it: windows ``(x, y)`` or
    a dataset per direction."""
    directions = DIRECTIONS if task.backbone.bidirectional else DIRECTIONS[:1]
    if isinstance(data[directions[0]], tuple):
        x = {d: data[d][0] for d in directions}
        y = {d: data[d][1] for d in directions}
    else:
        x, y = {d: data[d] for d in directions}, None
    if len(directions) == 1:
        x = x["forward"]
        y = None if y is None else y["forward"]
    return task.perplexity(x, y, batch_size, stateful, metrics)
