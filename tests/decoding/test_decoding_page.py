"""The Decoding page (docs/decoding.md) runs on every backend: tests/test_docs.py runs it
on TensorFlow, this file on JAX and torch, the user-written strategy and scorer
included."""

import keras
import pytest

from tests.test_docs import REPO, collect, run

PAGE = REPO / "docs" / "decoding.md"
EXAMPLES = collect(PAGE.read_text(encoding="utf-8"), PAGE.relative_to(REPO))


@pytest.mark.skipif(
    keras.backend.backend() == "tensorflow", reason="tests/test_docs.py runs the page on TensorFlow"
)
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_page_runs_on_this_backend(example, tmp_path, monkeypatch):
    if "drop_finished=True" in example.code and keras.backend.backend() == "jax":
        pytest.skip("drop_finished changes shapes while decoding: not on JAX (the page says)")
    monkeypatch.chdir(tmp_path)
    run(example)


def test_page_has_a_user_written_strategy_and_scorer():
    own = [
        e for e in EXAMPLES if "class ConfidentSampling(kerasrnn.decoding.RandomSampling)" in e.code
    ]
    assert len(own) == 1 and "class WordReward(kerasrnn.decoding.Scorer)" in own[0].code
    assert own[0].output and "after 1: [2]" in own[0].output
