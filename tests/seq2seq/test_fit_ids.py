"""`Seq2Seq.fit` / `evaluate` check the ids of array inputs against the vocabularies
before training starts: one line naming the input, not an index error from inside the
traced step (issue 31: a target id >= target_vocab_size gave 71 lines ending in
GatherV2)."""

import keras
import numpy as np
import pytest

from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

SOURCE = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])
TARGET_IN = np.array([[2, 4, 5], [2, 6, 0]])
TARGET_OUT = np.array([[4, 5, 3], [6, 3, 0]])


def model():
    seq2seq = Seq2Seq(Seq2SeqBackbone(20, 10, embedding_dim=4, units=4))
    seq2seq.compile()
    return seq2seq


@pytest.mark.parametrize(
    "x, y, name",
    [
        (
            {"source": SOURCE, "target_in": TARGET_IN},
            np.where(TARGET_OUT == 5, 11, TARGET_OUT),
            "target_out",
        ),
        (
            {"source": SOURCE, "target_in": np.where(TARGET_IN == 4, 10, TARGET_IN)},
            TARGET_OUT,
            "target_in",
        ),
        (
            {"source": np.where(SOURCE == 9, 20, SOURCE).tolist(), "target_in": TARGET_IN},
            TARGET_OUT,
            "source",
        ),
    ],
)
@pytest.mark.parametrize("method", ["fit", "evaluate"])
def test_ids_outside_the_vocabulary_fail_in_one_line(x, y, name, method):
    seq2seq = model()
    with pytest.raises(ValueError, match=rf"^`{name}` holds ids outside \[0, ") as error:
        getattr(seq2seq, method)(x, y, verbose=0)
    assert "\n" not in str(error.value)


@pytest.mark.large
def test_ids_inside_the_vocabulary_train():
    """The first step's loss is the NumPy cross-entropy of the untrained model's logits
    over the real target tokens; the second epoch's is lower."""
    seq2seq = model()
    x = {"source": SOURCE, "target_in": TARGET_IN}
    logits = np.asarray(keras.ops.convert_to_numpy(seq2seq(x)), np.float64)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    real = TARGET_OUT != 0
    token_loss = -np.take_along_axis(log_p, TARGET_OUT[..., None], -1)[..., 0]
    want = (token_loss * real).sum() / real.sum()
    history = seq2seq.fit(x, TARGET_OUT, batch_size=2, epochs=2, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], want, rtol=1e-4)
    assert history.history["loss"][1] < history.history["loss"][0]
