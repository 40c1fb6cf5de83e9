"""Every recipe's model as a library task, keras-hub style (a backbone and a task).

* `LanguageModel` -- a recurrent language model (`LanguageModelBackbone`, AWD-LSTM's
  regularisers as a `LanguageModelRegularization`): `fit`, `perplexity`, `generate`;
* `Seq2Seq` -- the attentive encoder-decoder (`kerasrnn.seq2seq`).
"""

from kerasrnn.models.language_model import LanguageModel
from kerasrnn.models.language_model_backbone import (
    LanguageModelBackbone,
    LanguageModelRegularization,
)
from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

__all__ = [
    "LanguageModel",
    "LanguageModelBackbone",
    "LanguageModelRegularization",
    "Seq2Seq",
    "Seq2SeqBackbone",
]
