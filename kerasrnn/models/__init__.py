"""Every recipe's model as a library task, keras-hub style (a backbone and a task).

* `LanguageModel` -- a recurrent language model (`LanguageModelBackbone`, AWD-LSTM's
  regularisers as a `LanguageModelRegularization`): `fit`, `perplexity`, `generate`;
* `TextClassifier` -- a sentence classifier over a `SentenceEncoder` (embedding,
  recurrent stack, pooling), optionally times a Naive Bayes n-gram expert;
* `PairClassifier` -- a sentence-pair model (entailment, relatedness) over one shared
  `SentenceEncoder`;
* `SequenceTagger` -- a tagger (POS, NER) over a `SequenceTaggerBackbone` (words,
  characters, biLM features, a BiRNN), softmax or CRF with tag-scheme constraints;
  `predict_tags` gives tags and entity spans;
* `Seq2Seq` -- the attentive encoder-decoder (`kerasrnn.seq2seq`).
"""

from kerasrnn.models.language_model import LanguageModel
from kerasrnn.models.language_model_backbone import (
    LanguageModelBackbone,
    LanguageModelRegularization,
)
from kerasrnn.models.pair_classifier import PairClassifier, score_distribution
from kerasrnn.models.sentence_encoder import SentenceEncoder
from kerasrnn.models.sequence_tagger import (
    SequenceTagger,
    SequenceTaggerBackbone,
    is_entity_tags,
)
from kerasrnn.models.text_classifier import TextClassifier
from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

__all__ = [
    "LanguageModel",
    "LanguageModelBackbone",
    "LanguageModelRegularization",
    "PairClassifier",
    "SentenceEncoder",
    "Seq2Seq",
    "Seq2SeqBackbone",
    "SequenceTagger",
    "SequenceTaggerBackbone",
    "TextClassifier",
    "is_entity_tags",
    "score_distribution",
]
