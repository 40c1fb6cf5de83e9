"""`SequenceTaggerBackbone` (words, character features, optional biLM features, a
bidirectional recurrent stack) and `SequenceTagger`, the task around it (a softmax or a
CRF with tag-scheme constraints; tags and entity spans from `predict_tags`)."""

import re

import keras
import numpy as np
from keras import ops

from kerasrnn.cells.lstm import LSTMCell
from kerasrnn.cells.stack import RNNStack
from kerasrnn.layers.crf import CRF, CRFAccuracy, CRFLoss, crf_decode, crf_marginals
from kerasrnn.layers.dropout import WordDropout
from kerasrnn.layers.reshape import MergeBatchTime, SplitBatchTime
from kerasrnn.layers.scalar_mix import ScalarMix
from kerasrnn.layers.tag_schemes import allowed_transitions
from kerasrnn.metrics.entities import entity_spans
from kerasrnn.models.sentence_encoder import deserialize
from kerasrnn.models.task import Task
from kerasrnn.validation import check_choice, check_int, check_rate

SCHEMES = ("IOB1", "BIO", "BIOES")
_ENTITY_TAG = re.compile(r"^(O|[BIES]-.+)$")


def is_entity_tags(tags):
    """Whether every tag is ``O`` or ``B-X``, ``I-X`` (``E-X``, ``S-X``), and one is not
    ``O``: entity tags (IOB1, BIO or BIOES).

    >>> is_entity_tags(["O", "B-PER", "I-PER"]), is_entity_tags(["NOUN", "VERB"])
    (True, False)
    """
    tags = set(tags)
    return bool(tags) and all(_ENTITY_TAG.match(t) for t in tags) and any(t != "O" for t in tags)


@keras.saving.register_keras_serializable(package="kerasrnn")
class SequenceTaggerBackbone(keras.Model):
    """The features of a sequence tagger (Lample et al. 2016; Ma & Hovy 2016): a word
    embedding, optionally a character BiRNN per word and a biLM's layers mixed by a
    learned `ScalarMix` (ELMo), then a bidirectional recurrent stack.

    .. math::

        x_t = [E_w w_t ;\\; [\\overrightarrow{c}_{t} ; \\overleftarrow{c}_{t}] ;\\;
            \\gamma \\textstyle\\sum_l s_l\\, h^{\\text{LM}}_{t,l}], \\qquad
        h_1 \\dots h_T = \\text{BiRNN}(\\text{dropout}(x_1 \\dots x_T))

    where c_t are the final states of the character BiRNN over word t's characters.
    Inputs: a dict with ``word_ids`` `(batch, time)`, with characters ``char_ids``
    `(batch, time, chars)` and with a biLM ``lm_ids`` `(batch, time)` (the words' ids in
    the biLM vocabulary); id 0 is padding everywhere. Output: `(batch, time, 2 units)`,
    the Keras mask of the words attached.

    Args:
        word_vocabulary_size: word ids are in [0, word_vocabulary_size).
        embedding_dim: the word embedding width.
        cell: the cell of the sentence BiRNN (default ``kerasrnn.LSTMCell(128)``).
        num_layers: stacked sentence BiRNN layers.
        char_vocabulary_size: character ids are in [0, char_vocabulary_size); 0: no
            character features.
        char_dim: the character embedding width (with character features).
        char_cell: the cell of the character BiRNN (default ``LSTMCell(32)``).
        bilm: None, or a `kerasrnn.layers.BiLMFeatures` (its weights are saved with the
            model; frozen unless it is trainable).
        dropout: dropout rate between the sentence BiRNN's layers.
        word_dropout: in training, words become [UNK] (id 1) with this probability.
        embedding_dropout: dropout rate on the word features.
        seed: the seed of the word dropout.

    Example:

    >>> import numpy as np, kerasrnn
    >>> backbone = kerasrnn.models.SequenceTaggerBackbone(
    ...     30, 8, kerasrnn.GRUCell(6), char_vocabulary_size=20, char_dim=4,
    ...     char_cell=kerasrnn.GRUCell(3))
    >>> words = np.array([[4, 5, 0]]); chars = np.array([[[5, 6], [7, 0], [0, 0]]])
    >>> tuple(backbone({"word_ids": words, "char_ids": chars}).shape)
    (1, 3, 12)
    """

    def __init__(
        self,
        word_vocabulary_size,
        embedding_dim=100,
        cell=None,
        num_layers=1,
        char_vocabulary_size=0,
        char_dim=32,
        char_cell=None,
        bilm=None,
        dropout=0.0,
        word_dropout=0.0,
        embedding_dropout=0.0,
        seed=None,
        **kwargs,
    ):
        check_int("word_vocabulary_size", word_vocabulary_size)
        check_int("embedding_dim", embedding_dim)
        check_int("num_layers", num_layers)
        check_int("char_vocabulary_size", char_vocabulary_size, 0)
        if char_vocabulary_size:
            check_int("char_dim", char_dim)
        for name, rate in (
            ("dropout", dropout),
            ("word_dropout", word_dropout),
            ("embedding_dropout", embedding_dropout),
        ):
            check_rate(name, rate)
        cell = LSTMCell(128) if cell is None else deserialize(cell)
        char_cell = LSTMCell(32) if char_cell is None else deserialize(char_cell)
        bilm = deserialize(bilm)
        word_ids = keras.Input((None,), dtype="int32", name="word_ids")
        inputs = {"word_ids": word_ids}
        x = WordDropout(word_dropout, seed=seed, name="word_dropout")(word_ids)
        x = keras.layers.Embedding(
            word_vocabulary_size, embedding_dim, mask_zero=True, name="word_embedding"
        )(x)
        if char_vocabulary_size:
            char_ids = keras.Input((None, None), dtype="int32", name="char_ids")
            inputs["char_ids"] = char_ids
            c = MergeBatchTime(name="words_of_batch")(char_ids)
            c = keras.layers.Embedding(
                char_vocabulary_size, char_dim, mask_zero=True, name="char_embedding"
            )(c)
            c = RNNStack(char_cell, bidirectional=True, name="char_rnn")(c)
            c = SplitBatchTime(name="char_features")([c, char_ids])
            x = keras.layers.Concatenate(name="word_features")([x, c])
        if bilm is not None:
            lm_ids = keras.Input((None,), dtype="int32", name="lm_ids")
            inputs["lm_ids"] = lm_ids
            mixed = ScalarMix(name="bilm_mix")(bilm(lm_ids))
            x = keras.layers.Concatenate(name="contextual_word_features")([x, mixed])
        x = keras.layers.Dropout(embedding_dropout, name="embedding_dropout")(x)
        x = RNNStack(
            cell,
            num_layers=num_layers,
            bidirectional=True,
            dropout=dropout,
            return_sequences=True,
            name="rnn",
        )(x)
        kwargs.setdefault("name", "tagger_backbone")
        super().__init__(inputs, x, **kwargs)
        self.word_vocabulary_size, self.embedding_dim = word_vocabulary_size, embedding_dim
        self.num_layers, self.char_vocabulary_size = num_layers, char_vocabulary_size
        self.char_dim, self.bilm, self.seed = char_dim, bilm, seed
        self.dropout, self.word_dropout = float(dropout), float(word_dropout)
        self.embedding_dropout = float(embedding_dropout)

    def get_config(self):
        serialize = keras.saving.serialize_keras_object
        char_cell = self.get_layer("char_rnn").cell if self.char_vocabulary_size else None
        return {
            "name": self.name,
            "trainable": self.trainable,
            "word_vocabulary_size": self.word_vocabulary_size,
            "embedding_dim": self.embedding_dim,
            "cell": serialize(self.get_layer("rnn").cell),
            "num_layers": self.num_layers,
            "char_vocabulary_size": self.char_vocabulary_size,
            "char_dim": self.char_dim,
            "char_cell": None if char_cell is None else serialize(char_cell),
            "bilm": None if self.bilm is None else serialize(self.bilm),
            "dropout": self.dropout,
            "word_dropout": self.word_dropout,
            "embedding_dropout": self.embedding_dropout,
            "seed": self.seed,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@keras.saving.register_keras_serializable(package="kerasrnn")
class SequenceTagger(Task):
    """A sequence tagger (POS, NER, chunking), keras-hub style: a
    `SequenceTaggerBackbone` and an output layer per token, a softmax or a linear-chain
    `kerasrnn.layers.CRF` (Huang et al. 2015's BiLSTM-CRF), optionally constrained to
    the transitions a tag scheme allows (``O I-PER`` is impossible in BIO).

    .. math::

        p(y_t \\mid x) = \\text{softmax}(W h_t + b) \\quad\\text{or}\\quad
        p(y \\mid x) \\propto \\exp\\big(\\textstyle\\sum_t (W h_t + b)_{y_t}
            + A_{y_{t-1} y_t}\\big)

    `call` returns the tag probabilities `(batch, time, tags)`, or with a CRF its
    pairwise potentials `(batch, time, tags, tags)`; `compile()` defaults to Adam and the
    masked token cross-entropy (CRF: `CRFLoss`), with token accuracy. `predict_tags`
    gives each sentence's tags (Viterbi with a CRF), their probabilities (a CRF's
    posterior marginals) and, for entity tags, the entity spans; `predict_entities` the
    spans alone.

    Args:
        backbone: a `kerasrnn.models.SequenceTaggerBackbone`.
        tags: the tag names, in output order.
        crf: a CRF output layer instead of a softmax.
        scheme: with `crf`, "IOB1", "BIO" or "BIOES": forbid that scheme's impossible
            transitions in training and Viterbi (`kerasrnn.layers.allowed_transitions`);
            None: every transition allowed.
        dropout: dropout rate on the backbone's output.

    Example:

    >>> import numpy as np, kerasrnn
    >>> from kerasrnn.models import SequenceTagger, SequenceTaggerBackbone
    >>> backbone = SequenceTaggerBackbone(30, 8, kerasrnn.GRUCell(6))
    >>> model = SequenceTagger(backbone, ["B-PER", "I-PER", "O"], crf=True, scheme="BIO")
    >>> found = model.predict_tags({"word_ids": np.array([[4, 5, 6, 0]])})
    >>> len(found[0]["tags"]), found[0]["tags"][0] != "I-PER"  # BIO: no I- first
    (3, True)
    """

    def __init__(self, backbone, tags, crf=False, scheme=None, dropout=0.0, **kwargs):
        backbone = deserialize(backbone)
        if not isinstance(backbone, SequenceTaggerBackbone):
            raise ValueError(
                "`backbone` must be a kerasrnn.models.SequenceTaggerBackbone (e.g. "
                f"SequenceTaggerBackbone(word_vocabulary_size)); got {backbone!r}."
            )
        tags = [str(t) for t in tags]
        if not tags or len(set(tags)) != len(tags):
            raise ValueError(f"`tags` must be distinct tag names; got tags={tags!r}.")
        if scheme is not None:
            check_choice("scheme", scheme, SCHEMES)
            if not crf:
                raise ValueError(f"`scheme`={scheme!r} constrains a CRF: set crf=True.")
        check_rate("dropout", dropout)
        inputs = {
            name: keras.Input(tensor.shape[1:], dtype=tensor.dtype, name=name)
            for name, tensor in backbone.input.items()
        }
        x = keras.layers.Dropout(dropout, name="output_dropout")(backbone(inputs))
        if crf:
            allowed = None if scheme is None else allowed_transitions(tags, scheme)
            out = CRF(len(tags), allowed_transitions=allowed, name="crf")(x)
        else:
            out = keras.layers.Dense(len(tags), activation="softmax", name="tags")(x)
        kwargs.setdefault("name", "tagger")
        super().__init__(inputs, out, **kwargs)
        self.backbone, self.tags, self.crf = backbone, tags, bool(crf)
        self.scheme, self.dropout = scheme, float(dropout)

    def compile(self, optimizer="adam", loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile` with the tagger's defaults: the masked token
        cross-entropy (CRF: `CRFLoss`, the paths' negative log-likelihood) and token
        accuracy as a weighted metric (padding counts neither way)."""
        if loss == "auto":
            loss = CRFLoss() if self.crf else "sparse_categorical_crossentropy"
        if metrics == "auto":
            metric = CRFAccuracy(name="accuracy") if self.crf else "accuracy"
            kwargs.setdefault("weighted_metrics", [metric])
            metrics = None
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def predict_tags(self, inputs, batch_size=None):
        """Tags of each sentence: a list of ``{"tags": [...], "probabilities": [...],
        "entities": [(start, end, type), ...]}`` (end exclusive; entities only for
        entity tags, read as conlleval reads them), one per row of `inputs` (the
        model's input dict); a row's length is its number of nonzero ``word_ids``."""
        outputs = self.predict(inputs, batch_size=batch_size, verbose=0)
        mask = ops.convert_to_tensor(np.asarray(inputs["word_ids"]) != 0)
        if self.crf:
            best, _ = crf_decode(outputs, mask)
            probabilities = crf_marginals(outputs, mask)
            best = ops.convert_to_numpy(best)
            probabilities = ops.convert_to_numpy(probabilities)
        else:
            probabilities, best = outputs, outputs.argmax(-1)
        chosen = np.take_along_axis(probabilities, best[..., None], axis=-1)[..., 0]
        entity_tags = is_entity_tags(self.tags)
        results = []
        for row, length in enumerate(ops.convert_to_numpy(ops.sum(mask, axis=1))):
            tags = [self.tags[i] for i in best[row, :length]]
            results.append(
                {
                    "tags": tags,
                    "probabilities": [float(p) for p in chosen[row, :length]],
                    "entities": entity_spans(tags) if entity_tags else [],
                }
            )
        return results

    def predict_entities(self, inputs, batch_size=None):
        """The entity spans ``(start, end, type)`` of each row of `inputs`
        (`predict_tags`)."""
        return [found["entities"] for found in self.predict_tags(inputs, batch_size)]

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "tags": list(self.tags),
            "crf": self.crf,
            "scheme": self.scheme,
            "dropout": self.dropout,
        }
