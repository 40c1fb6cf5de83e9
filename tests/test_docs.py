"""Every ```python block in docs/**/*.md and README.md runs here, so no example goes stale.

Each block runs in a fresh namespace, in a temporary working directory. A block followed
by `<!-- output -->` and a ```text block must print exactly that text (trailing spaces
ignored). A block preceded by `<!-- no-run: REASON -->` is skipped with that reason:
only for examples that need a trained run directory or ../shared/data, which the test
suite cannot produce in seconds, or a process started with another backend (the JAX
data-parallel example of docs/distributed.md, which tests/test_edges_distributed.py runs
in a subprocess). A block preceded by `<!-- runs: runs/ner=tiny_tagger ... -->` runs
with a copy of each named session run (tests/conftest.py: a run folder the recipe's
command line trained) at the path its code reads. A block preceded by
`<!-- large: REASON -->` (one that trains for tens of seconds) is marked `large`: it runs
in `make test-large`, not in `make test`.
"""

import contextlib
import io
import linecache
import pathlib
import re
import shutil

import keras
import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]

_FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<info>[^`]*)$")
_NO_RUN = re.compile(r"^<!--\s*no-run:\s*(?P<reason>\S.*?)\s*-->$")
_RUNS = re.compile(r"^<!--\s*runs:\s*(?P<runs>\S.*?)\s*-->$")
_LARGE = re.compile(r"^<!--\s*large:\s*\S.*?\s*-->$")
_OUTPUT = "<!-- output -->"


class Example:
    def __init__(self, path, line, code, skip=None, output=None, runs=None, large=False):
        self.path, self.line, self.code, self.skip, self.output = path, line, code, skip, output
        self.runs, self.large = runs or {}, large

    @property
    def name(self):
        return f"{self.path}:{self.line}"


def _blocks(text):
    """(info, first line number, code, text of the previous non-blank line) per fence."""
    lines = text.splitlines()
    previous, i = "", 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        start, indent, body = i + 1, len(match["indent"]), []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][indent:])
            i += 1
        if i == len(lines):
            raise ValueError(f"line {start}: a ``` fence is never closed")
        yield match["info"].strip(), start, "\n".join(body) + "\n", previous
        previous, i = "```", i + 1


def collect(text, path="<text>"):
    """The python examples of one Markdown text, with their skip reasons and outputs."""
    examples = []
    for info, line, code, previous in _blocks(text):
        language = info.split()[0] if info else ""
        if language == "python":
            if previous.startswith("<!-- no-run"):
                match = _NO_RUN.match(previous)
                if not match:
                    raise ValueError(f"{path}:{line}: a no-run marker must give a reason")
                skip = match["reason"]
            else:
                skip = None
            runs = {}
            if previous.startswith("<!-- runs"):
                match = _RUNS.match(previous)
                pairs = [item.partition("=") for item in match["runs"].split()] if match else []
                if not pairs or not all(fixture for _, _, fixture in pairs):
                    raise ValueError(f"{path}:{line}: a runs marker lists PATH=FIXTURE pairs")
                runs = {folder: fixture for folder, _, fixture in pairs}
            large = previous.startswith("<!-- large")
            if large and not _LARGE.match(previous):
                raise ValueError(f"{path}:{line}: a large marker must give a reason")
            examples.append(Example(path, line, code, skip, runs=runs, large=large))
        elif previous == _OUTPUT:
            if not examples or language != "text":
                raise ValueError(
                    f"{path}:{line}: {_OUTPUT} must follow a python block "
                    "and precede a ```text block"
                )
            examples[-1].output = code
    return examples


def run(example):
    """Runs one example in a fresh namespace; raises if it fails or prints the wrong text."""
    # Registered source lines make a failing example's traceback show its code.
    linecache.cache[example.name] = (
        len(example.code),
        None,
        example.code.splitlines(True),
        example.name,
    )
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        exec(compile(example.code, example.name, "exec"), {"__name__": "__docs__"})
    if example.output is not None:
        got = [line.rstrip() for line in stdout.getvalue().rstrip().splitlines()]
        want = [line.rstrip() for line in example.output.rstrip().splitlines()]
        assert got == want, (
            f"{example.name} printed\n" + "\n".join(got) + "\ninstead of\n" + "\n".join(want)
        )


def all_examples():
    for page in PAGES:
        yield from collect(page.read_text(encoding="utf-8"), page.relative_to(REPO))


EXAMPLES = list(all_examples())
PARAMS = [pytest.param(e, id=e.name, marks=[pytest.mark.large] * e.large) for e in EXAMPLES]


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="examples use TF")
@pytest.mark.parametrize("example", PARAMS)
def test_example_runs(example, tmp_path, monkeypatch, request):
    if example.skip:
        pytest.skip(example.skip)
    for folder, fixture in example.runs.items():  # copies: an example may write into one
        shutil.copytree(request.getfixturevalue(fixture), tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    run(example)


def _python_fences(page):
    """(the line of each ```python fence, whether a no-run marker precedes it), read by a
    plain scan of the page: the reference the collector must agree with."""
    found, previous = [], ""
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip().startswith("```python"):
            found.append((number, previous.startswith("<!-- no-run:")))
        if line.strip():
            previous = line.strip()
    return found


def test_docs_have_examples():
    # every ```python block of every page is collected, with its no-run marker
    want = {(str(p.relative_to(REPO)), n, s) for p in PAGES for n, s in _python_fences(p)}
    got = {(str(e.path), e.line, e.skip is not None) for e in EXAMPLES}
    assert got == want, (sorted(want - got), sorted(got - want))
    runnable = [e for e in EXAMPLES if not e.skip]
    assert len(runnable) >= 15, [e.name for e in EXAMPLES]
    # Exceptions stay few: every skipped block is listed in the module docstring's terms
    # (seven: the streaming client of docs/deploying.md needs a trained language model,
    # docs/start-here.md's SavedModel the run folder its commands write).
    assert len(EXAMPLES) - len(runnable) <= 7, [e.name for e in EXAMPLES if e.skip]


BROKEN = """
Text.

```python
print("fine")
```

<!-- output -->
```text
fine
```

```python
import kerasrnn
kerasrnn.LSTMCell(units=0)
```

```python
print(1 + 1)
```

<!-- output -->
```text
3
```

<!-- no-run: needs a trained model -->
```python
raise SystemExit
```
"""


def test_runner_fails_on_broken_examples():
    good, broken, wrong_output, skipped = collect(BROKEN)
    run(good)
    with pytest.raises(ValueError, match="units"):
        run(broken)
    with pytest.raises(AssertionError, match="instead of"):
        run(wrong_output)
    assert skipped.skip == "needs a trained model"


def test_markers_are_checked():
    with pytest.raises(ValueError, match="reason"):
        collect("<!-- no-run -->\n```python\npass\n```\n")
    with pytest.raises(ValueError, match="PATH=FIXTURE"):
        collect("<!-- runs: runs/a -->\n```python\npass\n```\n")
    (example,) = collect(
        "<!-- runs: runs/a=tiny_tagger b=tiny_classifier -->\n```python\npass\n```\n"
    )
    assert example.runs == {"runs/a": "tiny_tagger", "b": "tiny_classifier"}
    with pytest.raises(ValueError, match="large marker must give a reason"):
        collect("<!-- large -->\n```python\npass\n```\n")
    (example,) = collect("<!-- large: trains -->\n```python\npass\n```\n")
    assert example.large and not example.skip
    with pytest.raises(ValueError, match="must follow a python block"):
        collect("```sh\nls\n```\n\n<!-- output -->\n```text\nx\n```\n")


DOCSTRING = '''
def f(a, b, **kwargs):
    """Adds.

    .. math::  y = a + b

    Args:
        a, b: the numbers.
        c: not an argument.
        The other arguments are passed on.

    >>> f(1, 2)
    3
    """
'''


def test_api_docstring_conventions(caplog):
    """tools/griffe_docstrings.py: what the strict site build relies on."""
    griffe = pytest.importorskip("griffe")  # the `docs` extra
    extensions = griffe.load_extensions(str(REPO / "tools" / "griffe_docstrings.py"))
    with griffe.temporary_visited_package(
        "pkg", {"__init__.py": DOCSTRING}, extensions=extensions
    ) as package:
        text = package["f"].docstring.value
    assert "\\[\ny = a + b\n\\]" in text
    assert "```pycon\n>>> f(1, 2)\n3\n```" in text
    # Out of the Args section (the Google parser would drop it), as a paragraph.
    assert "\nThe other arguments are passed on." in text
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "documents argument 'c'" in warnings[0], warnings
