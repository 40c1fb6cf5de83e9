"""The release files agree: pyproject.toml's version is CHANGELOG.md's top version
heading (with its date; an "Unreleased" section may stand above it) and CITATION.cff's,
every version heading is dated, LICENSE is the Apache License 2.0 that pyproject
declares, the supported-versions table of README.md and docs/index.md gives pyproject's
lower bounds, and `kerasrnn.__version__` is the installed package's metadata."""

import datetime
import importlib.metadata
import pathlib
import re
import tomllib

import yaml

import kerasrnn

REPO = pathlib.Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_changelog_and_the_citation_carry_the_version_and_its_date():
    headings = re.findall(r"^## (\S+)(.*)$", (REPO / "CHANGELOG.md").read_text(), re.M)
    if headings[0] == ("Unreleased", ""):  # what main has beyond the release, on top
        headings = headings[1:]
    assert headings[0][0] == PROJECT["version"], headings[0]
    dates = []
    for version, rest in headings:
        match = re.fullmatch(r" \((\d{4}-\d\d-\d\d)\)", rest)
        assert match, f"## {version}{rest}: a version heading needs its date, (YYYY-MM-DD)"
        dates.append(datetime.date.fromisoformat(match.group(1)))
    assert dates == sorted(dates, reverse=True)  # newest first
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    assert str(citation["version"]) == PROJECT["version"]
    assert citation["date-released"] == dates[0]
    assert citation["license"] == PROJECT["license"] == "Apache-2.0"


def test_the_license_is_the_apache_license_2_0():
    text = (REPO / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    for clause in ("2. Grant of Copyright License.", "3. Grant of Patent License.",
                   "7. Disclaimer of Warranty.", "END OF TERMS AND CONDITIONS"):  # fmt: skip
        assert clause in text
    assert PROJECT["license-files"] == ["LICENSE"]


def _table(page):
    """``{row name: required}`` of a page's supported-versions table."""
    section = (REPO / page).read_text().split("### Supported versions", 1)[1]
    rows = ("| |" + section.split("\n\n| |", 1)[1]).split("\n\n")[0].splitlines()
    cells = [[c.strip() for c in row.strip("|").split(" | ")] for row in rows[2:]]
    return {name: required for name, _, required in cells}


def test_the_supported_versions_are_pyprojects_lower_bounds():
    table = _table("README.md")
    assert _table("docs/index.md") == table
    required = {re.split(r"[<>=!\[ ]", d, maxsplit=1)[0]: d for d in PROJECT["dependencies"]}
    for extra in ("torch", "deploy", "test"):  # `torch`'s bound, not the test pin
        for d in PROJECT["optional-dependencies"][extra]:
            required.setdefault(re.split(r"[<>=!\[ ]", d, maxsplit=1)[0], d)
    rows = {
        "Python": ">=" + PROJECT["requires-python"].removeprefix(">="),
        "TensorFlow": required["tensorflow"],
        "Keras": required["keras"],
        "keras-hub": required["keras-hub"],
        "JAX": required["jax"],
        "PyTorch": required["torch"],
        "onnxruntime": required["onnxruntime"],
        "LiteRT": required["ai-edge-litert"],
        "tf2onnx": required["tf2onnx"],
    }
    for name, spec in rows.items():
        (shown,) = [v for k, v in table.items() if k.startswith(name)]
        bound = re.search(r"(>=|==)\s*([\d.]+)", spec)
        assert bound, (name, spec)
        expected = (">= " if bound.group(1) == ">=" else "") + bound.group(2)
        assert shown == expected, (name, shown, spec)


def test_the_version_is_the_installed_packages():
    assert kerasrnn.__version__ == importlib.metadata.version("kerasrnn")
