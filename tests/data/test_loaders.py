"""kerasrnn.data.loaders: local files (plain and gzip), tfds errors."""

import gzip

import pytest

from kerasrnn.data.loaders import (
    DataFormatError,
    DatasetUnavailableError,
    load_class_files,
    load_conll_columns,
    load_conllu,
    load_sentence_pairs,
    load_tfds_classification,
    load_tfds_tagging,
    load_tfds_translation,
    load_tsv,
)

CONLLU = """# sent_id = 1
# text = I'm here.
1-2\tI'm\t_\t_\t_\t_\t_\t_\t_\t_
1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_
2\t'm\tbe\tAUX\tVBP\t_\t3\tcop\t_\t_
3\there\there\tADV\tRB\t_\t0\troot\t_\t_
3.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t3:conj\t_
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = 2
1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\t_

"""

COLUMNS = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER
"""


def _write(path, text, compress=False, encoding="utf-8"):
    data = text.encode(encoding) if isinstance(text, str) else text
    if compress:
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("compress", [False, True])
def test_tsv(tmp_path, compress):
    path = _write(tmp_path / "d.tsv", "pos\ta fine film\n\nneg\tdull \n", compress)
    assert load_tsv(path) == (["a fine film", "dull"], ["pos", "neg"])


def test_tsv_errors_name_file_and_line(tmp_path):
    bad = _write(tmp_path / "bad.tsv", "pos\tok\nno tab here\n")
    with pytest.raises(DataFormatError, match=r"bad.tsv, line 2: expected 'label<TAB>text'"):
        load_tsv(bad)
    with pytest.raises(DataFormatError, match=r"line 1: empty label"):
        load_tsv(_write(tmp_path / "nolabel.tsv", "\ttext\n"))
    with pytest.raises(DataFormatError, match="empty.tsv: the file contains no examples"):
        load_tsv(_write(tmp_path / "empty.tsv", ""))
    with pytest.raises(FileNotFoundError, match="missing.tsv"):
        load_tsv(tmp_path / "missing.tsv")


@pytest.mark.parametrize("compress", [False, True])
def test_sentence_pairs(tmp_path, compress):
    path = _write(tmp_path / "p.txt", "A man runs\tA person moves\n\nx\ty\n", compress)
    assert load_sentence_pairs(path) == [("A man runs", "A person moves"), ("x", "y")]
    bad = _write(tmp_path / "bad.txt", "a\tb\nno tab\n")
    with pytest.raises(DataFormatError, match=r"bad.txt, line 2: expected two tab-separated"):
        load_sentence_pairs(bad)


def test_class_files_cp1252_and_gzip(tmp_path):
    # 0x85 is "…" in cp1252; it must neither split the line nor be mangled.
    pos = _write(tmp_path / "rt.pos", b"good \x85 really\ngreat \x93fun\x94 \n")
    neg = _write(tmp_path / "rt.neg.gz", b"bad\n", compress=True)
    texts, labels = load_class_files([pos, neg], encoding="cp1252")
    assert texts == ["good … really", "great “fun”", "bad"]
    assert labels == ["pos", "pos", "neg"]
    assert load_class_files({"yes": pos}, encoding="cp1252")[1] == ["yes", "yes"]
    with pytest.raises(DataFormatError, match=r"rt.pos, line 1: cannot decode as 'utf-8'"):
        load_class_files([pos, neg])
    with pytest.raises(ValueError, match="both get the label"):
        load_class_files([pos, _write(tmp_path / "other.pos", "x\n")])


@pytest.mark.parametrize("compress", [False, True])
def test_conllu_skips_comments_ranges_and_empty_nodes(tmp_path, compress):
    path = _write(tmp_path / "t.conllu", CONLLU, compress)
    sentences, tags = load_conllu(path)
    assert sentences == [["I", "'m", "here", "."], ["Yes"]]
    assert tags == [["PRON", "AUX", "ADV", "PUNCT"], ["INTJ"]]
    assert load_conllu(path, column="xpos")[1][0] == ["PRP", "VBP", "RB", "."]
    with pytest.raises(ValueError, match="`column`"):
        load_conllu(path, column="lemma")


def test_conllu_malformed_line(tmp_path):
    bad = CONLLU.replace("3\there\there\tADV\tRB\t_\t0", "3\there\there\tADV\tRB\t0")
    with pytest.raises(DataFormatError, match=r"t.conllu, line 6: a CoNLL-U token line has 10"):
        load_conllu(_write(tmp_path / "t.conllu", bad))


def test_conll_columns_bio(tmp_path):
    sentences, tags = load_conll_columns(_write(tmp_path / "ner.txt", COLUMNS))
    assert sentences == [["EU", "rejects", "German"], ["Peter", "Blackburn"]]
    assert tags == [["B-ORG", "O", "B-MISC"], ["B-PER", "I-PER"]]
    assert load_conll_columns(tmp_path / "ner.txt", tag_column=2)[1][1] == ["B-NP", "I-NP"]
    bad = _write(tmp_path / "bad.txt", COLUMNS.replace("rejects VBZ B-VP O", "rejects O"))
    with pytest.raises(DataFormatError, match=r"bad.txt, line 4: expected 4 columns"):
        load_conll_columns(bad)


def test_tfds_missing_dataset_is_a_clear_error(tmp_path):
    with pytest.raises(
        DatasetUnavailableError,
        match="could not load the tensorflow-datasets dataset 'imdb_reviews'.*use local files",
    ):
        load_tfds_classification("imdb_reviews", data_dir=str(tmp_path), download=False)
    with pytest.raises(DatasetUnavailableError, match="'conll2003'"):
        load_tfds_tagging("conll2003", data_dir=str(tmp_path), download=False)


def test_tfds_loaders_read_catalog_datasets(tmp_path):
    # mock_data serves random examples shaped by each dataset's own features, so the
    # real loading code (tfds.load, the builder's label names, as_numpy) runs offline.
    import tensorflow_datasets as tfds

    empty = str(tmp_path)
    with tfds.testing.mock_data(num_examples=6):
        texts, labels = load_tfds_classification("imdb_reviews", "test", data_dir=empty)
        sentences, tags = load_tfds_tagging(
            "conll2003", "validation", data_dir=empty, tags_key="pos"
        )
        sources, targets = load_tfds_translation(
            "ted_hrlr_translate/pt_to_en", "test", data_dir=empty
        )
    assert len(texts) == 6 and all(isinstance(t, str) for t in texts)
    assert set(labels) <= {"neg", "pos"}
    pos_names = set(tfds.builder("conll2003").info.features["pos"].feature.names)
    # (The mock draws token and tag sequence lengths independently.)
    assert len(sentences) == len(tags) == 6
    assert all(isinstance(t, str) for s in sentences for t in s)
    assert {t for s in tags for t in s} <= pos_names
    assert len(sources) == len(targets) == 6
    assert all(isinstance(s, str) and isinstance(t, str) for s, t in zip(sources, targets))


def test_shared_corpora(shared_data):
    polarity = shared_data("sentence_polarity")
    texts, labels = load_class_files(
        [polarity / "rt-polarity.pos", polarity / "rt-polarity.neg"], encoding="cp1252"
    )
    # SOURCE.md: 5,331 snippets per class, no empty lines; cp1252 gives "…", no NEL.
    assert labels.count("pos") == labels.count("neg") == 5331
    assert all(texts) and not any("\x85" in t for t in texts)
    assert any("…" in t for t in texts)
    sentences, tags = load_conllu(shared_data("ud_en_ewt", "en_ewt-ud-dev.conllu.gz"))
    # SOURCE.md: dev has 2,001 sentences and 25,147 syntactic words.
    assert len(sentences) == 2001 and sum(map(len, sentences)) == 25147
    assert len({t for s in tags for t in s}) == 17
