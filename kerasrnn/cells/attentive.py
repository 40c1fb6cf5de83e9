"""`AttentiveRNN`: the attentive decoder layer, an `AttentionCell` run over a target
sequence against an encoder memory.

Keras 3's `keras.layers.RNN` has no `constants` argument (and its states must be flat
tensors of fixed width), so `AttentiveRNN` runs the recurrence itself, with a step
function that hands the cell the memory, prepared once per call (the score's key
projection outside the time loop). The layer serialises like any other; the cell is
`kerasrnn.cells.attention_cell`.

The attentive cell's names are importable from here too
(`from kerasrnn.cells.attentive import AttentionCell`).
"""

import keras
from keras import ops, tree

from kerasrnn._private import backend_rnn
from kerasrnn.cells import bridge as bridges
from kerasrnn.cells.attention_cell import AttentionCell
from kerasrnn.cells.bidirectional_states import merge_bidirectional_states
from kerasrnn.cells.bound_cell import BoundAttentionCell

__all__ = ["AttentiveRNN", "AttentionCell", "BoundAttentionCell", "merge_bidirectional_states"]


@keras.saving.register_keras_serializable(package="kerasrnn")
class AttentiveRNN(keras.layers.RNN):
    """An attentive decoder: `keras.layers.RNN` over an `AttentionCell`, with the memory.

    `decoder(targets, memory, initial_state=None, mask=None, memory_mask=None)` runs the
    cell over the (teacher-forced) target inputs `[batch, Tq, d_in]`, attending to
    `memory` `[batch, Tk, d]` (the encoder outputs). The key projection is computed once
    per call, outside the time loop; the step function of the recurrence hands it to the
    cell, `cell(y_t, states, memory=prepared)` (Keras 3's RNN has no `constants`), so
    the layer serialises like any other.
    Masks that Keras attaches (an `Embedding(mask_zero=True)` before either input) are
    picked up: padded target steps keep their states, padded source positions get zero
    attention.

    Returns `output` (zeros at padded target steps), then the alignments `[batch, Tq, Tk]`
    if `return_alignments` (zero rows at padded target steps), then the final states if
    `return_state`.

    Args:
        cell: an `AttentionCell`.
        return_sequences: return every step's output (default True, as a decoder needs).
        return_state: also return the final flat states.
        return_alignments: also return the attention weights of every step.
        bridge: map the given `initial_state` through a `kerasrnn.layers.Bridge` (or
            its name, "dense", "copy", "zeros", "none"); True is "dense", a learned
            s_0 = tanh(W_s h + b) per wrapped-cell state (Bahdanau et al.'s
            initialisation), so the encoder's states may have any width. A
            bidirectional encoder's states (twice as many: forward then backward, as
            `keras.layers.Bidirectional` returns them) are concatenated pairwise first.
            False (default): the states are the cell's own.
        unroll: as `keras.layers.RNN`.
        zero_output_for_mask: must stay True: padded target steps output zeros.

    Call arguments:
        sequences: `[batch, Tq, d_in]` decoder inputs.
        memory: `[batch, Tk, d]` encoder outputs (keys = values).
        initial_state: the wrapped cell's states (e.g. the encoder's final states), or
            the full flat state list; default zeros.
        mask / sequences_mask: `[batch, Tq]` target mask; memory_mask: `[batch, Tk]`.

    Step by step (greedy or beam search), with the same weights::

        memory = decoder.prepare_memory(encoder_outputs, mask=source_mask)
        states = decoder.initial_state_from(encoder_states)
        output, states, alignments = decoder.step(embedded_tokens, states, memory)

    Example:

    >>> import numpy as np, kerasrnn
    >>> cell = kerasrnn.AttentionCell(
    ...     kerasrnn.LSTMCell(8), kerasrnn.LuongAttention("general"),
    ...     kerasrnn.RunThenAttend())
    >>> decoder = kerasrnn.AttentiveRNN(cell, return_alignments=True)
    >>> outputs, alignments = decoder(np.ones((2, 4, 3), "float32"),
    ...                               np.ones((2, 6, 5), "float32"))
    >>> tuple(outputs.shape), tuple(alignments.shape)
    ((2, 4, 8), (2, 4, 6))
    """

    def __init__(
        self,
        cell,
        return_sequences=True,
        return_state=False,
        return_alignments=None,
        bridge=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        zero_output_for_mask=True,
        **kwargs,
    ):
        if not isinstance(cell, AttentionCell):
            raise ValueError(
                f"AttentiveRNN's `cell` must be a kerasrnn.AttentionCell; got {cell!r}."
            )
        if go_backwards or stateful:
            raise ValueError(
                "AttentiveRNN is a decoder: `go_backwards` and `stateful` are not supported."
            )
        if not zero_output_for_mask:
            # JAX's masked scan repeats states[0] as the "previous output" at padded
            # steps, which is wrong for a cell whose output is not its first state.
            raise ValueError(
                "AttentiveRNN outputs zeros at padded target steps on every backend; "
                "`zero_output_for_mask=False` is not supported."
            )
        if return_alignments is None:
            return_alignments = cell.alignment_history
        if return_alignments and not return_sequences:
            raise ValueError(
                "`return_alignments=True` returns one row per target step and needs "
                "`return_sequences=True`."
            )
        super().__init__(
            cell,
            return_sequences=return_sequences,
            return_state=return_state,
            unroll=unroll,
            zero_output_for_mask=zero_output_for_mask,
            **kwargs,
        )
        self.return_alignments = bool(return_alignments)
        self.bridge = None
        if bridge is not False and bridge is not None:
            self.bridge = bridges.get("dense" if bridge is True else bridge)
            self.bridge.set_state_sizes(cell.cell_state_sizes)

    def build(self, sequences_shape, memory_shape, initial_state_shape=None):
        self.cell.build_memory(memory_shape)
        super().build(sequences_shape)
        if self.bridge is not None and initial_state_shape is not None:
            self.bridge.build(_state_shapes(initial_state_shape))

    # ---- the step-by-step API --------------------------------------------------------
    def prepare_memory(self, memory, mask=None):
        """`AttentionCell.prepare_memory`: the per-source part, once per source."""
        return self.cell.prepare_memory(memory, mask=mask)

    def initial_state_from(self, encoder_states=None, batch_size=None, memory=None):
        """The decoder's flat initial states: zeros (give `batch_size`), or from the
        encoder's final states through the bridge (if any) and `cell.initial_state_from`.
        `memory` (the prepared memory) gives the length of monotonic / coverage
        attention states when it is not static."""
        if encoder_states is None:
            return self.cell.get_initial_state(batch_size=batch_size, memory=memory)
        states = tree.flatten(encoder_states)
        if self.bridge is not None:
            batch = ops.shape(states[0])[0]
            states = self.bridge(states)
            if states is None:  # NoBridge: the cell's own initial state
                return self.cell.get_initial_state(batch_size=batch, memory=memory)
        return self.cell.initial_state_from(states, memory=memory)

    def step(self, inputs, states, memory, training=False):
        """`AttentionCell.step`: (output, new_states, alignments) for one step."""
        return self.cell.step(inputs, states, memory, training=training)

    # ---- the teacher-forced pass -----------------------------------------------------
    def call(
        self,
        sequences,
        memory,
        initial_state=None,
        mask=None,
        memory_mask=None,
        sequences_mask=None,
        training=False,
    ):
        if mask is None:
            mask = sequences_mask
        if isinstance(memory_mask, (list, tuple)) and all(m is None for m in memory_mask):
            memory_mask = None
        cell = self.cell
        prepared = cell.prepare_memory(memory, mask=memory_mask)
        if initial_state is None:
            initial_state = cell.get_initial_state(
                batch_size=ops.shape(sequences)[0], memory=prepared
            )
        else:
            initial_state = self.initial_state_from(initial_state, memory=prepared)
        initial_state = [ops.convert_to_tensor(s, dtype=cell.compute_dtype) for s in initial_state]
        # what the steps draw, drawn before the loop (JAX's scan cannot draw)
        cell.draw_dropout_masks(sequences[:, 0, :], initial_state)
        noise = None
        if training:
            noise = cell.draw_noise(prepared, ops.shape(sequences)[0], ops.shape(sequences)[1])

        def step(inputs, states):
            step_noise = None
            if noise is not None:  # each step's input comes with its noise
                inputs, columns = inputs
                step_noise = cell.split_noise(columns, prepared)
            return cell(
                inputs,
                states,
                memory=prepared,
                training=training,
                noise=step_noise,
                return_alignments=self.return_alignments,
            )

        last_output, outputs, states = backend_rnn(
            step,
            sequences if noise is None else (sequences, noise),
            initial_state,
            go_backwards=False,
            mask=mask,
            unroll=self.unroll,
            input_length=sequences.shape[1],
            zero_output_for_mask=self.zero_output_for_mask,
            return_all_outputs=self.return_sequences,
        )
        cell.reset_dropout_masks()
        output = ops.cast(outputs if self.return_sequences else last_output, self.compute_dtype)
        result = [output]
        if self.return_alignments:
            result = list(cell.split_alignments(output, prepared))
        if self.return_state:
            result += [ops.cast(s, self.compute_dtype) for s in tree.flatten(states)]
        return tuple(result) if len(result) > 1 else result[0]

    def compute_output_shape(self, sequences_shape, memory_shape, initial_state_shape=None):
        batch, length = sequences_shape[0], sequences_shape[1]
        cell = self.cell
        cell.build_memory(memory_shape)  # (the attention states then have this Tk)
        width = cell.output_size
        shapes = [(batch, length, width) if self.return_sequences else (batch, width)]
        if self.return_alignments:
            alignments = [(batch, length, tk) for tk in cell.memory_lengths]
            shapes.append(alignments if cell.multiple_mechanisms else alignments[0])
        if self.return_state:
            shapes += [(batch, size) for size in cell.state_size]
        return tuple(shapes) if len(shapes) > 1 else shapes[0]

    def compute_mask(self, inputs, previous_mask=None):
        mask = tree.flatten(previous_mask)[0] if previous_mask is not None else None
        output_mask = mask if self.return_sequences else None
        alignment_mask = output_mask
        if self.cell.multiple_mechanisms:
            alignment_mask = [output_mask] * len(self.cell.mechanisms)
        masks = [output_mask] + ([alignment_mask] if self.return_alignments else [])
        if self.return_state:
            masks += [None] * len(self.state_size)
        return masks if len(masks) > 1 else masks[0]

    def get_config(self):
        config = super().get_config()
        bridge = False if self.bridge is None else keras.saving.serialize_keras_object(self.bridge)
        config.update({"return_alignments": self.return_alignments, "bridge": bridge})
        return config


def _state_shapes(shape):
    """A list of state shapes from `initial_state_shape` (one shape or a list of them)."""
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return [tuple(s) for s in shape]
    return [tuple(shape)]
