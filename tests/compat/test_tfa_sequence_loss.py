"""kerasrnn.losses.SequenceCrossEntropy against tfa.seq2seq.sequence_loss (fixture written
by tools/tfa_fixtures/losses.py with tensorflow-addons 0.23): every averaging/summing
combination TFA accepts, with sample weights (a mask plus a fractional weight) and with
the implicit padding mask of `pad_id`, within 1e-5, on every backend."""

import keras
import numpy as np
import pytest

from kerasrnn.losses import SequenceCrossEntropy
from tests.compat import tfa_fixtures

MODES = {"none": (False, False), "average": (True, False), "sum": (False, True)}
COMBINATIONS = [
    (time, batch)
    for time in MODES
    for batch in MODES
    if not (time == "average" and batch == "sum") and not (time == "sum" and batch == "average")
]


def loss_for(time, batch, pad_id):
    (avg_t, sum_t), (avg_b, sum_b) = MODES[time], MODES[batch]
    return SequenceCrossEntropy(
        from_logits=True,
        pad_id=pad_id,
        average_across_timesteps=avg_t,
        sum_over_timesteps=sum_t,
        average_across_batch=avg_b,
        sum_over_batch=sum_b,
    )


@pytest.mark.parametrize("time,batch", COMBINATIONS, ids=[f"{t}-{b}" for t, b in COMBINATIONS])
def test_sample_weights_reproduce_tfa(time, batch):
    fixture = tfa_fixtures.load("sequence_loss")
    loss = loss_for(time, batch, pad_id=None)
    got = loss(fixture["targets"], fixture["logits"], sample_weight=fixture["weights"])
    want = fixture[f"time_{time}__batch_{batch}"]
    got = keras.ops.convert_to_numpy(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("time,batch", COMBINATIONS, ids=[f"{t}-{b}" for t, b in COMBINATIONS])
def test_pad_id_reproduces_tfa_with_a_padding_mask(time, batch):
    fixture = tfa_fixtures.load("sequence_loss")
    loss = loss_for(time, batch, pad_id=0)
    got = keras.ops.convert_to_numpy(loss(fixture["padded_targets"], fixture["logits"]))
    want = fixture[f"padded__time_{time}__batch_{batch}"]
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, atol=1e-5)
