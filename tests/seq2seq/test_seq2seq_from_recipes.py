"""`Seq2Seq` as the translator recipe builds it (moved here from the recipe's tests): a
bidirectional two-layer `RNNEncoder`, the dense bridge and Bahdanau's or Luong's
attentive decoder. The label-smoothed teacher-forced loss equals the decoder run one
step at a time on the gold previous tokens, as decoding runs it."""

import numpy as np
import pytest
from keras import ops

import kerasrnn
from kerasrnn.losses import SequenceCrossEntropy
from kerasrnn.seq2seq import RNNEncoder, Seq2Seq, Seq2SeqBackbone

SOURCE_VOCAB, TARGET_VOCAB = 12, 14  # 4 special tokens, then 8 and 10 words


def translator_like(attention, cell):
    """What `recipes.translator.build_model` builds (tiny widths, no dropout)."""
    encoder = RNNEncoder(kerasrnn.cells.get(cell, 6), num_layers=2, bidirectional=True)
    if attention == "bahdanau":
        mechanism, order = kerasrnn.BahdanauAttention(4), kerasrnn.AttendThenRun()
    else:
        mechanism, order = kerasrnn.LuongAttention("general"), kerasrnn.RunThenAttend(True)
    decoder_cell = kerasrnn.AttentionCell(kerasrnn.cells.get(cell, 7), mechanism, order, None)
    backbone = Seq2SeqBackbone(
        SOURCE_VOCAB,
        TARGET_VOCAB,
        encoder=encoder,
        decoder_cell=decoder_cell,
        bridge="dense",
        embedding_dim=5,
    )
    model = Seq2Seq(backbone, max_source_length=50, max_target_length=80)
    model.build()
    return model


@pytest.mark.parametrize(
    "attention,cell,smoothing",
    [
        ("bahdanau", "gru", 0.0),
        ("luong", "lstm", 0.1),
    ],
)
def test_teacher_forced_loss_equals_feeding_gold_tokens_step_by_step(attention, cell, smoothing):
    model = translator_like(attention, cell)
    # A fresh model's logits are nearly uniform; a larger readout makes them tell
    # tokens apart (the check at the end needs that).
    readout = model.backbone.readout
    readout.kernel.assign(readout.kernel * 100.0)
    rng = np.random.default_rng(0)
    source = rng.integers(4, SOURCE_VOCAB, (3, 6)).astype("int32")
    source[0, 4:] = 0  # padded sources
    source[2, 2:] = 0
    gold = rng.integers(4, TARGET_VOCAB, (3, 5)).astype("int32")
    target_in = np.concatenate([np.full((3, 1), 2, "int32"), gold], axis=1)
    target_out = np.concatenate([gold, np.zeros((3, 1), "int32")], axis=1)
    target_out[np.arange(3), [5, 3, 1]] = 3  # [END] at different lengths
    target_out[1, 4:] = 0
    target_out[2, 2:] = 0
    target_in[1, 4:] = 0
    target_in[2, 2:] = 0
    loss_fn = SequenceCrossEntropy(label_smoothing=smoothing)
    logits = model({"source": source, "target_in": target_in}, training=False)
    teacher_forced = float(ops.convert_to_numpy(loss_fn(target_out, logits)))

    # The decoder run one step at a time on the gold previous tokens, as decoding does
    # (the readout's own logits: `step_fn` also sets [PAD]'s to -1e9 for decoding).
    encoded = model.encode(source)
    states = encoded.states
    total, count = 0.0, 0
    for t in range(target_in.shape[1]):
        step_logits, states, _ = model.backbone.call_decoder_step(
            ops.convert_to_tensor(target_in[:, t]), states, encoded.memory
        )
        log_p = ops.convert_to_numpy(ops.log_softmax(step_logits, axis=-1)).astype("float64")
        for b in range(3):
            if target_out[b, t]:
                nll = -log_p[b, target_out[b, t]]
                total += (1 - smoothing) * nll - smoothing * log_p[b].mean()
                count += 1
    assert teacher_forced == pytest.approx(total / count, rel=1e-5)
    # And the loss is not blind to the gold tokens.
    wrong = np.where(target_out > 3, 4 + (target_out - 3) % 10, target_out)
    assert float(ops.convert_to_numpy(loss_fn(wrong, logits))) != pytest.approx(
        teacher_forced, rel=1e-4
    )
