"""bench/results/ is the one source of the figures: docs/results.md and the results blocks
of README.md and bench/README.md are its rendering (`python -m bench render`), and a
figure the docs quote through a ``<!-- result:NAME.KEY -->`` marker is its file's."""

import datetime
import json
import os
import pathlib
import re
import shutil

import pytest

from bench import suite

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def test_rendered_files_are_up_to_date():
    for path, text in suite.rendered().items():
        assert path.read_text() == text, (
            f"{path.relative_to(ROOT)} differs from bench/results/: run `python -m bench render`"
        )


def test_every_marked_figure_agrees_with_its_file():
    assert suite.stale_markers() == []


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.stem)
def test_a_results_file_says_what_ran_where_and_when(path):
    record = json.loads(path.read_text())
    assert record["name"] == path.stem
    assert record["task"] and record["command"].strip()
    datetime.date.fromisoformat(record["date"])
    assert re.fullmatch(r"[0-9a-f]{7,40}(-.*)?", record["code_version"])
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", record["version"])  # kerasrnn's, on the page
    assert {"cpu_count", "platform", "device"} <= set(record["machine"])
    assert record["headline"] in record["figures"]
    for entry in [*record["figures"].values(), record.get("baseline"), record.get("published")]:
        if entry is None:
            continue
        assert entry["label"] and isinstance(entry["digits"], int)
        spread = entry.get("spread")
        if spread and "low" in spread:
            assert spread["low"] <= spread["high"]
        if spread and "low" in spread and entry["value"] is not None and entry.get("runs") is None:
            assert spread["low"] <= entry["value"] <= spread["high"], entry
        if entry.get("runs") and spread and spread["kind"] == "min-max":
            assert (min(entry["runs"]), max(entry["runs"])) == (spread["low"], spread["high"])


# Quality runs of hours each, recorded before every results file came from its benchmark
# on a clean tree: transcribed from a recorded run, or written from a tree with changes.
# The results page names the release that measured each. A file leaves this set when
# its benchmark re-runs it; none joins it.
EARLIER_RUNS = {
    "conll2003_ner",
    "diverse_n_best",
    "mr_transfer",
    "ner_lm_vectors",
    "ptb_awd",
    "ptb_small",
    "time_budget_conll2003",
    "time_budget_ptb",
    "time_budget_translation_de_en",
    "translation_de_en",
    "translation_de_en_fusion",
    "translation_de_en_subwords",
}


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.stem)
def test_a_results_file_comes_from_its_benchmark_on_a_clean_tree(path):
    record = json.loads(path.read_text())
    clean = "provenance" not in record and not record["code_version"].endswith("-dirty")
    if path.stem in EARLIER_RUNS:
        assert not clean, f"{path.stem} was re-run: take it out of EARLIER_RUNS"
    else:
        assert clean, f"{path.name}: transcribed or from a changed tree; re-run its benchmark"


def test_the_page_lists_every_task_with_its_command(tmp_path):
    page = (ROOT / "docs" / "results.md").read_text()
    for name, record in suite.load_results().items():
        assert f'<a id="{name}"></a>' in page
        assert (record.get("rerun") or record["command"]).splitlines()[0] in page
        assert suite.value(record["figures"][record["headline"]]) in page


def copy_of_the_docs(tmp_path):
    """README.md, bench/README.md, docs/*.md and bench/results/ copied to `tmp_path`."""
    for relative in ("README.md", "bench/README.md", "docs/results.md"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / relative, tmp_path / relative)
    shutil.copytree(RESULTS, tmp_path / "bench" / "results")
    return tmp_path


def test_a_changed_figure_makes_the_rendering_stale(tmp_path):
    root = copy_of_the_docs(tmp_path)
    assert all(path.read_text() == text for path, text in suite.rendered(root).items())
    path = root / "bench" / "results" / "translation_de_en.json"
    record = json.loads(path.read_text())
    record["figures"]["bleu"]["value"] = 34.99
    path.write_text(json.dumps(record))
    stale = [p.name for p, text in suite.rendered(root).items() if p.read_text() != text]
    assert sorted(stale) == ["README.md", "README.md", "results.md"]


def test_a_figure_in_the_docs_that_disagrees_with_its_file_is_found(tmp_path):
    root = copy_of_the_docs(tmp_path)
    (root / "docs" / "recipes").mkdir()
    page = root / "docs" / "recipes" / "translator.md"
    page.write_text(
        "BLEU <!-- result:translation_de_en.bleu -->**35.20** beam 5, against\n"
        "<!-- result:translation_de_en.baseline -->33.11 for fixed epochs; MR "
        "<!-- result:mr.accuracy -->78.99%.\n"
    )
    assert suite.stale_markers(root) == []
    page.write_text(page.read_text().replace("35.20", "33.7").replace("78.99%", "79.1%"))
    stale = suite.stale_markers(root)
    assert [(s[2], s[3], s[4]) for s in stale] == [
        ("translation_de_en.bleu", "33.7", "35.20"),
        ("mr.accuracy", "79.1", "78.99"),
    ]
    page.write_text("<!-- result:translation_de_en.nope -->35.20 <!-- result:gone.bleu -->1.0\n")
    assert [(s[2], s[4]) for s in suite.stale_markers(root)] == [
        ("translation_de_en.nope", None),
        ("gone.bleu", None),
    ]


def test_write_result_records_the_run(tmp_path, monkeypatch):
    monkeypatch.delenv("KERAS_BACKEND", raising=False)  # the command would name it
    parser = suite.parser("cells", "Doc.\n\nMore.", rounds=3, steps=2, warmup=1)
    args = parser.parse_args(["--rounds", "1", "--results-dir", str(tmp_path)])
    path = suite.write_result(
        args,
        "cells",
        "a task",
        {
            "lstm": suite.figure(
                1.234, "ratio", unit="x", spread={"kind": "IQR", "low": 1.1, "high": 1.3}
            )
        },
        baseline=suite.figure(1.0, "reference", unit="x"),
        command="python -m bench cells --rounds 1",
    )
    record = json.loads(path.read_text())
    assert record["command"] == "python -m bench cells --rounds 1"
    assert record["headline"] == "lstm" and record["machine"]["cpu_count"] >= 1
    assert record["date"] == datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    assert suite.value(record["figures"]["lstm"]) == "1.23x"
    assert suite.spread(record["figures"]["lstm"]) == "IQR 1.10-1.30x"
    args = parser.parse_args(["--no-results"])
    assert suite.write_result(args, "cells", "a task", {"x": suite.figure(1, "x")}) is None
    assert suite.command_line("cells", ["cells", "--only", "lstm", "in keras"]) == (
        "python -m bench cells --only lstm 'in keras'"
    )


def test_the_command_recalls_the_omp_wait_policy_the_run_used(monkeypatch):
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setattr(suite, "_omp_policy", None)
    monkeypatch.setenv("OMP_WAIT_POLICY", "default")
    assert suite.apply_omp_policy() == "default" and "OMP_WAIT_POLICY" not in os.environ
    assert suite.command_line("cells", ["--rounds", "7"]) == (
        "OMP_WAIT_POLICY=default python -m bench cells --rounds 7"
    )
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # the default: not written
    suite.apply_omp_policy()
    assert suite.command_line("cells", ["--rounds", "7"]) == "python -m bench cells --rounds 7"


def test_the_suite_has_one_entry_point_and_at_most_12_modules():
    from bench import __main__ as entry

    modules = {p.stem for p in (ROOT / "bench").glob("*.py")} - {"__init__", "__main__"}
    assert len(modules) <= 12, sorted(modules)
    for name, (module, function, line) in entry.BENCHMARKS.items():
        assert module in modules and line
        source = (ROOT / "bench" / f"{module}.py").read_text()
        assert f"def {function}(argv=None)" in source, (name, module, function)
    assert len((ROOT / "bench" / "README.md").read_text().splitlines()) <= 250


def test_a_table_block_shows_the_table_its_file_keeps(tmp_path):
    root = copy_of_the_docs(tmp_path)
    path = root / "bench" / "results" / "serving.json"
    record = json.loads(path.read_text())
    record["tables"] = {"tagger": "| runtime |\n|---|\n| litert |"}
    path.write_text(json.dumps(record))
    page = root / "docs" / "deploying.md"
    page.write_text(
        "Tagger:\n\n<!-- table:serving.tagger -->\n| old |\n<!-- table:end -->\n\nEnd.\n"
    )
    assert suite.rendered(root)[page] == (
        "Tagger:\n\n<!-- table:serving.tagger -->\n| runtime |\n|---|\n| litert |\n"
        "<!-- table:end -->\n\nEnd.\n"
    )
    page.write_text("<!-- table:serving.nope -->\n<!-- table:end -->\n")
    with pytest.raises(ValueError, match=r"deploying.md: <!-- table:serving.nope --> names no"):
        suite.rendered(root)


def test_the_code_version_is_dirty_for_code_not_for_results(tmp_path, monkeypatch):
    import subprocess

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "cells.json").write_text("{}\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    monkeypatch.setattr(suite, "ROOT", tmp_path)
    clean = suite.code_version()
    assert re.fullmatch(r"[0-9a-f]{7,40}", clean)
    (tmp_path / "bench" / "results" / "cells.json").write_text('{"new": 1}\n')
    assert suite.code_version() == clean  # a results file the session wrote
    (tmp_path / "code.py").write_text("x = 2\n")
    assert suite.code_version() == clean + "-dirty"
