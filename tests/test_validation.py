"""One rule for an integer, a number and a rate across the package: a NumPy integer is
an integer (as a shape or an array element gives it), a bool (Python's or NumPy's) is
never a number, and the error is one line naming the argument."""

import json

import numpy as np
import pytest

import kerasrnn
from kerasrnn import decoding
from kerasrnn.attention.scores import LocationScore
from kerasrnn.callbacks import NTASGD, ExponentialAveraging, PolyakAveraging
from kerasrnn.callbacks.transfer import SlantedTriangular
from kerasrnn.layers import CRF
from kerasrnn.losses import SequenceCrossEntropy
from kerasrnn.seq2seq import ScheduledSampling, Seq2SeqBackbone
from kerasrnn.validation import check_id, check_int, check_number, check_rate


@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), np.uint8(3)])
def test_integers_of_every_kind_are_accepted_as_python_ints(value):
    got = check_int("units", value)
    assert got == 3 and type(got) is int
    assert type(check_id("pad_id", value)) is int


@pytest.mark.parametrize("value", [True, np.bool_(True), 3.0, np.float32(3), "3", None])
def test_bools_floats_and_strings_are_not_integers(value):
    with pytest.raises(ValueError, match=r"^`units` must be an integer >= 1, got units="):
        check_int("units", value)


def test_integer_bounds_and_none():
    assert check_int("n", None, allow_none=True) is None
    assert check_int("n", 0, minimum=0) == 0
    with pytest.raises(ValueError, match=r"`n` must be an integer in \[1, 4\] or None"):
        check_int("n", 5, maximum=4, allow_none=True)
    with pytest.raises(ValueError, match=r"`n` must be an integer >= 2, got n=np.int64\(1\)"):
        check_int("n", np.int64(1), minimum=2)


@pytest.mark.parametrize(
    "interval, inside, outside",
    [
        ("[0, 1)", [0, 0.5, np.float32(0.25), np.int64(0)], [1, -0.1, float("nan")]),
        ("(0, 1]", [1, 1e-9], [0, 1.5]),
        ("(0, inf)", [1e-9, 1e9], [0, -1]),
        ("[0, inf)", [0, 5], [-1e-9]),
    ],
)
def test_numbers_inside_and_outside_an_interval(interval, inside, outside):
    for value in inside:
        got = check_number("x", value, interval)
        assert got == float(value) and type(got) is float
    for value in [*outside, True, np.bool_(False), "0.5"]:
        with pytest.raises(ValueError, match=r"^`x` must be "):
            check_number("x", value, interval)


def test_number_messages_say_the_interval():
    with pytest.raises(ValueError, match=r"^`rate` must be in \[0, 1\), got rate=1.5\.$"):
        check_rate("rate", 1.5)
    with pytest.raises(ValueError, match=r"^`peak` must be a number > 0, got peak=0\.$"):
        check_number("peak", 0, "(0, inf)")
    with pytest.raises(ValueError, match=r"^`w` must be a number >= 0 or None, got w=-1\.$"):
        check_number("w", -1, allow_none=True)


# Every public constructor that takes a count: built with NumPy integers it behaves as
# with Python ints (and its config stays JSON); given a bool it raises one line naming
# the argument.
COUNTS = [
    ("units", lambda v: kerasrnn.LSTMCell(v)),
    ("units", lambda v: kerasrnn.GRUCell(v)),
    ("num_layers", lambda v: kerasrnn.RNNStack(kerasrnn.GRUCell(3), num_layers=v)),
    ("num_tags", lambda v: CRF(v)),
    ("max_length", lambda v: LocationScore(max_length=v)),
    ("beam_size", lambda v: decoding.BeamSearch(beam_size=v)),
    ("n_best", lambda v: decoding.BeamSearch(beam_size=4, n_best=v)),
    ("top_k", lambda v: decoding.RandomSampling(top_k=v)),
    ("min_length", lambda v: decoding.Constraints(min_length=v)),
    ("forbidden_tokens", lambda v: decoding.Constraints(forbidden_tokens=[v])),
    ("steps", lambda v: ScheduledSampling(steps=v)),
    ("units", lambda v: Seq2SeqBackbone(7, 7, embedding_dim=3, units=v)),
    ("pad_id", lambda v: SequenceCrossEntropy(pad_id=v)),
    ("start", lambda v: PolyakAveraging(start=v)),
    ("patience", lambda v: NTASGD(patience=v)),
    ("total_steps", lambda v: SlantedTriangular(0.01, total_steps=v)),
]


def _config(obj):
    """The object's config as JSON, without the layer names Keras numbers."""
    config = obj.get_config() if hasattr(obj, "get_config") else dict(vars(obj))

    def unnamed(value):
        if isinstance(value, dict):
            return {k: unnamed(v) for k, v in value.items() if k != "name"}
        if isinstance(value, (list, tuple)):
            return [unnamed(v) for v in value]
        return value

    return json.dumps(unnamed(config), default=repr, sort_keys=True)


@pytest.mark.parametrize("name, build", COUNTS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(COUNTS)])
def test_numpy_integers_are_counts_and_bools_are_not(name, build):
    from_python, from_numpy = build(2), build(np.int64(2))
    assert _config(from_numpy) == _config(from_python)
    for wrong in (True, np.bool_(True)):
        with pytest.raises(ValueError) as error:
            build(wrong)
        message = str(error.value)
        assert f"`{name}`" in message and "\n" not in message


@pytest.mark.parametrize(
    "name, build",
    [
        ("dropout", lambda v: kerasrnn.LSTMCell(3, dropout=v)),
        ("dropout", lambda v: Seq2SeqBackbone(7, 7, embedding_dim=3, units=3, dropout=v)),
        ("label_smoothing", lambda v: SequenceCrossEntropy(label_smoothing=v)),
        ("momentum", lambda v: ExponentialAveraging(momentum=v)),
        ("probability", lambda v: ScheduledSampling(probability=v)),
        ("top_p", lambda v: decoding.RandomSampling(top_p=v)),
    ],
)
def test_rates_take_numpy_floats_and_refuse_bools(name, build):
    build(np.float32(0.25))
    for wrong in (True, np.bool_(False), 1.5):
        with pytest.raises(ValueError, match=f"^`{name}` must be"):
            build(wrong)
