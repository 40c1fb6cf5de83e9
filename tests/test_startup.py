"""kerasrnn._startup: a command line of the package starts quietly (nothing on stderr
before its own first line) whether ``TF_CPP_MIN_LOG_LEVEL`` is unset or set to 1, 2 or
3, the usual way to silence TensorFlow; only an explicit 0 (or ``--verbose 3``) shows
TensorFlow's start-up lines. Some of those lines come through absl's C++ logging, which
the variable does not reach, so 2 and 3 need the quiet start-up as much as unset."""

import os
import subprocess
import sys

import pytest

from kerasrnn import _startup

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize(
    "value,argv,wants",
    [
        (None, [], False),
        ("1", [], False),
        ("2", [], False),
        ("3", [], False),
        ("0", [], True),
        (" 0 ", [], True),
        ("3", ["train", "--verbose", "3"], True),
        (None, ["train", "--verbose=3"], True),
        (None, ["train", "--verbose", "2"], False),
    ],
)
def test_only_level_0_or_verbose_3_asks_for_tensorflows_logs(monkeypatch, value, argv, wants):
    if value is None:
        monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    else:
        monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", value)
    assert _startup.wants_native_logs(argv) is wants


# A fresh process per value (each imports TensorFlow, ~5-10 s). 1 is left out: every
# value but 0 takes the same branch (the test above), and 2 and 3 are the two the
# variable's own filter treats differently (3 also drops error-level lines).
@pytest.mark.large
@pytest.mark.parametrize("value", [None, "2", "3", "0"], ids=["unset", "2", "3", "0"])
def test_a_command_line_starts_with_its_own_first_line(tmp_path, value):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TF_CPP_MIN_LOG_LEVEL", "GLOG_minloglevel", "TF_ENABLE_ONEDNN_OPTS")
    }
    if value is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = value
    env["PYTHONPATH"] = REPO
    # the `kerasrnn` command's module: TensorFlow is imported (the quiet start-up), the
    # recipe is loaded, then the unknown config is refused in one line
    done = subprocess.run(
        [sys.executable, "-m", "recipes", "classifier", "train", "--config", "no_such_config"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert lines[-1].startswith(
        "python -m recipes classifier train: error: config 'no_such_config' is neither a file "
        "nor a shipped config (shipped: "
    ), done.stderr
    if value == "0":  # asked for: TensorFlow's start-up lines come first
        assert len(lines) > 1, done.stderr
    else:
        assert len(lines) == 1, done.stderr
