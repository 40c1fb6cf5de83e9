"""Copy attention (`kerasrnn.seq2seq.CopyReadout`) against a NumPy transcription of the
pointer-generator (See et al. 2017) with out-of-vocabulary source words, finite-
difference gradients, decoding through every strategy, and saving."""

import keras
import numpy as np
import pytest

from kerasrnn import decoding
from kerasrnn.data import Vocabulary, copy_decode, copy_target_ids, copy_vocabulary_map
from kerasrnn.ops import padding_mask
from kerasrnn.seq2seq import CopyReadout, Seq2Seq, Seq2SeqBackbone
from tests.autodiff import gradients

V = 10  # target ids; source ids 0..13 map through TABLE (-1: not a target word)
TABLE = [0, 1, 2, 3, 7, 5, -1, 4, 9, -1, 6, 8, -1, -1]
# example 0: OOV 6 twice (one extended id, V + 0), OOV 9 and 12; example 1: OOV 13 twice
SOURCE = np.array([[6, 4, 9, 6, 12, 0], [13, 13, 5, 11, 0, 0]], "int32")
TARGET_IN = np.array([[2, 7, 1, 4], [2, 1, 5, 0]], "int32")


def np_(x):
    return keras.ops.convert_to_numpy(x)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(3)
    backbone = Seq2SeqBackbone(len(TABLE), V, embedding_dim=6, units=5)
    model = Seq2Seq(backbone, max_target_length=4, copy_readout=CopyReadout(TABLE))
    model.build()
    rng = np.random.default_rng(0)
    readout = model.copy_readout
    for weight in (readout.w_c, readout.w_s, readout.w_x):
        weight.assign(rng.normal(0, 0.7, weight.shape).astype("float32"))
    readout.b.assign(np.array([0.3], "float32"))
    return model


def reference(logits, outputs, inputs, alignments, values, source, w_c, w_s, w_x, b):
    """p(w) = p_gen softmax(z)(w) + (1 - p_gen) sum_{i: x_i = w} a_i, per step, over
    target ids then V + (first position) for the source words outside the target side."""
    batch, steps, tx = alignments.shape
    out = np.zeros((batch, steps, V + tx))
    for n in range(batch):
        for t in range(steps):
            a = alignments[n, t]
            c = a @ values[n]
            p_gen = 1 / (1 + np.exp(-(c @ w_c + outputs[n, t] @ w_s + inputs[n, t] @ w_x + b)))
            z = logits[n, t] - logits[n, t].max()
            out[n, t, :V] = p_gen * np.exp(z) / np.exp(z).sum()
            for i, word in enumerate(source[n]):
                if word == 0:
                    continue
                first = list(source[n]).index(word)
                index = TABLE[word] if TABLE[word] >= 0 else V + first
                out[n, t, index] += (1 - p_gen) * a[i]
    return out


def test_teacher_forced_probabilities_match_numpy(model):
    log_p = np_(model({"source": SOURCE, "target_in": TARGET_IN}))
    pieces, alignments, _ = model.backbone.decoder_outputs(SOURCE, TARGET_IN)
    logits = np_(model.backbone.readout_logits(pieces["outputs"]))
    readout = model.copy_readout
    expected = reference(
        logits,
        np_(pieces["outputs"]),
        np_(pieces["inputs"]),
        np_(alignments),
        np_(pieces["memory"]),
        SOURCE,
        *(np_(w)[:, 0] for w in (readout.w_c, readout.w_s, readout.w_x)),
        float(np_(readout.b)[0]),
    )
    assert log_p.shape == (2, 4, V + 6)
    real = TARGET_IN != 0
    np.testing.assert_allclose(np.exp(log_p)[real], expected[real], atol=2e-6)
    np.testing.assert_allclose(np.exp(log_p)[real].sum(-1), 1.0, atol=1e-5)
    # both positions of the OOV word 6 add up on one id; the copy mass is not zero
    assert expected[0, 0, V] > 1e-3 and expected[0, 0, V + 3] == 0


def test_gradients_match_finite_differences(model):
    rng = np.random.default_rng(1)
    readout = model.copy_readout
    ids = readout.extended_ids(SOURCE, padding_mask(SOURCE))
    labels = np.array([[V, 4, V + 2], [V, 5, 3]])
    xs = [
        rng.normal(size=(2, 3, V)),  # logits
        rng.normal(size=(2, 3, 5 + 10)),  # decoder outputs [s; c]
        rng.normal(size=(2, 3, 6)),  # embedded inputs
        rng.normal(size=(2, 6, 10)),  # encoder outputs
    ]
    a = np.abs(rng.normal(size=(2, 3, 6))) * (SOURCE != 0)[:, None, :]
    alignments = keras.ops.convert_to_tensor(a / a.sum(-1, keepdims=True), "float32")

    def loss(values):
        logits, outputs, inputs, memory = values
        log_p = readout(logits, outputs, inputs, alignments, memory, ids)
        labelled = keras.ops.convert_to_tensor(labels)[..., None]
        picked = keras.ops.take_along_axis(log_p, labelled, -1)
        return -keras.ops.sum(picked)

    xs = [x.astype("float32") for x in xs]
    analytic = gradients(loss, xs)
    for index in range(len(xs)):
        for _ in range(3):
            spot = tuple(rng.integers(0, n) for n in xs[index].shape)
            plus = [x.copy() for x in xs]
            minus = [x.copy() for x in xs]
            plus[index][spot] += 1e-2
            minus[index][spot] -= 1e-2
            numeric = (float(np_(loss(plus))) - float(np_(loss(minus)))) / 2e-2
            np.testing.assert_allclose(analytic[index][spot], numeric, rtol=3e-2, atol=3e-3)


def test_decoder_step_matches_teacher_forcing(model):
    """The step function (an extended id fed back as [UNK]) gives the teacher-forced
    log-probabilities, [PAD] and the extended ids of no source word blocked."""
    encoded = model.encode(SOURCE)
    step = model.step_fn(encoded)
    states = encoded.states
    tokens = [np.array([2, 2]), np.array([V + 0, 5]), np.array([V + 2, V + 0])]
    teacher_in = np.array([[2, 1, 1], [2, 5, 1]])
    teacher = np_(model({"source": SOURCE, "target_in": teacher_in}))
    used = np.zeros((2, 6), bool)
    used[0, [0, 2, 4]] = used[1, 0] = True
    blocked = np.concatenate([np.eye(V, dtype=bool)[[0, 0]], ~used], axis=1)
    for t, given in enumerate(tokens):
        log_p, states, _ = step(given, states)
        log_p = np_(log_p)
        np.testing.assert_allclose(log_p[~blocked], teacher[:, t][~blocked], atol=2e-5)
        assert (log_p[blocked] < -1e8).all()


def _renormalised_teacher(model, source, tokens):
    """log p of each decoded hypothesis under teacher forcing, renormalised without
    the blocked ids, as decoding scores it."""
    readout = model.copy_readout
    batch, n, length = tokens.shape
    flat = tokens.reshape(batch * n, length)
    fed = np.where(flat >= V, readout.unk_id, flat)
    target_in = np.concatenate([np.full((batch * n, 1), 2), fed[:, :-1]], axis=1)
    target_in[flat == 0] = 0
    sources = np.repeat(source, n, axis=0)
    log_p = np_(model({"source": sources, "target_in": target_in}))
    _, used = readout.extended_ids(sources, padding_mask(sources))
    blocked = np.concatenate([np.eye(V, dtype=bool)[np.zeros(batch * n, int)], ~np_(used)], 1)
    log_p = np.where(blocked[:, None, :], -np.inf, log_p)
    log_p = log_p - np.logaddexp.reduce(log_p, axis=-1, keepdims=True)
    picked = np.take_along_axis(log_p, np.maximum(flat, 0)[..., None], -1)[..., 0]
    return np.where(flat != 0, picked, 0.0).sum(-1).reshape(batch, n)


@pytest.mark.parametrize(
    "strategy",
    [
        decoding.GreedySearch(),
        decoding.BeamSearch(3, n_best=2),
        decoding.RandomSampling(seed=4),
        decoding.DiverseBeamSearch(4, groups=2),
        decoding.ExhaustiveSearch(V + 6, 3, n_best=2),
    ],
    ids=["greedy", "beam", "sampling", "diverse", "exhaustive"],
)
def test_every_strategy_decodes_the_copy_distribution(model, strategy):
    length = 3
    # (run as called: tracing a compiled loop per strategy costs more than 3 steps)
    result = model.generate(SOURCE, strategy, max_length=length, jit_compile=False)
    tokens = np_(result.tokens)
    assert tokens.max() < V + 6
    extended = tokens >= V
    _, used = model.copy_readout.extended_ids(SOURCE, padding_mask(SOURCE))
    rows = np.broadcast_to(np.arange(2)[:, None, None], tokens.shape)
    assert np_(used)[rows[extended], tokens[extended] - V].all()  # a source word only
    np.testing.assert_allclose(
        np_(result.log_probs), _renormalised_teacher(model, SOURCE, tokens), atol=1e-4
    )


def test_saved_and_reloaded_model_decodes_the_same(model, tmp_path):
    path = tmp_path / "copy.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.copy_readout.source_to_target == TABLE
    np.testing.assert_allclose(
        np_(loaded({"source": SOURCE, "target_in": TARGET_IN})),
        np_(model({"source": SOURCE, "target_in": TARGET_IN})),
        atol=1e-6,
    )
    beam = decoding.BeamSearch(3)
    np.testing.assert_array_equal(
        np_(loaded.generate(SOURCE, beam, jit_compile=False).tokens),
        np_(model.generate(SOURCE, beam, jit_compile=False).tokens),
    )


def test_vocabulary_helpers_round_trip():
    source = Vocabulary(["Anna", "sieht", "Bob", "Carl"])
    target = Vocabulary(["sees", "Anna"])
    table = copy_vocabulary_map(source, target)
    assert table[:4] == [0, 1, 2, 3] and table[4:] == [5, -1, -1, -1]
    words = ["Bob", "sieht", "Dora", "Bob"]
    ids = copy_target_ids(words, ["Bob", "sees", "Dora", "Anna"], source, target)
    assert ids == [6, 4, 1, 5, 3]  # Bob at position 0; Dora is no source word: [UNK]
    assert copy_decode(ids[:-1], words, target) == ["Bob", "sees", "[UNK]", "Anna"]


def test_bad_arguments_fail_in_one_line():
    backbone = Seq2SeqBackbone(len(TABLE), V, embedding_dim=4, units=4)
    with pytest.raises(ValueError, match="one entry per source id"):
        Seq2Seq(backbone, copy_readout=CopyReadout([0, 1, 2])).build()
    with pytest.raises(ValueError, match="target ids or -1"):
        CopyReadout([0, -3])
    with pytest.raises(ValueError, match="copy_readout"):
        Seq2Seq(backbone, copy_readout="yes")
    copying = Seq2Seq(backbone, copy_readout=CopyReadout(TABLE))
    lm = (lambda tokens, states: (None, states), lambda batch_size: ())
    fusion = decoding.ShallowFusion(lm, 0.3)
    with pytest.raises(ValueError, match="fusion` with a `copy_readout"):
        copying.generate(SOURCE, "greedy", fusion=fusion)


def _sides(source, target):
    from kerasrnn.data.text import TextSide
    from kerasrnn.seq2seq import Seq2SeqPreprocessor

    return Seq2SeqPreprocessor(TextSide(source, "word"), TextSide(target, "word"))


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="export: tensorflow")
def test_runtime_bundles_refuse_copy_attention(tmp_path):
    from kerasrnn.export import export_task

    words = [f"w{i}" for i in range(len(TABLE) - 4)]
    model = Seq2Seq(
        Seq2SeqBackbone(len(TABLE), V, embedding_dim=4, units=4),
        max_source_length=6,
        copy_readout=CopyReadout(TABLE),
        preprocessor=_sides(Vocabulary(words), Vocabulary(words[: V - 4])),
    )
    for format_name in ("onnx", "litert"):
        with pytest.raises(ValueError, match="translator cannot hold copy attention"):
            export_task(model, tmp_path / format_name, format=format_name)
    assert not any(tmp_path.iterdir())  # refused before anything is written


@pytest.mark.large
@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="SavedModel: tensorflow")
def test_exported_saved_model_writes_copied_source_words(tmp_path):
    import tensorflow as tf

    from kerasrnn.export import export_task

    source = Vocabulary(["anna", "sees", "bob", "carl"])
    target = Vocabulary(["sieht", "anna"])
    keras.utils.set_random_seed(5)
    model = Seq2Seq(
        Seq2SeqBackbone(len(source), len(target), embedding_dim=4, units=4),
        max_source_length=4,
        max_target_length=3,
        copy_readout=CopyReadout(copy_vocabulary_map(source, target)),
        preprocessor=_sides(source, target),
    )
    model.build()
    model.copy_readout.b.assign(np.array([-30.0], "float32"))  # p_gen ~ 0: copy only
    texts = ["bob sees carl", "carl anna"]
    export_task(model, tmp_path / "sm", n_best_strategy=decoding.GreedySearch())
    served = tf.saved_model.load(str(tmp_path / "sm")).signatures["translate"]
    got = [t.decode() for t in served(text=tf.constant(texts))["translation"].numpy()]
    ids = keras.utils.pad_sequences([source.encode(t.split()) for t in texts], 4, padding="post")
    tokens = np_(model.generate(ids, "greedy", max_length=3, jit_compile=False).tokens)[:, 0]
    expected = []
    for words, row in zip(texts, tokens):
        names = copy_decode([i for i in row if i > 3], words.split(), target)
        expected.append(" ".join(names))
    assert got == expected
    # copied source words the target vocabulary lacks, not [UNK]
    assert got[0] and set(got[0].split()) <= {"bob", "sees", "carl"}
    # and generate on text gives what the SavedModel serves
    assert model.generate(texts, max_length=3) == got
