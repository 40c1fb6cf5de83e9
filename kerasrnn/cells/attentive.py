"""Attention inside the recurrence: `AttentionCell` and the decoder layer `AttentiveRNN`.

Keras 3's `keras.layers.RNN` has no `constants` argument and its states must be flat
tensors of fixed width, so the encoder memory cannot travel as a state. It reaches the
cell by *binding* instead: `AttentiveRNN.call` prepares the memory once per source
sequence (the score's key projection, e.g. U_a h_j, outside the time loop), binds it to
the cell for the duration of the call, runs the ordinary RNN loop, and unbinds it.
Everything is a constructor argument or a tensor argument of `call`, so the layer is
serialisable and works in functional models, `.keras` files and SavedModels.
"""
import contextlib

import keras
from keras import ops, tree

from kerasrnn.attention.layers import Attention, AttentionMemory

# Keras' RNN configures dropout masks only for cells that are instances of this mixin
# (it is not exported publicly); the attentive cell forwards them to the wrapped cell.
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

MODES = ("bahdanau", "luong")


class _MemorySlot:
    """Holds the bound memory outside Keras' attribute tracking (it is call-scoped)."""

    memory = None
    emit_alignments = False


def _deserialize(obj):
    if isinstance(obj, dict):
        return keras.saving.deserialize_keras_object(obj)
    return obj


@keras.saving.register_keras_serializable(package="kerasrnn")
class AttentionCell(DropoutRNNCell, keras.layers.Layer):
    """Wraps any recurrent cell with attention over an encoder memory h_1 ... h_Tk.

    Bahdanau mode (Bahdanau, Cho & Bengio 2015): the query is the previous state, and the
    context enters the cell beside the input y_{i-1}:

    .. math::

        c_i &= \\text{Attention}(s_{i-1}, h) \\\\
        s_i &= \\text{cell}([y_{i-1}; c_i], s_{i-1}) \\\\
        \\text{output}_i &= [s_i; c_i]
            \\quad\\text{or}\\quad \\tanh(W_c [c_i; s_i])
            \\text{ with attention\\_layer\\_size}

    (For a GRU cell, W [y; c] = W y + C c: the C c_i terms of the paper's decoder.)
    With an LSTM or stacked cell, s_{i-1} is the h state (of the top layer).

    Luong mode (Luong, Pham & Manning 2015): the query is the new output h_t, and the
    attentional state is the output; with input feeding it also joins the next input:

    .. math::

        h_t &= \\text{cell}([y_t; \\tilde h_{t-1}], s_{t-1})
            \\quad (\\text{without input feeding: cell}(y_t, s_{t-1})) \\\\
        c_t &= \\text{Attention}(h_t, h) \\\\
        \\tilde h_t &= \\tanh(W_c [c_t; h_t]) = \\text{output}_t

    States (flat, as Keras requires): the wrapped cell's states, then h~_{t-1} in Luong
    mode with input feeding (zeros at t = 0).

    How the memory reaches the cell:
        * inside a model: `kerasrnn.AttentiveRNN(cell)(targets, memory, ...)`, which binds
          it for the duration of the call and can return the alignments;
        * step by step (decoding, beam search), with no binding at all:
          `memory = cell.prepare_memory(keys, mask=mask)` once per source, then
          `output, states, alignments = cell.step(inputs, states, memory)` per step;
        * inside a plain `keras.layers.RNN` (eager code, subclassed models):
          `with cell.attending(memory): outputs = keras.layers.RNN(cell)(targets)`
          (with a target mask, pass `zero_output_for_mask=True`: JAX's masked loop
          otherwise repeats the first state as the output of padded steps).

    Args:
        cell: the recurrent cell to wrap (a kerasrnn or Keras cell, or
            `keras.layers.StackedRNNCells`).
        attention: a `kerasrnn.Attention` layer (e.g. `BahdanauAttention(units)`,
            `LuongAttention("general")`).
        mode: "bahdanau" or "luong" (see above).
        attention_layer_size: width of h~ = tanh(W_c [c; h]). Luong mode: default the
            cell's output width. Bahdanau mode: None (default) outputs [s_i; c_i].
        input_feeding: Luong mode only: concatenate h~_{t-1} to the input (default
            True). Bahdanau mode always feeds c_i to the cell.
        kernel_initializer: initializer of W_c (`attention_kernel`, (d_v + d_h) x size).

    Example:

    >>> import numpy as np, kerasrnn
    >>> cell = kerasrnn.AttentionCell(kerasrnn.GRUCell(8), kerasrnn.BahdanauAttention(8))
    >>> memory = cell.prepare_memory(np.ones((2, 5, 6), "float32"))
    >>> states = cell.get_initial_state(batch_size=2)
    >>> output, states, alignments = cell.step(np.ones((2, 3), "float32"), states, memory)
    >>> tuple(output.shape), tuple(alignments.shape)
    ((2, 14), (2, 5))
    """

    def __init__(
        self,
        cell,
        attention,
        mode="bahdanau",
        attention_layer_size=None,
        input_feeding=True,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        cell, attention = _deserialize(cell), _deserialize(attention)
        if not hasattr(cell, "state_size") or not hasattr(cell, "call"):
            raise ValueError(
                f"`cell` must be a recurrent cell (with `state_size` and `call`); got "
                f"cell={cell!r}."
            )
        if not isinstance(attention, Attention):
            raise ValueError(
                "`attention` must be a kerasrnn.Attention layer (e.g. "
                f"BahdanauAttention(units) or LuongAttention('general')); got {attention!r}."
            )
        if mode not in MODES:
            raise ValueError(f"`mode` must be one of {MODES}; got mode={mode!r}.")
        if attention_layer_size is not None and (
            isinstance(attention_layer_size, bool)
            or not isinstance(attention_layer_size, int)
            or attention_layer_size <= 0
        ):
            raise ValueError(
                "`attention_layer_size` must be a positive integer or None; got "
                f"attention_layer_size={attention_layer_size!r}."
            )
        if isinstance(cell, keras.layers.StackedRNNCells) and any(
            getattr(c, "dropout", 0) or getattr(c, "recurrent_dropout", 0)
            for c in cell.cells
        ):
            raise ValueError(
                "AttentionCell cannot fix the dropout masks of cells inside a "
                "StackedRNNCells `cell`; wrap a single cell for dropout, or use dropout "
                "between layers outside the recurrence."
            )
        self.cell = cell
        self.attention = attention
        self.mode = mode
        self.input_feeding = bool(input_feeding)
        self.attention_layer_size = attention_layer_size
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self._cell_sizes = [int(s) for s in tree.flatten(cell.state_size)]
        self._cell_output_size = int(
            getattr(cell, "output_size", None) or self._cell_sizes[0]
        )
        if mode == "luong" and attention_layer_size is None:
            self._layer_size = self._cell_output_size
        else:
            self._layer_size = attention_layer_size
        self._feeds = mode == "luong" and self.input_feeding
        self._slot = _MemorySlot()
        self._memory_shapes = None
        self._value_dim = None

    # ---- sizes ---------------------------------------------------------------------
    @property
    def state_size(self):
        return self._cell_sizes + ([self._layer_size] if self._feeds else [])

    @property
    def output_size(self):
        if self._layer_size is not None:
            return self._layer_size
        if self._value_dim is None:
            raise ValueError(
                "The output width of a Bahdanau-mode AttentionCell without "
                "`attention_layer_size` is d_h + d_v, known only once the memory is: "
                "call `prepare_memory` or use the cell in kerasrnn.AttentiveRNN first."
            )
        return self._cell_output_size + self._value_dim

    @property
    def query_size(self):
        """Width of the attention query: s_{i-1}'s h (Bahdanau) or h_t (Luong)."""
        if self.mode == "luong":
            return self._cell_output_size
        size = self.cell.state_size
        if isinstance(self.cell, keras.layers.StackedRNNCells):
            size = size[-1]
        return int(tree.flatten(size)[0])

    # ---- building --------------------------------------------------------------------
    def build_memory(self, keys_shape, values_shape=None):
        """Builds the attention for memories of this shape (`[batch, Tk, d]`)."""
        keys_shape = tuple(keys_shape)
        values_shape = keys_shape if values_shape is None else tuple(values_shape)
        if len(keys_shape) != 3 or len(values_shape) != 3 or values_shape[-1] is None:
            raise ValueError(
                "The memory (`keys` / `values`) must have shape [batch, Tk, d] with a "
                f"known d; got keys {keys_shape} and values {values_shape}."
            )
        if not self.attention.built:
            self.attention.build((None, self.query_size), keys_shape, values_shape)
        self._memory_shapes = [list(keys_shape), list(values_shape)]
        self._value_dim = int(values_shape[-1])

    def build(self, input_shape):
        if len(input_shape) != 2 or input_shape[-1] is None:
            raise ValueError(
                "AttentionCell takes one step of shape (batch, features) with known "
                f"features; got inputs of shape {tuple(input_shape)}."
            )
        if self._value_dim is None:
            raise ValueError(
                "AttentionCell needs the encoder memory before it is built: use it in "
                "kerasrnn.AttentiveRNN, or call `cell.prepare_memory(keys, mask=...)` "
                "(or `with cell.attending(memory):`) first."
            )
        if not self.cell.built:
            self.cell.build((input_shape[0], self._cell_input_dim(input_shape[-1])))
        if self._layer_size is not None:
            self.attention_kernel = self.add_weight(
                name="attention_kernel",
                shape=(self._value_dim + self._cell_output_size, self._layer_size),
                initializer=self.kernel_initializer,
            )
        else:
            self.attention_kernel = None

    def _cell_input_dim(self, input_dim):
        if self.mode == "bahdanau":
            return input_dim + self._value_dim
        return input_dim + (self._layer_size if self._feeds else 0)

    def get_build_config(self):
        config = super().get_build_config()
        if config is not None and self._memory_shapes is not None:
            config["memory_shapes"] = self._memory_shapes
        return config

    def build_from_config(self, config):
        if config.get("memory_shapes"):
            self.build_memory(*config["memory_shapes"])
        super().build_from_config(config)

    # ---- memory ----------------------------------------------------------------------
    def prepare_memory(self, keys, values=None, mask=None):
        """The per-source work, done once: returns an `AttentionMemory` for `step`.

        Args:
            keys: encoder outputs `[batch, Tk, d_k]`.
            values: `[batch, Tk, d_v]`, default `keys`.
            mask: `[batch, Tk]`, true at real (non-padded) source positions.
        """
        keys = ops.convert_to_tensor(keys)
        self.build_memory(keys.shape, None if values is None else ops.shape(values))
        return self.attention.prepare(keys, values, mask)

    @contextlib.contextmanager
    def attending(self, memory, emit_alignments=False):
        """Binds a prepared memory for calls through `cell(inputs, states)`.

        With `emit_alignments`, each step's output is [output; alignments] (how
        `AttentiveRNN` collects the `[batch, Tq, Tk]` alignment matrix).
        """
        _check_memory(memory)
        previous = (self._slot.memory, self._slot.emit_alignments)
        self._slot.memory, self._slot.emit_alignments = memory, bool(emit_alignments)
        try:
            yield self
        finally:
            self._slot.memory, self._slot.emit_alignments = previous

    # ---- states ----------------------------------------------------------------------
    def get_initial_state(self, batch_size=None):
        init = getattr(self.cell, "get_initial_state", None)
        if init is not None:
            states = tree.flatten(init(batch_size=batch_size))
        else:
            states = [ops.zeros((batch_size, s), self.compute_dtype) for s in self._cell_sizes]
        if self._feeds:
            states.append(ops.zeros((batch_size, self._layer_size), self.compute_dtype))
        return states

    def initial_state_from(self, cell_states):
        """The full state list from the wrapped cell's states (e.g. an encoder's final
        states): appends h~_0 = 0 in Luong mode with input feeding, checks the widths."""
        states = tree.flatten(cell_states)
        if len(states) not in (len(self._cell_sizes), len(self.state_size)):
            raise ValueError(
                f"`initial_state` must hold the wrapped cell's {len(self._cell_sizes)} "
                f"state tensor(s) of widths {self._cell_sizes}; got {len(states)}. "
                "(For a bidirectional encoder, concatenate the forward and backward "
                "states with `merge_bidirectional_states`, or use AttentiveRNN(bridge=True).)"
            )
        for index, (state, size) in enumerate(zip(states, self.state_size)):
            if len(state.shape) != 2 or state.shape[-1] not in (None, size):
                raise ValueError(
                    f"`initial_state`[{index}] must have shape (batch, {size}); got "
                    f"{tuple(state.shape)}. Use AttentiveRNN(bridge=True) to map encoder "
                    "states of another width."
                )
        if len(states) < len(self.state_size):
            batch = ops.shape(states[0])[0]
            states.append(ops.zeros((batch, self._layer_size), states[0].dtype))
        return states

    # ---- one step ----------------------------------------------------------------------
    def step(self, inputs, states, memory, training=False):
        """One decoder step against a prepared memory, with no binding.

        Args:
            inputs: `[batch, d_in]`, e.g. the embedded previous token.
            states: the flat state list (`get_initial_state`, `initial_state_from`, or the
                previous step's).
            memory: the `AttentionMemory` from `prepare_memory` (for beam search,
                `memory.repeat(beam_width)` to line up with the beams).

        Returns:
            (output, new_states, alignments): `[batch, output_size]`, the flat list,
            `[batch, Tk]`.
        """
        _check_memory(memory)
        if not self.built:
            self.build(tuple(inputs.shape))
        states = tree.flatten(states)
        count = len(self._cell_sizes)
        cell_states = self._pack(states[:count])
        if self.mode == "bahdanau":
            context, alignments = self.attention.attend(self._query(cell_states), memory)
            h, new_cell_states = self._run_cell(
                ops.concatenate([inputs, ops.cast(context, inputs.dtype)], axis=-1),
                cell_states,
                training,
            )
            if self.attention_kernel is None:
                output = ops.concatenate([h, ops.cast(context, h.dtype)], axis=-1)
            else:
                output = self._attentional(context, h)
            return output, tree.flatten(new_cell_states), alignments
        if self._feeds:
            inputs = ops.concatenate([inputs, states[count]], axis=-1)
        h, new_cell_states = self._run_cell(inputs, cell_states, training)
        context, alignments = self.attention.attend(h, memory)
        output = self._attentional(context, h)
        new_states = tree.flatten(new_cell_states) + ([output] if self._feeds else [])
        return output, new_states, alignments

    def call(self, inputs, states, training=False):
        memory = self._slot.memory
        if memory is None:
            raise ValueError(
                "AttentionCell has no encoder memory: use it in kerasrnn.AttentiveRNN, or "
                "bind one with `with cell.attending(cell.prepare_memory(keys, mask=m)):`, "
                "or call `cell.step(inputs, states, memory)`."
            )
        output, new_states, alignments = self.step(inputs, states, memory, training)
        if self._slot.emit_alignments:
            output = ops.concatenate([output, ops.cast(alignments, output.dtype)], axis=-1)
        return output, new_states

    def _pack(self, flat):
        if isinstance(self.cell.state_size, int):
            return flat
        return tree.pack_sequence_as(self.cell.state_size, flat)

    def _query(self, cell_states):
        state = cell_states
        if isinstance(self.cell, keras.layers.StackedRNNCells):
            state = state[-1]
        while tree.is_nested(state):
            state = state[0]
        return state

    def _run_cell(self, inputs, cell_states, training):
        kwargs = {}
        if getattr(self.cell, "_call_has_training_arg", False):
            kwargs["training"] = training
        return self.cell(inputs, cell_states, **kwargs)

    def _attentional(self, context, h):
        """h~ = tanh(W_c [c; h])."""
        joined = ops.concatenate([ops.cast(context, h.dtype), h], axis=-1)
        return ops.tanh(ops.matmul(joined, self.attention_kernel))

    # ---- dropout: fixed masks for the wrapped cell -----------------------------------
    def get_dropout_mask(self, step_input):
        if isinstance(self.cell, DropoutRNNCell):
            width = self._cell_input_dim(step_input.shape[-1])
            dummy = ops.zeros((ops.shape(step_input)[0], width), step_input.dtype)
            return self.cell.get_dropout_mask(dummy)
        return None

    def get_recurrent_dropout_mask(self, step_input):
        if isinstance(self.cell, DropoutRNNCell):
            return self.cell.get_recurrent_dropout_mask(step_input)
        return None

    def reset_dropout_mask(self):
        if isinstance(self.cell, DropoutRNNCell):
            self.cell.reset_dropout_mask()

    def reset_recurrent_dropout_mask(self):
        if isinstance(self.cell, DropoutRNNCell):
            self.cell.reset_recurrent_dropout_mask()

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "cell": keras.saving.serialize_keras_object(self.cell),
                "attention": keras.saving.serialize_keras_object(self.attention),
                "mode": self.mode,
                "attention_layer_size": self.attention_layer_size,
                "input_feeding": self.input_feeding,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return config


def _check_memory(memory):
    if not isinstance(memory, AttentionMemory):
        raise ValueError(
            "`memory` must be the AttentionMemory returned by `prepare_memory`; got "
            f"{type(memory).__name__}."
        )


def merge_bidirectional_states(states):
    """[h_fw, c_fw, ..., h_bw, c_bw, ...] -> [[h_fw; h_bw], [c_fw; c_bw], ...].

    `keras.layers.Bidirectional(..., return_state=True)` returns the forward states, then
    the backward ones; a decoder with twice the encoder's units starts from their
    concatenation.
    """
    states = list(states)
    if len(states) % 2:
        raise ValueError(
            "`states` must hold the forward states then the backward states (an even "
            f"count); got {len(states)}."
        )
    half = len(states) // 2
    return [
        ops.concatenate([fw, bw], axis=-1) for fw, bw in zip(states[:half], states[half:])
    ]


@keras.saving.register_keras_serializable(package="kerasrnn")
class AttentiveRNN(keras.layers.RNN):
    """An attentive decoder: `keras.layers.RNN` over an `AttentionCell`, with the memory.

    `decoder(targets, memory, initial_state=None, mask=None, memory_mask=None)` runs the
    cell over the (teacher-forced) target inputs `[batch, Tq, d_in]`, attending to
    `memory` `[batch, Tk, d]` (the encoder outputs). The key projection is computed once
    per call, outside the time loop; the memory is bound to the cell only while the loop
    runs (Keras 3's RNN has no `constants`), so the layer serialises like any other.
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
        bridge: map the given `initial_state` through a learned s_0 = tanh(W_s h + b)
            per wrapped-cell state (Bahdanau et al.'s initialisation), so the encoder's
            states may have any width. A bidirectional encoder's states (twice as many:
            forward then backward, as `keras.layers.Bidirectional` returns them) are
            concatenated pairwise first.
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
    ...     kerasrnn.LSTMCell(8), kerasrnn.LuongAttention("general"), mode="luong")
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
        return_alignments=False,
        bridge=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        zero_output_for_mask=True,
        **kwargs,
    ):
        cell = _deserialize(cell)
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
        self.bridge = bool(bridge)
        if self.bridge:
            self.bridges = [
                keras.layers.Dense(size, activation="tanh", name=f"bridge_{index}")
                for index, size in enumerate(cell._cell_sizes)
            ]

    def build(self, sequences_shape, memory_shape, initial_state_shape=None):
        self.cell.build_memory(memory_shape)
        super().build(sequences_shape)
        if self.bridge and initial_state_shape is not None:
            shapes = _state_shapes(initial_state_shape)
            if len(shapes) == 2 * len(self.bridges):  # bidirectional: merged first
                half = len(self.bridges)
                shapes = [
                    (fw[0], fw[-1] + bw[-1]) for fw, bw in zip(shapes[:half], shapes[half:])
                ]
            for layer, shape in zip(self.bridges, shapes):
                if not layer.built:
                    layer.build(shape)

    # ---- the step-by-step API --------------------------------------------------------
    def prepare_memory(self, memory, mask=None):
        """`AttentionCell.prepare_memory`: the per-source part, once per source."""
        return self.cell.prepare_memory(memory, mask=mask)

    def initial_state_from(self, encoder_states=None, batch_size=None):
        """The decoder's flat initial states: zeros (give `batch_size`), or from the
        encoder's final states through the bridge (if any) and `cell.initial_state_from`."""
        if encoder_states is None:
            return self.cell.get_initial_state(batch_size=batch_size)
        states = tree.flatten(encoder_states)
        if self.bridge:
            if len(states) == 2 * len(self.bridges):
                states = merge_bidirectional_states(states)
            if len(states) != len(self.bridges):
                raise ValueError(
                    f"`initial_state` must hold {len(self.bridges)} encoder state(s), one "
                    f"per state of the wrapped cell (or twice as many from a "
                    f"bidirectional encoder); got {len(states)}."
                )
            states = [layer(state) for layer, state in zip(self.bridges, states)]
        return self.cell.initial_state_from(states)

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
        prepared = self.cell.prepare_memory(memory, mask=memory_mask)
        if initial_state is not None:
            initial_state = self.initial_state_from(initial_state)
        with self.cell.attending(prepared, emit_alignments=self.return_alignments):
            result = super().call(
                sequences, initial_state=initial_state, mask=mask, training=training
            )
        if not self.return_alignments:
            return result
        output, states = (result[0], list(result[1:])) if self.return_state else (result, [])
        width = self.cell.output_size
        output, alignments = output[..., :width], output[..., width:]
        return (output, alignments, *states) if self.return_state else (output, alignments)

    def compute_output_shape(self, sequences_shape, memory_shape, initial_state_shape=None):
        shapes = super().compute_output_shape(sequences_shape)
        if not self.return_alignments:
            return shapes
        alignments = (sequences_shape[0], sequences_shape[1], memory_shape[1])
        if self.return_state:
            return (shapes[0], alignments, *shapes[1:])
        return shapes, alignments

    def compute_mask(self, inputs, previous_mask=None):
        mask = tree.flatten(previous_mask)[0] if previous_mask is not None else None
        output_mask = mask if self.return_sequences else None
        masks = [output_mask] + ([output_mask] if self.return_alignments else [])
        if self.return_state:
            masks += [None] * len(self.state_size)
        return masks if len(masks) > 1 else masks[0]

    def get_config(self):
        config = super().get_config()
        config.update({"return_alignments": self.return_alignments, "bridge": self.bridge})
        return config


def _state_shapes(shape):
    """A list of state shapes from `initial_state_shape` (one shape or a list of them)."""
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return [tuple(s) for s in shape]
    return [tuple(shape)]
