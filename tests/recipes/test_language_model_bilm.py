"""The bidirectional language model (`--bidirectional true`): the backward direction's
perplexity against the reversed stream read by hand, and the command line (train /
evaluate / generate / export / --continue) of one tiny biLM run shared by the module."""

import json
import math
import shutil

import numpy as np
import pytest

pytest.importorskip("tensorflow")
import keras  # noqa: E402

from kerasrnn.data import language_model as lm_data  # noqa: E402
from kerasrnn.data.vocabulary import END_ID  # noqa: E402
from recipes import language_model  # noqa: E402
from tests.conftest import main_json  # noqa: E402
from tests.recipes.test_language_model import run_config, write_corpus  # noqa: E402


def log_softmax(logits):
    logits = logits - logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


@pytest.fixture(scope="module")
def bilm_run(tmp_path_factory):
    """A biLM (2 LSTM layers of 12 units per direction, large initial weights so that
    its outputs depend clearly on the order read) trained one epoch through the command
    line: ``(run folder, files, results)``."""
    folder = tmp_path_factory.mktemp("bilm")
    files = write_corpus(str(folder), lines_per_split=(100, 12, 12))
    run = str(folder / "run")
    results = main_json(
        language_model, "train", "--bidirectional", "true", "--output-dir", run,
        *(a for split in files for a in (f"--{split}-file", files[split])),
        "--units", "12", "--num-layers", "2", "--steps", "5", "--batch-size", "4",
        "--init-scale", "0.5", "--optimizer", "adam", "--learning-rate", "0.01",
        "--epochs", "1", "--verbose", "0",
    )  # fmt: skip
    return run, files, results


def backward_reference_nll(task, ids):
    """The backward LM's mean NLL over token ids t_0 .. t_n read right to left, by hand:
    the embedding, the backward stack and the output layer applied to the reversed
    sequence t_n .. t_1 in one pass from zero states; after reading t_n .. t_j the
    target is t_{j-1}."""
    backbone = task.backbone
    x = backbone.token_embedding(np.asarray(ids[1:][::-1], "int32")[None])
    for layer in backbone.rnn_layers("backward"):
        x = layer(x)
    logits = keras.ops.convert_to_numpy(backbone.logits(x))[0].astype("float64")
    targets = np.asarray(ids[:-1][::-1])
    return -float(np.mean(log_softmax(logits)[np.arange(len(targets)), targets]))


@pytest.mark.large
@pytest.mark.parametrize("steps", [4, 7])
def test_backward_stream_loss_equals_the_reversed_reference(bilm_run, steps):
    """The recipe's backward windows (stateful, `steps` per window, one row) over a
    stream give the loss of running the backward stack once over the reversed stream."""
    run, files, _ = bilm_run
    config = run_config(run, batch_size=1, steps=steps)
    task = language_model.RECIPE.load(config)
    sentences = lm_data.read_corpus(files["valid"])[:6]
    result = language_model.evaluate(config, task, {"valid": sentences}, ("valid",))["valid"]
    stream = lm_data.encode_stream(sentences, task.preprocessor.vocabulary)
    ids = np.concatenate([[END_ID], stream])  # t_0 = [END] precedes the first sentence
    reference = backward_reference_nll(task, ids)
    assert result["backward"]["tokens"] == result["forward"]["tokens"] == len(stream)
    np.testing.assert_allclose(result["backward"]["nll"], reference, rtol=1e-5)
    # the test can tell: read unreversed, or one token off, the loss differs
    unreversed = backward_reference_nll(task, ids[::-1])
    shifted = backward_reference_nll(task, np.concatenate([ids[1:], [END_ID]]))
    for wrong in (unreversed, shifted, result["forward"]["nll"]):
        assert abs(wrong - reference) > 1e-3
    both = (result["forward"]["nll"] + result["backward"]["nll"]) / 2
    np.testing.assert_allclose(result["perplexity"], math.exp(both), rtol=1e-6)


@pytest.mark.large
def test_bilm_cli_train_evaluate_generate_export_continue(bilm_run, tmp_path, capsys):
    import tensorflow as tf

    run, _, out = bilm_run
    for split in ("valid", "test"):
        forward, backward = out[split]["forward"], out[split]["backward"]
        assert forward["tokens"] == backward["tokens"]
        both = math.exp((forward["nll"] + backward["nll"]) / 2)
        assert out[split]["perplexity"] == pytest.approx(both, rel=1e-6)
    row = out["epochs"][0]
    assert {
        "valid_forward_perplexity",
        "valid_backward_perplexity",
        "train_forward_perplexity",
        "train_backward_perplexity",
    } <= set(row)
    assert row["valid_perplexity"] == pytest.approx(out["valid"]["perplexity"], rel=1e-5)
    assert row["train_perplexity"] == pytest.approx(
        math.sqrt(row["train_forward_perplexity"] * row["train_backward_perplexity"])
    )

    evaluated = main_json(language_model, "evaluate", "--output-dir", run, "--split", "test")
    assert evaluated["test"]["backward"]["perplexity"] == pytest.approx(
        out["test"]["backward"]["perplexity"], rel=1e-5
    )

    # the forward LM generates, in Python and in the SavedModel alike
    prompts = ["the", "the dog", ""]
    generated = main_json(language_model, "generate", "--output-dir", run, *prompts)
    saved = str(tmp_path / "saved")
    main_json(language_model, "export", "--output-dir", run, "--export-dir", saved)
    served = tf.saved_model.load(saved).signatures["serving_default"](prompt=tf.constant(prompts))
    assert [s.decode() for s in served["continuation"].numpy()] == [
        g["continuation"] for g in generated
    ]
    # the runtimes' bundles take a forward LM: one line, nothing written
    capsys.readouterr()
    onnx = tmp_path / "onnx"
    args = ["export", "--output-dir", run, "--format", "onnx", "--export-dir", str(onnx)]
    assert language_model.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "takes a forward language model" in err
    assert not onnx.exists()

    # --continue trains a copy of the finished run on from its last epoch
    copy = str(tmp_path / "continued")
    shutil.copytree(run, copy)
    continued = main_json(
        language_model, "train", "--continue", "--epochs", "2", "--output-dir", copy
    )
    assert [r["epoch"] for r in continued["epochs"]] == [1, 2]
    assert continued["epochs"][0] == json.loads(json.dumps(out["epochs"][0]))
    assert continued["valid"]["perplexity"] < out["valid"]["perplexity"]
