"""`SequenceTaggerBackbone` (words, character features, optional biLM features, a
bidirectional recurrent stack) and `SequenceTagger`, the task around it (a softmax or a
CRF with tag-scheme constraints; tags and entity spans from `predict_tags`)."""

import keras
import numpy as np
from keras import ops

from kerasrnn.cells.lstm import LSTMCell
from kerasrnn.cells.stack import RNNStack
from kerasrnn.layers.crf import (
    CRF,
    CRFAccuracy,
    CRFLoss,
    crf_decode,
    crf_decode_n_best,
    crf_log_norm,
    crf_marginals,
)
from kerasrnn.layers.dropout import WordDropout
from kerasrnn.layers.reshape import MergeBatchTime, SplitBatchTime
from kerasrnn.layers.scalar_mix import ScalarMix
from kerasrnn.layers.tag_schemes import allowed_transitions, is_entity_tags
from kerasrnn.metrics.entities import entity_spans
from kerasrnn.models.backbone import Backbone
from kerasrnn.models.sequence_tagger_preprocessor import SequenceTaggerPreprocessor
from kerasrnn.models.task import Task, from_backend
from kerasrnn.serialization import deserialize
from kerasrnn.validation import check_choice, check_int, check_rate

SCHEMES = ("IOB1", "BIO", "BIOES")


@keras.saving.register_keras_serializable(package="kerasrnn")
class SequenceTaggerBackbone(Backbone, keras.Model):
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
            **super().get_config(),
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


@keras.saving.register_keras_serializable(package="kerasrnn")
class SequenceTagger(Task, keras.Model):
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
    masked token cross-entropy (CRF: `CRFLoss`), with token accuracy. `decode_tags`
    gives the best tags (Viterbi with a CRF) and their probabilities (a CRF's
    posterior marginals); `predict_tags` does it for ids, with the entity spans of
    entity tags; `predict_entities` gives the spans alone. With a
    `SequenceTaggerPreprocessor`, `predict` takes sentences (strings split on
    whitespace, or token lists) and gives each one's tokens, tags, probabilities and,
    for entity tags, entities; `predict_n_best` the k best tag sequences.

    Args:
        backbone: a `kerasrnn.models.SequenceTaggerBackbone`.
        tags: the tag names, in output order.
        crf: a CRF output layer instead of a softmax.
        scheme: with `crf`, "IOB1", "BIO" or "BIOES": forbid that scheme's impossible
            transitions in training and Viterbi (`kerasrnn.layers.allowed_transitions`);
            None: every transition allowed.
        dropout: dropout rate on the backbone's output.
        preprocessor: None, or a `kerasrnn.models.SequenceTaggerPreprocessor` (the
            vocabularies: sentences in, tags out).

    Example:

    >>> import numpy as np, kerasrnn
    >>> from kerasrnn.models import SequenceTagger, SequenceTaggerBackbone
    >>> backbone = SequenceTaggerBackbone(30, 8, kerasrnn.GRUCell(6))
    >>> model = SequenceTagger(backbone, ["B-PER", "I-PER", "O"], crf=True, scheme="BIO")
    >>> found = model.predict_tags({"word_ids": np.array([[4, 5, 6, 0]])})
    >>> len(found[0]["tags"]), found[0]["tags"][0] != "I-PER"  # BIO: no I- first
    (3, True)
    """

    preprocessor_cls = SequenceTaggerPreprocessor

    def __init__(
        self, backbone, tags, crf=False, scheme=None, dropout=0.0, preprocessor=None, **kwargs
    ):
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
        super().__init__(inputs, out, preprocessor=preprocessor, **kwargs)
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

    def decode_tags(self, outputs, mask):
        """The model's outputs and the real steps (batch, time) -> the best tag ids
        int32 (batch, time) and each one's probability (batch, time): the Viterbi path
        and its posterior marginals with a CRF, else the most probable tag per token."""
        if self.crf:
            best, _ = crf_decode(outputs, mask)
            marginals = crf_marginals(outputs, mask)
            chosen = ops.take_along_axis(marginals, ops.cast(best, "int32")[..., None], axis=-1)
            return ops.cast(best, "int32"), chosen[..., 0]
        return ops.cast(ops.argmax(outputs, axis=-1), "int32"), ops.max(outputs, axis=-1)

    def decode_n_best(self, outputs, mask, n_best):
        """The `n_best` best tag sequences of each row: ids int32 (batch, n_best, time),
        their scores (batch, n_best), best first, -inf past the row's allowed paths,
        and their probabilities p(tags | x) (batch, n_best). A CRF decodes with list
        Viterbi (`crf_decode_n_best`, probability exp(score - log Z)); a softmax
        tagger, whose tags are independent, with the same search over psi_t(i, j) =
        log p(y_t = j | x) (its score is the probability's log)."""
        if self.crf:
            potentials, log_z = outputs, crf_log_norm(outputs, mask)
        else:
            log_p = ops.log(ops.maximum(ops.cast(outputs, "float32"), 1e-30))
            potentials = log_p[:, :, None, :] + ops.zeros_like(log_p)[:, :, :, None]
            log_z = ops.zeros_like(log_p[:, 0, 0])
        best, score = crf_decode_n_best(potentials, n_best, mask)
        return ops.cast(best, "int32"), score, ops.exp(score - log_z[:, None])

    def predict_tags(self, inputs, batch_size=None):
        """Tags of each sentence: a list of ``{"tags": [...], "probabilities": [...],
        "entities": [(start, end, type), ...]}`` (end exclusive; entities only for
        entity tags, read as conlleval reads them), one per row of `inputs` (the
        model's input dict); a row's length is its number of nonzero ``word_ids``."""
        outputs = self.predict(inputs, batch_size=batch_size, verbose=0)
        mask = np.asarray(inputs["word_ids"]) != 0
        best, chosen = (ops.convert_to_numpy(x) for x in self.decode_tags(outputs, mask))
        entity_tags = is_entity_tags(self.tags)
        results = []
        for row, length in enumerate(mask.sum(axis=1)):
            tags = [self.tags[i] for i in best[row, :length]]
            results.append(
                {
                    "tags": tags,
                    "probabilities": [float(p) for p in chosen[row, :length]],
                    "entities": entity_spans(tags) if entity_tags else [],
                }
            )
        return results

    def _model_outputs(self, tokens):
        """Tokens (batch, time) strings, "" on padding -> (the model's outputs, the real
        steps (batch, time) bool), TensorFlow tensors (or NumPy from another backend)."""
        inputs = self._text_preprocessor().encode(tokens)
        return self._call_on(inputs), from_backend(inputs["word_ids"] != 0)

    def text_outputs(self, tokens):
        """Tokens (batch, time) strings, "" on padding -> `SequenceTaggerPreprocessor.
        outputs`: tags, probability, lengths and, for entity tags, the entities
        (TensorFlow ops around the model: the function a SavedModel serves)."""
        outputs, mask = self._model_outputs(tokens)
        best, probability = from_backend(self.decode_tags(outputs, mask))
        return self.preprocessor.outputs(tokens, best, probability, self.tags)

    def text_outputs_of_sentences(self, texts):
        """`text_outputs` of whitespace-tokenized sentences (batch,) strings."""
        from kerasrnn.data.tokenizers import split_words

        return self.text_outputs(split_words(texts).to_tensor(default_value=""))

    def _text_results(self, sentences):
        import tensorflow as tf

        spec = tf.TensorSpec([None, None], tf.string)
        function = self._text_function("text_outputs", self.text_outputs, spec)
        outputs = function(self.preprocessor.tokens_tensor(sentences))
        return self.preprocessor.results(outputs, sentences)

    def predict_n_best(self, x, n_best, batch_size=None):
        """The `n_best` best tag sequences of each sentence of `x` (as `predict` takes
        them), best first (`decode_n_best`): per sentence a list of ``{"tags": [...],
        "score": s, "probability": p}`` (with ``"entities"`` for entity tags, as
        `predict` gives them), as long as `n_best` or the number of allowed tag
        sequences if smaller. n_best = 1 gives `predict`'s tags."""
        n_best = check_int("n_best", n_best)
        preprocessor = self._text_preprocessor()
        names = [preprocessor.reported_tag(t) for t in self.tags]
        entity_tags = is_entity_tags(self.tags)

        import tensorflow as tf

        def n_best_of(tokens):
            return from_backend(self.decode_n_best(*self._model_outputs(tokens), n_best))

        spec = tf.TensorSpec([None, None], tf.string)
        function = self._text_function(f"n_best_{n_best}", n_best_of, spec)

        def candidates(sentences):
            found = function(preprocessor.tokens_tensor(sentences))
            best, score, probability = (ops.convert_to_numpy(v) for v in found)
            rows = []
            for i, sentence in enumerate(sentences):
                row = []
                for rank in range(n_best):
                    if not np.isfinite(score[i, rank]):
                        break
                    tags = [names[t] for t in best[i, rank, : len(sentence)]]
                    path = {
                        "tags": tags,
                        "score": float(score[i, rank]),
                        "probability": float(probability[i, rank]),
                    }
                    if entity_tags:
                        path["entities"] = [
                            {"text": " ".join(sentence[a:b]), "type": kind, "start": a, "end": b}
                            for a, b, kind in entity_spans(tags)
                        ]
                    row.append(path)
                rows.append(row)
            return rows

        return self._each_text_batch(x, batch_size, candidates)

    def predict_entities(self, inputs, batch_size=None):
        """The entity spans ``(start, end, type)`` of each row of `inputs`
        (`predict_tags`)."""
        return [found["entities"] for found in self.predict_tags(inputs, batch_size)]

    def get_config(self):
        return {
            **super().get_config(),
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "tags": list(self.tags),
            "crf": self.crf,
            "scheme": self.scheme,
            "dropout": self.dropout,
        }
