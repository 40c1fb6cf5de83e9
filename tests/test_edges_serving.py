"""Serving edge cases, through the exported SavedModels (of the session's tiny
classifier and tagger runs, tests/conftest.py) loaded in a fresh process that never
imports kerasrnn: empty and whitespace-only inputs, and a 10,000-character input."""

import json
import os
import subprocess
import sys

import numpy as np

from recipes import classifier, tagger
from tests.conftest import main_json

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "3"}
LONG = " ".join(["good", "film", "Peter", "rejects"] * 2000)[:10_000]  # 10,000 characters

SERVE = r"""
import json, sys
import tensorflow as tf
texts = json.loads(sys.argv[3])
classify = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
tag = tf.saved_model.load(sys.argv[2]).signatures["tag_text"]
out = classify(text=tf.constant(texts))
tags = tag(text=tf.constant(texts))
print(json.dumps({
    "label": [x.decode() for x in out["label"].numpy()],
    "probabilities": out["probabilities"].numpy().tolist(),
    "lengths": tags["lengths"].numpy().tolist(),
    "tags": [[x.decode() for x in row] for row in tags["tags"].numpy()],
    "tag_probability": tags["probability"].numpy().tolist(),
    "labels": [x.decode() for x in out["labels"].numpy()[0]],
    "kerasrnn_imported": any(m.startswith(("kerasrnn", "recipes")) for m in sys.modules),
}))
"""


def test_empty_whitespace_and_10000_character_inputs(tiny_classifier, tiny_tagger, tmp_path):
    from kerasrnn.models import SequenceTagger, TextClassifier

    saved = {}
    for recipe, run in ((classifier, tiny_classifier), (tagger, tiny_tagger)):
        folder = str(tmp_path / recipe.__name__.split(".")[-1])
        exported = main_json(recipe, "export", "--output-dir", str(run), "--export-dir", folder)
        saved[recipe] = exported["saved_model"]

    texts = ["", "   \t ", LONG, "good film"]
    served = subprocess.run(
        [sys.executable, "-c", SERVE, saved[classifier], saved[tagger], json.dumps(texts)],
        env=ENV,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert served.returncode == 0, served.stderr[-3000:]
    out = json.loads(served.stdout.strip().splitlines()[-1])
    assert not out["kerasrnn_imported"]

    # Classifier: empty and whitespace-only input are the same all-masked input, a
    # defined prediction (the model's answer for "no words"), never NaN.
    probabilities = np.array(out["probabilities"])
    assert np.isfinite(probabilities).all()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(probabilities[0], probabilities[1], atol=1e-6)
    assert out["label"][0] == out["label"][1] in ("neg", "pos")
    # The 10,000-character input: no model has a maximum length (an RNN reads any
    # number of steps), so it is read whole, as the task reads it in Python.
    expected = TextClassifier.from_preset(tiny_classifier).predict(texts[2:])
    assert out["label"][2:] == [e["label"] for e in expected]
    np.testing.assert_allclose(
        probabilities[2:],
        [[e["probabilities"][k] for k in out["labels"]] for e in expected],
        atol=1e-5,
    )
    # Tagger: no tokens, no tags.
    assert out["lengths"][:2] == [0, 0]
    assert set(out["tags"][0]) <= {""} and set(out["tags"][1]) <= {""}
    # The 10,000-character input: a tag for each of its tokens, the task's.
    assert out["lengths"][2] == len(LONG.split()) == 1667
    assert out["lengths"][3] == 2 and out["tags"][3][2:] == [""] * 1665  # padded row
    expected = SequenceTagger.from_preset(tiny_tagger).predict([t.split() for t in texts[2:]])
    assert out["tags"][2] == expected[0]["tags"]
    assert out["tags"][3][:2] == expected[1]["tags"]
    assert set(out["tags"][2]) <= {"B-PER", "I-PER", "B-LOC", "B-ORG", "B-MISC", "O"}
    np.testing.assert_allclose(out["tag_probability"][2], expected[0]["probabilities"], atol=1e-5)
