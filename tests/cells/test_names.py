"""`kerasrnn.cells.get`: a cell by name with its units and options (the names the
recipes' ``--cell`` takes), from a config or as given; one-line errors."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.cells import CELL_NAMES, get


@pytest.mark.parametrize(
    "name,cls",
    [
        ("lstm", kerasrnn.LSTMCell),
        ("gru", kerasrnn.GRUCell),
        ("simple", kerasrnn.SimpleRNNCell),
        ("layer_norm_lstm", kerasrnn.LayerNormLSTMCell),
        ("layer_norm_simple", kerasrnn.LayerNormSimpleRNNCell),
        ("mingru", kerasrnn.MinGRUCell),
        ("minlstm", kerasrnn.MinLSTMCell),
    ],
)
def test_a_name_makes_its_cell_with_its_units(name, cls):
    cell = get(name, 6)
    assert type(cell) is cls and cell.units == 6

    def options(c):
        return {k: v for k, v in c.get_config().items() if k != "name"}

    assert options(cell) == options(cls(6))  # the defaults, nothing else
    assert CELL_NAMES[name] is cls


def test_options_reach_the_cells_constructor():
    cell = get("lstm", 5, peephole=True, recurrent_dropout=0.25)
    assert cell.peephole and cell.recurrent_dropout == 0.25
    assert get("gru", 3, reset_after=False).reset_after is False
    # the cell computes as the one built directly (same seed, same weights)
    keras.utils.set_random_seed(2)
    ours = keras.layers.RNN(get("gru", 3, reset_after=False))
    keras.utils.set_random_seed(2)
    direct = keras.layers.RNN(kerasrnn.GRUCell(3, reset_after=False))
    x = np.random.default_rng(0).normal(size=(2, 4, 5)).astype("float32")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(ours(x)), keras.ops.convert_to_numpy(direct(x)), atol=1e-6
    )


def test_a_config_or_a_cell_is_taken_as_it_is():
    cell = kerasrnn.LSTMCell(4, coupled=True)
    assert get(cell) is cell
    rebuilt = get(keras.saving.serialize_keras_object(cell))
    assert type(rebuilt) is kerasrnn.LSTMCell and rebuilt.get_config() == cell.get_config()
    assert rebuilt.coupled
    assert get(keras.layers.GRUCell(3)).units == 3  # any Keras cell


def test_bad_names_and_options_are_one_line_errors():
    with pytest.raises(ValueError, match=r"`cell` must be one of \['gru', 'layer_norm_lstm'"):
        get("elman", 4)
    with pytest.raises(ValueError, match="a LSTMCell by name needs its `units`"):
        get("lstm")
    with pytest.raises(ValueError, match=r"the options \{'peephole': True\} do not fit GRUCell"):
        get("gru", 4, peephole=True)
    with pytest.raises(ValueError, match="expected a cell name or an RNN cell"):
        get(keras.layers.Dense(3))
