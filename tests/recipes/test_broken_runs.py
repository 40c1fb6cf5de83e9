"""Damaged run files: each ends the commands that read the run in one line naming the
file and what is wrong (exit status 2), never a traceback; deploy.json the same for the
exported folder's client."""

import json
import os
import shutil

import pytest

from kerasrnn.export import client
from recipes import classifier, tagger

TEXTS = ["good film", "bad film", "great fun", "dull plot", "fine acting", "poor script"] * 4
LABELS = ["pos", "neg"] * 12
TINY = ["--embedding-dim", "4", "--units", "4", "--batch-size", "8", "--epochs", "1"]
TINY += ["--verbose", "0", "--bucket-boundaries", "[]", "--patience", "0"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A trained classifier run and a tagger run (tiny, one epoch)."""
    root = tmp_path_factory.mktemp("runs")
    data = root / "d.tsv"
    data.write_text("".join(f"{label}\t{t}\n" for t, label in zip(TEXTS, LABELS)))
    run = root / "classifier"
    args = ["train", "--train", str(data), "--output-dir", str(run), *TINY]
    assert classifier.main(args) == 0
    conll = root / "d.conll"
    conll.write_text("the DET\ndog NOUN\nruns VERB\n\na DET\ncat NOUN\nsleeps VERB\n\n" * 6)
    tagged = root / "tagger"
    args = ["train", "--train", str(conll), "--format", "columns", "--output-dir", str(tagged)]
    assert tagger.main([*args, *TINY, "--char-dim", "0"]) == 0
    return {"classifier": run, "tagger": tagged}


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _write(text):
    return lambda path: path.write_text(text)


def _json_edit(change):
    def edit(path):
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))

    return edit


CASES = [
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
    ("classifier", "vocab.txt", _truncate, "vocab.txt is damaged: truncated since training"),
    ("classifier", "vocab.txt", _write("a\nb\n"), "vocab.txt is damaged"),
    ("classifier", "vocab.txt", os.remove, "vocab.txt is missing"),
    ("classifier", "labels.txt", _write("pos\n"), "labels.txt is damaged"),
    ("classifier", "best.keras", _truncate, "best.keras is damaged: not a complete .keras"),
    ("classifier", "manifest.json", _write("{"), "manifest.json is damaged: not valid JSON"),
    ("tagger", "tags.txt", _truncate, "tags.txt is damaged"),
    ("tagger", "tags.txt", _write(b"\xff\xfe".decode("latin-1")), "tags.txt is damaged"),
    ("tagger", "best.keras", _write(""), "best.keras is damaged"),
]


@pytest.mark.parametrize("recipe, name, damage, expected", CASES)
def test_a_damaged_run_file_is_one_line_for_every_reading_command(
    runs, tmp_path, capsys, recipe, name, damage, expected
):
    run = tmp_path / "run"
    shutil.copytree(runs[recipe], run)
    damage(run / name)
    module = {"classifier": classifier, "tagger": tagger}[recipe]
    data = tmp_path / "test.tsv"
    data.write_text("pos\tgood film\n" if recipe == "classifier" else "the DET\ndog NOUN\n\n")
    common = ["--output-dir", str(run), "--verbose", "0"]
    commands = [
        ["predict", "good film", *common],
        ["evaluate", "--test", str(data), *common]
        + ([] if recipe == "classifier" else ["--format", "columns"]),
        ["export", "--export-dir", str(tmp_path / "export"), *common],
    ]
    capsys.readouterr()
    for command in commands:
        assert module.main(command) == 2, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert str(run) in err and expected in err, err


def test_a_damaged_results_or_history_file_stops_continue(runs, tmp_path, capsys):
    for i, (name, damage, expected) in enumerate(
        (
            ("history.json", _truncate, "history.json is damaged: not valid JSON"),
            ("history.json", _write("{}"), "history.json is damaged: it lacks ['rows']"),
            ("results.json", _write("[]"), "results.json is damaged: a JSON list"),
        )
    ):
        run = tmp_path / str(i) / "run"
        shutil.copytree(runs["classifier"], run)
        damage(run / name)
        capsys.readouterr()
        argv = ["train", "--continue", "--output-dir", str(run), "--epochs", "2", "--verbose", "0"]
        assert classifier.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and expected in err, err


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
