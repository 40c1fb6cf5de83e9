"""The language-model recipe: data windows, perplexity, masking, generation, CLI."""

import json
import math
import os
import re
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
TINY = dict(units=12, num_layers=2, steps=5, batch_size=4, init_scale=0.1, seed=3, gen_length=8)
# What the corpus' sentences may continue with, after "the" ([UNK] is the corpus' <unk>).
GRAMMAR = r"(cat|dog) (sat|ran) on a \[UNK\] (mat|log)"
WORDS = {"the", "cat", "dog", "sat", "ran", "on", "a", "[UNK]", "mat", "log"}


def write_corpus(folder, lines_per_split=(300, 30, 30), seed=0):
    """Sentences 'the {cat|dog} {sat|ran} on a <unk> {mat|log}': 3 fair binary choices in
    8 predicted tokens (with [END]), so the best perplexity is 2 ** (3 / 8) = 1.297.
    `<unk>` is PTB's rare-word marker, read as [UNK]: a model must learn to emit it."""
    rng = np.random.default_rng(seed)
    files = {}
    for split, count in zip(("train", "valid", "test"), lines_per_split):
        lines = [
            f"the {rng.choice(['cat', 'dog'])} {rng.choice(['sat', 'ran'])} on a <unk> "
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
        train_file=files["train"],
        valid_file=files["valid"],
        test_file=files["test"],
        output_dir=str(tmp_path / "run"),
        verbose=0,
    )
    config.update(overrides)
    return config


def test_init_scale_draws_every_weight_matrix_apart(tmp_path):
    """Zaremba's uniform initialisation with a seed: each matrix its own draw (a seeded
    Keras initializer repeats its values, which made every kernel start identical),
    and the same seed builds the same model."""
    config = tiny_config(tmp_path, embedding_dim=12)
    weights = [w.numpy() for w in language_model.build_model(config, 20).weights]
    matrices = [w for w in weights if w.ndim == 2]
    assert len(matrices) == 6  # embedding, two kernels, two recurrent kernels, logits
    firsts = {float(m.ravel()[0]) for m in matrices}
    assert len(firsts) == len(matrices)
    assert all(np.abs(m).max() <= 0.1 for m in matrices)
    again = [w.numpy() for w in language_model.build_model(config, 20).weights]
    for a, b in zip(weights, again):
        np.testing.assert_array_equal(a, b)


def test_stream_windows_layout_and_errors():
    stream = np.arange(4, 4 + 23)
    x, y = lm_data.stream_windows(stream, batch_size=2, steps=4)
    # rows of length 12 -> 3 windows of 4; batch i = window i of both rows
    assert x.shape == y.shape == (6, 4)
    row0 = np.concatenate([y[0], y[2], y[4]])
    row1 = np.concatenate([y[1], y[3], y[5]])
    assert np.concatenate([row0, row1])[:23].tolist() == stream.tolist()
    assert (np.concatenate([row0, row1])[23:] == 0).all()
    inputs = np.concatenate(
        [np.concatenate([x[0], x[2], x[4]]), np.concatenate([x[1], x[3], x[5]])]
    )
    assert inputs[0] == END_ID and inputs[1:23].tolist() == stream[:-1].tolist()
    with pytest.raises(ValueError, match=r"a batch_size x steps = 4 x 20 window .* only 23 tokens"):
        lm_data.stream_windows(stream, batch_size=4, steps=20)
    with pytest.raises(ValueError, match="empty"):
        lm_data.stream_windows([], batch_size=2, steps=2)


def test_corpus_reading_word_and_char_level(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("a <unk> b\n\nab c\n")
    assert lm_data.read_corpus(str(path)) == [["a", "[UNK]", "b"], ["ab", "c"]]
    chars = lm_data.read_corpus(str(path), level="char", unk_token=None)
    assert chars[2] == ["a", "b", " ", "c"]
    vocabulary = Vocabulary.build(chars)
    stream = lm_data.encode_stream(chars, vocabulary)
    assert len(stream) == sum(len(line) + 1 for line in chars)  # one [END] per line
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
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(loss(y, logits)), keras.ops.convert_to_numpy(loss(y, changed))
    )
    # and Keras' mean over the positions is the mean over the real targets
    real = -log_softmax(logits[0, :2])[np.arange(2), [5, 6]]
    assert keras.ops.convert_to_numpy(loss(y, logits)).mean() == pytest.approx(real.mean(), 1e-5)


def test_sentence_mode_learns_and_sampling_is_seeded(tmp_path):
    config = tiny_config(
        tmp_path,
        batching="sentences",
        optimizer="adam",
        learning_rate=0.02,
        loss_reduction="mean",
        epochs=12,
        cell="gru",
        tie_embeddings=True,
        batch_size=16,
        lr_decay_after=12,
    )  # a constant rate
    results = language_model.train(config)
    # From 13 (uniform) to near 1.297: learned well enough to generate the grammar.
    assert results["valid"]["perplexity"] < 1.4
    vocabulary, model = language_model.load_trained(config)

    def run(**options):
        return language_model.generate(dict(config, **options), ["the", ""], vocabulary, model)

    sampled = run(method="sample", top_k=3, temperature=1.0, seed=7)
    assert sampled == run(method="sample", top_k=3, temperature=1.0, seed=7)
    # top_k=1 leaves no choice: it is greedy decoding.
    assert run(method="sample", top_k=1, seed=1) == run(method="greedy")
    beam = run(method="beam", beam_size=3)
    # The trained model continues the grammar, [UNK] included, and stops at [END].
    assert re.fullmatch(GRAMMAR, beam[0]["continuation"]), beam[0]
    assert re.fullmatch("the " + GRAMMAR, beam[1]["continuation"]), beam[1]
    for row in sampled:  # no special token other than [UNK] is ever shown
        assert set(row["continuation"].split()) <= WORDS, row


def test_cli_train_export_and_generate_in_a_fresh_process(tmp_path):
    files = write_corpus(str(tmp_path), lines_per_split=(200, 20, 20))
    out, saved = str(tmp_path / "run"), str(tmp_path / "saved")
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    flags = [
        "--output-dir",
        out,
        "--train-file",
        files["train"],
        "--valid-file",
        files["valid"],
        "--test-file",
        files["test"],
        "--units",
        "24",
        "--num-layers",
        "1",
        "--steps",
        "7",
        "--batch-size",
        "8",
        "--epochs",
        "4",
        "--lr-decay-after",
        "10",
        "--verbose",
        "0",
        "--gen-length",
        "8",
    ]
    script = (
        "import sys; from recipes import language_model as lm\n"
        f"assert lm.main(['train'] + {flags!r}) == 0\n"
        f"assert lm.main(['export', '--output-dir', {out!r}, '--export-dir', {saved!r}, "
        "'--method', 'beam']) == 0\n"
        f"assert lm.main(['generate', '--output-dir', {out!r}, '--method', 'beam', 'the cat', "
        "'qqq zzz']) == 0\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    generated = json.loads(run.stdout[run.stdout.rindex("[\n") :])
    assert generated[1]["unknown_prompt_tokens"] == 2
    # The continuation holds an [UNK]: the export below must not cut it there.
    assert "[UNK]" in generated[0]["continuation"].split(), generated
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
    run = subprocess.run(
        [sys.executable, "-c", serve],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    continuations = json.loads(run.stdout.strip().splitlines()[-1])
    # The graph (tokenise, prompt pass, beam search, detokenise) gives what the Python
    # `generate` gave, and an empty prompt or unknown words do not break it.
    assert continuations[0] == generated[0]["continuation"]
    assert continuations[2] == generated[1]["continuation"]
    assert continuations[0] and set(" ".join(continuations).split()) <= WORDS


def test_ptb_stream_counts_every_eos(shared_data):
    path = shared_data("ptb", "ptb.valid.txt.gz")
    sentences = lm_data.read_corpus(str(path))
    assert len(sentences) == 3370
    vocabulary = Vocabulary.build(sentences)
    assert "<unk>" not in vocabulary.tokens  # PTB's own marker is our [UNK]
    x, y = lm_data.stream_windows(lm_data.encode_stream(sentences, vocabulary), 20, 20)
    assert int((y != 0).sum()) == 73760  # SOURCE.md: tokens including one <eos> per line


def _cli(capsys, *argv):
    code = language_model.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_reports_bad_input_in_one_line(tmp_path, capsys):
    files = write_corpus(str(tmp_path), lines_per_split=(10, 3, 3))
    flags = [
        "--output-dir",
        tmp_path / "run",
        "--train-file",
        files["train"],
        "--valid-file",
        files["valid"],
        "--test-file",
        files["test"],
        "--verbose",
        "0",
    ]
    # 10 lines x 8 tokens = 80 tokens: 20 per row of a batch of 4, fewer than 30 steps.
    code, _, err = _cli(capsys, "train", *flags, "--batch-size", "4", "--steps", "30")
    assert code == 2 and "Traceback" not in err, err
    assert f"{files['train']}: window longer than the corpus: a batch_size x steps = 4 x 30" in err
    assert "only 80 tokens" in err
    code, _, err = _cli(capsys, "train", *flags, "--strategy", "mirrored")
    assert code == 2 and "Traceback" not in err, err
    assert "`strategy: mirrored` does not work with `batching: stream`" in err


def _bench_sizes():
    from bench.quality import LM_SIZES

    return LM_SIZES


@pytest.mark.parametrize("size", ["small", "medium"])
def test_zaremba_configs_are_valid_and_match_the_benchmark(size, shared_data):
    from recipes.common import load_config

    # load_config rejects an unknown key or a value of the wrong type.
    config = load_config(
        language_model.DEFAULTS, os.path.join(REPO, "recipes", "configs", f"zaremba_{size}.yaml")
    )
    for key, value in _bench_sizes()[size].items():  # Zaremba et al.'s settings
        assert config[key] == value, key
    assert (config["cell"], config["num_layers"], config["batch_size"]) == ("lstm", 2, 20)
    assert (config["batching"], config["optimizer"], config["learning_rate"]) == (
        "stream",
        "sgd",
        1.0,
    )
    # The data are the PTB corpus of kerasrnn.datasets (the tests' KERASRNN_DATA is the
    # shared data folder, whose copy is gzip-compressed).
    from kerasrnn.datasets import resolve

    for split in ("train", "valid", "test"):
        assert config[f"{split}_file"] == f"corpus:ptb/ptb.{split}.txt"
        assert os.path.samefile(
            resolve(config[f"{split}_file"]), shared_data("ptb", f"ptb.{split}.txt.gz")
        )


class _Interrupt(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0:
            raise KeyboardInterrupt("simulated kill after the first epoch")


def test_resume_keeps_earlier_epochs_and_the_best_score(tmp_path):
    # lr 1 -> 30 at epoch 2 wrecks the model: its weights must not replace epoch 1's as
    # the best, though the resumed process never saw epoch 1's score.
    config = tiny_config(
        tmp_path, epochs=2, lr_decay=30.0, lr_decay_after=1, num_layers=1, batch_size=8
    )
    with pytest.raises(KeyboardInterrupt):
        language_model.train(config, callbacks=[_Interrupt()])
    interrupted = json.load(open(tmp_path / "run" / "backup" / "epochs.json"))["rows"]
    results = language_model.train(config)  # the same command again
    rows = results["epochs"]
    assert [row["epoch"] for row in rows] == [1, 2] and rows[0] == interrupted[0]
    assert rows[1]["valid_perplexity"] > rows[0]["valid_perplexity"]
    # evaluate() uses best.weights.h5: epoch 1's weights give epoch 1's perplexity.
    assert results["valid"]["perplexity"] == pytest.approx(rows[0]["valid_perplexity"], rel=1e-5)
    assert results["train_seconds"] == pytest.approx(sum(row["train_seconds"] for row in rows))
    assert not (tmp_path / "run" / "backup").exists()


def test_char_level_train_then_evaluate_reports_bits_per_character(tmp_path, capsys):
    files = write_corpus(str(tmp_path), lines_per_split=(40, 6, 6))
    out = tmp_path / "run"
    code, stdout, _ = _cli(
        capsys,
        "train",
        "--output-dir",
        out,
        "--train-file",
        files["train"],
        "--valid-file",
        files["valid"],
        "--test-file",
        files["test"],
        "--level",
        "char",
        "--units",
        "8",
        "--num-layers",
        "1",
        "--batch-size",
        "4",
        "--steps",
        "10",
        "--epochs",
        "2",
        "--verbose",
        "0",
    )
    assert code == 0
    trained = json.loads(stdout)  # stdout holds the result alone (logs go to stderr)
    code, stdout, _ = _cli(capsys, "evaluate", "--output-dir", out, "--split", "test")
    assert code == 0
    result = json.loads(stdout)["test"]
    assert set(json.loads(stdout)) == {"test"}
    assert result == pytest.approx(trained["test"])  # the same weights, the same stream
    # Every character and one [END] per line counts; bits per character = log2 ppl.
    lines = open(files["test"]).read().splitlines()
    assert result["tokens"] == sum(len(line) + 1 for line in lines)
    assert "bits_per_token" not in result
    assert result["bits_per_character"] == pytest.approx(math.log2(result["perplexity"]))
    assert result["bits_per_character"] < math.log2(trained["vocabulary_size"])  # it learned
    # Training speed counts the training passes, not the evaluation after each epoch.
    rows = trained["epochs"]
    assert trained["train_seconds"] == pytest.approx(sum(row["train_seconds"] for row in rows))
    evaluation = sum(row["eval_seconds"] for row in rows)
    assert 0 < trained["train_seconds"] <= trained["wall_seconds"] - evaluation
    stream_tokens = sum(len(line) + 1 for line in open(files["train"]).read().splitlines())
    assert trained["tokens_per_second"] == pytest.approx(
        stream_tokens * len(rows) / trained["train_seconds"]
    )


def test_mirrored_strategy_trains_per_sentence_batches(tmp_path):
    files = write_corpus(str(tmp_path), lines_per_split=(64, 8, 8))
    # --strategy mirrored needs a fresh process: it splits the CPU in two devices
    # before TensorFlow initialises them.
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "recipes.language_model",
            "train",
            "--output-dir",
            str(tmp_path / "run"),
            "--train-file",
            files["train"],
            "--valid-file",
            files["valid"],
            "--test-file",
            files["test"],
            "--batching",
            "sentences",
            "--strategy",
            "mirrored",
            "--units",
            "8",
            "--num-layers",
            "1",
            "--batch-size",
            "8",
            "--epochs",
            "2",
            "--optimizer",
            "adam",
            "--learning-rate",
            "0.05",
            "--loss-reduction",
            "mean",
            "--verbose",
            "0",
        ],
        env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout)  # stdout holds the result alone
    assert results["replicas"] == 2
    # Both replicas' gradients reached the weights: better than uniform guessing.
    assert results["test"]["perplexity"] < results["vocabulary_size"] / 2


def test_runs_of_the_previous_layout_still_load(tmp_path):
    """A run folder from before best.keras (best.weights.h5) loads and scores the same;
    one with neither says to train."""
    config = tiny_config(tmp_path, epochs=1, num_layers=1)
    results = language_model.train(config)
    run = tmp_path / "run"
    trained = language_model.LanguageModel.from_run(config)
    trained.model.save_weights(run / "best.weights.h5")  # the old layout's file
    os.remove(run / "best.keras")
    old = language_model.evaluate(config)
    assert old["test"]["perplexity"] == pytest.approx(results["test"]["perplexity"], rel=1e-5)
    os.remove(run / "best.weights.h5")
    with pytest.raises(FileNotFoundError, match="best.keras; run `train` first"):
        language_model.LanguageModel.from_run(config)
