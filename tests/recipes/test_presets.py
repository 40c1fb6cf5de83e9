"""Every recipe's run folder is a preset: `kerasrnn.models.<Task>.from_preset(run)`, in a
Python process that never imports `recipes`, gives on strings exactly what the recipe's
own ``predict`` / ``translate`` / ``generate`` prints for the same inputs."""

import json
import os
import subprocess
import sys

from tests.conftest import REPO, main_json

INPUTS = {
    "classifier": ["a gripping good film", "dull", ""],
    "tagger": ["Peter Blackburn flew to Brussels .", "EU rejects it"],
    "pair_classifier": [["A man is playing a guitar", "A person plays"], ["A dog", "A cat"]],
    "language_model": ["the cat", ""],
    "translator": ["the 3rd of may 1999", "19/11/1964", ""],
}

# Loads each preset with kerasrnn alone and prints its results on the inputs.
LOADER = r"""
import json, sys
from kerasrnn.models import (
    LanguageModel, PairClassifier, Seq2Seq, SequenceTagger, TextClassifier)
runs, inputs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {
    "classifier": TextClassifier.from_preset(runs["classifier"]).predict(inputs["classifier"]),
    "tagger": SequenceTagger.from_preset(runs["tagger"]).predict(inputs["tagger"]),
    "pair_classifier": PairClassifier.from_preset(runs["pair_classifier"]).predict(
        [tuple(p) for p in inputs["pair_classifier"]]),
    # (the preset keeps the run's decoding: its compiled sampler and lengths)
    "language_model": LanguageModel.from_preset(runs["language_model"]).generate(
        inputs["language_model"]),
    "translator": Seq2Seq.from_preset(runs["translator"]).generate(inputs["translator"]),
    "recipes_imported": any(m.split(".")[0] == "recipes" for m in sys.modules),
}
print(json.dumps(out))
"""


def _close(a, b):
    """Equal, numbers within float32 rounding (the recipe's JSON rounds to 8 digits)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return abs(a - b) <= 1e-6 * max(1.0, abs(a))
    return a == b


def test_each_recipe_run_loads_with_from_preset_alone_and_predicts_as_the_recipe(
    tiny_classifier, tiny_tagger, tiny_pair_classifier, tiny_language_model, tiny_translator
):
    from recipes import classifier, language_model, pair_classifier, tagger, translator

    runs = {
        "classifier": tiny_classifier,
        "tagger": tiny_tagger,
        "pair_classifier": tiny_pair_classifier,
        "language_model": tiny_language_model,
        "translator": tiny_translator,
    }
    runs = {k: os.fspath(v) for k, v in runs.items()}
    env = dict(os.environ, PYTHONPATH=os.fspath(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", LOADER, json.dumps(runs), json.dumps(INPUTS)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded.pop("recipes_imported") is False

    def recipe(module, command, run, *args):
        return main_json(module, command, "--output-dir", run, *args)

    rows = recipe(classifier, "predict", runs["classifier"], *INPUTS["classifier"])
    assert _close([{k: v for k, v in r.items() if k != "text"} for r in rows], loaded["classifier"])
    rows = recipe(tagger, "predict", runs["tagger"], *INPUTS["tagger"])
    assert _close(rows, loaded["tagger"])
    assert rows[0]["tags"][0] in ("B-PER", "I-PER", "B-LOC", "B-ORG", "B-MISC", "I-LOC", "O")
    flat = [s for pair in INPUTS["pair_classifier"] for s in pair]
    rows = recipe(pair_classifier, "predict", runs["pair_classifier"], *flat)
    rows = [{k: v for k, v in r.items() if not k.startswith("sentence_")} for r in rows]
    assert _close(rows, loaded["pair_classifier"])
    rows = recipe(language_model, "generate", runs["language_model"], *INPUTS["language_model"])
    assert [r["continuation"] for r in rows] == loaded["language_model"]
    rows = recipe(translator, "translate", runs["translator"], *INPUTS["translator"])
    assert [r["translation"] for r in rows] == loaded["translator"]
    assert loaded["translator"][-1] == ""  # a blank source translates to nothing
