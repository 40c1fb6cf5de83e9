"""kerasrnn.datasets: local copies, checked downloads (file:// URLs, no network), the cache."""

import dataclasses
import gzip
import hashlib
import pathlib
import tarfile

import pytest

import kerasrnn.datasets as datasets
from kerasrnn.data import download as download_module
from kerasrnn.data.loaders import read_lines
from tests.conftest import require_data


def _sha(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


@pytest.fixture
def env(monkeypatch, tmp_path):
    """No local data directory (the tests' KERASRNN_DATA is unset), a fresh cache."""
    monkeypatch.delenv("KERASRNN_DATA", raising=False)
    monkeypatch.delenv("KERASRNN_DATA_MIRROR", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("KERASRNN_CACHE", str(cache))
    return cache


def _leftovers(folder):
    """Everything in the cache folder: no partial downloads may stay behind."""
    return sorted(p.name for p in pathlib.Path(folder).rglob("*")) if folder.exists() else []


def test_registry_hashes_are_those_of_the_shared_copies():
    # The shared folder is a local copy of every corpus: each file, or its gzip
    # recompression, must have the registered SHA-256 of the published bytes.
    for corpus in datasets.CORPORA.values():
        require_data(corpus.name)
        for entry in corpus.files:
            path = datasets.corpus_file(corpus.name, entry.name, data_dir=str(require_data()))
            if path.endswith(".gz") and not entry.name.endswith(".gz"):
                with gzip.open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            else:
                digest = _sha(path)
            assert digest == entry.sha256, (corpus.name, entry.name)


def test_local_directory_argument_and_environment_variable(env, monkeypatch):
    data = require_data()
    path = datasets.corpus_file("ptb", "ptb.valid.txt", data_dir=str(data))
    assert path == str(data / "ptb" / "ptb.valid.txt.gz")  # the recompressed copy
    monkeypatch.setenv("KERASRNN_DATA", str(data))
    assert datasets.resolve("corpus:ptb/ptb.valid.txt") == path
    assert datasets.resolve(["corpus:sentence_polarity/rt-polarity.pos", "x.tsv"]) == [
        str(data / "sentence_polarity" / "rt-polarity.pos"),
        "x.tsv",
    ]
    assert not env.exists()  # nothing was downloaded or cached


def test_a_file_missing_from_the_local_directory_is_an_error(env, tmp_path, monkeypatch):
    # a folder passed in (a command's --data): the fix is the folder, never a download
    with pytest.raises(FileNotFoundError, match="not in the local data directory") as error:
        datasets.corpus_file("ptb", "ptb.valid.txt", data_dir=str(tmp_path / "empty"))
    assert "give a folder that holds it" in str(error.value)
    assert "KERASRNN_DATA" not in str(error.value)
    # the folder of $KERASRNN_DATA: unsetting it downloads the file
    monkeypatch.setenv("KERASRNN_DATA", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="unset KERASRNN_DATA to download it"):
        datasets.corpus_file("ptb", "ptb.valid.txt")


def test_a_wrong_local_copy_is_a_checksum_error(env, tmp_path):
    (tmp_path / "local" / "tiny_shakespeare").mkdir(parents=True)
    (tmp_path / "local" / "tiny_shakespeare" / "input.txt").write_text("To be\n")
    with pytest.raises(datasets.ChecksumError, match="tiny_shakespeare/input.txt.*SHA-256"):
        datasets.corpus_file("tiny_shakespeare", "input.txt", data_dir=str(tmp_path / "local"))


def test_download_from_the_canonical_url_is_checked_and_cached(env, monkeypatch, capsys):
    source = require_data("tiny_shakespeare", "input.txt")
    corpus = datasets.CORPORA["tiny_shakespeare"]
    entry = dataclasses.replace(corpus.files[0], url=source.as_uri())
    monkeypatch.setitem(
        datasets.CORPORA, "tiny_shakespeare", dataclasses.replace(corpus, files=(entry,))
    )
    path = datasets.corpus_file("tiny_shakespeare", "input.txt")
    assert path == str(env / "tiny_shakespeare" / "input.txt")
    assert _sha(path) == entry.sha256
    assert _leftovers(env) == ["input.txt", "tiny_shakespeare"]
    assert capsys.readouterr().out == ""  # download messages go to stderr
    # Cached: found again without the source.
    monkeypatch.setitem(
        datasets.CORPORA,
        "tiny_shakespeare",
        dataclasses.replace(
            corpus, files=(dataclasses.replace(entry, url="file:///nonexistent/input.txt"),)
        ),
    )
    assert datasets.corpus_file("tiny_shakespeare", "input.txt") == path


def test_mirror_download_through_the_recipe_data_layer(env, monkeypatch, tmp_path):
    # A mirror laid out as <corpus>/<file>: PTB is published uncompressed.
    mirror = tmp_path / "mirror"
    (mirror / "ptb").mkdir(parents=True)
    with gzip.open(require_data("ptb", "ptb.valid.txt.gz"), "rb") as f:
        (mirror / "ptb" / "ptb.valid.txt").write_bytes(f.read())
    monkeypatch.setenv("KERASRNN_DATA_MIRROR", mirror.as_uri())
    lines = list(read_lines("corpus:ptb/ptb.valid.txt"))  # what the recipes call
    assert len(lines) == 3370
    assert (env / "ptb" / "ptb.valid.txt").exists()
    # Multi30k is published gzip-compressed; the shared folder itself can be the mirror.
    path = datasets.corpus_file("multi30k", "val.en.gz", mirror=require_data().as_uri())
    assert _sha(path) == _sha(require_data("multi30k", "val.en.gz"))


def test_corrupted_download_raises_and_leaves_nothing_in_the_cache(env, tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "multi30k").mkdir(parents=True)
    good = require_data("multi30k", "val.de.gz").read_bytes()
    (mirror / "multi30k" / "val.de.gz").write_bytes(good[:-100])  # truncated
    with pytest.raises(datasets.ChecksumError, match="multi30k/val.de.gz"):
        datasets.corpus_file("multi30k", "val.de.gz", mirror=mirror.as_uri())
    assert _leftovers(env / "multi30k") == []
    # Repaired at the source, the next call downloads it.
    (mirror / "multi30k" / "val.de.gz").write_bytes(good)
    path = datasets.corpus_file("multi30k", "val.de.gz", mirror=mirror.as_uri())
    assert _leftovers(env / "multi30k") == ["val.de.gz"] and _sha(path) == _sha(
        require_data("multi30k", "val.de.gz")
    )


def test_a_corrupted_cache_file_is_an_error_naming_it(env, tmp_path):
    (env / "tiny_shakespeare").mkdir(parents=True)
    (env / "tiny_shakespeare" / "input.txt").write_text("garbage")
    with pytest.raises(datasets.ChecksumError, match="delete it"):
        datasets.corpus_file("tiny_shakespeare", "input.txt")


def _polarity_archive(tmp_path, corrupt=False):
    """The layout of the Cornell tarball, built from the shared copies."""
    data = require_data("sentence_polarity")
    archive = tmp_path / "rt-polaritydata.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for entry in datasets.CORPORA["sentence_polarity"].files:
            source = data / entry.name
            if corrupt and entry.name == "rt-polarity.neg":
                source = tmp_path / "neg"
                source.write_bytes((data / entry.name).read_bytes().upper())
            tar.add(source, arcname=entry.member)
    return archive


@pytest.mark.parametrize("corrupt", [False, True])
def test_archive_download_extracts_and_checks_each_member(env, monkeypatch, tmp_path, corrupt):
    archive = _polarity_archive(tmp_path, corrupt)
    corpus = datasets.CORPORA["sentence_polarity"]
    monkeypatch.setitem(
        datasets.CORPORA,
        "sentence_polarity",
        dataclasses.replace(corpus, archive_url=archive.as_uri(), archive_sha256=_sha(archive)),
    )
    if corrupt:  # the archive's own hash matches, one member's does not
        with pytest.raises(datasets.ChecksumError, match="rt-polarity.neg"):
            datasets.download("sentence_polarity")
        assert _leftovers(env / "sentence_polarity") == []
        return
    paths = datasets.download("sentence_polarity")
    for entry in corpus.files:
        assert _sha(paths[entry.name]) == entry.sha256
    assert _leftovers(env / "sentence_polarity") == sorted(f.name for f in corpus.files)


def test_archive_with_the_wrong_hash_is_refused(env, monkeypatch, tmp_path):
    archive = _polarity_archive(tmp_path)
    corpus = datasets.CORPORA["sentence_polarity"]
    monkeypatch.setitem(
        datasets.CORPORA,
        "sentence_polarity",
        dataclasses.replace(corpus, archive_url=archive.as_uri()),
    )  # the real archive's hash
    with pytest.raises(datasets.ChecksumError, match="rt-polaritydata.tar.gz"):
        datasets.corpus_file("sentence_polarity", "rt-polarity.pos")
    assert _leftovers(env / "sentence_polarity") == []


def test_sick_is_normalised_then_checked(env, monkeypatch, tmp_path):
    # The published SICK files start with a byte-order mark and end lines with CRLF.
    with gzip.open(require_data("sick", "SICK_trial.txt.gz"), "rb") as f:
        text = f.read()
    published = tmp_path / "SICK_trial.txt"
    published.write_bytes(b"\xef\xbb\xbf" + text.replace(b"\n", b"\r\n"))
    corpus = datasets.CORPORA["sick"]
    files = tuple(
        dataclasses.replace(e, url=published.as_uri()) if e.name == "SICK_trial.txt" else e
        for e in corpus.files
    )
    monkeypatch.setitem(datasets.CORPORA, "sick", dataclasses.replace(corpus, files=files))
    path = datasets.corpus_file("sick", "SICK_trial.txt")
    assert pathlib.Path(path).read_bytes() == text


def test_bad_specs_are_one_line_errors(env):
    with pytest.raises(datasets.CorpusError, match="unknown corpus 'nope'.*known corpora"):
        datasets.resolve("corpus:nope/x.txt")
    with pytest.raises(datasets.CorpusError, match="has no file 'x.txt'.*ptb.train.txt"):
        datasets.resolve("corpus:ptb/x.txt")
    with pytest.raises(datasets.CorpusError, match="corpus:NAME/FILE"):
        datasets.resolve("corpus:ptb")
    assert datasets.resolve({"pos": "a.pos"}) == {"pos": "a.pos"}


def test_recipe_command_line_reports_a_checksum_error_in_one_line(
    env, tmp_path, capsys, monkeypatch
):
    from recipes import language_model

    local = tmp_path / "local" / "ptb"
    local.mkdir(parents=True)
    for split in ("train", "valid", "test"):
        (local / f"ptb.{split}.txt").write_text("a b c\n")
    monkeypatch.setenv("KERASRNN_DATA", str(tmp_path / "local"))
    code = language_model.main(["train", "--output-dir", str(tmp_path / "run")])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert code == 2
    assert "ptb/ptb.train.txt" in err[-1] and "SHA-256" in err[-1]
    assert err[-1].startswith("recipes.language_model train: error: ")
    assert captured.out == ""  # stdout holds only a result's JSON: none on an error


def test_cache_location(env, monkeypatch):
    assert download_module.default_cache_dir() == str(env)
    monkeypatch.delenv("KERASRNN_CACHE")
    monkeypatch.setenv("KERAS_HOME", "/somewhere/keras")
    assert datasets.default_cache_dir() == "/somewhere/keras/datasets/kerasrnn"


def test_recipes_read_corpus_specs(monkeypatch):
    # The tests' KERASRNN_DATA is the shared folder: the specs resolve to it.
    from recipes import classifier, common, tagger

    monkeypatch.setenv("KERASRNN_DATA", str(require_data()))
    config = common.load_config(
        classifier.DEFAULTS,
        overrides={
            "train": "[corpus:sentence_polarity/rt-polarity.pos, "
            "corpus:sentence_polarity/rt-polarity.neg]",
            "encoding": "cp1252",
        },
    )
    texts, labels = classifier.load_examples(config, config["train"], "train")
    assert len(texts) == 10662 and sorted(set(labels)) == ["neg", "pos"]
    config = common.load_config(
        tagger.DEFAULTS, overrides={"valid": "corpus:ud_en_ewt/en_ewt-ud-dev.conllu"}
    )
    sentences, tags = tagger.load_examples(config, config["valid"], "valid")
    assert len(sentences) == 2001


def test_a_failed_download_is_one_line_naming_the_offline_fix(env, monkeypatch, tmp_path, capsys):
    from recipes import language_model

    missing = (tmp_path / "no-such-mirror").as_uri()
    with pytest.raises(datasets.CorpusError) as error:
        datasets.corpus_file("ptb", "ptb.valid.txt", mirror=missing)
    message = str(error.value)
    assert "\n" not in message and "no-such-mirror" in message
    assert "point KERASRNN_DATA at a folder" in message
    assert _leftovers(env / "ptb") == []
    # the recipes print it as one line and exit 2, no traceback
    monkeypatch.setenv("KERASRNN_DATA_MIRROR", missing)
    code = language_model.main(
        ["train", "--train-file", "corpus:ptb/ptb.train.txt", "--output-dir", str(tmp_path / "r")]
    )
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "KERASRNN_DATA" in err


def test_conll2003_is_a_corpus_the_tagger_reads(env, monkeypatch, tmp_path):
    # CoNLL-2003 is published uncompressed (train/valid/test.txt); the shared folder
    # holds gzipped copies. A mirror of the plain files is downloaded, checked against
    # the registered hash and read by the tagger as `word POS chunk NER` columns.
    assert [f.name for f in datasets.CORPORA["conll2003"].files] == [
        "train.txt",
        "valid.txt",
        "test.txt",
    ]
    mirror = tmp_path / "mirror"
    (mirror / "conll2003").mkdir(parents=True)
    with gzip.open(require_data("conll2003", "valid.txt.gz"), "rb") as f:
        (mirror / "conll2003" / "valid.txt").write_bytes(f.read())
    monkeypatch.setenv("KERASRNN_DATA_MIRROR", mirror.as_uri())
    from recipes import common, tagger

    config = common.load_config(tagger.DEFAULTS, overrides={"valid": "corpus:conll2003/valid.txt"})
    sentences, tags = tagger.load_examples(config, config["valid"], "valid")
    # 3,250 sentences and 5,942 entities in eng.testa (SOURCE.md), plus the -DOCSTART- lines
    entities = sum(t.startswith("B-") for sentence in tags for t in sentence)
    assert entities == 5942
    assert sum(s != ["-DOCSTART-"] for s in sentences) == 3250
    assert ["CRICKET", "-", "LEICESTERSHIRE"] in [s[:3] for s in sentences[:2]]
    assert (env / "conll2003" / "valid.txt").exists()
    # A changed file is refused, not read.
    (mirror / "conll2003" / "test.txt").write_text("EU NNP B-NP B-ORG\n")
    with pytest.raises(datasets.ChecksumError, match="conll2003/test.txt"):
        datasets.corpus_file("conll2003", "test.txt")
