"""`LanguageModelPreprocessor`: prompts to a `LanguageModel`'s ids, and generated ids
back to text."""

import keras

from kerasrnn.models.preprocessor import Preprocessor, string_examples, vocabulary_of
from kerasrnn.special_tokens import END_ID, PAD_ID, START_ID, UNK_ID
from kerasrnn.validation import check_choice

LEVELS = ("word", "char")


@keras.saving.register_keras_serializable(package="kerasrnn")
class LanguageModelPreprocessor(Preprocessor):
    """Prompts -> a `kerasrnn.models.LanguageModel`'s ids, and generated ids -> text.

    A prompt is split into whitespace-separated words (``level="word"``) or into its
    characters, spaces included (``"char"``), each token looked up in `vocabulary`
    (unknown -> ``[UNK]``), after the boundary token the model was trained to read
    before a sentence (`boundary_id`: ``[END]``, the previous sentence's end, for a
    model trained on a stream; ``[START]`` for one trained on sentence batches); a batch
    is padded with ``[PAD]`` (0). "" starts a new sentence. A continuation is the
    generated tokens up to the first ``[END]``, ``[PAD]`` dropped (``[UNK]`` kept: it
    stands for a real word), joined by spaces (words) or directly (characters).

    Args:
        vocabulary: the `kerasrnn.data.Vocabulary` (or its token list) the model was
            trained with.
        level: "word" or "char".
        boundary_id: the id read before every prompt (`kerasrnn.special_tokens`'
            ``END_ID`` or ``START_ID``).

    Example:

    >>> from kerasrnn.data import Vocabulary
    >>> preprocessor = LanguageModelPreprocessor(Vocabulary(["the", "market"]))
    >>> preprocessor(["the market", "the"]).numpy().tolist()
    [[3, 4, 5], [3, 4, 0]]
    """

    def __init__(self, vocabulary, level="word", boundary_id=END_ID, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary = vocabulary_of(vocabulary, "vocabulary")
        if self.vocabulary is None:
            raise ValueError("`vocabulary` is required: the Vocabulary the model was trained with.")
        self.level = check_choice("level", level, LEVELS)
        if boundary_id not in (END_ID, START_ID):
            raise ValueError(
                f"`boundary_id` must be {END_ID} ([END], a stream-trained model) or "
                f"{START_ID} ([START], sentence batches); got {boundary_id!r}."
            )
        self.boundary_id = int(boundary_id)
        self.lookup(self.vocabulary, "words")

    @property
    def joiner(self):
        """What joins generated tokens into text: a space for words, nothing for
        characters."""
        return "" if self.level == "char" else " "

    def split(self, texts):
        """Strings (batch,) -> ragged tokens (words or characters)."""
        import tensorflow as tf

        texts = tf.convert_to_tensor(texts, tf.string)
        if self.level == "char":
            return tf.strings.unicode_split(texts, "UTF-8", errors="replace")
        return tf.strings.split(texts)

    def encode(self, x):
        """Prompts (batch,) strings -> int32 ids (batch, length), the boundary token
        first, padded with 0."""
        import tensorflow as tf

        ids = tf.cast(self.lookup(self.vocabulary, "words")(self.split(x)), tf.int32)
        ids = tf.concat([tf.fill([ids.nrows(), 1], self.boundary_id), ids], axis=1)
        return ids.to_tensor(PAD_ID)

    def examples(self, x):
        return string_examples(x, "a prompt")

    def length(self, example):
        return len(example) if self.level == "char" else len(example.split())

    def unknown_tokens(self, prompt):
        """How many tokens of `prompt` (a Python string) the vocabulary lacks."""
        ids = self.encode([prompt]).numpy()[0, 1:]
        return int((ids == UNK_ID).sum())

    def decode(self, ids):
        """Generated ids (..., length) -> continuations (...) strings: the tokens before
        the first ``[END]``, ``[PAD]`` dropped, joined (TensorFlow ops)."""
        import tensorflow as tf

        ids = tf.convert_to_tensor(ids, tf.int32)
        shape = tf.shape(ids)
        flat = tf.reshape(ids, [-1, shape[-1]])
        before_end = tf.cumsum(tf.cast(flat == END_ID, tf.int32), axis=1) == 0
        keep = before_end & (flat != PAD_ID)
        words = tf.ragged.boolean_mask(tf.gather(self.names(self.vocabulary, "words"), flat), keep)
        texts = tf.strings.reduce_join(words, axis=1, separator=self.joiner)
        return tf.reshape(texts, shape[:-1])

    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary": self.vocabulary.tokens,
            "level": self.level,
            "boundary_id": self.boundary_id,
        }
