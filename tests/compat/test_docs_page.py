"""The `tfa.seq2seq` port of the migration page (docs/migrating-from-tfa.md: the
`Seq2Seq` form and the functional form, which checks that both give the same logits
and beams) runs on TensorFlow and JAX: tests/test_docs.py runs the page on TensorFlow,
this file its seq2seq examples in the JAX core run (the torch run leaves out tests
marked `learns`, as this is)."""

import keras
import pytest

from tests.test_docs import REPO, collect, run

PAGE = REPO / "docs" / "migrating-from-tfa.md"
EXAMPLES = [
    example
    for example in collect(PAGE.read_text(encoding="utf-8"), PAGE.relative_to(REPO))
    if "Seq2SeqBackbone(" in example.code
]


@pytest.mark.learns
@pytest.mark.skipif(
    keras.backend.backend() == "tensorflow", reason="tests/test_docs.py runs the page on TensorFlow"
)
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_seq2seq_port_runs_on_this_backend(example, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run(example)


def test_page_has_both_forms_of_the_port():
    assert len(EXAMPLES) == 2 and all(e.output for e in EXAMPLES)
    shortest, functional = (e.code for e in EXAMPLES)
    assert "Seq2Seq(backbone" in shortest and "beam_search_decoder(" in shortest
    assert "keras.Model([source_ids, target_ids]" in functional
    # the functional form is checked against the Seq2Seq form, token for token
    assert functional.rstrip().endswith("same_beams.scores), atol=1e-5))")
    assert EXAMPLES[1].output.split() == ["True", "True", "True"]
