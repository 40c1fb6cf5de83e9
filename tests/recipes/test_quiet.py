"""Quiet by default: a recipe's `train` in a fresh process prints nothing on stderr
beyond its own lines (no TensorFlow C++ start-up or oneDNN line), and exporting a CRF
tagger to ONNX (its BiLSTM as `LSTM` operators, its Viterbi decode and marginals as
`Loop`s) prints nothing of the converters; under ``--verbose 3`` TensorFlow's own lines
and the converter's come back. The exports read
the shared session runs (tests/conftest.py) and write into tmp_path."""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = ["--embedding-dim", "4", "--units", "4", "--batch-size", "8", "--epochs", "1"]
TINY += ["--bucket-boundaries", "[]", "--patience", "0", "--char-dim", "0"]


def _fresh(module, *args):
    """``python -m MODULE ARGS`` as a user runs it: no TF_CPP_MIN_LOG_LEVEL."""
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL",)}
    env["PYTHONPATH"] = REPO
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.large
def test_train_prints_only_keras_epoch_lines(tmp_path):
    data = tmp_path / "d.conll"
    data.write_text("the DET\ndog NOUN\nruns VERB\n\na DET\ncat NOUN\nsleeps VERB\n\n" * 6)
    run = str(tmp_path / "run")
    args = ["--train", str(data), "--format", "columns", "--output-dir", run]
    code, out, err = _fresh("recipes.tagger", "train", *args, *TINY, "--verbose", "2")
    assert code == 0, err
    # Keras' one line per epoch (training and validation) is all there is
    assert err.startswith("1/1 - ") or err.startswith("2/2 - "), err
    assert len(err.strip().splitlines()) == 1, err
    assert out.startswith("{")


@pytest.mark.large
def test_a_crf_export_to_onnx_is_quiet(tiny_tagger, tmp_path):
    # the shared CRF tagger (exported into tmp_path: the run is left as it is)
    out_dir = str(tmp_path / "onnx")
    flags = ["--output-dir", str(tiny_tagger), "--export-dir", out_dir, "--format", "onnx"]
    code, out, err = _fresh("recipes.tagger", "export", *flags)
    assert code == 0, err
    assert err.strip() == "", err
    assert os.path.exists(os.path.join(out_dir, "model.onnx"))


@pytest.mark.large
def test_verbose_3_brings_tensorflows_and_the_converters_lines_back(tiny_classifier, tmp_path):
    flags = ["--output-dir", str(tiny_classifier), "--export-dir", str(tmp_path / "loud")]
    code, out, err = _fresh(
        "recipes.classifier", "export", *flags, "--format", "onnx", "--verbose", "3"
    )
    assert code == 0, err
    assert "I0000" in err, err  # TensorFlow's C++ start-up lines
    assert "tf2onnx" in err, err  # the converter's own messages
