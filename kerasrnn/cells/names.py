"""Cells by name: the names the recipes' ``--cell`` and `LanguageModelBackbone(cell=...)`
take, and `get`, which makes a cell from a name, a config or a cell."""

from kerasrnn.cells.gru import GRUCell
from kerasrnn.cells.layer_norm import LayerNormLSTMCell, LayerNormSimpleRNNCell
from kerasrnn.cells.lstm import LSTMCell
from kerasrnn.cells.min_rnn import MinGRUCell, MinLSTMCell
from kerasrnn.cells.simple import SimpleRNNCell
from kerasrnn.serialization import deserialize

CELL_NAMES = {
    "lstm": LSTMCell,
    "gru": GRUCell,
    "simple": SimpleRNNCell,
    "layer_norm_lstm": LayerNormLSTMCell,
    "layer_norm_simple": LayerNormSimpleRNNCell,
    "mingru": MinGRUCell,
    "minlstm": MinLSTMCell,
}


def get(identifier, units=None, **options):
    """A recurrent cell from a name of `CELL_NAMES` ("lstm", "gru", "simple" (Elman),
    "layer_norm_lstm", "layer_norm_simple", "mingru", "minlstm") with `units` and the
    cell's constructor `options` (e.g. ``peephole=True``, ``reset_after=False``,
    ``recurrent_dropout=0.1``), from a serialized cell config, or a cell itself
    (returned as it is).

    Raises:
        ValueError: an unknown name, or options the cell does not take (one line, naming
            the cell and its error).

    >>> cell = get("lstm", 8, peephole=True)
    >>> type(cell).__name__, cell.units, cell.peephole
    ('LSTMCell', 8, True)
    """
    if not isinstance(identifier, str):
        cell = deserialize(identifier)
        if not hasattr(cell, "state_size") or not hasattr(cell, "get_config"):
            raise ValueError(f"expected a cell name or an RNN cell; got {identifier!r}.")
        return cell
    if identifier not in CELL_NAMES:
        raise ValueError(f"`cell` must be one of {sorted(CELL_NAMES)}; got {identifier!r}.")
    cls = CELL_NAMES[identifier]
    if units is None:
        raise ValueError(f"a {cls.__name__} by name needs its `units`.")
    try:
        return cls(units, **options)
    except (TypeError, ValueError) as error:
        raise ValueError(f"the options {options} do not fit {cls.__name__}: {error}") from None
