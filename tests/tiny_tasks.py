"""Tiny untrained library tasks, each with its preprocessor, for the tests of the text
paths, presets and exports (`kerasrnn.models`, `kerasrnn.seq2seq`): what they check
(text in equals ids in, a round trip equals the original) needs no training.

Every builder seeds Keras first, so two calls give the same weights.
"""

import keras

import kerasrnn
from kerasrnn.data import Vocabulary
from kerasrnn.data.text import TextSide
from kerasrnn.models import (
    LanguageModel,
    LanguageModelBackbone,
    LanguageModelPreprocessor,
    PairClassifier,
    PairClassifierPreprocessor,
    SentenceEncoder,
    SequenceTagger,
    SequenceTaggerBackbone,
    SequenceTaggerPreprocessor,
    TextClassifier,
    TextClassifierPreprocessor,
)
from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone, Seq2SeqPreprocessor

SENTENCES = ["a good film", "dull and bad", "good acting", "a bad plot", "the film"]
LABELS = ["neg", "pos"]
JUDGMENTS = ["contradiction", "entailment", "neutral"]
TOKENS = [["Peter", "Blackburn", "flew", "to", "Brussels", "."], ["EU", "rejects", "it"]]
TAGS = ["B-LOC", "B-PER", "I-PER", "O"]
# the source side is words (lower-cased), the target side characters
SOURCES = ["the cat sat", "a dog ran", "the dog sat on a mat"]
TARGETS = ["le chat", "un chien", "le chien"]


def padded(rows, width=None):
    """Id lists -> a (rows, width) int32 array padded with 0 ([PAD]), at least one
    column (the preprocessors' padding)."""
    import numpy as np

    width = max([len(r) for r in rows] + [1]) if width is None else width
    return np.array([list(r) + [0] * (width - len(r)) for r in rows], "int32")


def sentence_ids(vocabulary, texts, lowercase=True, max_length=None):
    """The Python reference of a sentence's ids: its whitespace tokens (lower-cased with
    `lowercase`) by the vocabulary's own `encode`, cut to `max_length`, padded."""
    rows = [vocabulary.encode((t.lower() if lowercase else t).split()) for t in texts]
    return padded([r[:max_length] for r in rows])


def words_vocabulary(texts=SENTENCES, lowercase=True):
    """The vocabulary of `texts`' whitespace tokens (lower-cased with `lowercase`)."""
    return Vocabulary.build([(t.lower() if lowercase else t).split() for t in texts])


def text_classifier(seed=1, **options):
    keras.utils.set_random_seed(seed)
    vocabulary = words_vocabulary()
    preprocessor = TextClassifierPreprocessor(vocabulary, LABELS, lowercase=True, **options)
    encoder = SentenceEncoder(len(vocabulary), 8, kerasrnn.GRUCell(6), pooling="max")
    return TextClassifier(encoder, len(LABELS), preprocessor=preprocessor)


def pair_classifier(head="classes", seed=2):
    keras.utils.set_random_seed(seed)
    vocabulary = words_vocabulary()
    labels = JUDGMENTS if head == "classes" else None
    preprocessor = PairClassifierPreprocessor(vocabulary, labels, lowercase=True)
    encoder = SentenceEncoder(len(vocabulary), 8, kerasrnn.GRUCell(6), pooling="mean")
    classes = 3 if head == "classes" else 5
    return PairClassifier(encoder, head, classes, hidden_units=5, preprocessor=preprocessor)


def tagger_vocabularies():
    """``(words, chars)`` of `TOKENS`: the words lower-cased, the characters cased."""
    words = Vocabulary.build([[t.lower() for t in s] for s in TOKENS])
    chars = Vocabulary.build([list("".join(s)) for s in TOKENS])
    return words, chars


def sequence_tagger(crf=True, chars=True, tags=TAGS, bio_output=False, seed=3):
    """A tagger of `tags` (entity tags in BIO: a CRF constrained to BIO), with character
    features; with a CRF its transitions random, so that Viterbi differs from the
    per-token argmax."""
    import numpy as np

    keras.utils.set_random_seed(seed)
    words, characters = tagger_vocabularies()
    preprocessor = SequenceTaggerPreprocessor(
        words, characters if chars else None, max_chars=4, bio_output=bio_output
    )
    backbone = SequenceTaggerBackbone(
        len(words),
        6,
        kerasrnn.GRUCell(5),
        char_vocabulary_size=len(characters) if chars else 0,
        char_dim=4,
        char_cell=kerasrnn.GRUCell(3),
    )
    scheme = None
    if crf and all(t == "O" or t[:2] in ("B-", "I-") for t in tags):
        scheme = "BIO"
    elif crf:
        scheme = "BIOES"
    model = SequenceTagger(backbone, tags, crf=crf, scheme=scheme, preprocessor=preprocessor)
    if crf:
        rng = np.random.default_rng(seed)
        for weight in model.weights:
            if "transition" in weight.path:
                weight.assign(rng.normal(size=weight.shape).astype("float32"))
    return model


def language_model(level="word", seed=4):
    keras.utils.set_random_seed(seed)
    if level == "word":
        vocabulary = words_vocabulary()
    else:
        vocabulary = Vocabulary.build([list(t) for t in SENTENCES])
    preprocessor = LanguageModelPreprocessor(vocabulary, level)
    backbone = LanguageModelBackbone(
        len(vocabulary),
        6,
        num_layers=2,
        initializer=keras.initializers.RandomUniform(-0.5, 0.5, seed=seed),
    )
    return LanguageModel(backbone, max_length=6, preprocessor=preprocessor)


def seq2seq_sides():
    """``(source, target)`` `TextSide`s: lower-cased words, characters."""
    source = TextSide.build(SOURCES, kind="word", lowercase=True)
    target = TextSide.build(TARGETS, kind="char")
    return source, target


def seq2seq(seed=5, max_source_length=6, **options):
    keras.utils.set_random_seed(seed)
    source, target = seq2seq_sides()
    preprocessor = Seq2SeqPreprocessor(source, target, **options)
    backbone = Seq2SeqBackbone(
        len(source.vocabulary), len(target.vocabulary), embedding_dim=6, units=8
    )
    model = Seq2Seq(
        backbone,
        max_source_length=max_source_length,
        max_target_length=7,
        preprocessor=preprocessor,
    )
    model.build()
    return model


BUILDERS = {
    "TextClassifier": text_classifier,
    "PairClassifier": pair_classifier,
    "SequenceTagger": sequence_tagger,
    "LanguageModel": language_model,
    "Seq2Seq": seq2seq,
}
