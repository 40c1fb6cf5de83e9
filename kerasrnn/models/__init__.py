"""Every recipe's model as a library task, keras-hub style: a backbone (the network), a
task (the head, `compile` defaults, `predict` / `generate`) and a preprocessor (text to
ids and back), saved together and loaded with `Task.from_preset`.

* `TextClassifier` -- a sentence classifier over a `SentenceEncoder` (embedding,
  recurrent stack, pooling), optionally times a Naive Bayes n-gram expert;
  `TextClassifierPreprocessor`;
* `PairClassifier` -- a sentence-pair model (entailment, relatedness) over one shared
  `SentenceEncoder`; `PairClassifierPreprocessor`;
* `SequenceTagger` -- a tagger (POS, NER) over a `SequenceTaggerBackbone` (words,
  characters, biLM features, a BiRNN), softmax or CRF with tag-scheme constraints;
  `SequenceTaggerPreprocessor`;
* `LanguageModel` -- a recurrent language model (`LanguageModelBackbone`, AWD-LSTM's
  regularisers as a `LanguageModelRegularization`): `fit`, `perplexity`, `generate`;
  `LanguageModelPreprocessor`;
* `Seq2Seq` -- the attentive encoder-decoder (`kerasrnn.seq2seq`), with its
  `Seq2SeqPreprocessor`; `attentive_seq2seq` builds the translator recipe's one.

`Backbone`, `Task`, `GenerativeTask` and `Preprocessor` are the bases they share;
`copy_language_model` and `layer_groups` start a sentence task from a language model
(ULMFiT).
"""

from kerasrnn.models.backbone import Backbone
from kerasrnn.models.language_model import LanguageModel
from kerasrnn.models.language_model_backbone import (
    LanguageModelBackbone,
    LanguageModelRegularization,
)
from kerasrnn.models.language_model_preprocessor import LanguageModelPreprocessor
from kerasrnn.models.pair_classifier import PairClassifier, score_distribution
from kerasrnn.models.pair_classifier_preprocessor import PairClassifierPreprocessor
from kerasrnn.models.preprocessor import Preprocessor
from kerasrnn.models.preset import PresetError
from kerasrnn.models.sentence_encoder import SentenceEncoder
from kerasrnn.models.sequence_tagger import (
    SequenceTagger,
    SequenceTaggerBackbone,
    is_entity_tags,
)
from kerasrnn.models.sequence_tagger_preprocessor import SequenceTaggerPreprocessor
from kerasrnn.models.task import GenerativeTask, Task
from kerasrnn.models.text_classifier import TextClassifier
from kerasrnn.models.text_classifier_preprocessor import TextClassifierPreprocessor
from kerasrnn.models.transfer import copy_language_model, layer_groups
from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone, Seq2SeqPreprocessor, attentive_seq2seq

__all__ = [
    "Backbone",
    "GenerativeTask",
    "LanguageModel",
    "LanguageModelBackbone",
    "LanguageModelPreprocessor",
    "LanguageModelRegularization",
    "PairClassifier",
    "PairClassifierPreprocessor",
    "Preprocessor",
    "PresetError",
    "SentenceEncoder",
    "Seq2Seq",
    "Seq2SeqBackbone",
    "Seq2SeqPreprocessor",
    "SequenceTagger",
    "SequenceTaggerBackbone",
    "SequenceTaggerPreprocessor",
    "Task",
    "TextClassifier",
    "TextClassifierPreprocessor",
    "attentive_seq2seq",
    "copy_language_model",
    "is_entity_tags",
    "layer_groups",
    "score_distribution",
]
