"""Every use of Keras' or TensorFlow's internals, in one place.

The rest of the package depends on public APIs only. Each name here says why no public
API serves and which public API would replace it, so that a Keras or TensorFlow upgrade
that breaks one of them breaks it here, with the reason beside it.
"""

# Keras' RNN layer creates and clears the per-batch dropout masks only for cells that are
# instances of this mixin (an isinstance check in keras.layers.RNN.call). Waits for: the
# mixin exported as keras.layers.DropoutRNNCell.
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

# The per-backend pieces keras.layers.RNN / LSTM / GRU run on. `rnn` is the generic time
# loop (tf.while_loop, lax.scan, a Python loop on torch), so masking and go_backwards stay
# identical to keras.layers.RNN; `lstm` / `gru` are the fused kernels keras.layers.LSTM /
# GRU try first (cuDNN on a GPU) and raise NotImplementedError for what they do not
# support. Waits for: keras.ops.rnn / keras.ops.lstm / keras.ops.gru.
from keras.src.backend import gru as backend_gru
from keras.src.backend import lstm as backend_lstm
from keras.src.backend import rnn as backend_rnn


def tensorflow_graph_in_xla_context(graph):
    """Whether `graph` (or a graph it is nested in) is being compiled by XLA. TensorFlow
    tells this only through an internal module. Waits for: a public
    `tf.config.experimental` query of the compilation context."""
    from tensorflow.python.ops import control_flow_util

    return control_flow_util.GraphOrParentsInXlaContext(graph)


def keras_tensorflow_trainer():
    """Keras' TensorFlow trainer module, whose multi-worker reductions the recipes patch
    (keras-team/keras#20585: `model.fit` fails under MultiWorkerMirroredStrategy in Keras
    3 up to at least 3.15). Waits for: that issue's fix."""
    from keras.src.backend.tensorflow import trainer

    return trainer


__all__ = [
    "DropoutRNNCell",
    "backend_gru",
    "backend_lstm",
    "backend_rnn",
    "keras_tensorflow_trainer",
    "tensorflow_graph_in_xla_context",
]
