"""Serving edge cases, through the exported SavedModels loaded in a fresh process that
never imports kerasrnn: empty and whitespace-only inputs, and a 10,000-character input."""

import json
import os
import subprocess
import sys

import numpy as np

from recipes import classifier, tagger

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
    "kerasrnn_imported": any(m.startswith(("kerasrnn", "recipes")) for m in sys.modules),
}))
"""


def test_empty_whitespace_and_10000_character_inputs(tmp_path):
    tsv = tmp_path / "train.tsv"
    tsv.write_text("pos\tgood film\nneg\tbad film\n" * 10)
    ner = tmp_path / "ner.txt"
    ner.write_text("Peter B-PER\nrejects O\nEU B-ORG\n\n" * 10)
    tiny = {"epochs": 1, "units": 8, "embedding_dim": 8, "verbose": 0, "batch_size": 8}
    cls_run, tag_run = tmp_path / "cls", tmp_path / "tag"
    classifier.train(
        classifier.common.load_config(
            classifier.DEFAULTS,
            overrides={
                **tiny,
                "train": str(tsv),
                "valid_fraction": 0.0,
                "output_dir": str(cls_run),
            },
        )
    )
    tagger.train(
        tagger.common.load_config(
            tagger.DEFAULTS,
            overrides={
                **tiny,
                "train": str(ner),
                "char_dim": 4,
                "char_units": 4,
                "output_dir": str(tag_run),
            },
        )
    )
    for recipe, run in ((classifier, cls_run), (tagger, tag_run)):
        assert recipe.main(["export", "--output-dir", str(run)]) == 0

    texts = ["", "   \t ", LONG, "good film"]
    served = subprocess.run(
        [
            sys.executable,
            "-c",
            SERVE,
            str(cls_run / "saved_model"),
            str(tag_run / "saved_model"),
            json.dumps(texts),
        ],
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
    # Tagger: no tokens, no tags.
    assert out["lengths"][:2] == [0, 0]
    assert set(out["tags"][0]) <= {""} and set(out["tags"][1]) <= {""}
    # The 10,000-character input: neither model has a maximum length (an RNN reads any
    # number of steps), so it is read whole: a tag for each of its tokens, and a label.
    assert out["lengths"][2] == len(LONG.split()) == 1667
    assert set(out["tags"][2]) <= {"B-PER", "B-ORG", "O"} and len(out["tags"][2]) == 1667
    assert np.isfinite(out["tag_probability"][2]).all()
    assert out["lengths"][3] == 2 and out["tags"][3][2:] == [""] * 1665  # padded row
    assert np.isfinite(probabilities[2]).all()
