"""recipes.lm_corpus: the shared LM text holds the training splits only (never a
validation or test sentence, never MR), lower-cased, one sentence per line."""

import gzip
import json

from kerasrnn.data.english_text import PUNCTUATION
from recipes import lm_corpus


def test_corpus_has_training_text_only(tmp_path, shared_data):
    for folder in ("ptb", "ud_en_ewt", "multi30k", "conll2003", "sick"):
        shared_data(folder)
    summary = lm_corpus.build(tmp_path, str(shared_data("ptb").parent), valid_lines=50)
    train = (tmp_path / "train.txt").read_text(encoding="utf-8").splitlines()
    valid = (tmp_path / "valid.txt").read_text(encoding="utf-8").splitlines()
    assert len(valid) == 50
    total = sum(c["lines"] for c in summary["corpora"].values())
    assert len(train) + len(valid) == total == summary["train_lines"] + 50
    assert json.loads((tmp_path / "corpus.json").read_text())["train_lines"] == len(train)
    lines = set(train) | set(valid)
    assert all(line == line.lower() and line.strip() for line in train[:1000])
    with gzip.open(shared_data("ptb", "ptb.train.txt.gz"), "rt") as f:
        assert " ".join(f.readline().split()) in lines
    # test and validation sentences of the corpora stay out (the longer ones: a short
    # sentence may also occur in a training split)
    for path in (("ptb", "ptb.test.txt.gz"), ("multi30k", "test_2016_flickr.en.gz")):
        with gzip.open(shared_data(*path), "rt", encoding="utf-8") as f:
            held_out = [" ".join(PUNCTUATION.sub(r" \1 ", line).split()) for line in f]
        held_out = [s.lower() for s in held_out[:300]]
        long = [s for s in held_out if len(s.split()) > 12]
        assert len(long) > 50 and not any(s in lines for s in long)
    # MR (cross-validated) is left out
    polarity = shared_data("sentence_polarity", "rt-polarity.pos")
    with open(polarity, encoding="cp1252") as f:
        mr = [" ".join(line.split()).lower() for line in f][:200]
    assert not any(s in lines for s in mr if len(s.split()) > 12)


def test_the_corpora_folder_is_given_or_named_by_the_one_variable(monkeypatch, tmp_path, capsys):
    # no default folder of its own: --data, else $KERASRNN_DATA, else a one-line error
    monkeypatch.delenv("KERASRNN_DATA", raising=False)
    assert lm_corpus.main(["--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("recipes.lm_corpus: error: no corpora folder: give --data DIR or set ")
    assert err.count("\n") == 1 and "KERASRNN_DATA" in err, err
    assert not (tmp_path / "out").exists()
    monkeypatch.setenv("KERASRNN_DATA", str(tmp_path / "empty"))
    assert lm_corpus.main(["--output-dir", str(tmp_path / "out")]) == 2
    assert str(tmp_path / "empty" / "ptb" / "ptb.train.txt") in capsys.readouterr().err
