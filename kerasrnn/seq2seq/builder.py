"""`attentive_seq2seq`: the attentive encoder-decoder of Bahdanau et al. (2015) and Luong
et al. (2015) from its parts, as OpenNMT's model builder assembles its models.

The encoder reads the source both ways, h_j = [->h_j ; <-h_j], stacked `num_layers`
deep; a dense bridge maps its final states to the decoder's first, s_0 = tanh(W [->h_n ;
<-h_1]); the decoder cell (an `AttentionCell`: Bahdanau's or Luong's attention, the step
order, the attentional projection) runs over the target embeddings and the readout
projects each step onto the target vocabulary.
"""

from kerasrnn.seq2seq.backbone import Seq2SeqBackbone
from kerasrnn.seq2seq.encoder import RNNEncoder
from kerasrnn.seq2seq.model import Seq2Seq


def attentive_seq2seq(
    preprocessor,
    encoder_cell,
    decoder_cell,
    *,
    num_layers=1,
    embedding_dim=256,
    dropout=0.0,
    max_lengths=(50, 80),
    scheduled_sampling=None,
    copy_readout=None,
):
    """A built `Seq2Seq` over `preprocessor` (a `Seq2SeqPreprocessor`, whose two
    vocabularies size the embeddings and the readout).

    Args:
        preprocessor: the task's `Seq2SeqPreprocessor`.
        encoder_cell: the cell of each encoder direction and layer (copied per layer).
        decoder_cell: the decoder's `kerasrnn.AttentionCell`.
        num_layers: encoder layers.
        embedding_dim: each side's embedding width.
        dropout: on the embeddings, between encoder layers and before the readout.
        max_lengths: ``(source, target)``: the longest source read, the longest target
            generated.
        scheduled_sampling: a `ScheduledSampling` regime for `fit`, or None (teacher
            forcing).
        copy_readout: a `CopyReadout` (copy attention), or None.

    The weights exist on return, so a checkpoint loads into the model before `fit`.
    """
    backbone = Seq2SeqBackbone(
        len(preprocessor.source.vocabulary),
        len(preprocessor.target.vocabulary),
        encoder=RNNEncoder(
            encoder_cell, num_layers=num_layers, bidirectional=True, dropout=dropout, name="encoder"
        ),
        decoder_cell=decoder_cell,
        bridge="dense",
        embedding_dim=embedding_dim,
        dropout=dropout,
        name="backbone",
    )
    model = Seq2Seq(
        backbone,
        max_source_length=max_lengths[0],
        max_target_length=max_lengths[1],
        scheduled_sampling=scheduled_sampling,
        copy_readout=copy_readout,
        preprocessor=preprocessor,
        name="translator",
    )
    model.build()
    return model
