"""What the benchmarks share: option groups, tables, the results files and their rendering.

Every maintained benchmark (`python -m bench list`) parses its options through
`parser`, prints its table through `format_table` and writes its figures through
`write_result` to ``bench/results/NAME.json``:

    {"name": "translation_de_en", "task": "...", "command": "python -m bench ...",
     "date": "2026-11-26", "code_version": "4f1ebe0", "version": "0.2.0", "machine": {...},
     "headline": "bleu",
     "figures": {"bleu": {"label": "...", "value": 35.2, "digits": 2, "unit": "",
                          "spread": {"kind": "min-max", "low": 35.17, "high": 35.22}}},
     "baseline": {"label": "...", "value": ..., "digits": ...},
     "published": {"label": "...", "value": ..., "digits": ...}, "notes": "..."}

A file transcribed from a run made before the suite's entry point keeps that run's
command verbatim in ``command``, the same options on today's entry point in ``rerun``
(the one the docs print) and where the run is described in ``provenance``. ``train``
holds the recipe command with the shipped configuration (`--config NAME`, from any folder)
that trains the headline model on your machine; a rerun keeps it. The benchmark commands
need a checkout (`bench/` is not in the installed package), and the docs say so beside
them. ``"readme": false`` keeps a secondary task out of the README's table
(docs/results.md lists all).

`render` writes docs/results.md, README.md's and bench/README.md's results blocks
(between ``<!-- results:begin -->`` and ``<!-- results:end -->``) from those files, so a
figure has one source. A figure quoted elsewhere in the docs is written after a marker,
``<!-- result:translation_de_en.bleu -->35.20``, and `stale_markers` lists those that disagree
with their file (tests/test_results.py runs both checks). A benchmark that prints whole
tables (serving, quantization, search_error, copy_attention) keeps them in the file's
``tables``; a page shows one between ``<!-- table:serving.tagger -->`` and
``<!-- table:end -->``, and `render` rewrites it there too.

This module imports only the standard library: the tests and `python -m bench render`
load it without TensorFlow.
"""

import argparse
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The OMP_WAIT_POLICY `apply_omp_policy` chose for this process (None: not applied).
_omp_policy: str | None = None
RESULTS = ROOT / "bench" / "results"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
# the order of the tasks in the tables (a results file not named here comes last)
ORDER = [
    "translation_de_en",
    "translation_de_en_subwords",
    "translation_de_en_fusion",
    "ptb_awd",
    "ptb_small",
    "ewt_upos",
    "ewt_upos_crf",
    "ewt_upos_bilm",
    "mr",
    "mr_transfer",
    "sick_entailment",
    "sick_relatedness",
    "sick_relatedness_distribution",
    "conll2003_ner",
    "conll2003_ner_best",
    "conll2003_ner_n_best",
    "time_budget_char",
    "time_budget_ptb",
    "time_budget_translation_de_en",
    "time_budget_conll2003",
    "cells",
    "cells_masked",
    "recipes_torch",
    "decoding",
    "serving",
    "quantization",
    "gpu",
    "attention",
]
MARKER = re.compile(r"<!-- result:([A-Za-z0-9_]+)\.([A-Za-z0-9_]+) -->\s*(\**)([-+0-9.,]+)")
TABLE = re.compile(
    r"(<!-- table:([A-Za-z0-9_]+)\.([A-Za-z0-9_]+) -->\n)(.*?)(<!-- table:end -->)", re.S
)


# ------------------------------------------------------------------ running a benchmark
def apply_omp_policy():
    """How PyTorch's OpenMP threads wait, set before torch loads; returns its name.

    ``OMP_WAIT_POLICY`` from the environment, PASSIVE unless set: PASSIVE threads sleep
    at once (robust on a loaded machine, where spinning threads that get descheduled
    stall every step); ``default`` is libgomp's own short spin, then sleep (PyTorch at
    its best on an idle machine, leaving the CPU to the next contender: the fair
    setting there); ACTIVE spins and takes CPU from the other contenders.
    """
    global _omp_policy
    policy = os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if policy.lower() == "default":
        del os.environ["OMP_WAIT_POLICY"]  # libgomp knows no "default": unset
        policy = "default"
    _omp_policy = policy
    return policy


def parser(name, doc, rounds=None, steps=None, warmup=None):
    """An argument parser for benchmark `name` (its module docstring `doc` as the
    help), with the results options and, when `rounds` is given, the timing options
    (interleaved rounds of `bench/timing.py`) with these defaults."""
    parsed = argparse.ArgumentParser(
        prog=f"python -m bench {name}",
        description=doc.split("\n\n", 1)[0],
        epilog=doc.split("\n\n", 1)[1] if "\n\n" in doc else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parsed.set_defaults(benchmark=name)
    if rounds is not None:
        group = parsed.add_argument_group("timing (interleaved rounds, bench/timing.py)")
        group.add_argument("--rounds", type=int, default=rounds, help="interleaved rounds")
        group.add_argument("--steps", type=int, default=steps, help="timed calls per round")
        group.add_argument("--warmup", type=int, default=warmup, help="untimed calls first")
    group = parsed.add_argument_group("results")
    group.add_argument(
        "--results-dir",
        default=str(RESULTS),
        metavar="DIR",
        help="write NAME.json here (default: bench/results; a smoke run: a temporary folder)",
    )
    group.add_argument(
        "--no-results", action="store_true", help="print the table only, write no results file"
    )
    return parsed


def size(text):
    """``BxTxH`` (batch x time x units) as three ints, for ``--size`` options."""
    try:
        batch, time, units = (int(v) for v in text.lower().split("x"))
    except ValueError:
        message = f"expected BxTxH such as 64x100x256, got {text!r}"
        raise argparse.ArgumentTypeError(message) from None
    return batch, time, units


def format_table(rows, columns):
    """A fixed-width text table: `columns` are ``(header, key, format)``, `format` a
    format spec (``".2f"``) or a callable of the row; a missing value prints ``-``."""
    cells = [[header for header, _, _ in columns]]
    for row in rows:
        line = []
        for _, key, spec in columns:
            if callable(spec):
                line.append(spec(row))
            elif row.get(key) is None:
                line.append("-")
            else:
                line.append(format(row[key], spec))
        cells.append(line)
    widths = [max(len(str(line[i])) for line in cells) for i in range(len(columns))]
    return "\n".join(
        " ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(line, widths))
        ).rstrip()
        for line in cells
    )


def markdown_table(header, rows):
    """A Markdown table from a header and rows of cells (a results file's ``tables``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def command_line(name, argv=None):
    """The command that ran benchmark `name` with `argv` (default: this process'), with
    the environment it read: KERAS_BACKEND, and an OMP_WAIT_POLICY other than PASSIVE
    (`apply_omp_policy` unsets a `default` before torch loads, so it is recalled here)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] == name:  # python -m bench NAME ...: argv includes the name
        args = args[1:]
    quoted = " ".join(_quote(a) for a in args)
    prefix = [f"{k}={os.environ[k]}" for k in ("KERAS_BACKEND",) if k in os.environ]
    if _omp_policy not in (None, "PASSIVE"):
        prefix.insert(0, f"OMP_WAIT_POLICY={_omp_policy}")
    return " ".join(p for p in (*prefix, f"python -m bench {name}", quoted) if p)


def _quote(arg):
    return arg if re.fullmatch(r"[-A-Za-z0-9_./=:,+@]+", arg) else repr(arg)


def code_version():
    """The checkout's commit (``git describe --always``), with ``-dirty`` when a tracked
    file other than the results differs from it: a benchmark's own results file, or an
    earlier one's in the same session, is not a change of the code that measured it."""

    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10)

    try:
        commit = git("describe", "--always").stdout.strip()
        if not commit:  # not a git checkout
            return None
        changed = git("diff", "--quiet", "HEAD", "--", ".", ":(exclude)bench/results").returncode
    except (OSError, subprocess.TimeoutExpired):
        return None
    return commit + ("-dirty" if changed else "")


def machine(device=None):
    """The conditions of a run: CPU count, platform, Python, the device measured on."""
    return {
        "cpu_count": os.cpu_count(),
        "platform": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
        "device": device or "CPU",
    }


def figure(value, label, digits=2, unit="", spread=None, runs=None, signed=False):
    """One figure of a results file: `spread` is ``{"kind": "min-max" | "IQR" | "std",
    "low": ..., "high": ...}`` (or ``{"kind": "std", "value": ...}``), `runs` the
    individual measurements it summarises; `signed` prints a + on a positive change."""
    out = {"label": label, "value": value, "digits": digits, "unit": unit}
    if signed:
        out["signed"] = True
    if spread is not None:
        out["spread"] = spread
    if runs is not None:
        out["runs"] = runs
    return out


def package_version():
    """The installed kerasrnn's version (`kerasrnn.__version__`'s source), or None."""
    try:
        return importlib.metadata.version("kerasrnn")
    except importlib.metadata.PackageNotFoundError:
        return None


def write_result(args, name, task, figures, headline=None, **fields):
    """Writes ``NAME.json`` to ``args.results_dir`` (unless ``args.no_results``) with the
    command, date, code version and machine of this run; `fields` adds ``baseline``,
    ``published``, ``machine`` (a dict from `machine`), ``notes``, ``details`` (any
    JSON: the rows a benchmark's table printed), ``tables`` (``{key: Markdown table}``,
    which `render` writes into the pages that show them). Returns the path, or None."""
    if getattr(args, "no_results", False):
        return None
    record = {
        "name": name,
        "task": task,
        "command": fields.pop("command", None) or command_line(args.benchmark),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "code_version": code_version(),
        "version": package_version(),
        "machine": fields.pop("machine", None) or machine(),
        "headline": headline or next(iter(figures)),
        "figures": figures,
        **fields,
    }
    folder = pathlib.Path(args.results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    if path.exists() and "train" not in record:
        # The shipped configuration belongs to the task, not to one run of it.
        train = json.loads(path.read_text()).get("train")
        if train:
            record = {"train": train, **record}
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    partial.replace(path)
    print(f"# results written to {path}", file=sys.stderr)
    return path


# ------------------------------------------------------------------ rendering the results
def load_results(folder=RESULTS):
    """``{name: record}`` of every results file in `folder`, in `ORDER` (then by name)."""
    records = {}
    for path in sorted(pathlib.Path(folder).glob("*.json")):
        record = json.loads(path.read_text())
        if record.get("name") != path.stem:
            raise ValueError(f"{path}: its name field is {record.get('name')!r}, not {path.stem!r}")
        records[path.stem] = record
    rank = {name: i for i, name in enumerate(ORDER)}
    return dict(sorted(records.items(), key=lambda kv: (rank.get(kv[0], len(ORDER)), kv[0])))


def value(entry):
    """A figure's value as the docs print it (its digits and unit)."""
    if entry is None or entry.get("value") is None:
        return ""
    sign = "+" if entry.get("signed") else ""
    return f"{entry['value']:{sign}.{entry.get('digits', 2)}f}{entry.get('unit', '')}"


def spread(entry):
    """A figure's spread as the docs print it, e.g. ``min-max 35.17-35.22``."""
    s = (entry or {}).get("spread")
    if not s:
        return ""
    digits, unit = entry.get("digits", 2), entry.get("unit", "")
    if "value" in s:
        return f"{s['kind']} {s['value']:.{digits}f}{unit}"
    return f"{s['kind']} {s['low']:.{digits}f}-{s['high']:.{digits}f}{unit}"


def _cell(entry):
    if not entry:
        return ""
    return f"{value(entry)} ({entry['label']})" if entry.get("value") is not None else ""


def render_table(records, link="docs/results.md"):
    """The headline table (README.md, bench/README.md): one row per task."""
    lines = [
        "| task | figure | spread | baseline | published | measured |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in records.items():
        if not r.get("readme", True) and link:
            continue
        head = r["figures"][r["headline"]]
        anchor = f"{link}#{name}" if link else f"#{name}"
        lines.append(
            f"| [{r['task']}]({anchor}) | **{value(head)}** {head['label']} | {spread(head)} "
            f"| {_cell(r.get('baseline'))} | {_cell(r.get('published'))} | {r['date']} |"
        )
    return "\n".join(lines)


def render_page(records):
    """docs/results.md: per task every figure with its spread, the baseline, the
    published figure, the command, date, code version and machine."""
    out = [
        "# Results",
        "",
        "Every figure the documentation quotes, one per task, each from a file in",
        "`bench/results/` written by the command printed under it. This page is",
        "rendered from those files (`python -m bench render`); a test fails when it, the",
        "README's table or a figure quoted in the docs disagrees with them. Speed figures",
        "are ratios against a reference timed in the same process, interleaved (medians",
        "over rounds, with their spread); quality figures sit beside a simple baseline",
        "on the same split and the published figure. Older runs live in the git history.",
        "",
        render_table(records, link=""),
    ]
    for name, r in records.items():
        m = r.get("machine") or {}
        out += ["", f'<a id="{name}"></a>', "", f"## {r['task']}", ""]
        out += ["| figure | value | spread |", "|---|---|---|"]
        for key, entry in r["figures"].items():
            out.append(f"| {entry['label']} (`{name}.{key}`) | {value(entry)} | {spread(entry)} |")
        for kind in ("baseline", "published"):
            if r.get(kind):
                out.append(f"| {kind}: {r[kind]['label']} | {value(r[kind])} | {spread(r[kind])} |")
        out.append("")
        if r.get("train"):
            out += ["Train it with the shipped configuration:", "", "```sh", r["train"], "```", ""]
        command = r.get("rerun") or r.get("command")
        if command:
            out += [
                "The benchmark that measured it (from a checkout: `bench/` is not part of "
                "the installed package):",
                "",
                "```sh",
                command,
                "```",
                "",
            ]
        else:
            out += ["No recorded command.", ""]
        cores = f"{m['cpu_count']} CPU cores" if m.get("cpu_count") else None
        where = ", ".join(str(v) for v in (m.get("device"), m.get("platform"), cores) if v)
        release = f" with kerasrnn {r['version']}" if r.get("version") else ""
        out.append(f"Measured {r['date']}{release}" + (f" on {where}" if where else "") + ".")
        if r.get("notes"):
            out += ["", r["notes"]]
    return "\n".join(out) + "\n"


def replace_block(text, content, path="text"):
    """`text` with what lies between `BEGIN` and `END` replaced by `content`."""
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise ValueError(f"{path}: expected one {BEGIN} and one {END}")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{content}\n{END}{tail}"


def render_tables(text, records, path="text"):
    """`text` with each ``<!-- table:NAME.KEY -->`` ... ``<!-- table:end -->`` block
    holding the table that bench/results/NAME.json keeps under KEY."""

    def table(match):
        head, name, key, _, end = match.groups()
        body = records.get(name, {}).get("tables", {}).get(key)
        if body is None:
            raise ValueError(f"{path}: {head.strip()} names no table of bench/results/{name}.json")
        return f"{head}{body}\n{end}"

    return TABLE.sub(table, text)


def rendered(root=ROOT, results=None):
    """``{path: text}`` of the files `render` writes, from the results in
    ``root/bench/results`` (or `results`)."""
    root = pathlib.Path(root)
    records = load_results(results or root / "bench" / "results")
    readme = root / "README.md"
    bench_readme = root / "bench" / "README.md"
    pages = {
        path: render_tables(text, records, path)
        for path in sorted((root / "docs").rglob("*.md"))
        if "<!-- table:" in (text := path.read_text()) and path.name != "results.md"
    }
    return {
        **pages,
        root / "docs" / "results.md": render_page(records),
        readme: replace_block(readme.read_text(), render_table(records), readme),
        bench_readme: replace_block(
            bench_readme.read_text(),
            render_table(records, link="../docs/results.md"),
            bench_readme,
        ),
    }


def stale_markers(root=ROOT, results=None):
    """Every ``<!-- result:NAME.KEY -->FIGURE`` in README.md and docs/ whose FIGURE
    differs from the file's (KEY: a figure's key, ``baseline`` or ``published``), as
    ``(path, line, marker, written, expected)``."""
    root = pathlib.Path(root)
    records = load_results(results or root / "bench" / "results")
    stale = []
    for path in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in MARKER.finditer(line):
                name, key, _, written = match.groups()
                record = records.get(name, {})
                entry = record.get(key) if key in ("baseline", "published") else None
                entry = entry or record.get("figures", {}).get(key)
                expected = value(entry).rstrip("%x") if entry else None
                if written.rstrip(".,") != expected:
                    stale.append((path, number, f"{name}.{key}", written, expected))
    return stale


def render(args=None):
    """`python -m bench render [--check]`: writes (or with --check compares) the
    rendered files; exit status 1 when --check finds a difference."""
    parsed = argparse.ArgumentParser(
        prog="python -m bench render",
        description="Writes docs/results.md and the results blocks of README.md and "
        "bench/README.md from bench/results/*.json.",
    )
    parsed.add_argument("--check", action="store_true", help="compare only; exit 1 if stale")
    options = parsed.parse_args(args)
    status = 0
    for path, text in rendered().items():
        if path.exists() and path.read_text() == text:
            continue
        if options.check:
            print(f"{path.relative_to(ROOT)} differs from its rendering", file=sys.stderr)
            status = 1
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    for path, number, marker, written, expected in stale_markers():
        print(
            f"{path.relative_to(ROOT)}:{number}: {marker} is {written}, its file says {expected}",
            file=sys.stderr,
        )
        status = 1
    return status
