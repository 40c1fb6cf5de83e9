"""Step orders: when an `AttentionCell` attends, relative to running its wrapped cell.

TensorFlow Addons' `AttentionWrapper` plugs in `cell_input_fn` and `attention_fn`; here
one small object holds both decisions, what the query is and what the cell reads:

.. math::

    \\text{AttendThenRun (Bahdanau):}\\quad c_i &= \\text{Attention}(s_{i-1}, h),\\;
        s_i = \\text{cell}([y_{i-1}; c_i], s_{i-1}),\\; \\text{output}_i = a_i \\\\
    \\text{RunThenAttend (Luong):}\\quad h_t &= \\text{cell}([y_t; a_{t-1}], s_{t-1}),\\;
        c_t = \\text{Attention}(h_t, h),\\; \\text{output}_t = a_t

where a is the projection's attention vector (`kerasrnn.LuongProjection`, ...).
A step order is a plain serialisable object: `step(cell, inputs, cell_states,
previous_attention, attend, training)` returns `(output, new_cell_states,
attention_to_feed, alignments, attention_states)`. `attend(query)` attends the memory
given to this step (it returns the contexts, the alignments and the mechanisms' next
states); the `AttentionCell`'s `query`, `run_cell` and `project` methods give the rest.
Write a subclass for another order.
"""

import keras
from keras import ops


class StepOrder:
    """Base class of the step orders (see the module docstring)."""

    #: whether the attention vector a_{t-1} is carried as a state (input feeding)
    feeds_attention = False

    def default_projection(self):
        """The projection used when the `AttentionCell` is given none."""
        raise NotImplementedError

    def query_size(self, cell):
        """Width of the attention query for this `AttentionCell`."""
        raise NotImplementedError

    def cell_input_dim(self, input_dim, context_dims, attention_width):
        """Width of what the wrapped cell reads each step."""
        raise NotImplementedError

    def output_size(self, attention_width, cell_output_size):
        return attention_width

    def step(self, cell, inputs, cell_states, previous_attention, attend, training):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        options = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({options})"


@keras.saving.register_keras_serializable(package="kerasrnn")
class AttendThenRun(StepOrder):
    """Bahdanau et al. (2015): attend with the previous state s_{i-1}, then run the cell
    on [y_{i-1}; c_i]. The output is the projection's a_i, by default
    `ConcatProjection`'s [s_i; c_i]. (With an LSTM or stacked cell, s_{i-1} is the h
    state of the top layer.)

    Example:

    >>> import kerasrnn
    >>> cell = kerasrnn.AttentionCell(kerasrnn.GRUCell(8), kerasrnn.BahdanauAttention(8),
    ...                               kerasrnn.AttendThenRun())
    """

    def default_projection(self):
        from kerasrnn.cells.projection import ConcatProjection

        return ConcatProjection()

    def query_size(self, cell):
        size = cell.cell.state_size
        if isinstance(cell.cell, keras.layers.StackedRNNCells):
            size = size[-1]
        return int(keras.tree.flatten(size)[0])

    def cell_input_dim(self, input_dim, context_dims, attention_width):
        return input_dim + sum(context_dims)

    def step(self, cell, inputs, cell_states, previous_attention, attend, training):
        contexts, alignments, attention_states = attend(cell.query(cell_states))
        cell_input = ops.concatenate(
            [inputs] + [ops.cast(c, inputs.dtype) for c in contexts], axis=-1
        )
        h, new_cell_states = cell.run_cell(cell_input, cell_states, training)
        attention = cell.project([ops.cast(c, h.dtype) for c in contexts], h)
        return attention, new_cell_states, None, alignments, attention_states


@keras.saving.register_keras_serializable(package="kerasrnn")
class RunThenAttend(StepOrder):
    """Luong et al. (2015): run the cell, then attend with its new output h_t.

    Args:
        input_feeding: concatenate the previous attention vector a_{t-1} to the input
            (Luong et al.'s input feeding; zeros at t = 0). Default True.
        output_attention: output a_t (default). False outputs the cell output h_t and
            uses a_t only for input feeding (TensorFlow Addons' `output_attention=False`).

    Example:

    >>> import kerasrnn
    >>> cell = kerasrnn.AttentionCell(
    ...     kerasrnn.LSTMCell(8), kerasrnn.LuongAttention("general"),
    ...     kerasrnn.RunThenAttend(input_feeding=False))
    """

    def __init__(self, input_feeding=True, output_attention=True):
        self.input_feeding = bool(input_feeding)
        self.output_attention = bool(output_attention)
        self.feeds_attention = self.input_feeding

    def default_projection(self):
        from kerasrnn.cells.projection import LuongProjection

        return LuongProjection()

    def query_size(self, cell):
        return cell.cell_output_size

    def cell_input_dim(self, input_dim, context_dims, attention_width):
        return input_dim + (attention_width if self.input_feeding else 0)

    def output_size(self, attention_width, cell_output_size):
        return attention_width if self.output_attention else cell_output_size

    def step(self, cell, inputs, cell_states, previous_attention, attend, training):
        if self.input_feeding:
            inputs = ops.concatenate([inputs, previous_attention], axis=-1)
        h, new_cell_states = cell.run_cell(inputs, cell_states, training)
        contexts, alignments, attention_states = attend(h)
        attention = cell.project([ops.cast(c, h.dtype) for c in contexts], h)
        output = attention if self.output_attention else h
        fed = attention if self.input_feeding else None
        return output, new_cell_states, fed, alignments, attention_states

    def get_config(self):
        return {"input_feeding": self.input_feeding, "output_attention": self.output_attention}


def get(step_order):
    """A `StepOrder` from a step order or its serialised config."""
    if step_order is None:
        return AttendThenRun()
    if isinstance(step_order, dict):
        step_order = keras.saving.deserialize_keras_object(step_order)
    if not isinstance(step_order, StepOrder):
        raise TypeError(
            "`step_order` must be kerasrnn.AttendThenRun() (Bahdanau: attend with s_{i-1}, "
            "then run the cell) or kerasrnn.RunThenAttend() (Luong: run, then attend with "
            f"h_t), or a StepOrder subclass; got step_order={step_order!r}."
        )
    return step_order
