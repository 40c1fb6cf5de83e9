"""The bidirectional language model (`--bidirectional`): the backward direction's data
layout against a reference computed by hand, its contextual features, and the command
line (train / evaluate / --continue / generate / export)."""

import json
import math

import numpy as np
import pytest

pytest.importorskip("tensorflow")
import keras  # noqa: E402
from test_language_model import tiny_config  # noqa: E402

from kerasrnn.data import language_model as lm_data  # noqa: E402
from kerasrnn.data.vocabulary import END_ID, START_ID  # noqa: E402
from kerasrnn.layers import BiLMFeatures  # noqa: E402
from recipes import language_model  # noqa: E402


def log_softmax(logits):
    logits = logits - logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def backward_reference_nll(model, ids):
    """The backward LM's mean NLL over token ids t_0 .. t_n read right to left, by hand:
    the embedding, the backward stack and the output layer applied to the reversed
    sequence t_n .. t_1 in one pass from zero states; after reading t_n .. t_j the
    target is t_{j-1}."""
    reversed_ids = np.asarray(ids[1:][::-1], "int32")[None]
    x = model.get_layer("embedding")(reversed_ids)
    for i in range(len(language_model.rnn_layers(model))):
        x = model.get_layer(f"backward_rnn_{i}")(x)
    logits = keras.ops.convert_to_numpy(model.get_layer("logits")(x))[0]
    targets = np.asarray(ids[:-1][::-1])
    return -float(np.mean(log_softmax(logits)[np.arange(len(targets)), targets]))


@pytest.mark.parametrize("steps", [4, 7])
def test_backward_stream_loss_equals_the_reversed_reference(tmp_path, steps):
    """The recipe's backward windows (stateful, `steps` per window) over a stream give
    the loss of running the backward stack once over the reversed stream."""
    # large initial weights: the outputs depend on the order read, clearly
    config = tiny_config(tmp_path, bidirectional=True, batch_size=1, steps=steps, init_scale=0.8)
    splits, vocabulary = language_model.load_data(config)
    model = language_model.build_model(config, len(vocabulary))
    trained = language_model.LanguageModel(model, vocabulary, config)
    sentences = splits["valid"][:6]
    result = trained.evaluate({"valid": sentences}, ["valid"])["valid"]
    stream = lm_data.encode_stream(sentences, vocabulary)
    ids = np.concatenate([[END_ID], stream])  # t_0 = [END] precedes the first sentence
    reference = backward_reference_nll(model, ids)
    assert result["backward"]["tokens"] == result["forward"]["tokens"] == len(stream)
    np.testing.assert_allclose(result["backward"]["nll"], reference, rtol=1e-5)
    # the test can tell: read unreversed, or one token off, the loss differs
    unreversed = backward_reference_nll(model, ids[::-1])
    shifted = backward_reference_nll(model, np.concatenate([ids[1:], [END_ID]]))
    for wrong in (unreversed, shifted, result["forward"]["nll"]):
        assert abs(wrong - reference) > 1e-3
    both = (result["forward"]["nll"] + result["backward"]["nll"]) / 2
    np.testing.assert_allclose(result["perplexity"], math.exp(both), rtol=1e-6)


def test_backward_stream_windows_layout():
    stream = np.array([5, 6, END_ID, 7, 8, 9, END_ID], "int32")
    x, y = lm_data.stream_windows(language_model.backward_stream(stream), 1, 7)
    # reads [END] 9 8 7 [END] 6 5 and predicts each token's predecessor
    assert x[0].tolist() == [END_ID, 9, 8, 7, END_ID, 6, 5]
    assert y[0].tolist() == [9, 8, 7, END_ID, 6, 5, END_ID]


def test_backward_sentences_are_reversed(tmp_path):
    config = tiny_config(tmp_path, bidirectional=True, batching="sentences")
    splits, vocabulary = language_model.load_data(config)
    data = language_model.direction_batches(config, [["the", "cat", "sat"]], vocabulary, 1)
    x, y = next(iter(data["backward"]))
    words = vocabulary.encode(["sat", "cat", "the"])
    assert x.numpy()[0].tolist() == [START_ID] + words
    assert y.numpy()[0].tolist() == words + [END_ID]


def test_bilm_features_match_each_direction_run_by_hand(tmp_path):
    """Padded rows of different lengths: [e; e] and [forward_k; backward_k] of every
    token equal one sentence at a time through each stack, the backward reading
    [END] w_n .. w_1."""
    config = tiny_config(tmp_path, bidirectional=True)
    _, vocabulary = language_model.load_data(config)
    model = language_model.build_model(config, len(vocabulary))
    features = BiLMFeatures.from_model(model, language_model.first_token(config))
    sentences = [vocabulary.encode(["the", "cat", "sat", "on"]), vocabulary.encode(["a", "dog"])]
    ids = np.zeros((2, 4), "int32")
    for row, sentence in enumerate(sentences):
        ids[row, : len(sentence)] = sentence
    outputs = [keras.ops.convert_to_numpy(o) for o in features(ids)]
    assert len(outputs) == 3 and all(o.shape == (2, 4, 24) for o in outputs)

    def stack(tokens, prefix):
        x = model.get_layer("embedding")(np.asarray([[END_ID] + tokens], "int32"))
        layers = [keras.ops.convert_to_numpy(x)[0, 1:]]
        for i in range(2):
            x = model.get_layer(f"{prefix}rnn_{i}")(x)
            layers.append(keras.ops.convert_to_numpy(x)[0, 1:])
        return layers

    for row, sentence in enumerate(sentences):
        forward = stack(sentence, "")
        backward = [b[::-1] for b in stack(sentence[::-1], "backward_")]
        for k in range(3):
            expected = np.concatenate([forward[k], backward[k]], axis=-1)
            np.testing.assert_allclose(outputs[k][row, : len(sentence)], expected, atol=1e-6)
    mask = features.compute_mask(ids)
    assert keras.ops.convert_to_numpy(mask[0]).tolist() == (ids != 0).tolist()


def test_bilm_cli_train_evaluate_continue_generate_export(tmp_path, capsys):
    import tensorflow as tf

    config = tiny_config(tmp_path)
    run = ["--output-dir", config["output_dir"]]
    flags = [
        "--train-file",
        config["train_file"],
        "--valid-file",
        config["valid_file"],
        "--test-file",
        config["test_file"],
        "--units",
        "12",
        "--steps",
        "5",
        "--batch-size",
        "4",
        "--verbose",
        "0",
        "--optimizer",
        "adam",
        "--learning-rate",
        "0.01",
    ]
    code = language_model.main(["train", "--bidirectional", "true", "--epochs", "1", *flags, *run])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
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

    assert language_model.main(["evaluate", *run, "--split", "test"]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    assert evaluated["test"]["backward"]["perplexity"] == pytest.approx(
        out["test"]["backward"]["perplexity"], rel=1e-5
    )

    assert language_model.main(["train", "--continue", "--epochs", "2", *run]) == 0
    continued = json.loads(capsys.readouterr().out)
    assert [r["epoch"] for r in continued["epochs"]] == [1, 2]
    assert continued["valid"]["perplexity"] < out["valid"]["perplexity"]

    assert language_model.main(["generate", *run, "the"]) == 0
    generated = json.loads(capsys.readouterr().out)
    assert language_model.main(["export", *run, "--export-dir", str(tmp_path / "saved")]) == 0
    capsys.readouterr()
    served = tf.saved_model.load(str(tmp_path / "saved")).signatures["serving_default"](
        prompt=tf.constant(["the"])
    )
    # the forward LM generates, in Python and in the SavedModel alike
    assert served["continuation"].numpy()[0].decode() == generated[0]["continuation"]
