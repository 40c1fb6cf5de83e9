"""kerasrnn.export and the recipes' command-line round trip: train -> export -> load the
SavedModel in a fresh process that never imports kerasrnn -> predict raw strings."""
import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from kerasrnn.export import class_outputs, sequence_outputs
from recipes import classifier, common, tagger

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2"}

# Runs in a fresh interpreter: only TensorFlow, and it checks that kerasrnn stays out.
LOADER = r"""
import json, sys
import tensorflow as tf
classify = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
tag = tf.saved_model.load(sys.argv[2])
out = classify(text=tf.constant(["good film", "", "qqqzzz unknownword"]))
tokens = tf.constant([["Peter", "rejects", "Zqxwv"], ["", "", ""]])
tags = tag.signatures["serving_default"](tokens=tokens)
text_tags = tag.signatures["tag_text"](text=tf.constant(["Peter rejects Zqxwv", ""]))
print(json.dumps({
    "label": [x.decode() for x in out["label"].numpy()],
    "probabilities": out["probabilities"].numpy().tolist(),
    "tags": [[x.decode() for x in row] for row in tags["tags"].numpy()],
    "text_tags": [[x.decode() for x in row] for row in text_tags["tags"].numpy()],
    "kerasrnn_imported": any(m.startswith(("kerasrnn", "recipes")) for m in sys.modules),
}))
"""


def test_class_and_sequence_outputs():
    probs = tf.constant([[0.2, 0.8], [0.6, 0.4]])
    out = class_outputs(probs, ["neg", "pos"])
    assert out["label"].numpy().tolist() == [b"pos", b"neg"]
    np.testing.assert_allclose(out["probability"], [0.8, 0.6])
    assert out["labels"].numpy().tolist() == [[b"neg", b"pos"]] * 2
    seq = sequence_outputs(tf.constant([[[0.1, 0.9], [0.7, 0.3]]]), ["A", "B"], [1])
    assert seq["tags"].numpy().tolist() == [[b"B", b""]]
    np.testing.assert_allclose(seq["probability"], [[0.9, 0.0]])


def test_cli_round_trip_with_mirrored_strategy(tmp_path):
    tsv = tmp_path / "train.tsv"
    tsv.write_text("pos\tgood film\nneg\tbad film\n" * 10)
    ner = tmp_path / "ner.txt"
    ner.write_text("Peter B-PER\nrejects O\nEU B-ORG\n\n" * 10)
    tiny = ["--epochs", "1", "--units", "8", "--embedding-dim", "8", "--verbose", "0",
            "--batch-size", "8"]
    cls_run, tag_run = tmp_path / "cls", tmp_path / "tag"
    # --strategy mirrored needs a fresh process: it splits the CPU in two devices
    # before TensorFlow initialises them.
    train = subprocess.run(
        [sys.executable, "-m", "recipes.classifier", "train", "--train", str(tsv),
         "--output-dir", str(cls_run), "--strategy", "mirrored", "--valid-fraction", "0",
         *tiny], env=ENV, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert train.returncode == 0, train.stderr[-2000:]
    assert json.loads(train.stdout)["replicas"] == 2

    train = subprocess.run(
        [sys.executable, "-m", "recipes.tagger", "train", "--train", str(ner),
         "--output-dir", str(tag_run), "--strategy", "mirrored", "--char-dim", "4",
         "--char-units", "4", *tiny], env=ENV, cwd=REPO, capture_output=True, text=True,
        timeout=300)
    assert train.returncode == 0, train.stderr[-2000:]
    assert json.loads(train.stdout)["replicas"] == 2
    for recipe, run in ((classifier, cls_run), (tagger, tag_run)):
        assert recipe.main(["export", "--output-dir", str(run)]) == 0

    loaded = subprocess.run(
        [sys.executable, "-c", LOADER, str(cls_run / "saved_model"),
         str(tag_run / "saved_model")],
        env=ENV, cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    served = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert not served["kerasrnn_imported"]

    # The SavedModel gives exactly what the in-process recipe gives.
    config = common.saved_config(classifier.DEFAULTS, str(cls_run))
    local = classifier.Classifier.from_run(config).predict(
        ["good film", "", "qqqzzz unknownword"])
    assert served["label"] == [p["label"] for p in local]
    np.testing.assert_allclose(
        served["probabilities"], [[p["probabilities"][k] for k in ("neg", "pos")]
                                  for p in local], atol=1e-5)
    tags = {"B-ORG", "B-PER", "O"}
    assert len(served["tags"][0]) == 3 and set(served["tags"][0]) <= tags
    assert served["tags"][1] == ["", "", ""]
    assert served["text_tags"][0] == served["tags"][0] and served["text_tags"][1] == [""] * 3
