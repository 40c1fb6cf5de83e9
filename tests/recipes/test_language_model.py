"""The language-model recipe: the options that shape the model (init scale, the paper's
loss, the SGD schedule, init_from / extend_vocabulary), stream and sentence batching,
perplexity against a NumPy reference and keras-hub's metric, generation with each
method, export-embeddings, the command line and its SavedModel.

The tests that only read a trained run use the session's `tiny_language_model` (a word
LM trained one epoch on stateful stream windows; tests/conftest.py)."""

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
from kerasrnn.data.vocabulary import END_ID, Vocabulary  # noqa: E402
from recipes import common, language_model  # noqa: E402
from recipes import decoding as configured  # noqa: E402
from recipes.files import tidy  # noqa: E402
from tests.conftest import LM_SENTENCES, main_json  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
TINY = dict(units=12, num_layers=2, steps=5, batch_size=4, init_scale=0.1, seed=3, gen_length=8)
# What the corpus' sentences may continue with, after "the" ([UNK] is the corpus' <unk>).
AFTER_NOUN = r"(sat|ran) on a \[UNK\] (mat|log)"
GRAMMAR = r"(cat|dog) " + AFTER_NOUN
WORDS = {"the", "cat", "dog", "sat", "ran", "on", "a", "[UNK]", "mat", "log"}
PROMPTS = ["the cat", "", "qqq zzz"]


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


def tiny_config(tmp_path, lines_per_split=(300, 30, 30), **overrides):
    """The recipe's config of a tiny model on `write_corpus`'s files in `tmp_path`."""
    files = write_corpus(str(tmp_path), lines_per_split)
    config = dict(TINY, verbose=0, output_dir=str(tmp_path / "run"))
    config.update({f"{split}_file": path for split, path in files.items()})
    config.update(overrides)
    return common.load_config(language_model.DEFAULTS, overrides=config)


def preprocessor_of(sentences, config):
    from kerasrnn.models import LanguageModelPreprocessor

    vocabulary = Vocabulary.build(sentences)
    return LanguageModelPreprocessor(vocabulary, "word", language_model.first_token(config))


def run_config(run, **overrides):
    """The config a run was trained with (as its commands read it)."""
    return common.saved_config(language_model.OPTIONS, str(run), overrides)


def log_softmax(z):
    z = z.astype("float64")
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def np_(x):
    return keras.ops.convert_to_numpy(x)


# ------------------------------------------------------------ what the options build


def test_init_scale_draws_every_weight_matrix_apart(tmp_path):
    """Zaremba's uniform initialisation with a seed: each matrix its own draw (a seeded
    Keras initializer repeats its values, which made every kernel start identical),
    and the same seed builds the same model."""
    config = common.load_config(language_model.DEFAULTS, overrides=dict(TINY, embedding_dim=12))
    words = [[f"w{i}" for i in range(16)]]  # 16 words + the 4 special tokens

    def weights():
        model = language_model.build_model(config, preprocessor_of(words, config))
        return [np_(w) for w in model.weights]

    first = weights()
    matrices = [w for w in first if w.ndim == 2]
    assert len(matrices) == 6  # embedding, two kernels, two recurrent kernels, logits
    assert matrices[0].shape == (20, 12)
    assert len({float(m.ravel()[0]) for m in matrices}) == len(matrices)
    assert all(np.abs(m).max() <= 0.1 for m in matrices)
    assert all(np.abs(m).max() > 0.09 for m in matrices)  # uniform over the whole range
    for a, b in zip(first, weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("reduction", ["sum_over_time", "mean"])
def test_loss_reduction_is_the_papers_sum_over_time_or_the_mean(reduction):
    """``sum_over_time`` (Zaremba et al.): each window's cross-entropy summed over its
    steps, averaged over the batch; ``mean``: averaged over the real tokens. Padded
    targets count in neither."""
    config = common.load_config(
        language_model.DEFAULTS, overrides=dict(TINY, loss_reduction=reduction, num_layers=1)
    )
    model = language_model.build_model(config, preprocessor_of([["a", "b", "c"]], config))
    language_model.compile_model(model, config)
    rng = np.random.default_rng(0)
    x = rng.integers(1, 7, (3, 5)).astype("int32")
    y = rng.integers(1, 7, (3, 5)).astype("int32")
    y[2, 3:] = 0  # a padded end
    logits = np_(model(x))
    nll = -np.take_along_axis(log_softmax(logits), y[..., None], -1)[..., 0] * (y != 0)
    expected = nll.sum() / (y != 0).sum()
    if reduction == "sum_over_time":  # the per-token mean times the steps
        expected *= 5
    got = float(np_(model.compute_loss(x, y, model(x), training=False)))
    assert got == pytest.approx(expected, rel=1e-5)
    # the unpadded rows alone: the paper's sum over the steps, averaged over the batch
    full = float(np_(model.compute_loss(x[:2], y[:2], model(x[:2]), training=False)))
    reference = nll[:2].sum() / 2 if reduction == "sum_over_time" else nll[:2].mean()
    assert full == pytest.approx(reference, rel=1e-5)


# ------------------------------------------------------------------------ perplexity


def test_stream_perplexity_of_the_run_is_the_numpy_nll_of_each_row(tiny_language_model):
    """`evaluate` of a stream (stateful windows, the states carried from window to
    window): each of the `batch_size` rows of the stream read in one pass from zero
    states, its NLL computed in NumPy; keras-hub's Perplexity fed the same batches."""
    config = run_config(tiny_language_model)
    task = language_model.RECIPE.load(config)
    sentences = LM_SENTENCES[:9] + [["the", "zebra", "ran"]]  # an unknown word too
    result = language_model.evaluate(config, task, {"test": sentences}, ("test",))["test"]
    stream = lm_data.encode_stream(sentences, task.preprocessor.vocabulary)
    inputs = np.concatenate([[END_ID], stream[:-1]])
    # the rows of the windows: ceil(n / batch_size) tokens rounded up to whole windows
    # (kerasrnn.data.language_model.stream_windows)
    steps = config["steps"]
    row = math.ceil(math.ceil(len(stream) / config["batch_size"]) / steps) * steps
    model = task.stateless()
    total = 0.0
    for start in range(0, len(stream), row):
        logits = np_(model(inputs[None, start : start + row]))[0]
        targets = stream[start : start + row]
        total -= log_softmax(logits)[np.arange(len(targets)), targets].sum()
    expected = math.exp(total / len(stream))
    assert result["tokens"] == len(stream)
    assert result["perplexity"] == pytest.approx(expected, rel=1e-5)
    assert result["keras_hub_perplexity"] == pytest.approx(expected, rel=1e-4)
    assert result["bits_per_token"] == pytest.approx(math.log2(expected), rel=1e-5)
    # the test can tell: one pass over the whole stream (no rows) scores otherwise
    whole = np_(model(inputs[None]))[0]
    one_pass = -log_softmax(whole)[np.arange(len(stream)), stream].mean()
    assert abs(math.exp(one_pass) - expected) > 1e-4


def test_sentence_perplexity_matches_numpy_and_keras_hub_in_padded_batches():
    config = common.load_config(language_model.DEFAULTS, overrides=dict(TINY, batching="sentences"))
    sentences = LM_SENTENCES[:9] + [["the", "zebra", "ran"]]
    task = language_model.build_model(config, preprocessor_of(LM_SENTENCES, config))
    vocabulary = task.preprocessor.vocabulary
    # Independent reference: each sentence alone (no padding), log-softmax in NumPy.
    total, count = 0.0, 0
    for tokens in sentences:
        inputs, targets = lm_data.sentence_examples([tokens], vocabulary)
        logits = np_(task(np.asarray(inputs)))[0]
        total -= log_softmax(logits)[np.arange(len(targets[0])), targets[0]].sum()
        count += len(targets[0])
    expected = math.exp(total / count)
    for batch_size in (1, 4):  # batch 4 pads every batch to its longest sentence
        result = language_model.evaluate(
            dict(config, batch_size=batch_size), task, {"valid": sentences}, ("valid",)
        )["valid"]
        assert result["tokens"] == count
        assert result["perplexity"] == pytest.approx(expected, rel=1e-5)
        assert result["keras_hub_perplexity"] == pytest.approx(expected, rel=1e-4)


# ------------------------------------------------------------------------ generation


def greedy_reference(task, prompt, max_length):
    """Argmax decoding by full passes of the model, one token at a time, in NumPy."""
    preprocessor = task.preprocessor
    ids = [preprocessor.boundary_id] + [
        preprocessor.vocabulary.token_to_id(w) for w in prompt.split()
    ]
    out = []
    for _ in range(max_length):
        logits = np_(task(np.asarray([ids], "int32")))[0, -1].astype("float64")
        logits[0] = -np.inf  # [PAD] is never generated
        token = int(np.argmax(logits))
        if token == END_ID:
            break
        out.append(token)
        ids.append(token)
    return " ".join(preprocessor.vocabulary.tokens[i] for i in out)


def test_decoding_options_make_the_librarys_strategies():
    from kerasrnn import decoding

    config = common.load_config(language_model.DEFAULTS)
    cases = [
        (dict(method="greedy"), decoding.GreedySearch()),
        (
            dict(method="beam", beam_size=3, length_normalization="gnmt"),
            decoding.BeamSearch(3, n_best=1, scorer=decoding.Scorer("gnmt")),
        ),
        (
            dict(method="sample", temperature=0.7, top_k=5, top_p=0.0, seed=9),
            decoding.RandomSampling(temperature=0.7, top_k=5, seed=9),
        ),
    ]
    for options, expected in cases:
        strategy = configured.strategy(dict(config, **options))
        assert type(strategy) is type(expected)
        assert strategy.get_config() == expected.get_config(), options
    with pytest.raises(common.ConfigError, match="export supports method 'greedy' or 'beam'"):
        language_model.RECIPE.export_options(dict(config, method="sample"))


@pytest.fixture(scope="module")
def grammar_run(tmp_path_factory):
    """A small LM trained to learn `write_corpus`'s grammar: sentence batches, Adam, a
    GRU, tied embeddings, the mean token loss (its generations are worth comparing)."""
    config = tiny_config(
        tmp_path_factory.mktemp("grammar"),
        batching="sentences",
        optimizer="adam",
        learning_rate=0.02,
        loss_reduction="mean",
        epochs=12,
        cell="gru",
        tie_embeddings=True,
        batch_size=16,
        lr_decay_after=12,  # a constant rate
    )
    return config, language_model.train(config)


@pytest.mark.large
def test_sentence_mode_learns_and_generates_with_each_method(grammar_run):
    config, results = grammar_run
    # From 13 (uniform) to near 1.297: learned well enough to generate the grammar.
    assert results["valid"]["perplexity"] < 1.4
    run = config["output_dir"]

    def generate(*flags):
        return main_json(language_model, "generate", "--output-dir", run, *flags, *PROMPTS)

    beam = generate("--method", "beam", "--beam-size", "3")
    # The trained model continues the grammar, [UNK] included, and stops at [END].
    assert re.fullmatch(AFTER_NOUN, beam[0]["continuation"]), beam[0]
    assert re.fullmatch("the " + GRAMMAR, beam[1]["continuation"]), beam[1]
    assert [r["prompt"] for r in beam] == PROMPTS
    assert [r["unknown_prompt_tokens"] for r in beam] == [0, 0, 2]
    # greedy: an argmax loop over full passes of the model
    task = language_model.RECIPE.load(config)
    greedy = generate("--method", "greedy")
    expected = [greedy_reference(task, p, config["gen_length"]) for p in PROMPTS]
    assert [r["continuation"] for r in greedy] == expected
    assert re.fullmatch("the " + GRAMMAR, expected[1])
    # sampling: seeded (its top_k / top_p / temperature: test_decoding_options_...)
    sampled = generate("--method", "sample", "--seed", "7", "--temperature", "1.5")
    assert sampled == generate("--method", "sample", "--seed", "7", "--temperature", "1.5")
    for row in sampled:  # no special token other than [UNK] is ever shown
        assert set(row["continuation"].split()) <= WORDS, row
    assert any(row["continuation"] for row in sampled)


SERVE = (
    "import json, sys, tensorflow as tf\n"
    "m = tf.saved_model.load(sys.argv[1])\n"
    "out = m.signatures['serving_default'](prompt=tf.constant(json.loads(sys.argv[2])))\n"
    "print(json.dumps([s.decode() for s in out['continuation'].numpy()]))\n"
    "assert not {'kerasrnn', 'recipes'} & set(sys.modules)\n"
)


@pytest.mark.large
def test_saved_model_generates_as_the_recipe_in_a_process_without_kerasrnn(grammar_run, tmp_path):
    run = grammar_run[0]["output_dir"]
    saved = str(tmp_path / "saved")
    flags = ["--method", "beam", "--beam-size", "3"]
    assert main_json(
        language_model, "export", "--output-dir", run, "--export-dir", saved, *flags
    ) == {"saved_model": saved}
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", SERVE, saved, json.dumps(PROMPTS)],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    served = json.loads(done.stdout.strip().splitlines()[-1])
    # The graph (tokenise, prompt pass, beam search, detokenise) gives what the
    # recipe's `generate` gives, [UNK]s included (they do not cut a continuation), and
    # an empty prompt or unknown words do not break it.
    rows = main_json(language_model, "generate", "--output-dir", run, *flags, *PROMPTS)
    assert served == [r["continuation"] for r in rows]
    assert "[UNK]" in served[1].split()


def test_export_embeddings_writes_the_input_embedding(tiny_language_model, tmp_path):
    run, out = str(tiny_language_model), str(tmp_path / "lm.vec")
    written = main_json(language_model, "export-embeddings", run, out)
    task = language_model.RECIPE.load(run_config(run))
    vocabulary = task.preprocessor.vocabulary
    matrix = np_(task.backbone.token_embedding.embeddings)
    with open(out, encoding="utf-8") as f:
        header, *lines = f.read().splitlines()
    assert header == f"{len(vocabulary) - 4} {matrix.shape[1]}"
    assert written == {"vectors": out, "words": len(vocabulary) - 4, "dim": matrix.shape[1]}
    words = [line.split()[0] for line in lines]
    assert words == vocabulary.tokens[4:]  # the special tokens left out, most frequent first
    for line in lines:
        word, *values = line.split()
        row = matrix[vocabulary.token_to_id(word)]
        np.testing.assert_allclose(np.array(values, "float32"), row, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------- init_from


def test_init_from_takes_the_run_and_extends_its_vocabulary(tiny_language_model, tmp_path):
    """`--init-from RUN --extend-vocabulary 2`: the run's architecture (its units, not the
    flag's), its vocabulary then the new text's words seen twice or more that it lacks,
    its weights, and the new words' rows at the mean of its rows (ULMFiT)."""
    start = language_model.RECIPE.load(run_config(tiny_language_model))
    text = tmp_path / "new.txt"
    text.write_text("the zebra sat on the yak\nthe zebra ran home\n" * 4 + "a gnu ran\n")
    out = str(tmp_path / "run")
    flags = ["--train-file", str(text), "--valid-file", "", "--test-file", ""]
    tiny = ["--steps", "5", "--batch-size", "2", "--epochs", "1", "--verbose", "0"]
    # a learning rate of 1e-12 (the command line refuses 0): the weights stay the start's
    main_json(
        language_model, "train", *flags, *tiny, "--init-from", str(tiny_language_model),
        "--extend-vocabulary", "2", "--units", "32", "--learning-rate", "1e-12",
        "--jit-compile", "false", "--output-dir", out,
    )  # fmt: skip
    tuned = language_model.RECIPE.load(run_config(out))
    old = start.preprocessor.vocabulary.tokens
    # zebra (8 times) and yak (4), most frequent first; gnu (once) stays [UNK]
    assert tuned.preprocessor.vocabulary.tokens == old + ["zebra", "yak"]
    assert tuned.backbone.units == start.backbone.units == 8
    before = np_(start.backbone.token_embedding.embeddings)
    after = np_(tuned.backbone.token_embedding.embeddings)
    np.testing.assert_allclose(after[: len(old)], before, atol=1e-6)
    np.testing.assert_allclose(after[len(old) :], [before.mean(0)] * 2, atol=1e-6)
    kernel = np_(start.backbone.readout.kernel)
    np.testing.assert_allclose(
        np_(tuned.backbone.readout.kernel)[:, len(old) :],
        np.repeat(kernel.mean(1, keepdims=True), 2, 1),
        atol=1e-6,
    )
    # the options that need init_from, or exclude it, are one-line errors
    for wrong in (
        ["--extend-vocabulary", "2"],
        ["--init-from", str(tiny_language_model), "--vocabulary-file", str(text)],
    ):
        args = ["train", *flags, *tiny, *wrong, "--output-dir", str(tmp_path / "x")]
        assert language_model.main(args) == 2
    assert not os.path.exists(tmp_path / "x")


# --------------------------------------------------------------------- trained runs


def _cli(capsys, *argv):
    code = language_model.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_reports_bad_input_in_one_line(tmp_path, capsys):
    files = write_corpus(str(tmp_path), lines_per_split=(10, 3, 3))
    flags = ["--output-dir", tmp_path / "run", "--verbose", "0"]
    flags += [a for split in files for a in (f"--{split}-file", files[split])]
    # 10 lines x 8 tokens = 80 tokens: 20 per row of a batch of 4, fewer than 30 steps.
    code, _, err = _cli(capsys, "train", *flags, "--batch-size", "4", "--steps", "30")
    assert code == 2 and "Traceback" not in err, err
    assert f"{files['train']}: window longer than the corpus: a batch_size x steps = 4 x 30" in err
    assert "only 80 tokens" in err
    code, _, err = _cli(capsys, "train", *flags, "--strategy", "mirrored")
    assert code == 2 and "Traceback" not in err, err
    assert "`strategy: mirrored` does not work with `batching: stream`" in err


@pytest.mark.parametrize("size", ["small", "medium"])
def test_zaremba_configs_are_valid_and_match_the_benchmark(size, shared_data):
    from bench.quality import LM_SIZES
    from kerasrnn.datasets import resolve

    # load_config rejects an unknown key or a value of the wrong type.
    config = common.load_config(
        language_model.DEFAULTS, os.path.join(REPO, "recipes", "configs", f"zaremba_{size}.yaml")
    )
    for key, value in LM_SIZES[size].items():  # Zaremba et al.'s settings
        assert config[key] == value, key
    assert (config["cell"], config["num_layers"], config["batch_size"]) == ("lstm", 2, 20)
    assert (config["batching"], config["optimizer"], config["learning_rate"]) == (
        "stream",
        "sgd",
        1.0,
    )
    # The data are the PTB corpus of kerasrnn.datasets (the tests' KERASRNN_DATA is the
    # shared data folder, whose copy is gzip-compressed).
    for split in ("train", "valid", "test"):
        assert config[f"{split}_file"] == f"corpus:ptb/ptb.{split}.txt"
        assert os.path.samefile(
            resolve(config[f"{split}_file"]), shared_data("ptb", f"ptb.{split}.txt.gz")
        )


class _Interrupt(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0:
            raise KeyboardInterrupt("simulated kill after the first epoch")


class _Scramble(keras.callbacks.Callback):
    """Wrecks the model before the second epoch: large random weights."""

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 1:
            rng = np.random.default_rng(0)
            self.model.set_weights([5 * rng.normal(size=w.shape) for w in self.model.get_weights()])


@pytest.mark.large
def test_sgd_schedule_resume_and_the_best_score(tmp_path):
    """The paper's schedule (the rate constant for `lr_decay_after` epochs, then times
    `lr_decay` every epoch) across a resumed run, whose second epoch is wrecked: its
    weights must not replace epoch 1's as the best, though the resumed process never
    saw epoch 1's score."""
    config = tiny_config(
        tmp_path, epochs=2, lr_decay=0.5, lr_decay_after=1, num_layers=1, batch_size=8
    )
    with pytest.raises(KeyboardInterrupt):
        language_model.train(config, callbacks=[_Interrupt()])
    interrupted = json.load(open(tmp_path / "run" / "backup" / "epochs.json"))["rows"]
    results = language_model.train(config, callbacks=[_Scramble()])  # the same command again
    rows = results["epochs"]
    assert [row["epoch"] for row in rows] == [1, 2] and rows[0] == tidy(interrupted[0])
    assert [row["learning_rate"] for row in rows] == pytest.approx([1.0, 0.5])
    assert rows[1]["valid_perplexity"] > rows[0]["valid_perplexity"]
    # the evaluation reads best.keras: epoch 1's weights give epoch 1's perplexity
    assert results["valid"]["perplexity"] == pytest.approx(rows[0]["valid_perplexity"], rel=1e-5)
    assert results["train_seconds"] == pytest.approx(sum(row["train_seconds"] for row in rows))
    assert not (tmp_path / "run" / "backup").exists()


def test_char_level_train_then_evaluate_reports_bits_per_character(tmp_path, capsys):
    files = write_corpus(str(tmp_path), lines_per_split=(40, 6, 6))
    out = tmp_path / "run"
    code, stdout, _ = _cli(
        capsys, "train", "--output-dir", out,
        *(a for split in files for a in (f"--{split}-file", files[split])),
        "--level", "char", "--units", "8", "--num-layers", "1", "--batch-size", "4",
        "--steps", "10", "--epochs", "2", "--verbose", "0",
    )  # fmt: skip
    assert code == 0
    trained = json.loads(stdout)  # stdout holds the result alone (logs go to stderr)
    train_lines = open(files["train"]).read().splitlines()
    os.remove(files["train"])  # evaluate reads the split it scores, not the training text
    code, stdout, _ = _cli(capsys, "evaluate", "--output-dir", out, "--split", "test")
    assert code == 0
    assert set(json.loads(stdout)) == {"test"}
    result = json.loads(stdout)["test"]
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
    stream_tokens = sum(len(line) + 1 for line in train_lines)
    assert trained["tokens_per_second"] == pytest.approx(
        stream_tokens * len(rows) / trained["train_seconds"]
    )
    # a character LM has no word embedding to export: one line naming the level
    code, _, err = _cli(capsys, "export-embeddings", out, tmp_path / "x.vec")
    assert code == 2 and "needs a word-level language model" in err and "char-level" in err
    assert not (tmp_path / "x.vec").exists()


@pytest.mark.large
def test_mirrored_strategy_trains_per_sentence_batches(tmp_path):
    files = write_corpus(str(tmp_path), lines_per_split=(64, 8, 8))
    # --strategy mirrored needs a fresh process: it splits the CPU in two devices
    # before TensorFlow initialises them.
    run = subprocess.run(
        [
            sys.executable, "-m", "recipes.language_model", "train",
            "--output-dir", str(tmp_path / "run"),
            *(a for split in files for a in (f"--{split}-file", files[split])),
            "--batching", "sentences", "--strategy", "mirrored", "--units", "8",
            "--num-layers", "1", "--batch-size", "8", "--epochs", "2", "--optimizer", "adam",
            "--learning-rate", "0.05", "--loss-reduction", "mean", "--verbose", "0",
        ],
        env=ENV, cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout)  # stdout holds the result alone
    assert results["replicas"] == 2
    # Both replicas' gradients reached the weights: better than uniform guessing.
    assert results["test"]["perplexity"] < results["vocabulary_size"] / 2
