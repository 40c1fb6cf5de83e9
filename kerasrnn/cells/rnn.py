"""`keras.layers.RNN` that projects the whole input sequence before the time loop."""
import keras
from keras import ops

# The per-backend time loop keras.layers.RNN itself runs on (tf.while_loop, lax.scan...);
# Keras does not export it, and using it keeps masking and go_backwards identical.
from keras.src.backend import rnn as backend_rnn

from kerasrnn.cells.base import RecurrentCell


@keras.saving.register_keras_serializable(package="kerasrnn")
class RNN(keras.layers.RNN):
    """Drop-in `keras.layers.RNN` that keeps only the recurrent part inside the loop.

    A recurrent step computes W x_t + U h_{t-1} + b, but only U h_{t-1} depends on the
    previous step. For a kerasrnn cell this layer computes W x_t + b for all t as one
    [batch * time, features] x [features, gates * units] matmul before the loop, so the
    loop body keeps only the recurrent matmul and the gate arithmetic. The results are
    the same as `keras.layers.RNN(cell)` (same equations, same dropout masks fixed across
    time); any other cell (a Keras cell, `StackedRNNCells`) falls back to the plain loop.
    Whether that is faster depends on the backend and device: on TensorFlow's CPU it
    measured no faster than `keras.layers.RNN` (`bench/README.md`).

    Arguments, masking, `go_backwards`, `return_state`, `stateful` and serialisation are
    `keras.layers.RNN`'s, and `keras.layers.Bidirectional` accepts it.

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.RNN(kerasrnn.LSTMCell(8), return_sequences=True)
    >>> tuple(layer(np.zeros((2, 5, 3), "float32")).shape)
    (2, 5, 8)
    """

    def inner_loop(self, sequences, initial_state, mask, training=False):
        cell = self.cell
        if not isinstance(cell, RecurrentCell):
            return super().inner_loop(sequences, initial_state, mask, training=training)
        states = cell.check_states(initial_state)
        if training and cell.dropout > 0:
            # the mask is the same at every step, so it applies to the whole sequence
            sequences = sequences * ops.expand_dims(cell.get_dropout_mask(sequences[:, 0]), 1)
        projected = cell.input_projection(sequences)

        def step(projected_t, states):
            return cell.call_projected(projected_t, list(states), training=training)

        return backend_rnn(
            step,
            projected,
            states,
            go_backwards=self.go_backwards,
            mask=mask,
            unroll=self.unroll,
            input_length=sequences.shape[1],
            zero_output_for_mask=self.zero_output_for_mask,
            return_all_outputs=self.return_sequences,
        )
