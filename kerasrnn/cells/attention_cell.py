"""`AttentionCell`: any recurrent cell with attention over an encoder memory, one step at
a time.

The cell is three pieces: the wrapped cell, the attention mechanism(s), and two
pluggable objects, the step order (`AttendThenRun`, Bahdanau; `RunThenAttend`, Luong;
`kerasrnn.cells.step_order`) and the projection that makes the attention vector
(`LuongProjection`, `LinearProjection`, `ContextProjection`, `ConcatProjection`, any
Keras layer; `kerasrnn.cells.projection`).

The encoder memory is always given explicitly: `cell(inputs, states, memory=prepared)`
or `cell.step(inputs, states, prepared)`, the memory prepared once per source sequence
(the score's key projection, e.g. U_a h_j, outside the time loop). The decoder layer
that runs the cell over a target sequence is `kerasrnn.AttentiveRNN`
(`kerasrnn.cells.attentive`); `cell.with_memory(prepared)` gives a bound cell for a
plain `keras.layers.RNN` (`kerasrnn.cells.bound_cell`). What a loop over time steps
draws once before it (the wrapped cell's dropout masks, the sigmoid noise of monotonic
attention) and the alignments appended to a step's output are the cell's own methods.
"""

import keras
from keras import ops, tree

from kerasrnn.attention.layers import Attention, AttentionMemory
from kerasrnn.cells import projection as projection_lib
from kerasrnn.cells import step_order as step_order_lib
from kerasrnn.cells.bound_cell import BoundAttentionCell
from kerasrnn.dropout_masks import ForwardsDropoutMasks
from kerasrnn.serialization import deserialize


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
            config[key] = deserialize(config.get(key))
        attention = config.pop("attention")
        attention = (
            [deserialize(a) for a in attention]
            if isinstance(attention, list)
            else deserialize(attention)
        )
        return cls(attention=attention, **config)

    # ---- sizes ---------------------------------------------------------------------
    @property
    def mechanisms(self):
        """The attention layers, as a list (one entry without a list of mechanisms)."""
        return list(self.attention) if self._multi else [self.attention]

    @property
    def multiple_mechanisms(self):
        """Whether `attention` is a list of mechanisms: the memories, the alignments and
        the memory shapes are then lists (tuples), one entry per mechanism, even for a
        list of one."""
        return self._multi

    @property
    def cell_state_sizes(self):
        """The widths of the wrapped cell's flat states (the first entries of `states`)."""
        return list(self._cell_sizes)

    def _attention_width(self):
        """Width of the attention vector a_t (None until the memory's width is known)."""
        dims = self._value_dims or [None] * len(self.mechanisms)
        width = self.projection.output_width(list(dims), self.cell_output_size)
        return None if width is None else int(width)

    @property
    def memory_lengths(self):
        """Each mechanism's memory length Tk, as built (`build_memory`, `prepare_memory`):
        a list, None entries where unknown (None everywhere before the memory is)."""
        if self._memory_shapes is None:
            return [None] * len(self.mechanisms)
        return [shapes[0][1] for shapes in self._memory_shapes]

    @property
    def state_size(self):
        sizes = list(self._cell_sizes)
        if self.step_order.feeds_attention:
            sizes.append(self._attention_width())
        for mechanism, length in zip(self.mechanisms, self.memory_lengths):
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
        self.memories(memory)
        if return_alignments is None:
            return_alignments = self.alignment_history
        return BoundAttentionCell(self, memory, bool(return_alignments))

    def memories(self, memory):
        """The prepared memory (`prepare_memory`'s) as a list with one `AttentionMemory`
        per mechanism, checked: a one-line error for anything else."""
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
        memories = self.memories(memory) if memory is not None else None
        for index, mechanism in enumerate(self.mechanisms):
            if not mechanism.stateful_attention:
                continue
            if memories is not None:
                length = ops.shape(memories[index].values)[1]
            else:
                length = self.memory_lengths[index]
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
        memories = self.memories(memory)
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
        memories = self.memories(memory)
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
        (`[output; alignments]` with `return_alignments`: `split_alignments` takes it
        apart)."""
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

    def split_alignments(self, outputs, memory):
        """The inverse of `call(..., return_alignments=True)`: `[output; alignments]`
        (one step's `[batch, width]` or every step's `[batch, Tq, width]`) ->
        `(output, alignments)`, the alignments `[..., Tk]` (a list of them, one per
        mechanism in order, with several).

        Args:
            outputs: what the cell call returned with `return_alignments=True` (or
                those outputs stacked over time steps).
            memory: the prepared memory the steps attended.
        """
        width = self.output_size
        output, alignments = outputs[..., :width], outputs[..., width:]
        if not self._multi:
            return output, alignments
        memories = self.memories(memory)
        blocks, start = [], 0
        for mem in memories[:-1]:
            length = ops.shape(mem.values)[1]
            blocks.append(alignments[..., start : start + length])
            start = start + length
        blocks.append(alignments[..., start:])  # the last mechanism's: the rest
        return output, blocks

    # ---- what a loop over time steps draws once, before it -------------------------
    def draw_dropout_masks(self, step_input, states):
        """Draws the wrapped cell's dropout masks for a loop over time steps, as
        `keras.layers.RNN` does before its loop: they stay fixed across the steps
        (Gal & Ghahramani's variational dropout) until `reset_dropout_masks`.

        Args:
            step_input: one step's input `[batch, d_in]` (its batch size and dtype).
            states: the flat states the loop starts from (the recurrent mask is
                shaped as the first).
        """
        self.get_dropout_mask(step_input)
        self.get_recurrent_dropout_mask(tree.flatten(states)[0])

    def reset_dropout_masks(self):
        """Forgets the masks of `draw_dropout_masks`, after the loop: the next batch
        draws its own."""
        self.reset_dropout_mask()
        self.reset_recurrent_dropout_mask()

    def draw_noise(self, memory, batch_size, steps):
        """The sigmoid noise of `steps` steps (monotonic attention with
        `sigmoid_noise`), drawn at once before a loop over time: JAX cannot advance
        a seed generator inside its scan.

        Args:
            memory: the prepared memory the loop attends.
            batch_size: the loop's batch size.
            steps: the loop's number of steps.

        Returns:
            `[batch, steps, W]`, the draws of each noisy mechanism side by side in the
            mechanisms' order (`split_noise` takes one step's apart); None when no
            mechanism adds noise, or when a memory's length is unknown while tracing
            (TensorFlow only: the steps then draw their own).
        """
        memories = self.memories(memory)
        noisy = [_noisy(m) for m in self.mechanisms]
        if not any(noisy) or any(mem.values.shape[1] is None for mem in memories):
            return None
        draws = [
            mechanism.draw_noise((batch_size, steps, int(mem.values.shape[1])))
            for mechanism, mem, noise in zip(self.mechanisms, memories, noisy)
            if noise
        ]
        return ops.concatenate(draws, axis=-1)

    def split_noise(self, columns, memory):
        """One step's columns of `draw_noise` `[batch, W]` -> the `noise` argument of
        `step`: one `[batch, Tk]` per mechanism, None for a mechanism without noise."""
        noise, start = [], 0
        for mechanism, mem in zip(self.mechanisms, self.memories(memory)):
            if _noisy(mechanism):
                width = int(mem.values.shape[1])
                noise.append(columns[:, start : start + width])
                start += width
            else:
                noise.append(None)
        return noise

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
