"""`kerasrnn.export.export_task` as a SavedModel, for each of the five tasks (tiny and
untrained): loaded with `tf.saved_model.load` in one fresh process where kerasrnn and
Keras cannot be imported, its signatures give what the task's `predict` / `generate`
give (the streaming steps what the task's step functions give), empty, blank and
10,000-character inputs included; and its one-line errors."""

import json
import os
import subprocess
import sys
import types

import keras
import numpy as np
import pytest

from kerasrnn import decoding
from kerasrnn.export import export_task
from kerasrnn.special_tokens import END_ID, START_ID
from tests.tiny_tasks import BUILDERS

pytestmark = [
    pytest.mark.large,
    pytest.mark.skipif(
        keras.backend.backend() != "tensorflow", reason="a SavedModel is TensorFlow's"
    ),
]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# unknown words, case, empty and blank text, a source longer than max_source_length (6)
TEXTS = ["a good film", "", "Zebra dull and bad", "   ", "the dog sat on a mat the cat ran"]
PAIRS = list(zip(TEXTS, TEXTS[::-1]))
SENTENCES = [["Peter", "flew", "to", "Brussels"], ["EU"], [], ["zebra", "rejects", "it"]]
SOURCES = ["the cat sat", "", "a zebra ran", "   ", "the dog sat on a mat the cat ran"]
LONG = " ".join(["good", "film", "Peter", "rejects"] * 2000)[:10_000]  # 10,000 characters
EDGES = ["", "   \t ", LONG, "good film"]

# Runs in a fresh interpreter where kerasrnn and Keras cannot be imported: `calls` in
# order, each a signature of a SavedModel with constant inputs and (the streaming
# pairs) the outputs of an earlier call whose names start with a prefix.
LOADER = r"""
import json, sys
sys.modules["kerasrnn"] = None  # any `import kerasrnn` now fails
sys.modules["keras"] = None
import numpy as np
import tensorflow as tf

def plain(value):
    value = value.numpy()
    if value.dtype.kind in "SO":
        return np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(value).tolist()
    return value.tolist()

loaded, raw, results = {}, [], []
for call in json.load(open(sys.argv[1])):
    if call["path"] not in loaded:
        loaded[call["path"]] = tf.saved_model.load(call["path"])
    signature = loaded[call["path"]].signatures[call["signature"]]
    inputs = {k: tf.constant(v, dtype) for k, (v, dtype) in call["inputs"].items()}
    if "pass" in call:
        earlier, prefixes = call["pass"]
        inputs.update({k: v for k, v in raw[earlier].items() if k.startswith(tuple(prefixes))})
    raw.append(signature(**inputs))
    results.append({k: plain(v) for k, v in raw[-1].items()})
print(json.dumps({
    "results": results,
    "imported": sorted(m for m in sys.modules if m.startswith(("kerasrnn", "keras"))
                       and sys.modules[m] is not None),
}))
"""


def np_(x):
    return keras.ops.convert_to_numpy(x)


def _calls(tasks, folder):
    """The loader's calls (what each task's signatures get), by name."""
    lm_states = tasks["LanguageModel"].step_fn()[1](2)
    state_names = {
        f"state_{i}_{j}": (np.zeros(s.shape, "float32").tolist(), "float32")
        for i, layer in enumerate(lm_states)
        for j, s in enumerate(layer)
    }
    tokens = [s + [""] * (4 - len(s)) for s in SENTENCES]
    path = {name: str(folder / name) for name in tasks}
    calls = {
        "classify": (path["TextClassifier"], "serving_default", {"text": (TEXTS, "string")}),
        "pair": (
            path["PairClassifier"],
            "serving_default",
            {"sentence_a": (TEXTS, "string"), "sentence_b": (TEXTS[::-1], "string")},
        ),
        "tag": (path["SequenceTagger"], "serving_default", {"tokens": (tokens, "string")}),
        "classify_edges": (path["TextClassifier"], "serving_default", {"text": (EDGES, "string")}),
        "tag_edges": (path["SequenceTagger"], "tag_text", {"text": (EDGES, "string")}),
        "tag_text": (
            path["SequenceTagger"],
            "tag_text",
            {"text": ([" ".join(s) for s in SENTENCES], "string")},
        ),
        "continue": (path["LanguageModel"], "serving_default", {"prompt": (TEXTS, "string")}),
        "lm_step": (
            path["LanguageModel"],
            "step",
            {"token": ([END_ID, START_ID], "int32"), **state_names},
        ),
        "translate": (path["Seq2Seq"], "translate", {"text": (SOURCES, "string")}),
        "default": (path["Seq2Seq"], "serving_default", {"text": (SOURCES, "string")}),
        "n_best": (path["Seq2Seq"], "translate_n_best", {"text": (SOURCES, "string")}),
        "encode": (path["Seq2Seq"], "encode", {"text": (SOURCES[:1], "string")}),
        "decoder_step": (path["Seq2Seq"], "decoder_step", {"token": ([START_ID], "int32")}),
    }
    order = list(calls)
    listed = []
    for name in order:
        where, signature, inputs = calls[name]
        call = {"path": where, "signature": signature, "inputs": inputs}
        if name == "decoder_step":
            call["pass"] = [order.index("encode"), ["state_", "memory_"]]
        listed.append(call)
    return order, listed


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``(tasks, outputs)``: the five tiny tasks and what their exported SavedModels gave
    in one fresh process without kerasrnn."""
    folder = tmp_path_factory.mktemp("export_task")
    # (a tagger without character features: their BiRNN quadruples the export's time,
    # and the text path tests run them, tests/models/test_text_tasks.py)
    options = {"SequenceTagger": {"chars": False}}
    tasks = {name: build(**options.get(name, {})) for name, build in BUILDERS.items()}
    for name, task in tasks.items():
        assert export_task(task, folder / name) == folder / name
    order, calls = _calls(tasks, folder)
    (folder / "calls.json").write_text(json.dumps(calls))
    done = subprocess.run(
        [sys.executable, "-c", LOADER, str(folder / "calls.json")],
        env={**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "3"},
        cwd=str(folder),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["imported"] == []  # neither kerasrnn nor keras
    return tasks, dict(zip(order, out["results"]))


def test_classifiers_serve_their_predictions(served):
    tasks, out = served
    for key, task, given in (
        ("classify", tasks["TextClassifier"], TEXTS),
        ("pair", tasks["PairClassifier"], PAIRS),
    ):
        local = task.predict(given)
        labels = list(local[0]["probabilities"])
        assert out[key]["label"] == [r["label"] for r in local]
        assert out[key]["labels"] == [labels] * len(given)
        np.testing.assert_allclose(
            out[key]["probabilities"],
            [[r["probabilities"][k] for k in labels] for r in local],
            atol=1e-5,
        )
        np.testing.assert_allclose(
            out[key]["probability"], [r["probability"] for r in local], atol=1e-5
        )


def test_the_tagger_serves_its_tags_and_entities(served):
    tasks, out = served
    local = tasks["SequenceTagger"].predict(SENTENCES)
    for key in ("tag", "tag_text"):
        served_tags = out[key]
        assert served_tags["lengths"] == [len(s) for s in SENTENCES]
        for i, row in enumerate(local):
            n = len(SENTENCES[i])
            assert served_tags["tags"][i][:n] == row["tags"]
            assert set(served_tags["tags"][i][n:]) <= {""}  # padding
            np.testing.assert_allclose(
                served_tags["probability"][i][:n], row["probabilities"], atol=1e-5
            )
            entities = [
                {"text": t, "type": k, "start": a, "end": b}
                for a, b, k, t in zip(
                    *(served_tags[f"entity_{f}"][i] for f in ("start", "end", "type", "text"))
                )
                if a >= 0
            ]
            assert entities == row["entities"]
    assert any(row["entities"] for row in local)


def test_empty_whitespace_and_10000_character_inputs(served):
    tasks, out = served
    classified, tagged = out["classify_edges"], out["tag_edges"]
    # Classifier: empty and whitespace-only input are the same all-masked input, a
    # defined prediction (the model's answer for "no words"), never NaN.
    probabilities = np.array(classified["probabilities"])
    assert np.isfinite(probabilities).all()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(probabilities[0], probabilities[1], atol=1e-6)
    assert classified["label"][0] == classified["label"][1] in ("neg", "pos")
    assert classified["label"] == [r["label"] for r in tasks["TextClassifier"].predict(EDGES)]
    # Tagger: no tokens, no tags.
    assert tagged["lengths"][:2] == [0, 0]
    assert set(tagged["tags"][0]) <= {""} and set(tagged["tags"][1]) <= {""}
    # The 10,000-character input: neither model has a maximum length (an RNN reads any
    # number of steps), so it is read whole: a tag for each of its tokens, and a label.
    assert tagged["lengths"][2] == len(LONG.split()) == 1667
    assert len(tagged["tags"][2]) == 1667
    assert tagged["tags"][2] == tasks["SequenceTagger"].predict(LONG)["tags"]
    assert np.isfinite(tagged["probability"][2]).all()
    assert tagged["lengths"][3] == 2 and tagged["tags"][3][2:] == [""] * 1665  # padded row


def test_the_language_model_serves_its_continuations_and_its_step(served):
    tasks, out = served
    task = tasks["LanguageModel"]
    assert out["continue"]["continuation"] == task.generate(TEXTS)
    assert any(out["continue"]["continuation"])
    # the streaming step from zero states: the logits of a full pass over one token
    logits = np_(task(np.array([[END_ID], [START_ID]]), training=False))[:, -1]
    served_logits = np.array(out["lm_step"]["logits"])
    np.testing.assert_allclose(served_logits[:, 1:], logits[:, 1:], atol=1e-5)
    assert (served_logits[:, 0] < -1e8).all()  # padding is never generated


def test_the_translator_serves_its_translations_and_its_streaming_pair(served):
    tasks, out = served
    task = tasks["Seq2Seq"]
    greedy = task.generate(SOURCES, return_scores=True)
    for key in ("translate", "default"):
        assert out[key]["translation"] == [row[0]["text"] for row in greedy]
        np.testing.assert_allclose(
            out[key]["score"], [row[0]["score"] for row in greedy], atol=1e-4
        )
    assert out["translate"]["translation"][1] == out["translate"]["translation"][3] == ""
    beam = task.generate(SOURCES, decoding.BeamSearch(4), return_scores=True)
    assert out["n_best"]["translations"] == [[h["text"] for h in row] for row in beam]
    np.testing.assert_allclose(
        out["n_best"]["scores"], [[h["score"] for h in row] for row in beam], atol=1e-4
    )
    # encode, then one decoder step from [START]: the task's own first step
    source = task.preprocessor.source
    ids = np.array([source.vocabulary.encode(source.tokenize(SOURCES[:1])[0])], "int32")
    encoded = task.encode(ids)
    logits, _ = task.step_fn(encoded, return_alignments=False)(
        np.array([START_ID], "int32"), encoded.states
    )
    np.testing.assert_allclose(out["decoder_step"]["logits"], np_(logits), atol=1e-5)
    assert out["encode"]["lengths"] == [3]


def test_export_task_errors_are_one_line(tmp_path):
    from kerasrnn.models import SentenceEncoder, TextClassifier

    with pytest.raises(ValueError, match="TextClassifier has no preprocessor: the export takes"):
        export_task(TextClassifier(SentenceEncoder(12, 4), 2), tmp_path / "a")
    with pytest.raises(ValueError, match="`format` must be one of 'saved_model'"):
        export_task(BUILDERS["TextClassifier"](), tmp_path / "b", format="tflite")
    with pytest.raises(TypeError, match="`task` must be a kerasrnn.models TextClassifier"):
        export_task(types.SimpleNamespace(preprocessor=object()), tmp_path / "c")
    assert not any(tmp_path.iterdir())  # nothing written
