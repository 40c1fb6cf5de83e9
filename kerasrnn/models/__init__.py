"""Every recipe's model as a library task, keras-hub style (a backbone and a task).

* `Seq2Seq` -- the attentive encoder-decoder (`kerasrnn.seq2seq`).
"""

from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

__all__ = [
    "Seq2Seq",
    "Seq2SeqBackbone",
]
