"""bench/lstm_pass.py: its two passes compute the same loss and gradients (the weights
mapped from Keras' layout to PyTorch's), at a small size."""

import os
import sys

import keras
import numpy as np
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("bench/lstm_pass.py times TensorFlow's XLA cluster", allow_module_level=True)
torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import lstm_pass  # noqa: E402

sys.path.pop(0)


def test_the_compiled_pass_and_nn_lstm_agree():
    shape = (5, 3, 4, 6)  # steps, batch, inputs, units
    mine, theirs = lstm_pass.keras_pass(shape)(), lstm_pass.torch_pass(shape)()
    assert [np.shape(a) for a in mine] == [(), (4, 24), (6, 24), (24,)]
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
