"""Attention inside the recurrence: `AttentionCell` and the decoder layer `AttentiveRNN`.

An `AttentionCell` is three pieces: the wrapped cell, the attention mechanism(s), and two
pluggable objects, the step order (`AttendThenRun`, Bahdanau; `RunThenAttend`, Luong;
`kerasrnn.cells.step_order`) and the projection that makes the attention vector
(`LuongProjection`, `LinearProjection`, `ContextProjection`, `ConcatProjection`, any
Keras layer; `kerasrnn.cells.projection`).

The encoder memory is always given explicitly: `cell(inputs, states, memory=prepared)`
or `cell.step(inputs, states, prepared)`. Keras 3's `keras.layers.RNN` has no
`constants` argument (and its states must be flat tensors of fixed width), so
`AttentiveRNN` runs the recurrence itself with a step function that passes the memory,
prepared once per source sequence (the score's key projection, e.g. U_a h_j, outside the
time loop); `cell.with_memory(prepared)` gives a bound cell for a plain
`keras.layers.RNN`.
"""

import keras
from keras import ops, tree

from kerasrnn._private import DropoutRNNCell, backend_rnn
from kerasrnn.attention.layers import Attention, AttentionMemory
from kerasrnn.cells import bridge as bridges
from kerasrnn.cells import projection as projection_lib
from kerasrnn.cells import step_order as step_order_lib
from kerasrnn.dropout_masks import ForwardsDropoutMasks


def _deserialize(obj):
    if isinstance(obj, dict):
        return keras.saving.deserialize_keras_object(obj)
    return obj


@keras.saving.register_keras_serializable(package="kerasrnn")
class AttentionCell(ForwardsDropoutMasks, keras.layers.Layer):
    """Wraps any recurrent cell with attention over an encoder memory h_1 ... h_Tk.

    Each step the step order decides the query and what the wrapped cell reads; the
    projection turns the contexts into the attention vector a_t.

    `AttendThenRun()` (the default; Bahdanau, Cho & Bengio 2015): the query is the
    previous state, and the context enters the cell beside the input y_{i-1}:

    .. math::

        c_i &= \\text{Attention}(s_{i-1}, h) \\\\
        s_i &= \\text{cell}([y_{i-1}; c_i], s_{i-1}) \\\\
        \\text{output}_i &= a_i = [s_i; c_i] \\quad (\\text{ConcatProjection, the default})

    (For a GRU cell, W [y; c] = W y + C c: the C c_i terms of the paper's decoder.)
    With an LSTM or stacked cell, s_{i-1} is the h state (of the top layer).

    `RunThenAttend()` (Luong, Pham & Manning 2015): the query is the new output h_t, and
    the attentional state is the output; with input feeding it also joins the next input:

    .. math::

        h_t &= \\text{cell}([y_t; a_{t-1}], s_{t-1})
            \\quad (\\text{without input feeding: cell}(y_t, s_{t-1})) \\\\
        c_t &= \\text{Attention}(h_t, h) \\\\
        a_t &= \\tanh(W_c [c_t; h_t]) = \\text{output}_t
            \\quad (\\text{LuongProjection, the default})

    TensorFlow Addons' `AttentionWrapper` (run-then-attend with input feeding, its
    linear layer W [h; c]) is `kerasrnn.compat.tfa.AttentionWrapper`, which builds the
    equivalent `AttentionCell` (tested against TFA's outputs).

    Several attention mechanisms (TensorFlow Addons' list of mechanisms): pass a list of
    attention layers; each attends its own memory, each gets its own projection weights
    (W_c^(k)), and the attention vectors (contexts into the cell with `AttendThenRun`)
    are concatenated.

    States (flat, as Keras requires): the wrapped cell's states, then a_{t-1} with input
    feeding (zeros at t = 0), then one `[batch, Tk]` state per stateful mechanism: the
    previous alignment of a monotonic attention (one-hot at position 0 at t = 0) or the
    coverage of a coverage attention (zeros at t = 0).

    How the memory reaches the cell (always explicitly):
        * inside a model: `kerasrnn.AttentiveRNN(cell)(targets, memory, ...)`, which can
          also return the alignments;
        * step by step (decoding, beam search):
          `memory = cell.prepare_memory(keys, mask=mask)` once per source, then
          `output, states, alignments = cell.step(inputs, states, memory)` per step;
        * as a Keras cell call: `cell(inputs, states, memory=memory)`;
        * inside a plain `keras.layers.RNN` (eager code, subclassed models):
          `keras.layers.RNN(cell.with_memory(memory))(targets)` (with a target mask,
          pass `zero_output_for_mask=True`: JAX's masked loop otherwise repeats the
          first state as the output of padded steps).

    Args:
        cell: the recurrent cell to wrap (a kerasrnn or Keras cell, or
            `keras.layers.StackedRNNCells`).
        attention: a `kerasrnn.Attention` layer (e.g. `BahdanauAttention(units)`,
            `LuongAttention("general")`, a monotonic or coverage attention), or a list
            of them, each with its own memory.
        step_order: `kerasrnn.AttendThenRun()` (default) or
            `kerasrnn.RunThenAttend(input_feeding=True, output_attention=True)`, or a
            `kerasrnn.cells.step_order.StepOrder` subclass.
        projection: the attention vector a_t: `kerasrnn.LuongProjection(units)`
            (tanh(W_c [c; h])), `LinearProjection(units)` (W [h; c]),
            `ContextProjection()` (c), `ConcatProjection()` ([h; c]), any Keras layer
            (applied to [h; c]) or a list of them, one per mechanism. Default: the step
            order's (`ConcatProjection()` for `AttendThenRun`, `LuongProjection()` as
            wide as h for `RunThenAttend`).
        alignment_history: `AttentiveRNN` returns the alignments of every step by
            default, and the bound cell of `with_memory` appends them to each step's
            output (TensorFlow Addons' `alignment_history`).

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
        step_order=None,
        projection=None,
        alignment_history=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        multi = isinstance(attention, (list, tuple))
        mechanisms = list(attention) if multi else [attention]
        if not hasattr(cell, "state_size") or not hasattr(cell, "call"):
            raise ValueError(
                f"`cell` must be a recurrent cell (with `state_size` and `call`); got "
                f"cell={cell!r}."
            )
        if not mechanisms:
            raise ValueError("`attention` must hold at least one attention layer; got [].")
        for mechanism in mechanisms:
            if not isinstance(mechanism, Attention):
                raise ValueError(
                    "`attention` must be a kerasrnn.Attention layer (e.g. "
                    "BahdanauAttention(units) or LuongAttention('general')) or a list of "
                    f"them; got {mechanism!r}."
                )
        if isinstance(cell, keras.layers.StackedRNNCells) and any(
            getattr(c, "dropout", 0) or getattr(c, "recurrent_dropout", 0) for c in cell.cells
        ):
            raise ValueError(
                "AttentionCell cannot fix the dropout masks of cells inside a "
                "StackedRNNCells `cell`; wrap a single cell for dropout, or use dropout "
                "between layers outside the recurrence."
            )
        self.cell = cell
        self.attention = mechanisms if multi else mechanisms[0]
        self.step_order = step_order_lib.get(step_order)
        self.projection = projection_lib.get(
            self.step_order.default_projection() if projection is None else projection
        )
        self.alignment_history = bool(alignment_history)
        self._multi = multi
        self._cell_sizes = [int(s) for s in tree.flatten(cell.state_size)]
        self.cell_output_size = int(getattr(cell, "output_size", None) or self._cell_sizes[0])
        self._memory_shapes = None
        self._value_dims = None
        self._attention_width()  # the projection's per-mechanism parts fit: raises if not

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("cell", "step_order", "projection"):
            config[key] = _deserialize(config.get(key))
        attention = config.pop("attention")
        attention = (
            [_deserialize(a) for a in attention]
            if isinstance(attention, list)
            else _deserialize(attention)
        )
        return cls(attention=attention, **config)

    # ---- sizes ---------------------------------------------------------------------
    @property
    def mechanisms(self):
        """The attention layers, as a list (one entry without a list of mechanisms)."""
        return list(self.attention) if self._multi else [self.attention]

    @property
    def cell_state_sizes(self):
        """The widths of the wrapped cell's flat states (the first entries of `states`)."""
        return list(self._cell_sizes)

    def _attention_width(self):
        """Width of the attention vector a_t (None until the memory's width is known)."""
        dims = self._value_dims or [None] * len(self.mechanisms)
        width = self.projection.output_width(list(dims), self.cell_output_size)
        return None if width is None else int(width)

    def _memory_lengths(self):
        if self._memory_shapes is None:
            return [None] * len(self.mechanisms)
        return [shapes[0][1] for shapes in self._memory_shapes]

    @property
    def state_size(self):
        sizes = list(self._cell_sizes)
        if self.step_order.feeds_attention:
            sizes.append(self._attention_width())
        for mechanism, length in zip(self.mechanisms, self._memory_lengths()):
            if mechanism.stateful_attention:
                sizes.append(length)
        return sizes

    @property
    def output_size(self):
        size = self.step_order.output_size(self._attention_width(), self.cell_output_size)
        if size is None:
            raise ValueError(
                "The output width of this AttentionCell depends on the memory's width, "
                "known only once the memory is: call `prepare_memory` or use the cell "
                "in kerasrnn.AttentiveRNN first."
            )
        return size

    @property
    def query_size(self):
        """Width of the attention query: s_{i-1}'s h (AttendThenRun) or h_t (RunThenAttend)."""
        return self.step_order.query_size(self)

    # ---- building --------------------------------------------------------------------
    def build_memory(self, keys_shape, values_shape=None):
        """Builds the attention for memories of this shape (`[batch, Tk, d]`; with
        several mechanisms, a list of shapes, one per mechanism)."""
        keys_shapes = _shape_list(keys_shape, len(self.mechanisms), "keys")
        if values_shape is None:
            values_shapes = keys_shapes
        else:
            values_shapes = _shape_list(values_shape, len(self.mechanisms), "values")
        dims = []
        for mechanism, keys_shape, values_shape in zip(self.mechanisms, keys_shapes, values_shapes):
            if len(keys_shape) != 3 or len(values_shape) != 3 or values_shape[-1] is None:
                raise ValueError(
                    "The memory (`keys` / `values`) must have shape [batch, Tk, d] with a "
                    f"known d; got keys {keys_shape} and values {values_shape}."
                )
            if not mechanism.built:
                mechanism.build((None, self.query_size), keys_shape, values_shape)
            dims.append(int(values_shape[-1]))
        if self._value_dims is not None and self.built and dims != self._value_dims:
            raise ValueError(
                f"This AttentionCell was built for memory values of width "
                f"{_one(self._value_dims)}; got {_one(dims)}. Its weights fix the width: "
                "pass the encoder outputs it was built with, or build a new cell."
            )
        self._memory_shapes = [[list(k), list(v)] for k, v in zip(keys_shapes, values_shapes)]
        self._value_dims = dims

    def build(self, input_shape):
        if len(input_shape) != 2 or input_shape[-1] is None:
            raise ValueError(
                "AttentionCell takes one step of shape (batch, features) with known "
                f"features; got inputs of shape {tuple(input_shape)}."
            )
        if self._value_dims is None:
            raise ValueError(
                "AttentionCell needs the encoder memory before it is built: use it in "
                "kerasrnn.AttentiveRNN, or call `cell.prepare_memory(keys, mask=...)` "
                "first."
            )
        if not self.cell.built:
            self.cell.build((input_shape[0], self._cell_input_dim(input_shape[-1])))
        if not self.projection.built:
            self.projection.build(list(self._value_dims), self.cell_output_size)

    def _cell_input_dim(self, input_dim):
        return self.step_order.cell_input_dim(input_dim, self._value_dims, self._attention_width())

    def get_build_config(self):
        config = super().get_build_config()
        if config is not None and self._memory_shapes is not None:
            if self._multi:
                config["memory_shapes_list"] = self._memory_shapes
            else:
                config["memory_shapes"] = self._memory_shapes[0]
        return config

    def build_from_config(self, config):
        if config.get("memory_shapes"):
            self.build_memory(*config["memory_shapes"])
        elif config.get("memory_shapes_list"):
            shapes = config["memory_shapes_list"]
            self.build_memory([k for k, _ in shapes], [v for _, v in shapes])
        super().build_from_config(config)

    # ---- memory ----------------------------------------------------------------------
    def prepare_memory(self, keys, values=None, mask=None):
        """The per-source work, done once: returns an `AttentionMemory` for `step` (a
        tuple of them with several mechanisms).

        Args:
            keys: encoder outputs `[batch, Tk, d_k]` (a list, one per mechanism, with
                several).
            values: `[batch, Tk, d_v]`, default `keys` (a list with several).
            mask: `[batch, Tk]`, true at real (non-padded) source positions (a list with
                several; None entries for unmasked memories).
        """
        count = len(self.mechanisms)
        keys = [ops.convert_to_tensor(k) for k in _listed(keys, count, "keys")]
        values = [None] * count if values is None else _listed(values, count, "values")
        masks = [None] * count if mask is None else _listed(mask, count, "mask")
        self.build_memory(
            [k.shape for k in keys],
            [k.shape if v is None else ops.shape(v) for k, v in zip(keys, values)],
        )
        memories = tuple(
            mechanism.prepare(k, v, m)
            for mechanism, k, v, m in zip(self.mechanisms, keys, values, masks)
        )
        return memories if self._multi else memories[0]

    def with_memory(self, memory, return_alignments=None):
        """A cell bound to a prepared memory, for a plain `keras.layers.RNN`.

        `keras.layers.RNN(cell.with_memory(cell.prepare_memory(keys, mask=m)))(targets)`
        runs this cell's weights over `targets`, attending `memory`. With
        `return_alignments` (default: `alignment_history`), each step's output is
        [output; alignments] (several mechanisms' alignments follow each other). The
        bound cell lives for the call that uses it: it is not saved in `.keras` files
        (use `AttentiveRNN` inside a model).
        """
        self._memories(memory)
        if return_alignments is None:
            return_alignments = self.alignment_history
        return BoundAttentionCell(self, memory, bool(return_alignments))

    def _memories(self, memory):
        """The prepared memory as a list with one AttentionMemory per mechanism."""
        memories = [memory] if isinstance(memory, AttentionMemory) else memory
        if not isinstance(memories, (list, tuple)) or not all(
            isinstance(m, AttentionMemory) for m in memories
        ):
            raise ValueError(
                "`memory` must be the AttentionMemory returned by `prepare_memory` (a "
                f"tuple of them with several mechanisms); got {type(memory).__name__}."
            )
        if len(memories) != len(self.mechanisms):
            raise ValueError(
                f"This AttentionCell has {len(self.mechanisms)} attention mechanism(s), "
                f"each with its own memory; got {len(memories)} memories."
            )
        return list(memories)

    # ---- states ----------------------------------------------------------------------
    def get_initial_state(self, batch_size=None, memory=None):
        """Zero states, a_0 = 0 and the attention states' initial values.

        A stateful mechanism's first state (monotonic: one-hot at position 0, coverage:
        zeros) needs the memory's length: from `memory` (the prepared memory) or the
        last `prepare_memory`'s static shape.
        """
        init = getattr(self.cell, "get_initial_state", None)
        if init is not None:
            states = tree.flatten(init(batch_size=batch_size))
        else:
            states = [ops.zeros((batch_size, s), self.compute_dtype) for s in self._cell_sizes]
        return self._extra_states(states, batch_size, memory)

    def _extra_states(self, states, batch_size, memory):
        if self.step_order.feeds_attention:
            states.append(ops.zeros((batch_size, self._attention_width()), self.compute_dtype))
        memories = self._memories(memory) if memory is not None else None
        for index, mechanism in enumerate(self.mechanisms):
            if not mechanism.stateful_attention:
                continue
            if memories is not None:
                length = ops.shape(memories[index].values)[1]
            else:
                length = self._memory_lengths()[index]
                if length is None:
                    raise ValueError(
                        f"The first state of {type(mechanism).__name__} needs the memory's "
                        "length: pass `memory=` (the prepared memory)."
                    )
            states.append(
                ops.cast(mechanism.initial_state_for(batch_size, length), self.compute_dtype)
            )
        return states

    def initial_state_from(self, cell_states, memory=None):
        """The full state list from the wrapped cell's states (e.g. an encoder's final
        states): appends a_0 = 0 with input feeding and the attention states' initial
        values (see `get_initial_state`), checks the widths."""
        states = tree.flatten(cell_states)
        full = self.state_size
        if len(states) not in (len(self._cell_sizes), len(full)):
            raise ValueError(
                f"`initial_state` must hold the wrapped cell's {len(self._cell_sizes)} "
                f"state tensor(s) of widths {self._cell_sizes}; got {len(states)}. "
                "(For a bidirectional encoder, concatenate the forward and backward "
                "states with `merge_bidirectional_states`, or use AttentiveRNN(bridge=True).)"
            )
        for index, (state, size) in enumerate(zip(states, full)):
            if len(state.shape) != 2 or (size is not None and state.shape[-1] not in (None, size)):
                raise ValueError(
                    f"`initial_state`[{index}] must have shape (batch, {size}); got "
                    f"{tuple(state.shape)}. Use AttentiveRNN(bridge=True) to map encoder "
                    "states of another width."
                )
        if len(states) < len(full):
            batch = ops.shape(states[0])[0]
            states = self._extra_states(list(states), batch, memory)
        return states

    # ---- one step ----------------------------------------------------------------------
    def step(self, inputs, states, memory, training=False, noise=None):
        """One decoder step against a prepared memory.

        Args:
            inputs: `[batch, d_in]`, e.g. the embedded previous token.
            states: the flat state list (`get_initial_state`, `initial_state_from`, or the
                previous step's).
            memory: the `AttentionMemory` from `prepare_memory` (for beam search,
                `memory.repeat(beam_width)` to line up with the beams;
                `kerasrnn.attention.repeat_memory` for several mechanisms).
            noise: optional pre-drawn sigmoid noise, one `[batch, Tk]` per mechanism
                (None entries where none), used while training.

        Returns:
            (output, new_states, alignments): `[batch, output_size]`, the flat list,
            `[batch, Tk]` (a tuple of them with several mechanisms).
        """
        memories = self._memories(memory)
        if not self.built:
            self.build(tuple(inputs.shape))
        states = tree.flatten(states)
        count = len(self._cell_sizes)
        feeds = int(self.step_order.feeds_attention)
        expected = count + feeds + sum(m.stateful_attention for m in self.mechanisms)
        if len(states) != expected:
            raise ValueError(
                f"AttentionCell.step needs {expected} state tensors (the wrapped cell's "
                f"{count}{', a_{t-1}' if feeds else ''}"
                f"{', the attention states' if expected > count + feeds else ''}); "
                f"got {len(states)}. Start from `get_initial_state` or `initial_state_from`."
            )
        attention_states = iter(states[count + feeds :])
        previous = [
            next(attention_states) if m.stateful_attention else None for m in self.mechanisms
        ]

        def attend(query):  # the memory reaches the step order through this closure
            return self.attend(query, memories, previous, training=training, noise=noise)

        output, new_cell_states, fed, alignments, next_attention = self.step_order.step(
            self,
            inputs,
            self._pack(states[:count]),
            states[count] if feeds else None,
            attend,
            training,
        )
        new_states = tree.flatten(new_cell_states) + ([fed] if feeds else [])
        new_states = new_states + [ops.cast(s, new_states[0].dtype) for s in next_attention]
        return output, new_states, tuple(alignments) if self._multi else alignments[0]

    # the pieces a step order composes (see kerasrnn.cells.step_order)
    def query(self, cell_states):
        """s_{i-1}'s h: the first state (of the top layer of a stacked cell)."""
        state = cell_states
        if isinstance(self.cell, keras.layers.StackedRNNCells):
            state = state[-1]
        while tree.is_nested(state):
            state = state[0]
        return state

    def attend(self, query, memory, attention_states=None, training=False, noise=None):
        """Every mechanism attends its prepared memory with `query`: (contexts,
        alignments, next attention states), lists in the mechanisms' order.
        `attention_states` and `noise` hold one entry (or None) per mechanism."""
        memories = self._memories(memory)
        count = len(memories)
        attention_states = attention_states or [None] * count
        noise = noise or [None] * count
        results = [
            mechanism.step(query, mem, state, training=training, noise=draws)
            for mechanism, mem, state, draws in zip(
                self.mechanisms, memories, attention_states, noise
            )
        ]
        contexts = [ops.cast(context, query.dtype) for context, _, _ in results]
        alignments = [a for _, a, _ in results]
        next_states = [s for _, _, s in results if s is not None]
        return contexts, alignments, next_states

    def run_cell(self, inputs, cell_states, training=False):
        """The wrapped cell's step: (h, new cell states)."""
        kwargs = {}
        if getattr(self.cell, "_call_has_training_arg", False):
            kwargs["training"] = training
        return self.cell(inputs, cell_states, **kwargs)

    def project(self, contexts, cell_output):
        """The projection's attention vector a_t."""
        return self.projection(contexts, cell_output)

    def call(
        self, inputs, states, memory=None, training=False, noise=None, return_alignments=False
    ):
        """The Keras cell call: `(output, new_states)` against the prepared `memory`
        (`[output; alignments]` with `return_alignments`)."""
        if memory is None:
            raise ValueError(
                "AttentionCell has no encoder memory: use it in kerasrnn.AttentiveRNN, "
                "call `cell(inputs, states, memory=cell.prepare_memory(keys, mask=m))` or "
                "`cell.step(inputs, states, memory)`, or run a plain keras.layers.RNN over "
                "`cell.with_memory(memory)`."
            )
        output, new_states, alignments = self.step(inputs, states, memory, training, noise)
        if return_alignments:
            alignments = list(alignments) if self._multi else [alignments]
            output = ops.concatenate(
                [output] + [ops.cast(a, output.dtype) for a in alignments], axis=-1
            )
        return output, new_states

    def _pack(self, flat):
        if isinstance(self.cell.state_size, int):
            return flat
        return tree.pack_sequence_as(self.cell.state_size, flat)

    # ---- dropout: fixed masks for the wrapped cell (ForwardsDropoutMasks) -----------
    def _wrapped_step_input(self, step_input):
        # the wrapped cell reads the step input widened by the context
        width = self._cell_input_dim(step_input.shape[-1])
        return ops.zeros((ops.shape(step_input)[0], width), step_input.dtype)

    def get_config(self):
        config = super().get_config()
        serialize = keras.saving.serialize_keras_object
        config.update(
            {
                "cell": serialize(self.cell),
                "attention": [serialize(m) for m in self.attention]
                if self._multi
                else serialize(self.attention),
                "step_order": serialize(self.step_order),
                "projection": serialize(self.projection),
                "alignment_history": self.alignment_history,
            }
        )
        return config


class BoundAttentionCell(DropoutRNNCell, keras.layers.Layer):
    """An `AttentionCell` with its memory: a plain Keras cell for `keras.layers.RNN`.

    Made by `AttentionCell.with_memory(memory)`; shares the cell's weights and calls
    `cell(inputs, states, memory=memory)`. Not serialisable (the memory is a tensor of
    one call): inside a saved model use `AttentiveRNN`.
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
            memories = self.attention_cell._memories(self._memory)
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


def _noisy(mechanism):
    return bool(getattr(mechanism, "sigmoid_noise", 0))


def _listed(value, count, name):
    if count == 1 and not isinstance(value, (list, tuple)):
        return [value]
    if count == 1 and isinstance(value, (list, tuple)) and len(value) == 1:
        return list(value)
    if not isinstance(value, (list, tuple)) or len(value) != count:
        raise ValueError(
            f"This AttentionCell has {count} attention mechanisms: `{name}` must be a list "
            f"with one entry per mechanism; got {type(value).__name__}"
            f"{f' of length {len(value)}' if isinstance(value, (list, tuple)) else ''}."
        )
    return list(value)


def _shape_list(shape, count, name):
    """One shape per mechanism from a shape (one mechanism) or a list of shapes."""
    shape = list(shape)
    nested = len(shape) > 0 and not (shape[0] is None or isinstance(shape[0], int))
    shapes = [tuple(s) for s in shape] if nested else [tuple(shape)]
    if len(shapes) != count:
        raise ValueError(
            f"This AttentionCell has {count} attention mechanism(s), each with its own "
            f"memory; got {len(shapes)} `{name}` shape(s)."
        )
    return shapes


def _one(values):
    return values[0] if len(values) == 1 else values


def merge_bidirectional_states(states):
    """[h_fw, c_fw, ..., h_bw, c_bw, ...] -> [[h_fw; h_bw], [c_fw; c_bw], ...].

    `keras.layers.Bidirectional(..., return_state=True)` returns the forward states, then
    the backward ones; a decoder with twice the encoder's units starts from their
    concatenation (`kerasrnn.layers.join_directions`, which every bridge applies).
    """
    states = list(states)
    if len(states) % 2:
        raise ValueError(
            "`states` must hold the forward states then the backward states (an even "
            f"count); got {len(states)}."
        )
    return bridges.join_directions(states, len(states) // 2)


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
        # fixed dropout masks, drawn before the loop (JAX's scan cannot draw them)
        self._maybe_config_dropout_masks(cell, sequences[:, 0, :], initial_state)
        memories = cell._memories(prepared)
        widths = []
        static = all(mem.values.shape[1] is not None for mem in memories)
        if training and static and any(_noisy(m) for m in cell.mechanisms):
            # the sigmoid noise of every step, drawn here and carried as extra input
            # columns: JAX cannot advance a seed generator inside its scan. (A memory
            # length unknown while tracing, TensorFlow only, draws in the loop.)
            batch, steps = ops.shape(sequences)[0], ops.shape(sequences)[1]
            draws = []
            for mechanism, mem in zip(cell.mechanisms, memories):
                width = int(mem.values.shape[1]) if _noisy(mechanism) else 0
                widths.append(width)
                if width:
                    draws.append(
                        ops.cast(mechanism.draw_noise((batch, steps, width)), sequences.dtype)
                    )
            sequences = ops.concatenate([sequences] + draws, axis=-1)
        noise_width = sum(widths)

        def step(inputs, states):
            noise = None
            if noise_width:  # split the pre-drawn noise off the step's inputs
                inputs, draws = inputs[:, :-noise_width], inputs[:, -noise_width:]
                noise, start = [], 0
                for width in widths:
                    noise.append(draws[:, start : start + width] if width else None)
                    start += width
            return cell(
                inputs,
                states,
                memory=prepared,
                training=training,
                noise=noise,
                return_alignments=self.return_alignments,
            )

        last_output, outputs, states = backend_rnn(
            step,
            sequences,
            initial_state,
            go_backwards=False,
            mask=mask,
            unroll=self.unroll,
            input_length=sequences.shape[1],
            zero_output_for_mask=self.zero_output_for_mask,
            return_all_outputs=self.return_sequences,
        )
        self._maybe_reset_dropout_masks(cell)
        output = ops.cast(outputs if self.return_sequences else last_output, self.compute_dtype)
        states = [ops.cast(s, self.compute_dtype) for s in tree.flatten(states)]
        result = (output, *states) if self.return_state else output
        if not self.return_alignments:
            return result
        output, states = (result[0], list(result[1:])) if self.return_state else (result, [])
        width = self.cell.output_size
        output, alignments = output[..., :width], output[..., width:]
        if self.cell._multi:  # one [batch, Tq, Tk_k] block per mechanism, in order
            blocks, start = [], 0
            for index, mem in enumerate(memories):
                if index == len(memories) - 1:
                    blocks.append(alignments[..., start:])
                else:
                    length = ops.shape(mem.values)[1]
                    blocks.append(alignments[..., start : start + length])
                    start = start + length
            alignments = blocks
        return (output, alignments, *states) if self.return_state else (output, alignments)

    def compute_output_shape(self, sequences_shape, memory_shape, initial_state_shape=None):
        batch, length = sequences_shape[0], sequences_shape[1]
        memory_shapes = _shape_list(memory_shape, len(self.cell.mechanisms), "memory")
        self.cell.build_memory(memory_shapes if self.cell._multi else memory_shapes[0])
        width = self.cell.output_size
        output = (batch, length, width) if self.return_sequences else (batch, width)
        states = [(batch, size) for size in self.cell.state_size]
        # attention states are [batch, Tk] with this call's Tk
        stateful = [m.stateful_attention for m in self.cell.mechanisms]
        lengths = iter(shape[1] for shape, s in zip(memory_shapes, stateful) if s)
        extra = len(states) - sum(stateful)
        states = states[:extra] + [(batch, next(lengths)) for _ in range(sum(stateful))]
        shapes = [output]
        if self.return_alignments:
            alignments = [(batch, length, shape[1]) for shape in memory_shapes]
            shapes.append(alignments if self.cell._multi else alignments[0])
        if self.return_state:
            shapes += states
        return tuple(shapes) if len(shapes) > 1 else shapes[0]

    def compute_mask(self, inputs, previous_mask=None):
        mask = tree.flatten(previous_mask)[0] if previous_mask is not None else None
        output_mask = mask if self.return_sequences else None
        alignment_mask = (
            [output_mask] * len(self.cell.mechanisms) if self.cell._multi else output_mask
        )
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
