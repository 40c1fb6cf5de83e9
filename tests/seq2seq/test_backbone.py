"""Seq2SeqBackbone: the encoder and one decoder step called on their own give the
teacher-forced pass; `.keras` round trips of the backbone inside the task; the
constructors' argument counts."""

import inspect
import json

import keras
import numpy as np
import pytest
from keras import ops

import kerasrnn
from kerasrnn.layers import Bridge, CopyBridge, DenseBridge, NoBridge, ZerosBridge
from kerasrnn.seq2seq import (
    RNNEncoder,
    ScheduledSampling,
    Seq2Seq,
    Seq2SeqBackbone,
)

SOURCE = np.array([[5, 6, 7, 8, 0], [9, 4, 0, 0, 0], [4, 5, 6, 7, 8]], "int32")
TARGET_IN = np.array([[2, 4, 5, 6], [2, 7, 0, 0], [2, 8, 9, 4]], "int32")


def np_(x):
    return ops.convert_to_numpy(x)


def luong_backbone(bridge):
    cell = kerasrnn.AttentionCell(
        kerasrnn.LSTMCell(6), kerasrnn.LuongAttention("general"), kerasrnn.RunThenAttend()
    )
    return Seq2SeqBackbone(
        12,
        10,
        encoder=RNNEncoder(kerasrnn.LSTMCell(3)),
        decoder_cell=cell,
        bridge=bridge,
        embedding_dim=5,
    )


BACKBONES = {
    "dense": lambda: Seq2SeqBackbone(12, 10, embedding_dim=5, units=6),
    "copy": lambda: luong_backbone("copy"),
    "linear_dense": lambda: luong_backbone(DenseBridge(activation=None)),
    "none": lambda: Seq2SeqBackbone(12, 10, bridge="none", embedding_dim=5, units=6),
}


@pytest.mark.parametrize("name", sorted(BACKBONES))
def test_encoder_and_decoder_steps_give_the_teacher_forced_pass(name):
    backbone = BACKBONES[name]()
    logits, alignments = (np_(x) for x in backbone(SOURCE, TARGET_IN))
    assert logits.shape == (3, 4, 10) and alignments.shape == (3, 4, 5)
    encoded = backbone.call_encoder(SOURCE)
    np.testing.assert_array_equal(np_(encoded.lengths), [4, 2, 5])
    states, stepped, stepped_alignments = encoded.states, [], []
    for t in range(TARGET_IN.shape[1]):
        out, states, align = backbone.call_decoder_step(TARGET_IN[:, t], states, encoded.memory)
        stepped.append(np_(out))
        stepped_alignments.append(np_(align))
    real = TARGET_IN != 0
    np.testing.assert_allclose(np.stack(stepped, 1)[real], logits[real], atol=1e-5)
    np.testing.assert_allclose(np.stack(stepped_alignments, 1)[real], alignments[real], atol=1e-6)


def test_call_decoder_step_takes_a_readout():
    backbone = BACKBONES["dense"]()
    encoded = backbone.call_encoder(SOURCE)
    kernel, bias = (np_(w) for w in backbone.readout_weights())
    outputs = []
    logits, _, _ = backbone.call_decoder_step(
        TARGET_IN[:, 0],
        encoded.states,
        encoded.memory,
        readout=lambda o: outputs.append(np_(o)) or ops.zeros((3, 10)),
    )
    np.testing.assert_array_equal(np_(logits), 0.0)
    default, _, _ = backbone.call_decoder_step(TARGET_IN[:, 0], encoded.states, encoded.memory)
    np.testing.assert_allclose(np_(default), outputs[0] @ kernel + bias, atol=1e-5)


@pytest.mark.large
def test_keras_file_round_trip_of_every_piece(tmp_path):
    cell = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(6), kerasrnn.BahdanauAttention(4), projection=kerasrnn.LuongProjection(5)
    )
    backbone = Seq2SeqBackbone(
        12,
        11,
        decoder_cell=cell,
        bridge=DenseBridge(None),
        embedding_dim=5,
        dropout=0.1,
        tie_embeddings=True,
        pad_id=1,
    )
    sampling = ScheduledSampling("inverse_sigmoid", 0.3, steps=7, mode="argmax", seed=4)
    model = Seq2Seq(
        backbone,
        start_id=2,
        end_id=3,
        max_source_length=4,
        max_target_length=6,
        scheduled_sampling=sampling,
    )
    source, target_in = SOURCE + 1, TARGET_IN + 1  # pad_id=1
    model.compile()
    model.fit({"source": source, "target_in": target_in}, target_in, epochs=1, verbose=0)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert architecture(loaded) == architecture(model)
    assert isinstance(loaded.backbone.bridge, DenseBridge)
    assert loaded.backbone.bridge.activation is keras.activations.linear
    assert int(np_(loaded.scheduled_sampling.step)) == 1
    for a, b in zip(model.weights, loaded.weights):
        assert a.name == b.name  # (paths follow the name scope the weights were built in)
        np.testing.assert_array_equal(np_(a), np_(b))
    inputs = {"source": source, "target_in": target_in}
    np.testing.assert_array_equal(np_(model(inputs)), np_(loaded(inputs)))
    np.testing.assert_array_equal(
        np_(model.generate(source, max_length=6).tokens),
        np_(loaded.generate(source, max_length=6).tokens),
    )


def architecture(model):
    """The config without the layers' recorded build shapes (which follow the last
    call), tuples as lists."""

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "build_config"}
        return [strip(v) for v in value] if isinstance(value, list) else value

    return strip(json.loads(json.dumps(model.get_config())))


def count_arguments(function):
    """Named parameters, not self and not **kwargs."""
    return (
        sum(
            p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
            for p in inspect.signature(function).parameters.values()
        )
        - 1
    )


def test_constructors_take_at_most_ten_arguments():
    counts = {
        cls.__name__: count_arguments(cls.__init__)
        for cls in (
            Seq2Seq,
            Seq2SeqBackbone,
            ScheduledSampling,
            RNNEncoder,
            Bridge,
            DenseBridge,
            CopyBridge,
            ZerosBridge,
            NoBridge,
        )
    }
    assert counts["Seq2Seq"] == 8 and counts["Seq2SeqBackbone"] == 10  # (Seq2Seq had 19)
    assert max(counts.values()) <= 10, counts


def test_bad_pieces():
    with pytest.raises(ValueError, match="`backbone` must be a kerasrnn.seq2seq.Seq2SeqBackbone"):
        Seq2Seq(kerasrnn.GRUCell(4))
    backbone = Seq2SeqBackbone(12, 10, embedding_dim=5, units=6)
    with pytest.raises(ValueError, match="`scheduled_sampling` must be None or"):
        Seq2Seq(backbone, scheduled_sampling="linear")
    with pytest.raises(ValueError, match="`pad_id`=12 is not a source id"):
        Seq2SeqBackbone(12, 20, pad_id=12)
    with pytest.raises(ValueError, match="`start_id`=10 is not a target id"):
        Seq2Seq(backbone, start_id=10)
    with pytest.raises(ValueError, match="`bridge` must be one of"):
        Seq2SeqBackbone(12, 10, bridge=NoBridge)  # the class, not a layer
