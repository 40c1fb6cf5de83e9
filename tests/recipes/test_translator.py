"""The translator recipe: data errors, its scores, the main job (`demo`), `evaluate`,
`heatmap`, diverse beam search and the mirrored strategy.

The tests that only read a trained run use the session's `tiny_translator` (words ->
characters, beam size 2; tests/conftest.py); the commands that write into a run folder
(evaluate, heatmap) run on a copy of it.

TensorFlow-specific (tf.data, tf.strings, SavedModel): not run on JAX.
"""

import ast
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import main_json

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3")
TEXTS = ["12 march 2014", "", "zzzz qqqq unknownword", "THE 3RD OF MAY 1999 !!"]


def _run(args, cwd=REPO, timeout=300):
    done = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


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


def _load(run):
    """The run's config (as its commands read it) and its trained task."""
    from recipes import common, translator

    config = common.saved_config(translator.OPTIONS, str(run), {})
    return config, translator.RECIPE.load(config)


@pytest.fixture(scope="module")
def run_copy(tiny_translator, tmp_path_factory):
    """A copy of the session's tiny translator run, for the commands that write into
    their run folder (heatmaps, evaluation.json)."""
    copy = tmp_path_factory.mktemp("translator_copy") / "run"
    shutil.copytree(tiny_translator, copy)
    return copy


# ------------------------------------------------------------------------------ data


def test_line_count_mismatch_names_both_files_and_counts(tmp_path, capsys):
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
    # And the command line reports it as a one-line error, exit status 2.
    target.write_text("a house\n", encoding="utf-8")
    capsys.readouterr()
    args = ["train", "--train", json.dumps([str(source), str(target)])]
    assert translator.main([*args, "--output-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "3 lines" in err and "1 lines" in err
    assert not (tmp_path / "run" / "best.keras").exists()


# ----------------------------------------------------------------------------- model


@pytest.mark.parametrize(
    "options",
    [
        dict(attention="bahdanau", cell="gru"),
        dict(
            attention="luong",
            luong_score="concat",
            input_feeding=False,
            attention_layer_size=5,
            cell="lstm",
            num_layers=2,
        ),
    ],
    ids=["bahdanau", "luong"],
)
def test_attention_and_cell_options_build_the_decoder(options):
    """``--attention bahdanau`` (additive, W_a of `attention_units`, attending before
    the cell runs: s_{i-1}) or ``luong`` (its score, after the cell, input feeding as
    set, an attentional vector of `attention_layer_size`), each over `cell`."""
    import kerasrnn
    from kerasrnn.data import Vocabulary
    from kerasrnn.data.text import TextSide
    from kerasrnn.seq2seq import Seq2SeqPreprocessor
    from recipes import translator

    config = _small_config(**options)
    sides = [TextSide(Vocabulary(list("abcdefgh"))), TextSide(Vocabulary(list("ABCDEFGHIJ")))]
    task = translator.build_model(config, Seq2SeqPreprocessor(*sides))
    cell = task.backbone.decoder.cell
    kind = {"gru": kerasrnn.GRUCell, "lstm": kerasrnn.LSTMCell}[options["cell"]]
    assert type(cell.cell) is kind and cell.cell.units == 7
    encoder = task.backbone.encoder.get_config()
    assert encoder["num_layers"] == options.get("num_layers", 1) and encoder["bidirectional"]
    if options["attention"] == "bahdanau":
        assert type(cell.attention) is kerasrnn.BahdanauAttention
        assert cell.attention.get_config()["units"] == 4
        assert type(cell.step_order) is kerasrnn.AttendThenRun
        width = 7 + 2 * 6  # the readout reads [s_i; c_i], c_i of the two encoder directions
    else:
        assert type(cell.attention) is kerasrnn.LuongAttention
        assert cell.attention.get_config()["score"] == "concat"
        assert type(cell.step_order) is kerasrnn.RunThenAttend
        assert cell.step_order.get_config()["input_feeding"] is False
        assert cell.projection.get_config()["units"] == 5
        width = 5
    assert tuple(task.backbone.readout.kernel.shape) == (width, 14)  # 10 letters + 4
    # it decodes: each generated token's attention is a distribution over the source
    result = task.generate(np.array([[4, 5, 6, 0]], "int32"), "greedy", max_length=3)
    alignments = np.asarray(result.alignments)[0, 0, : int(np.asarray(result.lengths)[0, 0])]
    np.testing.assert_allclose(alignments.sum(-1), 1.0, atol=1e-5)
    assert (alignments[:, 3] == 0).all()  # never on the padding


# -------------------------------------------------------------------- the main job


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """The main job's command on a reduced budget (a tiny model, one epoch, greedy
    search: beam search is scored on the session's run), with linear scheduled
    sampling."""
    out = tmp_path_factory.mktemp("demo")
    summary = _main(
        "demo", "--examples", "200", "--test-examples", "16", "--epochs", "1",
        "--heatmaps", "1", "--beam-size", "1", "--embedding-dim", "8",
        "--encoder-units", "8", "--decoder-units", "16", "--attention-units", "8",
        "--scheduled-sampling", "linear", "--sampling-probability", "0.5",
        "--sampling-steps", "4", "--verbose", "0", "--output-dir", str(out),
    )  # fmt: skip
    return out, summary


@pytest.mark.large
def test_main_job_on_a_reduced_budget(demo_run):
    import math

    out, summary = demo_run
    assert set(summary["exact_match"]) == set(summary["bleu"]) == {"greedy"}
    assert all(0.0 <= v <= 1.0 for v in summary["exact_match"].values())
    assert all(0.0 <= v <= 100.0 for v in summary["bleu"].values())
    assert len(summary["heatmaps"]) == 1
    with open(summary["heatmaps"][0], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert summary["saved_model"] == os.path.join(out, "saved_model")
    assert os.path.exists(os.path.join(summary["saved_model"], "saved_model.pb"))
    for name in ("best.keras", "preset.json", "source_vocab.txt", "target_vocab.txt"):
        assert os.path.exists(os.path.join(out, name)), name
    with open(os.path.join(out, "demo.json")) as f:
        assert json.load(f)["exact_match"] == summary["exact_match"]
    assert not os.path.exists(os.path.join(out, "backup"))  # training completed
    # scheduled sampling's p = 0.5 min(1, step / 4) at the end of the one epoch
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    steps = math.ceil(results["train_pairs_used"] / 64)  # the demo's batch size
    assert results["history"]["sampling_probability"] == pytest.approx([0.5 * min(1, steps / 4)])


@pytest.mark.large
def test_saved_model_cli_runs_the_signature(demo_run):
    """The demo's SavedModel in TensorFlow's own command-line tool (a fresh process)."""
    out, summary = demo_run
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    stdout = _run(
        [
            cli, "run", "--dir", summary["saved_model"], "--tag_set", "serve",
            "--signature_def", "translate", "--input_exprs", 'text=["1 may 2000", ""]',
        ]
    )  # fmt: skip
    # "Result for output key translation:\n[b'...' b'']": the strings it printed are the
    # recipe's own translations (its `translate` command)
    printed = stdout.split("Result for output key translation:")[1].split("Result for")[0]
    served = [ast.literal_eval(s).decode() for s in re.findall(r"b'(?:[^'\\]|\\.)*'", printed)]
    rows = _main("translate", "--output-dir", str(out), "1 may 2000", "")
    assert served == [row["translation"] for row in rows]
    assert served[0] and served[1] == ""


# --------------------------------------------------------- commands on a trained run


@pytest.mark.large
def test_cli_evaluate_writes_scores_and_heatmaps(run_copy, tmp_path):
    import sacrebleu

    from kerasrnn.tasks import date_translation_task

    sources, targets = date_translation_task(5, seed=99)
    (tmp_path / "test.src").write_text("\n".join(sources) + "\n", encoding="utf-8")
    (tmp_path / "test.tgt").write_text("\n".join(targets) + "\n", encoding="utf-8")
    test = json.dumps([str(tmp_path / "test.src"), str(tmp_path / "test.tgt")])
    result = _main("evaluate", "--output-dir", str(run_copy), "--heatmaps", "1", "--test", test)
    assert result["examples"] == 5 and result["cased"] is False
    assert {"greedy", "beam2"} <= set(result)
    assert len(result["heatmaps"]) == 1 and os.path.exists(result["heatmaps"][0])
    with open(os.path.join(run_copy, "evaluation.json")) as f:
        assert json.load(f)["greedy"] == result["greedy"]
    # each score is sacreBLEU's (and the exact match) of its translations, whose 5
    # samples are all of them
    for name in ("greedy", "beam2"):
        scores = result[name]
        assert [s["source"] for s in scores["samples"]] == sources
        assert [s["reference"] for s in scores["samples"]] == targets  # lower-case dates
        translations = [s["translation"] for s in scores["samples"]]
        assert scores["bleu"] == pytest.approx(
            sacrebleu.corpus_bleu(translations, [targets]).score, abs=1e-6
        )
        exact = np.mean([t == r for t, r in zip(translations, targets)])
        assert scores["exact_match"] == pytest.approx(exact)
        assert scores["sentences_per_second"] > 0


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def test_cli_heatmap_of_a_blank_sentence_is_one_line(tiny_translator, capsys):
    from recipes import translator

    assert translator.main(["heatmap", "--output-dir", str(tiny_translator), "a", " "]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "heatmap needs sentences, none blank" in err


@pytest.mark.large
def test_cli_heatmap_draws_the_alignments_beam_search_returned(run_copy, tmp_path):
    from kerasrnn.data.text import tokenize_texts
    from kerasrnn.visualize import plot_alignments
    from recipes import translator

    # each at least max_source_length (6) tokens, the last cut to them: one source
    # shape, one compiled search
    chosen = ["on the 12th of march , 2014", "SUNDAY, JANUARY 15TH, 2006"]
    (tmp_path / "more.txt").write_text("the 3rd of may 1999 !!\n", encoding="utf-8")
    more = ["--input", str(tmp_path / "more.txt")]
    rows = _main("heatmap", "--output-dir", str(run_copy), *chosen, *more)
    texts = chosen + ["the 3rd of may 1999 !!"]
    assert [row["text"] for row in rows] == texts
    assert len({row["heatmap"] for row in rows}) == len(texts)
    config, task = _load(run_copy)
    strategy = translator.search_strategy(config)
    target = task.preprocessor.target.vocabulary.tokens
    for row in rows:
        assert os.path.dirname(row["heatmap"]) == str(run_copy)
        # What beam search itself returned for this sentence (not a teacher-forced
        # rerun): the best hypothesis' alignments up to its length, one column per
        # source token read (at most max_source_length of them).
        src = tokenize_texts([row["text"]], "word", lowercase=True)[0][: task.max_source_length]
        ids = np.array([task.preprocessor.source.vocabulary.encode(src)], "int32")
        result = task.generate(ids, strategy)
        length = int(np.asarray(result.lengths)[0, 0])
        tokens = np.asarray(result.tokens)[0, 0, :length]
        drawn = plot_alignments(*task.attention(row["text"], strategy), path=tmp_path / "a.png")
        np.testing.assert_allclose(
            np.asarray(drawn.images[0].get_array()),
            np.asarray(result.alignments)[0, 0, :length, : len(src)],
            atol=1e-6,
        )
        # Its rows are the beam output's tokens, which spell the translation (the run's
        # beam search output, as `translate` gives it).
        assert [t.get_text() for t in drawn.get_yticklabels()] == [target[i] for i in tokens]
        assert [t.get_text() for t in drawn.get_xticklabels()] == src
        spelled = task.preprocessor.target.decode_graph(tokens[None]).numpy()[0]
        assert spelled.decode() == row["translation"]
        # The command's PNG is that figure: plot_alignments' 1.5 + 0.35 inches a
        # source token by 1 + 0.3 inches an output token, at 100 dpi.
        assert _png_size(row["heatmap"]) == pytest.approx(
            (150 + 35 * len(src), 100 + 30 * length), abs=1
        )
    # No sentence is a one-line error.
    assert translator.main(["heatmap", "--output-dir", str(run_copy)]) == 2


@pytest.mark.large
def test_diverse_beam_search_and_n_best_through_the_recipe(tiny_translator):
    """``translate --beam-groups 2`` is the library's `DiverseBeamSearch` with the run's
    length normalisation and ``--n-best`` hypotheses; a beam that the groups cannot
    split is refused in one line."""
    from kerasrnn import decoding
    from recipes import translator

    out = str(tiny_translator)
    flags = ["--beam-size", "4", "--beam-groups", "2", "--beam-diversity", "2.0"]
    rows = _main("translate", "--output-dir", out, *flags, "--n-best", "4", *TEXTS)
    config, task = _load(out)
    search = decoding.DiverseBeamSearch(
        4, 2, 2.0, n_best=4, scorer=decoding.Scorer(config["length_normalization"])
    )
    expected = task.generate(TEXTS, search, return_scores=True)
    got = [row["hypotheses"] for row in rows]
    assert [[h["translation"] for h in row] for row in got] == [
        [h["text"] for h in row] for row in expected
    ]
    assert [h["score"] for row in got for h in row] == pytest.approx(
        [h["score"] for row in expected for h in row], abs=1e-6
    )
    assert [len(row) for row in got] == [4] * len(TEXTS)
    args = ["translate", "--output-dir", out, "--beam-size", "3", "--beam-groups", "2", "a"]
    assert translator.main(args) == 2


@pytest.mark.large
def test_mirrored_strategy_logs_the_single_device_loss(tmp_path):
    """Under `--strategy mirrored` (two CPU replicas, a fresh process) the loss Keras logs
    is the single-device loss: the replicas' losses are divided by their count, as Keras'
    own losses are (without that it was logged, and optimised, at twice its value).
    With a learning rate of 1e-12 (the CLI refuses 0) the run keeps, to far below the
    tolerance, its initial weights: its best.keras scored on one device, on the same
    batches, gives the loss it should have logged."""
    from recipes import common, translator

    files = _date_corpus(tmp_path, {"train": (64, 1), "valid": (32, 2)})
    flags = [
        *_split_flags(files),
        *("--learning-rate", "1e-12", "--epochs", "1", "--batch-size", "16"),
        *("--embedding-dim", "8", "--encoder-units", "8", "--decoder-units", "16"),
        *("--attention-units", "8", "--dropout", "0", "--bucket-boundaries", "[]"),
        *("--heatmaps", "0", "--verbose", "0"),
    ]
    run = ["--output-dir", str(tmp_path / "run"), "--strategy", "mirrored"]
    mirrored = json.loads(_run([sys.executable, "-m", "recipes.translator", "train", *run, *flags]))
    assert mirrored["replicas"] == 2
    config = common.saved_config(translator.OPTIONS, str(tmp_path / "run"), {})
    task = translator.RECIPE.load(config)  # compiled as it was trained
    scratch = dict(config, output_dir=str(tmp_path / "scratch"))
    os.makedirs(scratch["output_dir"])
    prepared = translator.RECIPE.prepare(scratch, translator.RECIPE.load_splits(config))
    for key, data in (("loss", prepared.train), ("val_loss", prepared.valid)):
        single = task.evaluate(data, verbose=0, return_dict=True)["loss"]
        # Replicas average their own halves of a batch, hence not exactly equal.
        assert mirrored["history"][key][0] == pytest.approx(single, rel=0.05), key
