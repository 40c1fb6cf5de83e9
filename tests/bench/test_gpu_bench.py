"""bench/gpu.sh on this CPU: tiny sizes, the backends installed here, the table's format."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "gpu.sh")
BACKENDS = [b for b in ("jax", "torch") if importlib.util.find_spec(b) is not None]
COLUMNS = ["backend", "B x T x H", "precision", "contender", "ms", "ratio", "min-max", "finite"]


def run(tmp_path, *args, python=sys.executable):
    env = {
        **os.environ,
        "PYTHON": python,
        "OUT": str(tmp_path / "gpu.json"),
        "RESULTS_DIR": str(tmp_path / "results"),
        "WHEELS": str(tmp_path / "no-wheels"),
    }
    env.pop("KERAS_BACKEND", None)
    return subprocess.run(
        ["bash", SCRIPT, *args], env=env, capture_output=True, text=True, timeout=900
    )


@pytest.mark.large
@pytest.mark.skipif(not BACKENDS, reason="neither jax nor torch is installed")
def test_cpu_run_prints_one_table_and_writes_json(tmp_path):
    # float32 and the LSTM rows only: the mixed_bfloat16 rows run the same code under
    # another policy, the beam-search row the same table code after a long compile (each
    # doubled this test's time); test_a_failed_row_... covers a failed row
    result = run(tmp_path, "--cpu", "--precisions", "float32", "--only", "LSTMCell, fast")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    header = next(line for line in lines if not line.startswith("#"))
    assert header.split() == "backend B x T x H precision contender ms ratio min-max finite".split()
    with open(tmp_path / "gpu.json") as f:
        table = json.load(f)
    assert sorted(run["backend"] for run in table["runs"]) == sorted(BACKENDS)
    rows = table["rows"]
    expected = {"kerasrnn LSTMCell, fast path"}
    if "torch" in BACKENDS:
        expected.add("torch.nn.LSTM")
    for backend in BACKENDS:
        chosen = [r for r in rows if r["backend"] == backend]
        assert {r["contender"] for r in chosen} == expected
        for row in chosen:
            assert "error" not in row, row["error"]
            assert row["precision"] == "float32"
            assert (row["batch"], row["time"], row["units"]) == (4, 6, 8)
            assert row["ms"] > 0 and row["finite"] is True and len(row["round_ms"]) == 1
            if "torch" not in BACKENDS:
                assert row["ratio"] is None
            else:
                assert row["ratio"] > 0 and row["ratio_min"] <= row["ratio"] <= row["ratio_max"]
            if row["contender"] == "torch.nn.LSTM":
                assert row["ratio"] == 1.0
    # every row is in the printed table
    assert len(lines) == len(table["runs"]) + 1 + len(rows)
    if "torch" in BACKENDS:  # the results file: the LSTM's ratio per backend, with the rows
        with open(tmp_path / "results" / "gpu.json") as f:
            result = json.load(f)
        assert result["command"].startswith("python -m bench gpu --merge")
        assert result["details"]["rows"] == rows
        for backend in BACKENDS:
            figure = result["figures"][f"{backend}_lstm_4x6x8_float32"]
            row = next(
                r
                for r in rows
                if r["backend"] == backend and r["contender"] == "kerasrnn LSTMCell, fast path"
            )
            assert figure["value"] == row["ratio"]


def test_missing_keras_and_wheels_says_how_to_fetch_them(tmp_path):
    bare = tmp_path / "bare-python"
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')  # no site-packages
    bare.chmod(0o755)
    result = run(tmp_path, "--cpu", python=str(bare))
    assert result.returncode == 2
    assert "no Keras here and no wheels" in result.stderr
    assert "pip download --dest .whl" in result.stderr and "keras==" in result.stderr


def test_merge_of_two_runs_keeps_every_row(tmp_path):
    from bench import gpu

    row = {
        "backend": "jax",
        "batch": 1,
        "time": 2,
        "units": 3,
        "precision": "float32",
        "contender": "x",
        "workload": "train",
        "ms": 1.5,
        "ratio": 1.2,
        "ratio_min": 1.1,
        "ratio_max": 1.3,
        "finite": False,
        "round_ms": [1.5],
    }
    paths = []
    for backend in ("jax", "torch"):
        path = tmp_path / f"{backend}.json"
        path.write_text(
            json.dumps(
                {
                    "runs": [
                        {
                            "backend": backend,
                            "device": "cpu",
                            "keras": "3",
                            "rounds": 1,
                            "steps": 1,
                            "warmup": 1,
                        }
                    ],
                    "rows": [{**row, "backend": backend}],
                }
            )
        )
        paths.append(str(path))
    merged = gpu.main(
        ["--merge", *paths, "--json", str(tmp_path / "all.json"), "--results-dir", str(tmp_path)]
    )
    assert [r["backend"] for r in merged["rows"]] == ["jax", "torch"]
    text = gpu.format_table(merged["rows"])
    assert "1.10-1.30" in text and text.splitlines()[1].rstrip().endswith("NO")


def test_a_failed_row_prints_as_failed_with_its_exception():
    from bench import gpu

    row = {
        "backend": "jax",
        "batch": 1,
        "time": 2,
        "units": 3,
        "precision": "mixed_bfloat16",
        "contender": "kerasrnn LSTMCell, fast path",
        "workload": "train",
        "ms": None,
        "ratio": None,
        "ratio_min": None,
        "ratio_max": None,
        "finite": None,
        "round_ms": [],
        "error": gpu.failure(ValueError("Unknown output type bfloat16\nmore")),
    }
    assert row["error"] == "ValueError: Unknown output type bfloat16"
    line = gpu.format_table([row]).splitlines()[1]
    assert line.split()[:4] == ["jax", "1x2x3", "mixed_bfloat16", "kerasrnn"]
    assert line.endswith("FAILED ValueError: Unknown output type bfloat16")
    assert gpu.failure(MemoryError()) == "MemoryError"
