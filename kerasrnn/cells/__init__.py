"""Recurrent cells: ordinary Keras layers for keras.layers.RNN / StackedRNNCells /
Bidirectional. `kerasrnn.cells.get("lstm", units, **options)` makes one by name
(`CELL_NAMES`)."""

from kerasrnn.cells.attention_cell import AttentionCell
from kerasrnn.cells.attentive import AttentiveRNN
from kerasrnn.cells.bidirectional_states import merge_bidirectional_states
from kerasrnn.cells.bound_cell import BoundAttentionCell
from kerasrnn.cells.esn import ESNCell
from kerasrnn.cells.gru import GRUCell
from kerasrnn.cells.layer_norm import LayerNormLSTMCell, LayerNormSimpleRNNCell
from kerasrnn.cells.lstm import LSTMCell
from kerasrnn.cells.min_rnn import MinGRUCell, MinLSTMCell
from kerasrnn.cells.names import CELL_NAMES, get  # noqa: F401 (kerasrnn.cells.get; not in kerasrnn.*)
from kerasrnn.cells.nas import NASCell
from kerasrnn.cells.projection import (
    AttentionProjection,
    ConcatProjection,
    ContextProjection,
    LayerProjection,
    LinearProjection,
    LuongProjection,
)
from kerasrnn.cells.recurrence import RecurrenceSpec, recurrence_spec
from kerasrnn.cells.rnn import RNN
from kerasrnn.cells.simple import SimpleRNNCell
from kerasrnn.cells.stack import RNNStack
from kerasrnn.cells.step_order import AttendThenRun, RunThenAttend, StepOrder

__all__ = [
    "SimpleRNNCell",
    "LSTMCell",
    "GRUCell",
    "LayerNormLSTMCell",
    "LayerNormSimpleRNNCell",
    "NASCell",
    "ESNCell",
    "MinGRUCell",
    "MinLSTMCell",
    "RNN",
    "RNNStack",
    "RecurrenceSpec",
    "recurrence_spec",
    "AttentionCell",
    "AttentiveRNN",
    "BoundAttentionCell",
    "AttendThenRun",
    "RunThenAttend",
    "StepOrder",
    "AttentionProjection",
    "LuongProjection",
    "LinearProjection",
    "ContextProjection",
    "ConcatProjection",
    "LayerProjection",
    "merge_bidirectional_states",
]
