"""Reading the TensorFlow Addons fixtures of tests/fixtures/tfa (tools/tfa_fixtures)."""

import ast
import pathlib

import numpy as np

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "tfa"


def load(name):
    """The arrays of tests/fixtures/tfa/NAME.npz as a dict."""
    with np.load(FIXTURES / f"{name}.npz") as data:
        return {key: data[key] for key in data.files}


def weights(fixture):
    """{TFA weight name relative to the cell (kernel, kernel_norm/gamma, ...): array}."""
    names = [str(n) for n in fixture["weight_names"]]
    return {"/".join(name.split("/")[2:]): fixture[f"weight_{i}"] for i, name in enumerate(names)}


def numbered(fixture, prefix):
    """[fixture['PREFIX_0'], fixture['PREFIX_1'], ...]."""
    out, i = [], 0
    while f"{prefix}_{i}" in fixture:
        out.append(fixture[f"{prefix}_{i}"])
        i += 1
    return out


def config(fixture):
    """The TFA cell's get_config() the fixture was made with."""
    return ast.literal_eval(str(fixture["config"]))
