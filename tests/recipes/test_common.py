"""recipes.common: configuration, model parts, metrics."""

import json

import numpy as np
import pytest

from recipes import common

DEFAULTS = {"units": 8, "rate": 0.1, "cell": "lstm", "flag": False, "sizes": [1, 2], "extra": None}


def test_config_layers_and_types(tmp_path):
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("units: 16\nrate: 1\nsizes: [3, 4]\nextra: {a: 1}\n")
    config = common.load_config(DEFAULTS, yaml_file, {"units": "32", "flag": "true"})
    assert config == {
        "units": 32,
        "rate": 1.0,
        "cell": "lstm",
        "flag": True,
        "sizes": [3, 4],
        "extra": {"a": 1},
    }
    json_file = tmp_path / "c.json"
    json_file.write_text(json.dumps({"cell": "gru"}))
    assert common.load_config(DEFAULTS, json_file)["cell"] == "gru"
    assert common.load_config(DEFAULTS) == DEFAULTS


def test_exponent_floats_without_a_dot_are_floats(tmp_path):
    """PyYAML reads `1e-4` as a string (YAML 1.1 wants `1.0e-4`); a float option takes it,
    from a config file and from a flag."""
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("rate: 1e-4\n")
    assert common.load_config(DEFAULTS, yaml_file)["rate"] == 1e-4
    assert common.load_config(DEFAULTS, overrides={"rate": "3E5"})["rate"] == 3e5
    with pytest.raises(common.ConfigError, match="'rate' must be of type float"):
        common.load_config(DEFAULTS, overrides={"rate": "fast"})


def test_config_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("units: 4\nunits_typo: 3\n")
    with pytest.raises(
        common.ConfigError,
        match=r"unknown config key\(s\) \['units_typo'\]"
        r" in .*bad.yaml; valid keys: \['cell', 'extra'",
    ):
        common.load_config(DEFAULTS, bad)
    with pytest.raises(common.ConfigError, match="'units' must be of type int"):
        common.load_config(DEFAULTS, overrides={"units": "many"})
    with pytest.raises(common.ConfigError, match="'flag' must be true or false"):
        common.load_config(DEFAULTS, overrides={"flag": 1})
    with pytest.raises(FileNotFoundError, match="nope.yaml"):
        common.load_config(DEFAULTS, tmp_path / "nope.yaml")
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n")
    with pytest.raises(common.ConfigError, match="mapping"):
        common.load_config(DEFAULTS, listing)


def test_make_cell_and_errors():
    assert type(common.make_cell("gru", 4, reset_after=False)).__name__ == "GRUCell"
    with pytest.raises(common.ConfigError, match="`cell` must be one of"):
        common.make_cell("transformer", 4)
    with pytest.raises(common.ConfigError, match="do not fit LSTMCell"):
        common.make_cell("lstm", 4, no_such_option=1)


def test_the_sentence_encoders_last_state_ignores_padding():
    """`sentence_encoder` (pooling "last", bidirectional) gives [h_fwd_T ; h_bwd_1] of
    the real tokens."""
    config = {
        "embedding_dim": 3,
        "cell": "gru",
        "cell_options": {},
        "units": 4,
        "num_layers": 2,
        "bidirectional": True,
        "pooling": "last",
        "dropout": 0.0,
        "embedding_dropout": 0.0,
    }
    model = common.sentence_encoder(config, 10)
    short = np.array([[3, 4, 5]])
    padded = np.array([[3, 4, 5, 0, 0]])
    out = model.predict(short, verbose=0)
    np.testing.assert_allclose(model.predict(padded, verbose=0), out, atol=1e-6)
    # The backward half is the state after reading the sentence right to left.
    reversed_out = model.predict(short[:, ::-1], verbose=0)
    assert out.shape == (1, 8)
    assert not np.allclose(out, reversed_out)
    with pytest.raises(ValueError, match="`num_layers` must be an integer >= 1"):
        common.sentence_encoder(dict(config, num_layers=0), 10)


def test_check_labels_names_the_unseen_ones():
    # (the per-class scores are kerasrnn.metrics': tests/metrics/test_scores_from_recipes.py)
    common.check_labels(["a", "b"], ["b", "a", "a"], "test")
    with pytest.raises(
        common.RecipeError,
        match=r"label set mismatch: the test data \(t.tsv\) has "
        r"label\(s\) \['y', 'z'\] that are not in the training data",
    ):
        common.check_labels(["a", "b"], ["a", "z", "y"], "test", "t.tsv")
