"""`BoundAttentionCell`: an `AttentionCell` bound to one prepared memory, so that a plain
`keras.layers.RNN` can run it.

`keras.layers.RNN` calls a cell as `cell(inputs, states)`, with no way to hand it the
encoder memory (Keras 3 has no `constants`); the bound cell holds the memory of one call
and passes it on: `keras.layers.RNN(cell.with_memory(cell.prepare_memory(keys)))`. It
shares the attention cell's weights and forwards Keras' dropout-mask protocol to it.
"""

import keras

from kerasrnn._private import DropoutRNNCell


class BoundAttentionCell(DropoutRNNCell, keras.layers.Layer):
    """An `AttentionCell` with its memory: a plain Keras cell for `keras.layers.RNN`.

    Made by `AttentionCell.with_memory(memory)`; shares the cell's weights and calls
    `cell(inputs, states, memory=memory)`. With `return_alignments`, each step's output
    is [output; alignments] (`AttentionCell.split_alignments` takes it apart). Not
    serialisable (the memory is a tensor of one call): inside a saved model use
    `AttentiveRNN`.

    Args:
        cell: the `kerasrnn.AttentionCell`.
        memory: its prepared memory (`cell.prepare_memory(keys, mask=mask)`).
        return_alignments: append each step's alignments to its output.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> cell = kerasrnn.AttentionCell(kerasrnn.GRUCell(4), kerasrnn.LuongAttention())
    >>> bound = cell.with_memory(cell.prepare_memory(np.ones((2, 5, 4), "float32")))
    >>> tuple(keras.layers.RNN(bound)(np.ones((2, 3, 2), "float32")).shape)  # [s_i; c_i]
    (2, 8)
    """

    def __init__(self, cell, memory, return_alignments=False, **kwargs):
        super().__init__(**kwargs)
        self.attention_cell = cell
        self._memory = memory
        self.return_alignments = return_alignments

    @property
    def state_size(self):
        return self.attention_cell.state_size

    @property
    def output_size(self):
        width = self.attention_cell.output_size
        if self.return_alignments:  # [output; alignments]
            memories = self.attention_cell.memories(self._memory)
            width += sum(int(m.values.shape[1]) for m in memories)
        return width

    def build(self, input_shape):
        if not self.attention_cell.built:
            self.attention_cell.build(input_shape)

    def get_initial_state(self, batch_size=None):
        return self.attention_cell.get_initial_state(batch_size, memory=self._memory)

    def call(self, inputs, states, training=False):
        return self.attention_cell(
            inputs,
            states,
            memory=self._memory,
            training=training,
            return_alignments=self.return_alignments,
        )

    def get_dropout_mask(self, step_input):
        return self.attention_cell.get_dropout_mask(step_input)

    def get_recurrent_dropout_mask(self, step_input):
        return self.attention_cell.get_recurrent_dropout_mask(step_input)

    def reset_dropout_mask(self):
        self.attention_cell.reset_dropout_mask()

    def reset_recurrent_dropout_mask(self):
        self.attention_cell.reset_recurrent_dropout_mask()

    def get_config(self):
        raise NotImplementedError(
            "A BoundAttentionCell holds one call's memory and is not serialisable: use "
            "kerasrnn.AttentiveRNN(cell) inside a saved model."
        )
