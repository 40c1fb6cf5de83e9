"""The runnable examples in the package's docstrings are run here, so none can go stale."""

import doctest
import importlib
import pkgutil

import keras
import pytest

import kerasrnn


def modules():
    for info in pkgutil.walk_packages(kerasrnn.__path__, "kerasrnn."):
        yield info.name


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="examples use TF")
@pytest.mark.parametrize("name", sorted(modules()))
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
