"""The language-model recipe: data windows, perplexity, masking, generation, CLI."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("tensorflow")
import keras  # noqa: E402

from kerasrnn.data import language_model as lm_data  # noqa: E402
from kerasrnn.data.loaders import DataFormatError  # noqa: E402
from kerasrnn.data.vocabulary import END_ID, Vocabulary  # noqa: E402
from recipes import language_model  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = dict(units=12, num_layers=2, steps=5, batch_size=4, init_scale=0.1, seed=3)


def write_corpus(folder, lines_per_split=(300, 30, 30), seed=0):
    """Sentences 'the {cat|dog} {sat|ran} on a {mat|log}': 3 fair binary choices in 7
    predicted tokens (with [END]), so the best perplexity is 2 ** (3 / 7) = 1.346."""
    rng = np.random.default_rng(seed)
    files = {}
    for split, count in zip(("train", "valid", "test"), lines_per_split):
        lines = [
            f"the {rng.choice(['cat', 'dog'])} {rng.choice(['sat', 'ran'])} on a "
            f"{rng.choice(['mat', 'log'])}"
            for _ in range(count)
        ]
        files[split] = os.path.join(folder, f"{split}.txt")
        with open(files[split], "w") as f:
            f.write("\n".join(lines) + "\n")
    return files


def tiny_config(tmp_path, **overrides):
    files = write_corpus(str(tmp_path))
    config = dict(language_model.DEFAULTS)
    config.update(TINY)
    config.update(
        train_file=files["train"], valid_file=files["valid"], test_file=files["test"],
        output_dir=str(tmp_path / "run"), verbose=0,
    )
    config.update(overrides)
    return config


def test_stream_windows_layout_and_errors():
    stream = np.arange(4, 4 + 23)
    x, y = lm_data.stream_windows(stream, batch_size=2, steps=4)
    # rows of length 12 -> 3 windows of 4; batch i = window i of both rows
    assert x.shape == y.shape == (6, 4)
    row0 = np.concatenate([y[0], y[2], y[4]])
    row1 = np.concatenate([y[1], y[3], y[5]])
    assert np.concatenate([row0, row1])[:23].tolist() == stream.tolist()
    assert (np.concatenate([row0, row1])[23:] == 0).all()
    inputs = np.concatenate([np.concatenate([x[0], x[2], x[4]]), np.concatenate([x[1], x[3], x[5]])])
    assert inputs[0] == END_ID and inputs[1:23].tolist() == stream[:-1].tolist()
    with pytest.raises(ValueError, match="window longer than the corpus: steps=20"):
        lm_data.stream_windows(stream, batch_size=4, steps=20)
    with pytest.raises(ValueError, match="empty"):
        lm_data.stream_windows([], batch_size=2, steps=2)


def test_empty_corpus_is_an_error(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("\n\n")
    with pytest.raises(DataFormatError, match="empty"):
        lm_data.read_corpus(str(path))


def test_stateful_windows_equal_one_pass_over_the_stream(tmp_path):
    config = tiny_config(tmp_path, cell="gru")
    vocab_size = 20
    stream = np.random.default_rng(1).integers(4, vocab_size, size=57).astype("int32")
    x, _ = lm_data.stream_windows(stream, batch_size=3, steps=5)
    stateful = language_model.build_model(config, vocab_size, batch_size=3, stateful=True)
    whole = language_model.build_model(config, vocab_size)
    whole.set_weights(stateful.get_weights())
    windows = [keras.ops.convert_to_numpy(stateful(x[i : i + 3])) for i in range(0, len(x), 3)]
    by_window = np.concatenate(windows, axis=1)  # (3 rows, time, vocab)
    rows = np.concatenate([x[i : i + 3] for i in range(0, len(x), 3)], axis=1)
    # Trailing [PAD] inputs are masked; compare the real positions.
    one_pass = keras.ops.convert_to_numpy(whole(rows))
    real = rows != 0
    np.testing.assert_allclose(by_window[real], one_pass[real], rtol=1e-4, atol=1e-5)


def log_softmax(z):
    z = z.astype("float64")
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_perplexity_is_exp_mean_nll_and_padding_counts_nothing(tmp_path):
    config = tiny_config(tmp_path, batching="sentences")
    splits, vocabulary = language_model.load_data(config)
    sentences = splits["valid"][:9]
    model = language_model.build_model(config, len(vocabulary))
    # Independent reference: each sentence alone (no padding), log-softmax in NumPy.
    total, count = 0.0, 0
    for tokens in sentences:
        inputs, targets = lm_data.sentence_examples([tokens], vocabulary)
        logits = keras.ops.convert_to_numpy(model(np.asarray(inputs)))[0]
        total -= log_softmax(logits)[np.arange(len(targets[0])), targets[0]].sum()
        count += len(targets[0])
    expected = math.exp(total / count)
    for batch_size in (1, 4):  # batch 4 pads every batch to its longest sentence
        data = lm_data.sentence_dataset(sentences, vocabulary, batch_size, shuffle=False)
        result = language_model.perplexity(model, data, config)
        assert result["tokens"] == count
        assert result["perplexity"] == pytest.approx(expected, rel=1e-5)
        assert result["keras_hub_perplexity"] == pytest.approx(expected, rel=1e-4)
    # Padded targets add nothing to the training loss either.
    loss = language_model.make_loss(dict(config, loss_reduction="mean"))
    y = np.array([[5, 6, 0, 0]])
    logits = np.random.default_rng(0).normal(size=(1, 4, len(vocabulary))).astype("float32")
    changed = logits.copy()
    changed[0, 2:] += 100.0
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loss(y, logits)),
                               keras.ops.convert_to_numpy(loss(y, changed)))


def test_sentence_mode_learns_and_sampling_is_seeded(tmp_path):
    config = tiny_config(tmp_path, batching="sentences", optimizer="adam", learning_rate=0.02,
                         loss_reduction="mean", epochs=6, cell="gru", tie_embeddings=True,
                         batch_size=16)
    results = language_model.train(config)
    assert results["valid"]["perplexity"] < 1.6  # from 13 (uniform) towards 1.346
    vocabulary, model = language_model.load_trained(config)

    def run(**options):
        return language_model.generate(dict(config, **options), ["the", ""], vocabulary, model)

    sampled = run(method="sample", top_k=3, temperature=1.0, seed=7)
    assert sampled == run(method="sample", top_k=3, temperature=1.0, seed=7)
    # top_k=1 leaves no choice: it is greedy decoding.
    assert run(method="sample", top_k=1, seed=1) == run(method="greedy")
    beam = run(method="beam", beam_size=3)
    for row in beam + sampled:
        assert set(row["continuation"].split()) <= set(vocabulary.tokens)
    assert beam[0]["continuation"].split()[-2:-1] == ["a"]  # "... on a {mat|log}"


def test_cli_train_export_and_generate_in_a_fresh_process(tmp_path):
    files = write_corpus(str(tmp_path))
    out, saved = str(tmp_path / "run"), str(tmp_path / "saved")
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    flags = [
        "--output-dir", out, "--train-file", files["train"], "--valid-file", files["valid"],
        "--test-file", files["test"], "--units", "24", "--num-layers", "1", "--steps", "7",
        "--batch-size", "8", "--epochs", "4", "--lr-decay-after", "10", "--verbose", "0",
    ]
    script = (
        "import sys; from recipes import language_model as lm\n"
        f"assert lm.main(['train'] + {flags!r}) == 0\n"
        f"assert lm.main(['export', '--output-dir', {out!r}, '--export-dir', {saved!r}, "
        "'--method', 'beam']) == 0\n"
        f"assert lm.main(['generate', '--output-dir', {out!r}, '--method', 'beam', 'the cat', "
        "'qqq zzz']) == 0\n"
    )
    run = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    generated = json.loads(run.stdout[run.stdout.rindex("[\n"):])
    assert generated[1]["unknown_prompt_tokens"] == 2
    results = json.load(open(os.path.join(out, "results.json")))
    assert results["test"]["perplexity"] < 2.0
    # A process that never imports kerasrnn (TensorFlow may load Keras itself).
    serve = (
        "import json, sys, tensorflow as tf\n"
        f"m = tf.saved_model.load({saved!r})\n"
        "out = m.signatures['serving_default'](prompt=tf.constant(['the cat', '', 'qqq zzz']))\n"
        "print(json.dumps([s.decode() for s in out['continuation'].numpy()]))\n"
        "assert 'kerasrnn' not in sys.modules\n"
    )
    run = subprocess.run([sys.executable, "-c", serve], env=env, cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    continuations = json.loads(run.stdout.strip().splitlines()[-1])
    # The graph (tokenise, prompt pass, beam search, detokenise) gives what the Python
    # `generate` gave, and an empty prompt or unknown words do not break it.
    assert continuations[0] == generated[0]["continuation"]
    assert continuations[2] == generated[1]["continuation"]
    words = {"the", "cat", "dog", "sat", "ran", "on", "a", "mat", "log"}
    assert continuations[0] and set(" ".join(continuations).split()) <= words
