"""The recipes' shared training options: `time_budget` (a schedule over a wall-clock
budget), on the cheapest recipe."""

import json

from recipes import classifier, common

TINY = {
    "embedding_dim": 8,
    "units": 8,
    "batch_size": 4,
    "verbose": 0,
    "valid_fraction": 0.0,
    "bucket_boundaries": [],
    "patience": 0,
    "cell": "simple",  # the quickest to compile: the budget counts the compiling step
    "bidirectional": False,
}


def _splits():
    texts = ["good film", "bad film", "great fun", "dull plot"] * 4
    labels = ["pos", "neg", "pos", "neg"] * 4
    return {"train": (texts, labels), "valid": (texts[:4], labels[:4]), "test": None}


def test_time_budget_stops_a_long_run_within_the_budget_and_reports_it(tmp_path):
    minutes = 6.0 / 60
    config = common.load_config(
        classifier.DEFAULTS,
        overrides={
            **TINY,
            "output_dir": str(tmp_path / "run"),
            "epochs": 100000,
            "time_budget": minutes,
            "budget_schedule": "one_cycle",
        },
    )
    results = classifier.train(config, _splits())
    used = results["time_budget"]
    assert used["stopped_by_budget"] and used["minutes"] == minutes
    assert used["seconds_used"] <= 6.0 + 2.0  # the last step and the last epoch's end
    assert 1 < results["history"]["epochs_run"] < 100000
    assert used["steps"] >= 4 * (results["history"]["epochs_run"] - 1) + 1
    if used["steps"] > 11:  # the schedule is set after the first step and 10 timed ones
        assert used["planned_steps"] >= used["steps"] * 0.5, used
    with open(tmp_path / "run" / "results.json", encoding="utf-8") as f:
        assert json.load(f)["time_budget"]["steps"] == used["steps"]
    assert (tmp_path / "run" / "best.keras").exists()  # reloads: the schedule serialises
    classifier.Classifier.from_run(config)
