"""kerasrnn.data.english_text: the English corpora's training splits as token lists, checked
against the files themselves read here with gzip (the shared offline copy), and the
language-model text written from them."""

import gzip
import json

import pytest

import kerasrnn.datasets
from kerasrnn.data import english_text
from tests.conftest import require_data


def _raw_lines(*parts):
    with gzip.open(require_data(*parts), "rt", encoding="utf-8") as f:
        return [line.rstrip("\r\n") for line in f]


@pytest.fixture(scope="module")
def texts():
    for corpus in english_text.TRAINING_FILES:
        require_data(corpus)
    # no data_dir: $KERASRNN_DATA, which tests/conftest.py points at the shared copy
    return kerasrnn.datasets.english_training_sentences()


def test_every_corpus_as_non_empty_token_lists(texts):
    assert list(texts) == ["ptb", "ud_en_ewt", "multi30k", "conll2003", "sick"]
    for name, sentences in texts.items():
        assert len(sentences) > 4000, name
        for sentence in sentences:
            assert sentence and all(t and not any(c.isspace() for c in t) for t in sentence)
    # one sentence per non-blank PTB line, as the file has them
    ptb = [line.split() for line in _raw_lines("ptb", "ptb.train.txt.gz") if line.strip()]
    assert texts["ptb"] == ptb
    # one per EWT sentence (its `# text =` line), the tokens of the integer-id rows
    ewt = _raw_lines("ud_en_ewt", "en_ewt-ud-train.conllu.gz")
    assert len(texts["ud_en_ewt"]) == sum(line.startswith("# text = ") for line in ewt)
    first = [r.split("\t") for r in ewt[: ewt.index("")] if r and not r.startswith("#")]
    assert texts["ud_en_ewt"][0] == [r[1] for r in first if r[0].isdigit()]
    assert texts["ud_en_ewt"][0][:4] == ["Al", "-", "Zaman", ":"]


def test_multi30k_punctuation_is_split_off(texts):
    raw = _raw_lines("multi30k", "train.en.gz")
    assert len(texts["multi30k"]) == len(raw) == 29000
    assert texts["multi30k"][0] == (
        "Two young , White males are outside near many bushes .".split()
    )
    for line, tokens in zip(raw, texts["multi30k"]):
        assert "".join(tokens) == "".join(line.split())  # nothing lost or added
        # a punctuation mark is a token of its own
        assert not any(len(t) > 1 and english_text.PUNCTUATION.search(t) for t in tokens)


def test_conll2003_without_document_separators(texts):
    conll = texts["conll2003"]
    assert not any("-DOCSTART-" in sentence for sentence in conll)
    blocks, block = [], []
    for line in _raw_lines("conll2003", "train.txt.gz") + [""]:
        if line.strip():
            block.append(line.split()[0])
        elif block:
            blocks.append(block)
            block = []
    assert conll == [b for b in blocks if b != ["-DOCSTART-"]]
    assert conll[0] == ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."]


def test_sick_sentences_both_sides_each_once(texts):
    rows = [line.split("\t") for line in _raw_lines("sick", "SICK_train.txt.gz")]
    header, rows = rows[0], [r for r in rows[1:] if len(r) > 1]
    a, b = header.index("sentence_A"), header.index("sentence_B")
    expected = {r[a].strip() for r in rows} | {r[b].strip() for r in rows}
    sick = [" ".join(s) for s in texts["sick"]]
    assert len(sick) == len(set(sick)) == len(expected)
    assert set(sick) == {" ".join(s.split()) for s in expected}


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        english_text.english_training_sentences(data_dir=str(tmp_path))
    message = str(caught.value)
    assert str(tmp_path / "ptb" / "ptb.train.txt") in message and "\n" not in message


def test_written_text_is_lower_cased_shuffled_and_split(tmp_path, monkeypatch):
    # the writer on a small stand-in for the corpora (the real ones: tests/recipes)
    small = {"ptb": [["The", "Cat"], ["a", "b", "c"]], "sick": [[f"W{i}"] for i in range(20)]}
    monkeypatch.setattr(english_text, "english_training_sentences", lambda data_dir: small)
    summary = english_text.write_language_model_corpus(tmp_path / "a", "unused", valid_lines=5)
    train = (tmp_path / "a" / "train.txt").read_text(encoding="utf-8").splitlines()
    valid = (tmp_path / "a" / "valid.txt").read_text(encoding="utf-8").splitlines()
    assert len(valid) == 5 and len(train) == 17
    assert sorted(train + valid) == sorted(["the cat", "a b c"] + [f"w{i}" for i in range(20)])
    assert json.loads((tmp_path / "a" / "corpus.json").read_text()) == summary
    assert summary["corpora"] == {
        "ptb": {"lines": 2, "tokens": 5},
        "sick": {"lines": 20, "tokens": 20},
    }
    assert summary["train_lines"] == 17 and summary["valid_lines"] == 5
    assert summary["train_tokens"] == sum(len(line.split()) for line in train)
    assert summary["left_out"].startswith("sentence_polarity (cross-validated")
    # the same seed, the same files; another seed, another order
    english_text.write_language_model_corpus(tmp_path / "b", "unused", valid_lines=5)
    assert (tmp_path / "b" / "train.txt").read_text() == (tmp_path / "a" / "train.txt").read_text()
    english_text.write_language_model_corpus(tmp_path / "c", "unused", valid_lines=5, seed=1)
    assert (tmp_path / "c" / "train.txt").read_text() != (tmp_path / "a" / "train.txt").read_text()
