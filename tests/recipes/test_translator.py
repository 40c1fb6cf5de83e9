"""The translator recipe: loss, data errors, the main job, the CLI and the SavedModel.

TensorFlow-specific (tf.data, tf.strings, SavedModel): not run on JAX.
"""

import ast
import gzip
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import main_json

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3")


def _run(args, cwd=REPO, timeout=300):
    done = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _cli(*args):
    return _run([sys.executable, "-m", "recipes.translator", *args])


def _main(*args):
    """The command line in this process (no interpreter start-up): its JSON output."""
    from recipes import translator

    return main_json(translator, *args)


def _date_corpus(folder, splits):
    """Generated date pairs written as parallel files: {split: [source, target]} for
    `splits` = {split: (count, seed)}."""
    from kerasrnn.tasks import date_translation_task

    files = {}
    for split, (count, seed) in splits.items():
        sources, targets = date_translation_task(count, seed=seed)
        files[split] = [str(folder / f"{split}.src"), str(folder / f"{split}.tgt")]
        for path, lines in zip(files[split], (sources, targets)):
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
    return files


def _split_flags(files):
    """`--train '[src, tgt]' --valid ...` for `_date_corpus`'s files."""
    return [a for split in files for a in (f"--{split}", json.dumps(files[split]))]


def _small_config(**overrides):
    from recipes import common, translator

    return common.load_config(
        translator.DEFAULTS,
        overrides=dict(
            dict(embedding_dim=5, encoder_units=6, decoder_units=7, attention_units=4, dropout=0.0),
            **overrides,
        ),
    )


# --------------------------------------------------------------------------- the loss


@pytest.mark.parametrize(
    "attention,cell,smoothing",
    [
        ("bahdanau", "gru", 0.0),
        ("luong", "lstm", 0.1),
    ],
)
def test_teacher_forced_loss_equals_feeding_gold_tokens_step_by_step(attention, cell, smoothing):
    import keras
    from keras import ops

    from kerasrnn.data import Vocabulary
    from kerasrnn.losses import SequenceCrossEntropy
    from recipes import translator

    config = _small_config(attention=attention, cell=cell, num_layers=2, label_smoothing=smoothing)
    source_vocab = Vocabulary([*Vocabulary([]).tokens, *"abcdefgh"])
    target_vocab = Vocabulary([*Vocabulary([]).tokens, *"ABCDEFGHIJ"])
    model = translator.build_model(config, len(source_vocab), len(target_vocab))
    # Seq2Seq's fresh logits are nearly uniform; a larger readout makes them tell
    # tokens apart (the check at the end needs that).
    model.readout.kernel.assign(model.readout.kernel * 100.0)
    rng = np.random.default_rng(0)
    source = rng.integers(4, len(source_vocab), (3, 6)).astype("int32")
    source[0, 4:] = 0  # padded sources
    source[2, 2:] = 0
    gold = rng.integers(4, len(target_vocab), (3, 5)).astype("int32")
    target_in = np.concatenate([np.full((3, 1), 2, "int32"), gold], axis=1)
    target_out = np.concatenate([gold, np.zeros((3, 1), "int32")], axis=1)
    target_out[np.arange(3), [5, 3, 1]] = 3  # [END] at different lengths
    target_out[1, 4:] = 0
    target_out[2, 2:] = 0
    target_in[1, 4:] = 0
    target_in[2, 2:] = 0
    loss_fn = SequenceCrossEntropy(label_smoothing=smoothing)
    logits = model({"source": source, "target_in": target_in}, training=False)
    teacher_forced = float(loss_fn(target_out, logits))

    # The decoder run one step at a time on the gold previous tokens, as decoding does.
    # (Seq2Seq.step_fn also sets the [PAD] logit to -1e9 for decoding; the readout's
    # own logits are what the loss sees.)
    encoded = model.encode(source)
    states = encoded.states
    total, count = 0.0, 0
    for t in range(target_in.shape[1]):
        y = model.target_embedding(ops.convert_to_tensor(target_in[:, t]))
        output, states, _ = model.backbone.decoder.step(y, states, encoded.memory)
        step_logits = model.readout(output)
        log_p = ops.convert_to_numpy(ops.log_softmax(step_logits, axis=-1))
        for b in range(3):
            if target_out[b, t]:
                nll = -log_p[b, target_out[b, t]]
                total += (1 - smoothing) * nll - smoothing * log_p[b].mean()
                count += 1
    assert teacher_forced == pytest.approx(total / count, rel=1e-5)
    # And the loss is not blind to the gold tokens.
    wrong = np.where(target_out > 3, 4 + (target_out - 3) % 10, target_out)
    assert float(loss_fn(wrong, logits)) != pytest.approx(teacher_forced, rel=1e-4)
    keras.backend.clear_session()


# ------------------------------------------------------------------ scheduled sampling


def test_scheduled_sampling_schedules():
    from kerasrnn.seq2seq import sampling_probability

    def p(step, schedule, steps=100):
        return float(sampling_probability(step, schedule, 0.4, steps))

    assert [p(i, "off") for i in (0, 50, 10**6)] == [0.0, 0.0, 0.0]
    assert [p(i, "constant") for i in (0, 50, 10**6)] == pytest.approx([0.4] * 3)
    assert [p(i, "linear") for i in (0, 25, 100, 400)] == pytest.approx([0.0, 0.1, 0.4, 0.4])
    # Bengio et al.'s inverse sigmoid eps_i = k / (k + exp(i / k)), k ln k = S = 100.
    low, high = 1.0, 100.0  # k ln k = 100, by bisection
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if mid * math.log(mid) < 100 else (low, mid)
    k = low
    assert k == pytest.approx(29.5366, rel=1e-5)
    for i in (0, 30, 100, 250, 1000):
        assert p(i, "inverse_sigmoid") == pytest.approx(
            0.4 * (1 - k / (k + math.exp(i / k))), rel=1e-4, abs=1e-7
        )
    assert p(100, "inverse_sigmoid") == pytest.approx(0.2, rel=1e-4)


def _sampling_batch():
    rng = np.random.default_rng(1)
    source = rng.integers(4, 12, (4, 5)).astype("int32")
    source[1, 3:] = 0
    gold = rng.integers(4, 14, (4, 6)).astype("int32")
    target_in = np.concatenate([np.full((4, 1), 2, "int32"), gold[:, :-1]], axis=1)
    target_out = gold.copy()
    target_out[2, 3], target_out[2, 4:] = 3, 0  # a shorter sentence: [END], [PAD]
    target_in[2, 4:] = 0
    return {"source": source, "target_in": target_in}, target_out


def test_scheduled_sampling_p0_is_teacher_forcing_p1_feeds_own_predictions():
    """The translator trains kerasrnn.seq2seq.Seq2Seq's step-wise scheduled sampling
    (the recipe's former two-pass approximation is gone; tests/seq2seq checks the
    sampler against a NumPy reference): p = 0 is teacher forcing, p = 1 (argmax) feeds
    the model its own previous predictions, and the training loss is the loss of the
    tokens actually fed."""
    import keras
    from keras import ops

    from kerasrnn.losses import SequenceCrossEntropy
    from recipes import translator

    config = _small_config(scheduled_sampling="constant", sampling_mode="argmax")
    x, y = _sampling_batch()
    model = translator.build_model(config, 12, 14)
    loss_fn = SequenceCrossEntropy()

    def train_loss(probability):
        model.scheduled_sampling.max_probability = probability
        # Learning rate 0: the weights stay the same. Eager: tracing the step-wise
        # pass would cost more than running it once.
        model.compile(optimizer=keras.optimizers.SGD(0.0), loss=loss_fn, run_eagerly=True)
        return model.train_on_batch(x, y, return_dict=True)["loss"]

    logits = model(x, training=False)
    teacher_forced = float(loss_fn(y, logits))
    assert train_loss(0.0) == pytest.approx(teacher_forced, rel=1e-6)

    # p = 1: every input after [START] (except [PAD]) is the previous step's argmax
    # over the non-[PAD] ids, given the tokens fed before it: computed here step by step.
    encoded = model.encode(x["source"])
    states, step = encoded.states, model.step_fn(encoded)
    expected = x["target_in"].copy()
    for t in range(expected.shape[1] - 1):
        step_logits, new_states, _ = step(ops.convert_to_tensor(expected[:, t]), states)
        real = expected[:, t] != 0
        states = [
            np.where(real[:, None], ops.convert_to_numpy(n), ops.convert_to_numpy(o))
            for n, o in zip(new_states, states)
        ]
        own = np.argmax(ops.convert_to_numpy(step_logits)[:, 1:], axis=-1) + 1
        expected[:, t + 1] = np.where(expected[:, t + 1] != 0, own, 0)
    assert (expected != x["target_in"]).any()
    _, fed, _ = model.scheduled_sampling.decode(
        model.backbone, x["source"], x["target_in"], probability=1.0
    )
    np.testing.assert_array_equal(ops.convert_to_numpy(fed), expected)
    own = float(loss_fn(y, model({**x, "target_in": expected}, training=False)))
    assert own != pytest.approx(teacher_forced, rel=1e-4)
    assert train_loss(1.0) == pytest.approx(own, rel=1e-5)
    # 0 < p < 1 replaces a part of them; the loss is that of the tokens fed.
    noise = tuple(np.random.default_rng(7).uniform(size=(2,) + x["target_in"].shape))
    logits_half, half, _ = model.scheduled_sampling.decode(
        model.backbone, x["source"], x["target_in"], 0.5, noise
    )
    half = ops.convert_to_numpy(half)
    real = x["target_in"] != 0
    real[:, 0] = False
    changed = half != x["target_in"]
    assert changed.any() and (half[real] == x["target_in"][real]).any()
    np.testing.assert_allclose(
        float(loss_fn(y, logits_half)),
        float(loss_fn(y, model({**x, "target_in": half}, training=False))),
        rtol=1e-5,
    )
    with pytest.raises(ValueError, match="scheduled_sampling"):
        _small_config(scheduled_sampling="sometimes")


def test_a_run_of_the_previous_layout_says_how_to_retrain(tmp_path):
    """A best.keras of the recipe's former functional TranslatorModel cannot load into
    the Seq2Seq recipe: the error names the file and how to retrain."""
    import zipfile

    from recipes import common, translator

    with zipfile.ZipFile(tmp_path / "best.keras", "w") as archive:
        archive.writestr("metadata.json", json.dumps({"keras_version": "3.15.0"}))
        archive.writestr(
            "config.json",
            json.dumps(
                {
                    "module": None,
                    "class_name": "TranslatorModel",
                    "registered_name": "kerasrnn>TranslatorModel",
                    "config": {
                        "name": "translator",
                        "layers": [],
                        "input_layers": [],
                        "output_layers": [],
                    },
                }
            ),
        )
    with pytest.raises(
        common.RecipeError,
        match=r"best.keras was saved by an earlier "
        r"version of this recipe \(a TranslatorModel\).* retrain it",
    ):
        translator.load_model(_small_config(output_dir=str(tmp_path)))


# ------------------------------------------------------------------------------ data


def test_line_count_mismatch_names_both_files_and_counts(tmp_path):
    from kerasrnn.data.loaders import DataFormatError
    from recipes import common, translator

    source = tmp_path / "train.de.gz"
    with gzip.open(source, "wt", encoding="utf-8") as f:
        f.write("ein Haus\nzwei Häuser\ndrei\n")
    target = tmp_path / "train.en"
    target.write_text("a house\ntwo houses\n", encoding="utf-8")
    config = common.load_config(translator.DEFAULTS)
    with pytest.raises(DataFormatError) as error:
        translator.load_pairs(config, [str(source), str(target)], "train")
    message = str(error.value)
    assert str(source) in message and str(target) in message
    assert "3 lines" in message and "2 lines" in message
    # Gzip is read transparently: equal counts load.
    target.write_text("a house\ntwo houses\nthree\n", encoding="utf-8")
    sources, targets = translator.load_pairs(config, [str(source), str(target)], "train")
    assert sources[1] == "zwei Häuser" and targets == ["a house", "two houses", "three"]
    # And the CLI reports it as a one-line error.
    target.write_text("a house\n", encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "recipes.translator",
            "train",
            "--train",
            json.dumps([str(source), str(target)]),
            "--output-dir",
            str(tmp_path / "run"),
        ],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "3 lines" in done.stderr and "1 lines" in done.stderr


def test_tokenizers_round_trip():
    from kerasrnn.data.text import detokenize_graph, tokenize_texts

    texts = ["A man, in a red hat.", "", "  two  spaces "]
    words = tokenize_texts(texts, "word")
    assert words[0] == ["A", "man", ",", "in", "a", "red", "hat", "."]
    assert words[1] == []
    chars = tokenize_texts(texts, "char", lowercase=True)
    assert chars[2] == list("two▁spaces")
    import tensorflow as tf

    back = detokenize_graph(tf.ragged.constant(words[:1]), "word")
    assert back.numpy()[0].decode() == "A man, in a red hat."
    back = detokenize_graph(tf.ragged.constant(chars[2:]), "char")
    assert back.numpy()[0].decode() == "two spaces"
    pieces = tf.ragged.constant([["A", "man", ",", "play", "##ing", "foot", "##ball", "."]])
    back = detokenize_graph(pieces, "wordpiece")
    assert back.numpy()[0].decode() == "A man, playing football."


def _word_round_trip(texts):
    """detokenize(tokenize(texts)) with the "word" tokeniser, the detokeniser traced
    (it runs inside the SavedModel)."""
    import tensorflow as tf

    from kerasrnn.data.text import detokenize_graph, tokenize_texts

    tokens = tf.ragged.constant(tokenize_texts(texts, "word"), dtype=tf.string)
    detokenize = tf.function(lambda t: detokenize_graph(t, "word"), autograph=False)
    return [t.decode("utf-8") for t in detokenize(tokens).numpy()]


def test_word_tokens_keep_intra_word_hyphens_apostrophes_and_brackets():
    from kerasrnn.data.text import tokenize_texts

    texts = [
        "A man in a red t-shirt holds a man's hat.",
        "A dog (wearing a collar) runs [fast] {here}.",
        "My mother-in-law's 3-year-old O'Neil isn't here.",
        'She says "hello there!" and "bye".',
        "A T\u2019shirt, a Gro\u00df-Stadt and 2-3 \u00e9t\u00e9s.",
    ]
    assert tokenize_texts(texts[:1], "word")[0][5:8] == ["t", "-", "shirt"]
    assert _word_round_trip(texts) == texts
    # Spacing that only the original text knew is normalised, not glued wrongly.
    assert _word_round_trip(["( a ) ,b - c"]) == ["(a), b-c"]


def test_word_tokens_round_trip_on_multi30k(shared_data):
    """sacreBLEU's 13a tokeniser keeps "t-shirt" and "man's" whole: a word-level
    translation must come back in that form or it loses BLEU it earned."""
    import sacrebleu

    with gzip.open(shared_data("multi30k", "train.en.gz"), "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line, _ in zip(f, range(2000))]
    assert len(lines) == 2000
    back = _word_round_trip(lines)
    exact = sum(b == line for b, line in zip(back, lines)) / len(lines)
    assert exact >= 0.99, [(b, line) for b, line in zip(back, lines) if b != line][:5]
    assert sacrebleu.corpus_bleu(back, [lines]).score >= 99.5


@pytest.mark.parametrize(
    "kind,reference,lowered",
    [
        ("word", "A Man's T-Shirt is Red.", "a man's t-shirt is red."),
        # keras-hub's WordPiece case-folds: a lower-cased German target has "ss" for "ß".
        ("wordpiece", "Die Straße ist sehr lang.", "die strasse ist sehr lang."),
    ],
)
def test_lowercase_scores_against_lowercased_references(kind, reference, lowered):
    from recipes import translator

    def scores(lowercase):
        # Only the scoring is under test: a stand-in that "translates" perfectly
        # into the lower-cased target.
        tr = object.__new__(translator.Translator)
        tr.config = _small_config(lowercase=lowercase, target_tokenizer=kind, beam_size=2)
        tr.translate = lambda texts, beam=None: [lowered] * len(texts)
        return tr.evaluate(["x", "y"], [reference, lowered])

    lower = scores(True)
    assert lower["cased"] is False
    assert lower["greedy"]["exact_match"] == lower["beam2"]["exact_match"] == 1.0
    assert lower["greedy"]["bleu"] == pytest.approx(100.0)
    cased = scores(False)
    assert cased["cased"] is True
    assert cased["greedy"]["exact_match"] == 0.5 and cased["greedy"]["bleu"] < 100.0


# ------------------------------------------- the main job, the CLI and the SavedModel


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """The main job's command on a reduced budget (a few training steps)."""
    out = tmp_path_factory.mktemp("demo")
    stdout = _cli(
        "demo",
        "--examples",
        "640",
        "--test-examples",
        "32",
        "--epochs",
        "1",
        "--heatmaps",
        "1",
        "--beam-size",
        "2",
        "--verbose",
        "0",
        "--output-dir",
        str(out),
    )
    return out, json.loads(stdout)


def test_main_job_on_a_reduced_budget(demo_run):
    out, summary = demo_run
    assert set(summary["exact_match"]) == {"greedy", "beam2"}
    assert all(0.0 <= v <= 1.0 for v in summary["exact_match"].values())
    assert all(0.0 <= v <= 100.0 for v in summary["bleu"].values())
    with open(summary["heatmaps"][0], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.exists(os.path.join(summary["saved_model"], "saved_model.pb"))
    for name in ("best.keras", "source_vocab.txt", "target_vocab.txt", "demo.json"):
        assert os.path.exists(os.path.join(out, name)), name
    assert not os.path.exists(os.path.join(out, "backup"))  # training completed


@pytest.fixture(scope="module")
def wordpiece_run(tmp_path_factory):
    """`train` through the command line (in this process) with WordPiece on both sides
    and linear scheduled sampling, on a tiny generated corpus."""
    folder = tmp_path_factory.mktemp("wordpiece")
    files = _date_corpus(folder, {"train": (96, 1), "valid": (16, 2)})
    out = folder / "run"
    results = _main(
        "train",
        *_split_flags(files),
        "--output-dir",
        str(out),
        "--source-tokenizer",
        "wordpiece",
        "--target-tokenizer",
        "wordpiece",
        "--subword-vocab-size",
        "60",
        "--scheduled-sampling",
        "linear",
        "--sampling-probability",
        "0.5",
        "--sampling-steps",
        "4",
        "--epochs",
        "2",
        "--batch-size",
        "16",
        "--embedding-dim",
        "8",
        "--encoder-units",
        "8",
        "--decoder-units",
        "16",
        "--attention-units",
        "8",
        "--bucket-boundaries",
        "[]",
        "--beam-size",
        "2",
        "--max-decode-length",
        "8",
        "--verbose",
        "0",
    )
    return out, results


def test_cli_trains_with_wordpiece_and_scheduled_sampling(wordpiece_run):
    from kerasrnn.data import Vocabulary

    out, results = wordpiece_run
    # 6 steps an epoch: p = 0.5 min(1, step / 4) at the last step of each epoch.
    assert results["history"]["sampling_probability"] == pytest.approx([0.5, 0.5])
    assert results["history"]["loss"][1] < results["history"]["loss"][0]
    for side in ("source", "target"):
        vocab = Vocabulary.load(out / f"{side}_vocab.txt")
        assert vocab.tokens[:4] == ["[PAD]", "[UNK]", "[START]", "[END]"]
        assert len(vocab) <= 60 and any(t.startswith("##") for t in vocab.tokens)
        assert results[f"{side}_vocabulary"] == len(vocab)


TEXTS = ["12 march 2014", "", "zzzz qqqq unknownword", "THE 3RD OF MAY 1999 !!"]

LOAD_WITHOUT_KERASRNN = """
import json, sys
import tensorflow as tf
if sys.argv[3] == "wordpiece":  # WordPiece runs tensorflow-text kernels
    import tensorflow_text  # noqa: F401
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["translate"](text=tf.constant(json.loads(sys.argv[2])))
assert "kerasrnn" not in sys.modules and "recipes" not in sys.modules
print(json.dumps([t.decode("utf-8") for t in out["translation"].numpy()]))
"""


@pytest.mark.parametrize(
    "run,tokenizer",
    [
        ("demo_run", "word"),
        ("wordpiece_run", "wordpiece"),
    ],
)
def test_saved_model_string_round_trip_without_kerasrnn(run, tokenizer, request, tmp_path):
    out, _ = request.getfixturevalue(run)
    exported = _main(
        "export", "--output-dir", str(out), "--export-dir", str(tmp_path / "exported")
    )["saved_model"]
    # A fresh process in a folder where kerasrnn cannot even be imported.
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", LOAD_WITHOUT_KERASRNN, exported, json.dumps(TEXTS), tokenizer],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    served = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(served) == len(TEXTS) and all(isinstance(t, str) for t in served)
    # The same beam search as the recipe's own `translate` command.
    cli = _main("translate", "--output-dir", str(out), *TEXTS)
    assert [row["translation"] for row in cli] == served
    assert [row["text"] for row in cli] == TEXTS


def test_saved_model_cli_runs_the_signature(demo_run):
    out, summary = demo_run
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    stdout = _run(
        [
            cli,
            "run",
            "--dir",
            summary["saved_model"],
            "--tag_set",
            "serve",
            "--signature_def",
            "translate",
            "--input_exprs",
            'text=["1 may 2000", ""]',
        ]
    )
    # "Result for output key translation:\n[b'...' b'']": the strings it printed are the
    # recipe's own translations (its `translate` command) and the signature's in-process
    printed = stdout.split("Result for output key translation:")[1].split("Result for")[0]
    served = [ast.literal_eval(s).decode() for s in re.findall(r"b'(?:[^'\\]|\\.)*'", printed)]
    import tensorflow as tf

    signature = tf.saved_model.load(summary["saved_model"]).signatures["translate"]
    want = signature(text=tf.constant(["1 may 2000", ""]))["translation"].numpy()
    assert served == [t.decode() for t in want]
    assert served[0] == _main("translate", "--output-dir", str(out), "1 may 2000")[0]["translation"]


def test_cli_evaluate_writes_scores_and_heatmaps(demo_run, tmp_path):
    out, _ = demo_run
    from kerasrnn.tasks import date_translation_task

    sources, targets = date_translation_task(6, seed=99)
    (tmp_path / "test.src").write_text("\n".join(sources) + "\n", encoding="utf-8")
    (tmp_path / "test.tgt").write_text("\n".join(targets) + "\n", encoding="utf-8")
    result = json.loads(
        _cli(
            "evaluate",
            "--output-dir",
            str(out),
            "--heatmaps",
            "1",
            "--test",
            json.dumps([str(tmp_path / "test.src"), str(tmp_path / "test.tgt")]),
        )
    )
    assert result["examples"] == 6
    assert {"greedy", "beam2"} <= set(result)
    assert result["greedy"]["sentences_per_second"] > 0
    assert os.path.exists(result["heatmaps"][0])
    assert os.path.exists(os.path.join(out, "evaluation.json"))


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def test_cli_heatmap_draws_the_alignments_beam_search_returned(demo_run, tmp_path):
    from kerasrnn.data.text import TextSide
    from recipes import common, translator

    out, _ = demo_run
    chosen = ["12 march 2014", "SUNDAY, JANUARY 15TH, 2006"]
    (tmp_path / "more.txt").write_text("the 3rd of may 1999 !!\n", encoding="utf-8")
    rows = _main(
        "heatmap", "--output-dir", str(out), *chosen, "--input", str(tmp_path / "more.txt")
    )
    texts = chosen + ["the 3rd of may 1999 !!"]
    assert [row["text"] for row in rows] == texts
    # The translations are the recipe's own beam search output.
    assert [row["translation"] for row in rows] == [
        row["translation"] for row in _main("translate", "--output-dir", str(out), *texts)
    ]
    config = common.saved_config(translator.OPTIONS, str(out), {})
    trained = translator.Translator.from_run(config)
    assert len({row["heatmap"] for row in rows}) == len(texts)
    for row in rows:
        assert os.path.dirname(row["heatmap"]) == str(out)
        # What beam search itself returned for this sentence (not a teacher-forced
        # rerun): the best hypothesis' alignments up to its length, one column per
        # source token.
        src = trained.source.tokenize([row["text"]])[0]
        ids = np.array(trained.source.encode([row["text"]]), "int32")
        import kerasrnn.decoding

        beam = kerasrnn.decoding.BeamSearch(
            config["beam_size"],
            n_best=1,
            scorer=kerasrnn.decoding.Scorer(config["length_normalization"]),
        )
        result = trained.model.generate(ids, beam, max_length=config["max_decode_length"])
        length = int(np.asarray(result.lengths)[0, 0])
        tokens = np.asarray(result.tokens)[0, 0, :length]
        drawn = trained.heatmap(row["text"], tmp_path / "again.png")
        np.testing.assert_allclose(
            np.asarray(drawn.images[0].get_array()),
            np.asarray(result.alignments)[0, 0, :length, : len(src)],
            atol=1e-6,
        )
        # Its rows are the beam output's tokens, which spell the translation.
        assert [t.get_text() for t in drawn.get_yticklabels()] == [
            trained.target.vocabulary.tokens[i] for i in tokens
        ]
        assert [t.get_text() for t in drawn.get_xticklabels()] == src
        assert isinstance(trained.target, TextSide)
        assert trained.target.decode_graph(tokens[None]).numpy()[0].decode() == row["translation"]
        # The command's PNG is that figure: plot_alignments' 1.5 + 0.35 inches a
        # source token by 1 + 0.3 inches an output token, at 100 dpi.
        assert _png_size(row["heatmap"]) == pytest.approx(
            (150 + 35 * len(src), 100 + 30 * length), abs=1
        )
    # No sentence is a one-line error.
    from recipes.translator import main

    assert main(["heatmap", "--output-dir", str(out)]) == 2


def test_mirrored_strategy_logs_the_single_device_loss(tmp_path):
    """Under `--strategy mirrored` (two CPU replicas, a fresh process) the loss Keras logs
    is the single-device loss: the replicas' losses are divided by their count, as Keras'
    own losses are (without that it was logged, and optimised, at twice its value).
    With a learning rate of 1e-12 (the CLI refuses 0) both runs keep, to far below the
    tolerance, their identical initial weights."""
    files = _date_corpus(tmp_path, {"train": (64, 1), "valid": (32, 2)})
    flags = [
        *_split_flags(files),
        "--learning-rate",
        "1e-12",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--embedding-dim",
        "8",
        "--encoder-units",
        "8",
        "--decoder-units",
        "16",
        "--attention-units",
        "8",
        "--dropout",
        "0",
        "--bucket-boundaries",
        "[]",
        "--heatmaps",
        "0",
        "--verbose",
        "0",
    ]
    single = _main("train", "--output-dir", str(tmp_path / "one"), *flags)
    mirrored = json.loads(
        _cli("train", "--output-dir", str(tmp_path / "two"), "--strategy", "mirrored", *flags)
    )
    assert mirrored["replicas"] == 2
    for key in ("loss", "val_loss"):
        # Replicas average their own halves of a batch, hence not exactly equal.
        assert mirrored["history"][key][0] == pytest.approx(single["history"][key][0], rel=0.05)
