"""What a user can break in a run folder: each damage ends the commands that read the
run (predict, evaluate, export) in one line naming the file and what is wrong (exit
status 2), never a traceback. A run folder is a preset: preset.json names best.keras (a
.keras zip archive, its members checksummed, holding the task and its preprocessor's
vocabularies), config.json holds the options it was trained with; the vocabulary files
beside them are for people and are never read. deploy.json the same for the exported
folder's client."""

import json
import os
import shutil

import pytest

from kerasrnn.export import client
from recipes import classifier, tagger
from tests.conftest import CLASSIFIER_LABELS, CLASSIFIER_TEXTS, main_json


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _write(text):
    return lambda path: path.write_text(text)


def _flip_middle_byte(path):
    """One byte of the archive changed, in the middle (inside a member's data): its
    CRC-32 no longer matches."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _json_edit(change):
    def edit(path):
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))

    return edit


def _an_old_run(path):
    """The run as kerasrnn 0.1.0 left it: no preset.json, a manifest.json instead."""
    os.remove(path)
    (path.parent / "manifest.json").write_text('{"files": {}}')


def _another_tasks_preset(path):
    """preset.json of a tagger run in a classifier run's folder."""
    data = json.loads(path.read_text())
    data["task"] = data["task"].replace("TextClassifier", "SequenceTagger")
    path.write_text(json.dumps(data))


CASES = [
    (
        "classifier",
        "preset.json",
        _an_old_run,
        "has no preset.json: it is a run folder written by kerasrnn 0.1.0",
    ),
    ("classifier", "preset.json", _truncate, "preset.json is damaged ("),
    (
        "classifier",
        "preset.json",
        _write("[]"),
        "preset.json is damaged: it lacks ['task', 'file']",
    ),
    (
        "classifier",
        "preset.json",
        _json_edit(lambda p: p.update(file="gone.keras")),
        "preset.json names gone.keras, which is missing",
    ),
    (
        "classifier",
        "preset.json",
        _json_edit(lambda p: p.update(format=99)),
        "preset format is newer than this kerasrnn",
    ),
    ("classifier", "preset.json", _another_tasks_preset, "holds a SequenceTagger, not a"),
    ("classifier", "preset.json", _json_edit(lambda p: p.update(format="1")), "is damaged"),
    ("classifier", "best.keras", _truncate, "best.keras is damaged"),
    ("classifier", "best.keras", _flip_middle_byte, "best.keras is damaged"),
    ("classifier", "best.keras", _write(""), "best.keras is damaged"),
    ("classifier", "best.keras", os.remove, "preset.json names best.keras, which is missing"),
    ("classifier", "config.json", _truncate, "config.json is damaged: not valid JSON"),
    ("classifier", "config.json", _write("[1, 2]"), "config.json is damaged: a JSON list"),
    (
        "classifier",
        "config.json",
        _json_edit(lambda c: c.update(units="many")),
        "config.json is damaged: option 'units' must be of type int",
    ),
    (
        "classifier",
        "config.json",
        _json_edit(lambda c: c.update(cell="transformer")),
        "config.json is damaged: `cell` must be one of",
    ),
    (
        "classifier",
        "config.json",
        _json_edit(lambda c: c.update(unitz=3)),
        "config.json is damaged or from another version: unknown option 'unitz'",
    ),
    ("classifier", "config.json", os.remove, "config.json (did `train` run"),
    ("tagger", "best.keras", _truncate, "best.keras is damaged"),
    ("tagger", "preset.json", _write("{"), "preset.json is damaged ("),
]


@pytest.fixture
def runs(tiny_classifier, tiny_tagger):
    return {"classifier": tiny_classifier, "tagger": tiny_tagger}


def _copy(run, tmp_path):
    """A copy of a shared session run (the tests damage the copy, never the run)."""
    return shutil.copytree(run, tmp_path / "run", ignore=shutil.ignore_patterns(".lock"))


def _test_file(recipe, tmp_path):
    path = tmp_path / ("test.tsv" if recipe == "classifier" else "test.conll")
    path.write_text("pos\tgood film\n" if recipe == "classifier" else "Peter B-PER\nflew O\n\n")
    return path


@pytest.mark.parametrize("recipe, name, damage, expected", CASES)
def test_a_damaged_run_file_is_one_line_for_every_reading_command(
    runs, tmp_path, capsys, recipe, name, damage, expected
):
    run = _copy(runs[recipe], tmp_path)
    damage(run / name)
    module = {"classifier": classifier, "tagger": tagger}[recipe]
    flags = ["--output-dir", str(run), "--verbose", "0"]
    commands = [
        ["predict", "good film", *flags],
        ["evaluate", "--test", str(_test_file(recipe, tmp_path)), *flags],
        ["export", "--export-dir", str(tmp_path / "export"), *flags],
    ]
    capsys.readouterr()
    for command in commands:
        assert module.main(command) == 2, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert err.startswith(f"recipes.{recipe} {command[0]}: error: "), err
        assert expected in err and str(run) in err, err
    assert not (tmp_path / "export").exists()


def test_the_vocabulary_files_beside_the_preset_are_never_read(runs, tmp_path):
    """The vocabularies travel inside best.keras: a run whose vocab.txt, chars.txt and
    tags.txt are gone (or rewritten) predicts exactly as before."""
    intact = runs["tagger"]
    flags = ["--output-dir", str(intact)]
    text = "Peter Blackburn flew to Brussels ."
    before = main_json(tagger, "predict", *flags, text)
    run = _copy(intact, tmp_path)
    for name in ("vocab.txt", "chars.txt", "tags.txt"):
        assert (run / name).exists(), name
    os.remove(run / "vocab.txt")
    (run / "tags.txt").write_text("NOUN\nVERB\n")
    (run / "chars.txt").write_bytes(b"\xff\xfe")
    assert main_json(tagger, "predict", "--output-dir", str(run), text) == before


def _training_file(tmp_path, texts, labels):
    path = tmp_path / "train.tsv"
    path.write_text("".join(f"{label}\t{text}\n" for text, label in zip(texts, labels)))
    return path


@pytest.mark.parametrize(
    "name, damage, expected",
    [
        ("history.json", _truncate, "history.json is damaged (JSONDecodeError("),
        ("history.json", _write("{}"), "history.json is damaged (KeyError('rows'))"),
        ("results.json", _write("[]"), "results.json is damaged: a JSON list"),
    ],
)
def test_a_damaged_results_or_history_file_stops_continue(
    tiny_classifier, tmp_path, capsys, name, damage, expected
):
    run = _copy(tiny_classifier, tmp_path)
    damage(run / name)
    # the shared run's own examples (it was trained on them, not on a file): the same
    # vocabulary, so its last epoch loads and the damaged file is what stops it
    data = _training_file(tmp_path, CLASSIFIER_TEXTS, CLASSIFIER_LABELS)
    capsys.readouterr()
    argv = ["train", "--continue", "--output-dir", str(run), "--epochs", "2"]
    argv += ["--train", str(data), "--valid-fraction", "0", "--verbose", "0"]
    assert classifier.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err, err


def test_continue_on_other_data_is_one_line(tiny_classifier, tmp_path, capsys):
    """Other training texts build another vocabulary, which the run's last epoch does
    not fit."""
    run = _copy(tiny_classifier, tmp_path)
    data = _training_file(tmp_path, ["an entirely new text", "other words"], ["pos", "neg"])
    capsys.readouterr()
    argv = ["train", "--continue", "--output-dir", str(run), "--epochs", "2"]
    assert classifier.main([*argv, "--train", str(data), "--valid-fraction", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "last.weights.h5 does not fit the model that this config and data build" in err


DEPLOY = {
    "task": "classifier",
    "lowercase": True,
    "labels": ["neg", "pos"],
    "vocabularies": {"words": ["[PAD]", "[UNK]", "[START]", "[END]", "good"]},
    "models": {
        "model": {"file": "model.onnx", "inputs": ["ids"], "shapes": [[1, None]], "outputs": 1}
    },
}


@pytest.mark.parametrize(
    "text, expected",
    [
        (json.dumps(DEPLOY)[:40], "not valid JSON"),
        ("[]", "a JSON list instead of an object"),
        (json.dumps({**DEPLOY, "task": "poet"}), "'task' must be one of"),
        (
            json.dumps({k: v for k, v in DEPLOY.items() if k != "labels"}),
            "missing key(s) ['labels']",
        ),
        (
            json.dumps({**DEPLOY, "models": {"model": {"file": 3}}}),
            "models['model']['file'] must be a str",
        ),
        (
            json.dumps({**DEPLOY, "vocabularies": {"words": [1]}}),
            "vocabularies['words'] must be a list",
        ),
        (json.dumps({**DEPLOY, "vocabularies": {}}), "missing vocabularies['words']"),
        (json.dumps({**DEPLOY, "labels": "pos"}), "'labels' must be a list of strings"),
    ],
)
def test_a_damaged_deploy_json_is_one_line(tmp_path, capsys, text, expected):
    (tmp_path / "deploy.json").write_text(text)
    assert client.main([str(tmp_path), "good"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "deploy.json is damaged: " + expected in err, err
