"""kerasrnn.compat.torch without PyTorch: the module never imports it at import time, and
a state_dict of NumPy arrays loads with PyTorch unimportable (only a .pt path needs it,
and says so in one line)."""

import ast
import pathlib
import sys

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.compat import torch as compat_torch

SOURCE = pathlib.Path(compat_torch.__file__)


def test_torch_is_imported_only_inside_a_function():
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    top_level = [
        alias.name
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
    ]
    assert not any(name.split(".")[0] == "torch" for name in top_level), top_level
    inner = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Import) and any(a.name == "torch" for a in node.names)
    ]
    assert len(inner) == 1  # the .pt reader's


@pytest.fixture
def no_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError


@pytest.mark.skipif(
    keras.backend.backend() == "torch", reason="Keras' torch backend itself needs torch"
)
def test_numpy_state_dict_loads_without_torch(no_torch, tmp_path):
    rng = np.random.default_rng(0)
    w_ih, w_hh = rng.normal(size=(9, 2)), rng.normal(size=(9, 3))  # nn.GRU(2, 3)
    b_ih, b_hh = rng.normal(size=9), rng.normal(size=9)
    layer = kerasrnn.RNN(kerasrnn.GRUCell(3))
    layer.build((None, None, 2))
    state = {"weight_ih_l0": w_ih, "weight_hh_l0": w_hh, "bias_ih_l0": b_ih, "bias_hh_l0": b_hh}
    compat_torch.load_torch_state_dict(layer, state)

    def keras_order(a):  # PyTorch's r, z, n blocks as Keras' z, r, h
        return np.concatenate([a[3:6], a[0:3], a[6:9]])

    cell = layer.cell
    np.testing.assert_allclose(keras.ops.convert_to_numpy(cell.kernel), keras_order(w_ih).T)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(cell.recurrent_kernel), keras_order(w_hh).T
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(cell.bias), [keras_order(b_ih), keras_order(b_hh)], rtol=1e-6
    )
    path = tmp_path / "model.pt"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match=r"needs PyTorch \(pip install torch\)"):
        compat_torch.torch_modules(path)
