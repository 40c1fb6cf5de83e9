"""recipes.config: ``--config NAME`` finds a shipped configuration (package data, read
through importlib.resources) from any folder, a path still works and wins, an unknown
name is one line listing the shipped ones; ``kerasrnn configs`` lists them with the
recipe and the figure each is for."""

import importlib
import json
import pathlib

import pytest

from recipes import classifier, console
from recipes.config import load_config, shipped_configs

REPO = pathlib.Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.stem for p in (REPO / "recipes" / "configs").glob("*.yaml"))


def test_a_shipped_config_is_found_by_name_from_another_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the checkout: recipes/configs/... is no path here
    by_path = load_config(
        classifier.RECIPE.options, str(REPO / "recipes/configs/sentence_polarity.yaml")
    )
    assert by_path["naive_bayes"] == 2 and by_path["output_dir"] == "runs/sentence_polarity"
    assert load_config(classifier.RECIPE.options, "sentence_polarity") == by_path
    assert load_config(classifier.RECIPE.options, "sentence_polarity.yaml") == by_path
    # a file of that name in the folder is read instead (a path always wins)
    (tmp_path / "sentence_polarity").write_text("epochs: 2\n")
    assert load_config(classifier.RECIPE.options, "sentence_polarity")["epochs"] == 2


def test_an_unknown_name_or_a_missing_path_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as error:
        load_config(classifier.RECIPE.options, "sentence_polarty")
    message = str(error.value)
    assert message.startswith("config 'sentence_polarty' is neither a file nor a shipped config")
    assert f"(shipped: {', '.join(SHIPPED)}; `kerasrnn configs` lists them" in message
    assert "\n" not in message
    with pytest.raises(FileNotFoundError, match="the shipped 'ewt_upos' is `--config ewt_upos`"):
        load_config(classifier.RECIPE.options, "recipes/configs/ewt_upos.yaml")
    with pytest.raises(FileNotFoundError, match=r"^config file not found: x/y\.yaml$"):
        load_config(classifier.RECIPE.options, "x/y.yaml")


def test_the_command_line_refuses_an_unknown_name_in_one_line(capsys):
    assert classifier.main(["train", "--config", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("recipes.classifier train: error: config 'nope' is neither a file")
    assert err.count("\n") == 1


def test_kerasrnn_configs_lists_each_with_its_recipe_and_figure(capsys):
    assert console.main(["configs"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing == shipped_configs()
    assert sorted(listing) == SHIPPED
    results = {p.stem for p in (REPO / "bench" / "results").glob("*.json")}
    for name, entry in listing.items():
        assert entry["recipe"] in console.RECIPES, name
        assert entry["figure"], name
        assert set(entry["results"]) <= results, name  # sections of docs/results.md
        assert entry["command"] == f"kerasrnn {entry['recipe']} train --config {name}"
        # the recipe takes every key of the file
        recipe = importlib.import_module(f"recipes.{entry['recipe']}").RECIPE
        assert load_config(recipe.options, name)["output_dir"] == f"runs/{name}"
    # all but Zaremba's medium model (meant for a GPU) reproduce a measured figure
    assert [name for name, entry in listing.items() if not entry["results"]] == ["zaremba_medium"]
    with pytest.raises(SystemExit) as exit_:
        console.main(["configs", "--help"])
    assert exit_.value.code == 0
    assert "the figure each reproduces" in capsys.readouterr().out
