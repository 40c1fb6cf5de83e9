"""The "Build your own encoder-decoder" page (docs/seq2seq.md) runs on TensorFlow and JAX:
tests/test_docs.py runs it on TensorFlow, this file in the JAX core run (the torch run
leaves out tests marked `learns`, as this is)."""

import keras
import pytest

from tests.test_docs import REPO, collect, run

PAGE = REPO / "docs" / "seq2seq.md"
EXAMPLES = collect(PAGE.read_text(encoding="utf-8"), PAGE.relative_to(REPO))


@pytest.mark.learns
@pytest.mark.skipif(
    keras.backend.backend() == "tensorflow", reason="tests/test_docs.py runs the page on TensorFlow"
)
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_page_runs_on_this_backend(example, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run(example)


def test_page_has_the_worked_example():
    assert len(EXAMPLES) >= 3 and all(e.output for e in EXAMPLES)
    assert "BeamSearch(beam_size=4, n_best=2)" in EXAMPLES[0].code
