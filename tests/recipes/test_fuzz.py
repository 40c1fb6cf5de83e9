"""Seeded random corruptions of every input format the recipes read -- TSV, CoNLL
columns, CoNLL-U, parallel text, SICK, sentence pairs, plain text, YAML and JSON
configs -- and of every run file a user can edit (config.json, results.json,
history.json, preset.json, a vocabulary given as an option, deploy.json): each case ends
in a correct parse or a one-line error (a ValueError: the loaders' DataFormatError, the
recipes' RecipeError / ConfigError, kerasrnn's PresetError, the client's
DeployFileError), never another exception, a traceback or a hang. The loaders run in
this process; the counts of cases tried are printed (``pytest -s``)."""

import json
import os
import random
import signal
import sys

import pytest

from kerasrnn.data.language_model import read_corpus
from kerasrnn.data.loaders import (
    load_conll_columns,
    load_conllu,
    load_parallel_text,
    load_sentence_pairs,
    load_sick,
    load_tsv,
)
from kerasrnn.export.client import read_deploy
from kerasrnn.models.preset import read_preset
from recipes import classifier, files
from recipes.config import load_config
from recipes.files import saved_config

CASES = 200  # per format
PALETTE = [b"\t", b"\n", b"\r", b" ", b"\x00", b"\xff", b"\xc3", b"#", b"-", b"_", b'"']
PALETTE += [b"{", b"}", b"[", b"]", b":", b",", b"'", b"\\", b"1e999", b"null", b"-1"]

SAMPLES = {
    "tsv": b"pos\tgood film\nneg\tbad plot\n\npos\tgreat fun here\n",
    "columns": b"EU B-ORG\nrejects O\nGerman B-MISC\n\nPeter B-PER\nBlackburn I-PER\n",
    "conllu": (
        b"# text = The dog runs\n1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
        b"2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n3\truns\trun\tVERB\tVBZ\t_\t0\troot\t_\t_\n"
        b"\n1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n1\tdo\tdo\tAUX\tVB\t_\t0\troot\t_\t_\n"
        b"2\tn't\tnot\tPART\tRB\t_\t1\tadvmod\t_\t_\n\n"
    ),
    "sick": (
        b"pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        b"1\tA dog runs\tA dog is running\t4.5\tENTAILMENT\n"
        b"2\tA cat sleeps\tNobody sleeps\t2.0\tCONTRADICTION\n"
    ),
    "pairs": b"a dog runs\ta dog is running\na cat\tno cat\n",
    "text": b"the cat sat on the mat\n<unk> dog runs\n\n",
    "source": b"hello world\ngood morning\n",
    "yaml": b"units: 8\ncell: gru\nbucket_boundaries: [10, 20]\ndropout: 0.1\n",
    "json": b'{"units": 8, "cell": "gru", "bucket_boundaries": [10, 20], "dropout": 0.1}',
    "vocab": b"[PAD]\n[UNK]\n[START]\n[END]\nthe\ncat\n",
    "history": b'{"rows": [{"epoch": 1, "loss": 0.5, "val_loss": 0.6}]}',
    "preset": (
        b'{"format": 1, "task": "kerasrnn>TextClassifier", "file": "best.keras", '
        b'"kerasrnn_version": "0.2.0", "keras_version": "3.10.0"}'
    ),
    "deploy": json.dumps(
        {
            "task": "classifier",
            "lowercase": True,
            "labels": ["neg", "pos"],
            "vocabularies": {"words": ["[PAD]", "[UNK]", "[START]", "[END]", "good"]},
            "models": {
                "model": {"file": "m.onnx", "inputs": ["ids"], "shapes": [[1, None]], "outputs": 1}
            },
        }
    ).encode(),
}


def corrupt(data, rng):
    """`data` with one to three random edits: a cut, a deleted span, inserted bytes
    (tabs, newlines, NUL, invalid UTF-8, JSON / YAML punctuation), a repeated or
    swapped line, a flipped byte, a BOM, or nothing left."""
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(9)
        n = len(data)
        i, j = sorted(rng.randint(0, n) for _ in range(2))
        if kind == 0:
            data = data[:i]
        elif kind == 1:
            data = data[:i] + data[j:]
        elif kind in (2, 3):
            data = data[:i] + rng.choice(PALETTE) * rng.randint(1, 3) + data[i:]
        elif kind == 4:
            lines = data.split(b"\n")
            k = rng.randrange(len(lines))
            lines.insert(k, lines[k])
            data = b"\n".join(lines)
        elif kind == 5:
            lines = data.split(b"\n")
            rng.shuffle(lines)
            data = b"\n".join(lines)
        elif kind == 6 and n:
            k = rng.randrange(n)
            data = data[:k] + bytes([rng.randrange(256)]) + data[k + 1 :]
        elif kind == 7:
            data = b"\xef\xbb\xbf" + data
        elif kind == 8 and rng.random() < 0.2:
            data = b""
    return data


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang


def _check(case, call):
    """Runs `call`; returns "parsed" or "error"; fails on anything but a one-line
    ValueError, or on a call that takes over 10 seconds."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(10)
    try:
        call()
        return "parsed"
    except _Hang:
        pytest.fail(f"{case}: still running after 10 s")
    except (ValueError, FileNotFoundError) as error:  # the one-line errors
        message = str(error)
        assert message and "\n" not in message.strip(), f"{case}: {message!r}"
        return "error"
    except Exception as error:  # noqa: BLE001 (any other exception is the failure)
        pytest.fail(f"{case}: {type(error).__name__}: {error}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _tsv(folder, path):
    texts, labels = load_tsv(path)
    assert len(texts) == len(labels) > 0 and all(isinstance(t, str) for t in labels)


def _columns(folder, path):
    sentences, tags = load_conll_columns(path)
    assert [len(s) for s in sentences] == [len(t) for t in tags]


def _conllu(folder, path):
    sentences, tags = load_conllu(path)
    assert [len(s) for s in sentences] == [len(t) for t in tags]


def _sick(folder, path):
    a, b, scores, labels = load_sick(path)
    assert len(a) == len(b) == len(scores) == len(labels)


def _pairs(folder, path):
    assert all(len(p) == 2 for p in load_sentence_pairs(path))


def _text(folder, path):
    for level in ("word", "char"):
        assert all(isinstance(s, list) for s in read_corpus(path, level))


def _parallel(folder, path):
    target = os.path.join(folder, "target.txt")
    with open(target, "wb") as f:
        f.write(SAMPLES["source"])
    sources, targets = load_parallel_text(path, target)
    assert len(sources) == len(targets)


def _config(folder, path):
    config = load_config(classifier.OPTIONS, path)
    assert set(config) == set(classifier.OPTIONS)


def _run_config(folder, path):
    os.replace(path, os.path.join(folder, "config.json"))
    assert saved_config(classifier.OPTIONS, folder)["output_dir"] == folder


def _results(folder, path):
    files.read_json(path, kind=dict)


def _history(folder, path):
    rows = files.read_json(path, ("rows",), dict)["rows"]
    assert rows is not None


def _vocabulary(folder, path):
    assert len(files.read_vocabulary(path)) >= 4


def _preset(folder, path):
    # a run folder's preset.json (best.keras beside it), as `from_preset` reads it first
    os.replace(path, os.path.join(folder, "preset.json"))
    with open(os.path.join(folder, "best.keras"), "wb") as f:
        f.write(b"PK")
    assert read_preset(folder)["task"] is not None


def _deploy(folder, path):
    config = read_deploy(path)
    assert config["task"] == "classifier"


FORMATS = {
    "tsv": ("tsv", ".tsv", _tsv),
    "conll_columns": ("columns", ".conll", _columns),
    "conllu": ("conllu", ".conllu", _conllu),
    "sick": ("sick", ".txt", _sick),
    "pairs": ("pairs", ".txt", _pairs),
    "plain_text": ("text", ".txt", _text),
    "parallel_text": ("source", ".txt", _parallel),
    "yaml_config": ("yaml", ".yaml", _config),
    "json_config": ("json", ".json", _config),
    "config.json": ("json", ".json", _run_config),
    "results.json": ("history", ".json", _results),
    "history.json": ("history", ".json", _history),
    "vocabulary": ("vocab", ".txt", _vocabulary),
    "preset.json": ("preset", ".json", _preset),
    "deploy.json": ("deploy", ".json", _deploy),
}


@pytest.mark.skipif(sys.platform == "win32", reason="SIGALRM bounds each case")
def test_corrupted_inputs_parse_or_fail_in_one_line(tmp_path):
    rng = random.Random(46)
    tried = {}
    for name, (sample, suffix, check) in FORMATS.items():
        outcomes = {"parsed": 0, "error": 0}
        for case in range(CASES):
            folder = tmp_path / f"{name}-{case}"
            folder.mkdir()
            path = folder / f"input{suffix}"
            data = SAMPLES[sample] if case == 0 else corrupt(SAMPLES[sample], rng)
            path.write_bytes(data)
            outcome = _check(
                f"{name} case {case} ({data[:80]!r})", lambda: check(str(folder), str(path))
            )
            if case == 0:
                assert outcome == "parsed", f"{name}: the intact sample must parse"
            outcomes[outcome] += 1
        tried[name] = outcomes
    total = sum(sum(o.values()) for o in tried.values())
    print(f"\nfuzz: {total} corrupted inputs tried over {len(tried)} formats:")
    for name, outcomes in tried.items():
        print(f"  {name}: {outcomes['parsed']} parsed, {outcomes['error']} one-line errors")
    assert all(o["error"] > 0 for o in tried.values()), tried  # the corruptions bite
