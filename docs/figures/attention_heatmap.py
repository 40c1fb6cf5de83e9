"""Figure: an attention alignment matrix from the translator on a real sentence.

Trains the translator recipe (bidirectional GRU encoder, Bahdanau-attention GRU decoder)
on the Multi30k German -> English pairs of at most 16 words a side, for a few CPU
minutes, then translates a held-out sentence of test_2016_flickr with beam search and
draws the attention weights beam search returned (`Seq2Seq.attention`). Prints the
sentence, its translation, the reference and the matrix it plots.

    PYTHONPATH=. python docs/figures/attention_heatmap.py [--epochs 6]
"""

import argparse
import os
import pathlib
import shutil
import tempfile
import time

import numpy as np

from figlib import HERE
from kerasrnn.data import load_parallel_text
from kerasrnn.seq2seq import Seq2Seq
from kerasrnn.visualize import plot_alignments
from recipes import common, translator
from recipes.decoding import generate_settings

MULTI30K = pathlib.Path(HERE).parents[2] / "shared" / "data" / "multi30k"
MAX_WORDS = 16
SENTENCE = 0  # the first test sentence short enough to read in a figure


def short(pairs, limit=MAX_WORDS):
    kept = [(s, t) for s, t in zip(*pairs) if len(s.split()) <= limit >= len(t.split())]
    return [s for s, _ in kept], [t for _, t in kept]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--data", default=str(MULTI30K))
    args = parser.parse_args()
    began = time.time()
    data = pathlib.Path(args.data)
    splits = {
        name: short(load_parallel_text(data / f"{stem}.de.gz", data / f"{stem}.en.gz"))
        for name, stem in (("train", "train"), ("valid", "val"), ("test", "test_2016_flickr"))
    }
    output_dir = tempfile.mkdtemp(prefix="attention-figure-")
    config = common.load_config(
        translator.DEFAULTS,
        overrides=dict(
            output_dir=output_dir,
            lowercase=True,
            min_freq=2,
            embedding_dim=128,
            encoder_units=128,
            decoder_units=256,
            attention_units=128,
            dropout=0.3,
            batch_size=64,
            learning_rate=2e-3,
            epochs=args.epochs,
            patience=2,
            max_source_length=MAX_WORDS + 2,
            max_target_length=MAX_WORDS + 2,
            bucket_boundaries=[8, 12],
            beam_size=5,
            verbose=2,
        ),
    )
    try:
        results = translator.train(config, {**splits, "test": None})
        model = Seq2Seq.from_preset(output_dir, compile=False)
        strategy = translator.search_strategy(config)  # beam search of `beam_size`
        sources, references = splits["test"]
        index = next(i for i, s in enumerate(sources) if 6 <= len(s.split()) <= 10)
        source = sources[index + SENTENCE]
        settings = generate_settings(config, model)
        translation = model.generate([source], strategy, **settings)[0]
        result, source_tokens, target_tokens = model.attention(source, strategy)
        weights = np.asarray(result.alignments)[0, 0, : len(target_tokens), : len(source_tokens)]
        path = os.path.join(HERE, "attention_heatmap.png")
        plot_alignments(result, source_tokens, target_tokens, path=path)
        scores = translator.translation_scores(model, config, sources[:200], references[:200], [5])
        bleu = scores["beam5"]["bleu"]
    finally:
        shutil.rmtree(output_dir, ignore_errors=True)

    print(
        f"trained on {results['train_pairs_used']} Multi30k pairs of <= {MAX_WORDS} words, "
        f"{results['history']['epochs_run']} epochs, {results['train_seconds']:.0f} s; "
        f"beam-5 BLEU on 200 short test sentences {bleu:.1f}"
    )
    print(
        f"source:      {source}\ntranslation: {translation}\nreference:   "
        f"{references[index + SENTENCE]}"
    )
    print("attention weights (rows: output tokens, columns: source tokens)")
    print(" " * 12 + "".join(f"{t[:7]:>8}" for t in source_tokens))
    for token, row in zip(target_tokens, np.asarray(weights)):
        print(f"{token[:11]:12}" + "".join(f"{w:8.2f}" for w in row))
    print(f"wrote {os.path.relpath(path)}")
    print(f"{time.time() - began:.0f} s")


if __name__ == "__main__":
    main()
