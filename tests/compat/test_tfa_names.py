"""TF Addons' keyword names in kerasrnn.compat.tfa: the ones kept work as in TFA, the
ones whose job moved elsewhere raise a one-line TypeError that says where."""

import keras
import pytest

import kerasrnn
from kerasrnn.compat import tfa


def test_tfa_names_that_are_kept():
    strategy = tfa.beam_search_decoder(
        beam_width=5, length_penalty_weight=0.6, coverage_penalty_weight=0.2
    )
    assert isinstance(strategy, kerasrnn.decoding.CompetingBeamSearch)
    assert strategy.beam_size == 5
    assert (strategy.scorer.alpha, strategy.scorer.coverage_penalty_weight) == (0.6, 0.2)
    cell = tfa.AttentionWrapper(
        cell=keras.layers.LSTMCell(4),
        attention_mechanism=kerasrnn.LuongAttention("general"),
        attention_layer_size=3,
        alignment_history=True,
        output_attention=False,
    )
    assert cell.alignment_history and not cell.step_order.output_attention


@pytest.mark.parametrize(
    "name, where",
    [
        ("output_layer", "readout to the cell output inside the step function"),
        ("embedding_fn", "embed the tokens inside the step function"),
        ("maximum_iterations", "max_length"),
        ("cell", "the step function"),
        ("output_time_major", "batch-major"),
    ],
)
def test_beam_search_decoder_says_where_a_tfa_argument_went(name, where):
    with pytest.raises(TypeError) as error:
        tfa.beam_search_decoder(3, length_penalty_weight=0.6, **{name: None})
    message = str(error.value)
    assert "\n" not in message
    assert f"TF Addons' `{name}`" in message and where in message


@pytest.mark.parametrize(
    "name, where",
    [
        ("cell_input_fn", "StepOrder subclass"),
        ("attention_fn", "a projection layer"),
        ("initial_cell_state", "initial_state="),
    ],
)
def test_attention_wrapper_says_where_a_tfa_argument_went(name, where):
    with pytest.raises(TypeError) as error:
        tfa.AttentionWrapper(
            keras.layers.LSTMCell(4), kerasrnn.LuongAttention("general"), **{name: None}
        )
    message = str(error.value)
    assert "\n" not in message
    assert f"TF Addons' `{name}`" in message and where in message


def test_unknown_arguments_are_named():
    with pytest.raises(TypeError, match=r"beam_search_decoder got an unexpected argument beam=4"):
        tfa.beam_search_decoder(3, beam=4)
    with pytest.raises(TypeError, match=r"AttentionWrapper got an unexpected argument units=4"):
        tfa.AttentionWrapper(keras.layers.LSTMCell(4), kerasrnn.LuongAttention(), units=4)


def test_beam_search_maps_tfa_names_with_a_message():
    # the core strategy does not take TFA's names but says what replaces them
    with pytest.raises(TypeError, match=r"length_penalty_weight=0.6.*beam_search_decoder"):
        kerasrnn.decoding.BeamSearch(beam_size=3, length_penalty_weight=0.6)
    with pytest.raises(TypeError, match=r"beam_width=3.*beam_size="):
        kerasrnn.decoding.BeamSearch(beam_width=3)
