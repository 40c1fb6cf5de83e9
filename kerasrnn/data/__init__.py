"""Text to ids, tf.data pipelines and corpus loaders (TensorFlow-specific).

* `Vocabulary` -- tokens <-> ids with fixed special ids ([PAD]=0, [UNK]=1, [START]=2,
  [END]=3), built from training data with size and frequency limits;
* `tokenizers` -- word / character splitting as TensorFlow ops (`split_words`,
  `split_chars`, `encode_tokens`, `encode_chars`) and learned subwords: WordPiece
  (`learn_wordpiece_vocabulary`, `wordpiece_tokenizer`, `join_wordpieces`) and
  SentencePiece's unigram or BPE models (`learn_sentencepiece`,
  `sentencepiece_tokenizer`, `sentencepiece_vocabulary`, `join_sentencepieces`), split
  by `split_subwords`;
* `pipeline` -- `sequence_dataset`: shuffled, padded, masked, length-bucketed batches;
* `loaders` -- TSV, one file per class, CoNLL-U, CoNLL-2003 columns, SICK sentence
  pairs, tensorflow-datasets; gzip is read transparently;
* `vectors` -- pretrained word vectors (word2vec / GloVe text or binary, fastText
  ``.vec``) aligned to a vocabulary, with their coverage (`load_vectors`,
  `WordVectors`), and ``.vec`` writing (`write_vectors`);
* `text` -- one side of a translation model (`TextSide`: tokeniser, lower-casing and
  vocabulary, in Python and as TensorFlow ops) and `translation_dataset` (sentence
  pairs -> a `Seq2Seq`'s teacher-forcing batches);
* `tagging` -- a tagger's inputs from tokenized sentences (`TaggerInputs`: words,
  characters, biLM words as `lm_tokens` maps them);
* `specs` -- the recipes' data specs (``tfds:NAME[:SPLIT]``, `tfds_spec`) and seeded
  held-out splits (`holdout`).

`Vocabulary` needs neither TensorFlow nor Keras until its `lookup()` layers are made;
the other names are imported on first use so that ``import kerasrnn.data`` stays cheap.
"""

import importlib

from kerasrnn.data.vocabulary import (
    END,
    END_ID,
    PAD,
    PAD_ID,
    SPECIAL_TOKENS,
    START,
    START_ID,
    UNK,
    UNK_ID,
    Vocabulary,
)

_LAZY = {
    "split_words": "tokenizers",
    "split_chars": "tokenizers",
    "tokenize": "tokenizers",
    "encode_tokens": "tokenizers",
    "encode_chars": "tokenizers",
    "learn_wordpiece_vocabulary": "tokenizers",
    "wordpiece_tokenizer": "tokenizers",
    "split_wordpieces": "tokenizers",
    "join_wordpieces": "tokenizers",
    "split_subwords": "tokenizers",
    "learn_sentencepiece": "tokenizers",
    "sentencepiece_tokenizer": "tokenizers",
    "sentencepiece_vocabulary": "tokenizers",
    "join_sentencepieces": "tokenizers",
    "sequence_dataset": "pipeline",
    "ragged_constant": "pipeline",
    "DataFormatError": "loaders",
    "DatasetUnavailableError": "loaders",
    "open_text": "loaders",
    "read_lines": "loaders",
    "load_tsv": "loaders",
    "load_class_files": "loaders",
    "load_conllu": "loaders",
    "load_conll_columns": "loaders",
    "load_sick": "loaders",
    "load_vectors": "vectors",
    "WordVectors": "vectors",
    "write_vectors": "vectors",
    "load_tfds_classification": "loaders",
    "load_tfds_tagging": "loaders",
    "load_parallel_text": "loaders",
    "load_tfds_translation": "loaders",
    "tfds_spec": "specs",
    "TextSide": "text",
    "translation_dataset": "text",
    "holdout": "specs",
    "TaggerInputs": "tagging",
    "copy_vocabulary_map": "copying",
    "copy_target_ids": "copying",
    "copy_decode": "copying",
}

__all__ = [
    "Vocabulary",
    "SPECIAL_TOKENS",
    "PAD",
    "UNK",
    "START",
    "END",
    "PAD_ID",
    "UNK_ID",
    "START_ID",
    "END_ID",
] + list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f"kerasrnn.data.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'kerasrnn.data' has no attribute {name!r}")
