"""`Preprocessor`: the base of every task's text handling (keras-hub's preprocessor
shape): strings to the model's ids, and the model's outputs back to strings, as
TensorFlow ops that run eagerly, inside a `tf.data` pipeline and inside an exported
SavedModel alike, so that served and trained ids agree.

A preprocessor is a Keras layer with no weights, saved with its task (its vocabularies
in its config), so that a `.keras` file or a preset folder carries everything between
text and the network.
"""

import keras
import numpy as np

from kerasrnn.special_tokens import SPECIAL_TOKENS


def vocabulary_of(tokens, name):
    """A `kerasrnn.data.Vocabulary` from a vocabulary or its token list (as a config
    holds it), or None for None; a list that is none is a one-line error naming
    `name`."""
    from kerasrnn.data.vocabulary import Vocabulary

    if tokens is None or isinstance(tokens, Vocabulary):
        return tokens
    tokens = list(tokens)
    if tuple(tokens[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
        raise ValueError(
            f"`{name}` must be a kerasrnn.data.Vocabulary or its token list starting with "
            f"{list(SPECIAL_TOKENS)}; got {tokens[:4]!r}..."
        )
    return Vocabulary(tokens)


def is_text(x):
    """Whether `x` is text for a task's `predict` / `generate` (strings, token lists,
    string pairs, a dict of them, a string array or tensor) rather than ids."""
    if isinstance(x, (str, bytes)):
        return True
    if isinstance(x, dict):
        return any(is_text(value) for value in x.values())
    if isinstance(x, (list, tuple)):
        # an empty token list (a tagger's empty sentence) is text beside other text
        items = [item for item in x if not (isinstance(item, (list, tuple)) and not item)]
        return bool(items) and all(is_text(item) for item in items)
    dtype = getattr(x, "dtype", None)
    if isinstance(x, np.ndarray):
        return dtype.kind in "USO" and (x.size == 0 or isinstance(x.flat[0], (str, bytes)))
    return dtype is not None and "string" in str(dtype)


def as_text(value):
    """A Python str of a str, bytes or 0-d string array / tensor."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        value = value.item()
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


@keras.saving.register_keras_serializable(package="kerasrnn")
class Preprocessor(keras.layers.Layer):
    """Text in, a task's ids out; the task's outputs back to text.

    Subclasses (one per task: `TextClassifierPreprocessor`,
    `PairClassifierPreprocessor`, `SequenceTaggerPreprocessor`,
    `LanguageModelPreprocessor`, `kerasrnn.seq2seq.Seq2SeqPreprocessor`) implement
    `encode` (a batch of text -> the model's inputs, TensorFlow ops) and `examples`
    (what a Python caller passes -> a list of examples, checked); most add the way back
    (ids or probabilities -> strings). Calling the layer, ``preprocessor(x, y,
    sample_weight)``, encodes `x` and passes the rest through, as
    ``dataset.map(preprocessor)`` needs it. Lookup tables are made when the preprocessor
    is (eagerly, even inside a `tf.function`), and `resources` lists them for a
    SavedModel to track.
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        # strings are no tensors of the backend: Keras must not convert the inputs
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        object.__setattr__(self, "_tables", {})  # not tracked: nothing of it is saved

    # ---- the lookup tables ------------------------------------------------------------
    def lookup(self, vocabulary, name):
        """`vocabulary.lookup()` (a `StringLookup`: tokens -> ids, unknown -> [UNK]),
        made once per `name`."""
        if name not in self._tables:
            import tensorflow as tf

            with tf.init_scope():  # eagerly: every traced function shares the table
                self._tables[name] = vocabulary.lookup()
        return self._tables[name]

    def names(self, vocabulary, name):
        """The tokens of `vocabulary` as a string constant (ids -> tokens by
        `tf.gather`), made once per `name`."""
        key = f"{name}:names"
        if key not in self._tables:
            import tensorflow as tf

            with tf.init_scope():
                self._tables[key] = tf.constant(vocabulary.tokens, tf.string)
        return self._tables[key]

    def resources(self):
        """The lookup layers and tokenizer resources that the TensorFlow functions of
        this preprocessor use (what `kerasrnn.export` tracks in a SavedModel)."""
        return [table for table in self._tables.values() if isinstance(table, keras.layers.Layer)]

    # ---- what subclasses provide --------------------------------------------------------
    def encode(self, x):
        """A batch of text -> the model's inputs (TensorFlow ops)."""
        raise NotImplementedError

    def examples(self, x):
        """What a Python caller gives (one example or several) -> ``(examples, single)``:
        a list of examples, and whether `x` was one example (its result then comes
        back alone, not in a list)."""
        raise NotImplementedError

    def call(self, x, y=None, sample_weight=None):
        return keras.utils.pack_x_y_sample_weight(self.encode(x), y, sample_weight)

    def compute_output_spec(self, x, y=None, sample_weight=None):
        raise NotImplementedError(
            f"{type(self).__name__} runs on text (TensorFlow ops), not inside a "
            "symbolic Keras model: call it on strings, or map it over a tf.data.Dataset."
        )


def string_examples(x, what="a string"):
    """`Preprocessor.examples` of one string or a sequence of strings (a list, a 1-d
    string array or tensor): ``(list of str, single)``."""
    if isinstance(x, (str, bytes)) or (getattr(x, "ndim", None) == 0):
        return [as_text(x)], True
    if hasattr(x, "numpy"):
        x = x.numpy()
    if isinstance(x, np.ndarray):
        if x.ndim != 1:
            raise ValueError(f"expected {what} or a 1-d array of them; got shape {x.shape}.")
        x = list(x)
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"expected {what} or a list of them; got {type(x).__name__}.")
    for index, item in enumerate(x):
        if not isinstance(item, (str, bytes, np.str_, np.bytes_)):
            raise TypeError(
                f"expected {what} or a list of them; item {index} is {type(item).__name__}."
            )
    return [as_text(item) for item in x], False


def unpadded(ids, lengths=None):
    """Right-padded ids (batch, time) or (batch, time, chars), NumPy -> nested lists,
    each row cut to its length in `lengths` or, without them, to its last nonzero id
    (at least one id: an all-padding row keeps one [PAD]); a 3-d array's inner rows
    are cut to their last nonzero id."""
    rows = []
    for index, row in enumerate(np.asarray(ids)):
        if lengths is not None:
            row = row[: lengths[index]]
        elif row.ndim == 1:
            nonzero = np.flatnonzero(row)
            row = row[: max(int(nonzero[-1]) + 1 if nonzero.size else 0, 1)]
        if row.ndim == 2:
            rows.append([unpadded(word[None])[0] for word in row])
        else:
            rows.append([int(i) for i in row])
    return rows


def in_chunks(function, examples, size=4096):
    """``function(chunk)`` over `examples` `size` at a time, its list results joined
    (the preprocessors encode whole corpora this way, eagerly)."""
    out = []
    for start in range(0, len(examples), size):
        out += function(list(examples[start : start + size]))
    return out
