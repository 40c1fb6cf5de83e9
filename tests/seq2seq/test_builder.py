"""`attentive_seq2seq`: the parts it is given, wired as the translator's model."""

import numpy as np

import kerasrnn
from kerasrnn.data.text import TextSide
from kerasrnn.seq2seq import Seq2SeqPreprocessor, attentive_seq2seq


def test_the_model_is_built_over_the_preprocessors_vocabularies():
    sources, targets = ["ein mann", "eine frau geht"], ["a man", "a woman walks away"]
    sides = [TextSide.build(texts, "word", True, 100, 1, 0) for texts in (sources, targets)]
    preprocessor = Seq2SeqPreprocessor(*sides)
    decoder_cell = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(7), kerasrnn.BahdanauAttention(4), kerasrnn.AttendThenRun(), None
    )
    model = attentive_seq2seq(
        preprocessor,
        kerasrnn.GRUCell(6),
        decoder_cell,
        num_layers=2,
        embedding_dim=5,
        max_lengths=(9, 11),
    )
    assert model.preprocessor is preprocessor and model.weights  # built before any fit
    encoder = model.backbone.encoder
    assert encoder.bidirectional and encoder.num_layers == 2
    assert (model.max_source_length, model.max_target_length) == (9, 11)
    source = np.array([[5, 6, 0]], "int32")
    target = np.array([[2, 5, 6, 7]], "int32")
    logits = model({"source": source, "target_in": target})
    assert tuple(logits.shape) == (1, 4, len(sides[1].vocabulary))
