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


def test_core_strategies_point_tfa_names_here():
    # the core strategy knows no TFA name: it names what it takes and this module
    for name, value in [("length_penalty_weight", 0.6), ("beam_width", 3)]:
        with pytest.raises(TypeError) as error:
            kerasrnn.decoding.BeamSearch(beam_size=3, **{name: value})
        message = str(error.value)
        assert "\n" not in message
        assert f"unexpected argument {name}={value}" in message
        assert "kerasrnn.compat.tfa.beam_search_decoder" in message
    # ... which takes them
    strategy = tfa.beam_search_decoder(beam_width=3, length_penalty_weight=0.6)
    assert (strategy.beam_size, strategy.scorer.alpha) == (3, 0.6)


@pytest.mark.parametrize(
    "name, value, where, equivalent",
    [
        ("alpha", 0.6, "length_penalty_weight=", lambda: tfa.beam_search_decoder(3, 0.6)),
        (
            "length_normalization",
            "gnmt",
            "Scorer(length_normalization=...)",
            lambda: kerasrnn.decoding.BeamSearch(3, scorer=kerasrnn.decoding.Scorer("gnmt")),
        ),
        (
            "min_length",
            2,
            "constraints=kerasrnn.decoding.Constraints(min_length=...)",
            lambda: tfa.beam_search_decoder(3, constraints=kerasrnn.decoding.Constraints(2)),
        ),
        (
            "block_ngram_repeat",
            2,
            "Constraints(block_ngram_repeat=...)",
            lambda: kerasrnn.decoding.Constraints(block_ngram_repeat=2),
        ),
        (
            "max_length_ratio",
            1.5,
            "Constraints(max_length_ratio=...)",
            lambda: kerasrnn.decoding.Constraints(max_length_ratio=1.5),
        ),
        ("stop_rule", "compete", "BeamSearch sets them aside", lambda: None),
        ("beam_size", 3, "beam_width=", lambda: tfa.beam_search_decoder(beam_width=3)),
        (
            "scorer",
            None,
            "CompetingBeamSearch(beam_width, scorer=...)",
            lambda: kerasrnn.decoding.CompetingBeamSearch(3, scorer=kerasrnn.decoding.Scorer()),
        ),
    ],
)
def test_beam_search_decoder_names_kerasrnns_spelling(name, value, where, equivalent):
    """An option spelled otherwise here gets one line with kerasrnn's spelling (which
    is then built, so a hint cannot name what does not exist)."""
    with pytest.raises(TypeError) as error:
        tfa.beam_search_decoder(3, **{name: value})
    message = str(error.value)
    assert "\n" not in message
    assert f"beam_search_decoder does not take `{name}`" in message and where in message
    equivalent()
