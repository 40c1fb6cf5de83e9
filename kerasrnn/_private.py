"""Every use of Keras' or TensorFlow's internals, in one place.

The rest of the package depends on public APIs only. Each name here says why no public
API serves and which public API would replace it, so that a Keras or TensorFlow upgrade
that breaks one of them breaks it here, with the reason beside it.
"""

# Keras' RNN layer creates and clears the per-batch dropout masks only for cells that are
# instances of this mixin (an isinstance check in keras.layers.RNN.call); the attentive
# cell forwards them to the cell it wraps. Waits for: the mixin exported as
# keras.layers.DropoutRNNCell.
# The per-backend pieces keras.layers.RNN / LSTM / GRU run on. `rnn` is the generic time
# loop (tf.while_loop, lax.scan, a Python loop on torch), so masking and go_backwards stay
# identical to keras.layers.RNN (AttentiveRNN runs it over a step function that hands
# the cell its memory, since keras.layers.RNN has no `constants`); `lstm` / `gru` are
# the fused kernels keras.layers.LSTM / GRU try first (cuDNN on a GPU) and raise
# NotImplementedError for what they do not support. Waits for: keras.ops.rnn /
# keras.ops.lstm / keras.ops.gru.
from keras.src.backend import gru as backend_gru
from keras.src.backend import lstm as backend_lstm
from keras.src.backend import rnn as backend_rnn
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell


def tensorflow_graph_in_xla_context(graph):
    """Whether `graph` (or a graph it is nested in) is being compiled by XLA. TensorFlow
    tells this only through an internal module. Waits for: a public
    `tf.config.experimental` query of the compilation context."""
    from tensorflow.python.ops import control_flow_util

    return control_flow_util.GraphOrParentsInXlaContext(graph)


def tensorflow_records_gradient(tensor):
    """Whether a `tf.GradientTape` now recording would differentiate `tensor` (it is
    watched, or computed from something watched, such as a trainable variable): a
    model's input is not. `kerasrnn.RNN`'s XLA cluster skips its input's gradient then
    (a compiled function cannot drop an unused output). TensorFlow tells this only
    through an internal module. Waits for: a public `tf.GradientTape` query (or
    `tf.function` pruning the unused outputs of an XLA-compiled gradient)."""
    from tensorflow.python.eager import record

    return bool(record.should_record_backprop([tensor]))


def patch_keras_multi_worker_fit():
    """Makes Keras 3's `model.fit` work under `MultiWorkerMirroredStrategy`.

    Keras 3 (up to at least 3.15; keras-team/keras#20585) fails there twice: building the
    model from the first batch reduces the per-replica batch with
    ``strategy.reduce("MEAN", batch, axis=None)``, and the per-step logs (scalars) are
    reduced with ``axis=0``; both raise with more than one worker. This replaces the two
    Keras internals, only for the multi-worker case: the first batch is taken from the
    local replica (only its shapes matter), and scalar logs are averaged over replicas
    with ``axis=None``.

    It replaces `keras.src.backend.tensorflow.trainer`'s `reduce_per_replica` and
    `TensorFlowTrainer._maybe_symbolic_build`, and reads its
    `_collective_all_reduce_multi_worker`. Waits for: keras-team/keras#20585's fix
    (remove this when Keras' own multi-worker test passes)."""
    import tensorflow as tf
    from keras.src.backend.tensorflow import trainer as tf_trainer

    if getattr(tf_trainer, "_kerasrnn_multi_worker_fix", False):
        return
    multi_worker = tf_trainer._collective_all_reduce_multi_worker
    reduce_per_replica = tf_trainer.reduce_per_replica

    def reduce_logs(values, strategy, reduction):
        if reduction in ("auto", "mean") and multi_worker(strategy):
            return tf.nest.map_structure(
                lambda v: (
                    strategy.reduce("MEAN", v, axis=None)
                    if isinstance(v, tf.distribute.DistributedValues)
                    else v
                ),
                values,
            )
        return reduce_per_replica(values, strategy, reduction)

    symbolic_build = tf_trainer.TensorFlowTrainer._maybe_symbolic_build

    def build_from_local_batch(self, iterator=None, data_batch=None):
        strategy = self._distribute_strategy
        if iterator is None or strategy is None or not multi_worker(strategy):
            return symbolic_build(self, iterator, data_batch)
        for _, _, batches in iterator:
            data_batch = tf.nest.map_structure(
                lambda v: strategy.experimental_local_results(v)[0], next(batches)
            )
            break
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    tf_trainer.reduce_per_replica = reduce_logs
    tf_trainer.TensorFlowTrainer._maybe_symbolic_build = build_from_local_batch
    tf_trainer._kerasrnn_multi_worker_fix = True


def in_multi_worker_mode(strategy):
    """Whether a `tf.distribute` strategy spans several workers: TensorFlow tells this
    only through a private method of `strategy.extended`. Waits for: a public
    `tf.distribute.Strategy` property."""
    return bool(getattr(strategy.extended, "_in_multi_worker_mode", lambda: False)())


def backup_files_and_position(callback):
    """A `keras.callbacks.BackupAndRestore`'s two backup files and the position it
    reached, which Keras keeps in private attributes: (weights path, metadata path,
    {"epoch", "batch"}). Waits for: a public file hook on `BackupAndRestore`."""
    position = {"epoch": callback._current_epoch, "batch": callback._last_batch_seen}
    return callback._weights_path, callback._training_metadata_path, position


def keras_nested_layers(layer):
    """Every layer inside `layer` (itself excluded), depth first in the order Keras
    tracks them, as `Layer._flatten_layers` walks them. The exporters name the
    innermost layer on a converter's failing op path with it, the last match in this
    order. The walk of the attributes (`kerasrnn.export._formats.sublayers`) reaches the
    same layers in another order (a `Bidirectional`'s forward layer before its backward
    one, an `RNNStack`'s template cell first). Waits for: a public recursive traversal
    of a layer's sublayers in Keras 3."""
    return list(layer._flatten_layers(include_self=False, recursive=True))


__all__ = [
    "backup_files_and_position",
    "DropoutRNNCell",
    "backend_gru",
    "backend_lstm",
    "backend_rnn",
    "in_multi_worker_mode",
    "keras_nested_layers",
    "patch_keras_multi_worker_fit",
    "tensorflow_graph_in_xla_context",
    "tensorflow_records_gradient",
]


def frozen_concrete_function(function):
    """`function` (a `tf.function`'s concrete function) with every variable it reads
    replaced by a constant of its value, control flow kept as functional While / If.

    The LiteRT converter needs it: a variable read inside a `WHILE` body (Keras' time
    loop reads the cell's weights there) converts to a `READ_VARIABLE` that the LiteRT
    interpreter cannot resolve ("variable != nullptr"), whatever the converter's
    resource-variable option. TensorFlow freezes a function only through
    `tensorflow.python.framework.convert_to_constants` (its v1 `graph_util` needs a
    Session). Waits for: a public `tf.lite` option that folds variables of a concrete
    function into constants.
    """
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    return convert_variables_to_constants_v2(function, lower_control_flow=False)
