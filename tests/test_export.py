"""The recipes' command-line round trip under `--strategy mirrored` (train in a fresh
process -> export -> the SavedModel predicts what the run's task predicts), and
`import kerasrnn` on JAX without TensorFlow.

The library's export (`kerasrnn.export.export_task` of every task, loaded in a process
without kerasrnn) is tested in tests/export/test_export_task.py; the recipes' exports
of the shared session runs in tests/export/test_recipe_runtimes.py."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2"}

# One fresh process trains both runs: `--strategy mirrored` splits the CPU in two
# devices before TensorFlow initialises them, which this process did long ago. (Two
# MirroredStrategy objects in one process collided on their collective keys: the
# second run's fit failed; kerasrnn.distribute keeps one per set of devices.)
TRAIN = r"""
import json, sys
from recipes import classifier, tagger
for recipe, argv in zip((classifier, tagger), json.loads(sys.argv[1])):
    assert recipe.main(argv) == 0
"""


@pytest.mark.large
@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.distribute, SavedModel")
def test_cli_round_trip_with_mirrored_strategy(tmp_path):
    import tensorflow as tf

    from kerasrnn.models import SequenceTagger, TextClassifier
    from recipes import classifier, tagger
    from tests.conftest import main_json

    tsv = tmp_path / "train.tsv"
    tsv.write_text("pos\tgood film\nneg\tbad film\n" * 10)
    ner = tmp_path / "ner.txt"
    ner.write_text("Peter B-PER\nrejects O\nEU B-ORG\n\n" * 10)
    tiny = ["--epochs", "1", "--units", "8", "--embedding-dim", "8", "--verbose", "0"]
    tiny += ["--batch-size", "8", "--strategy", "mirrored"]
    cls_run, tag_run = tmp_path / "cls", tmp_path / "tag"
    argv = [
        ["train", "--train", str(tsv), "--output-dir", str(cls_run), "--valid-fraction", "0"],
        ["train", "--train", str(ner), "--output-dir", str(tag_run), "--char-dim", "4"],
    ]
    argv[1] += ["--char-units", "4"]
    train = subprocess.run(
        [sys.executable, "-c", TRAIN, json.dumps([a + tiny for a in argv])],
        env=ENV,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert train.returncode == 0, train.stderr[-2000:]
    for run in (cls_run, tag_run):
        assert json.loads((run / "results.json").read_text())["replicas"] == 2

    # exported (in this process) and served: what the run's task predicts
    for recipe, run in ((classifier, cls_run), (tagger, tag_run)):
        main_json(recipe, "export", "--output-dir", str(run), "--export-dir", str(run / "sm"))
    texts = ["good film", "", "qqqzzz unknownword"]
    served = tf.saved_model.load(str(cls_run / "sm")).signatures["serving_default"]
    out = served(text=tf.constant(texts))
    local = TextClassifier.from_preset(cls_run).predict(texts)
    assert [x.decode() for x in out["label"].numpy()] == [p["label"] for p in local]
    np.testing.assert_allclose(
        out["probabilities"].numpy(),
        [[p["probabilities"][k] for k in ("neg", "pos")] for p in local],
        atol=1e-5,
    )
    tag = tf.saved_model.load(str(tag_run / "sm"))
    tokens = [["Peter", "rejects", "Zqxwv"], ["", "", ""]]
    tags = tag.signatures["serving_default"](tokens=tf.constant(tokens))["tags"].numpy()
    text_tags = tag.signatures["tag_text"](text=tf.constant(["Peter rejects Zqxwv", ""]))
    local_tags = SequenceTagger.from_preset(tag_run).predict([tokens[0], []])
    assert [t.decode() for t in tags[0]] == local_tags[0]["tags"]
    assert set(local_tags[0]["tags"]) <= {"B-ORG", "B-PER", "O"}
    assert tags[1].tolist() == [b""] * 3
    assert (text_tags["tags"].numpy() == tags).all()


@pytest.mark.large
def test_import_kerasrnn_does_not_import_tensorflow_on_jax():
    code = (
        "import sys, kerasrnn\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
        "import kerasrnn.tasks\n"
        "print(kerasrnn.tasks.date_translation_task(1)[1][0][4], "
        "kerasrnn.data.PAD_ID, callable(kerasrnn.seq2seq.Seq2Seq), "
        "callable(kerasrnn.models.TextClassifier))\n"
        "assert 'tensorflow' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**ENV, "KERAS_BACKEND": "jax"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["-", "0", "True", "True"]
    lazy = subprocess.run(
        [sys.executable, "-c", "import kerasrnn; print(kerasrnn.export.export_task.__name__)"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert lazy.returncode == 0, lazy.stderr[-2000:]
    assert lazy.stdout.split()[-1] == "export_task"
