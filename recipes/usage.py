"""The example commands each recipe's ``--help`` shows after a command's options (its
epilog), two per command: ``EXAMPLES[recipe][command]`` holds the arguments that follow
``python -m recipes.RECIPE COMMAND`` (or ``kerasrnn RECIPE COMMAND``).
tests/recipes/test_cli.py parses every one with the recipe's own parser.

The first example of `train` runs on your own files or on a ``corpus:`` of
`kerasrnn.datasets` (fetched on first use); the others go on from the run it writes.
"""

_MR = "corpus:sentence_polarity/rt-polarity"
_EWT = "corpus:ud_en_ewt/en_ewt-ud"
_M30K = "corpus:multi30k"
_SICK = "corpus:sick/SICK"


def _exports(run):
    return (
        f"--output-dir {run}",
        f"--output-dir {run} --format onnx --quantization dynamic_int8",
    )


EXAMPLES = {
    "classifier": {
        "train": (
            "--train reviews.tsv --test test.tsv --output-dir runs/reviews",
            f"--train '[{_MR}.pos, {_MR}.neg]' --encoding cp1252 --test-fraction 0.1 "
            "--naive-bayes 2 --output-dir runs/mr",
        ),
        "evaluate": (
            "--output-dir runs/reviews --test other.tsv",
            "--output-dir runs/reviews --test tfds:imdb_reviews:test",
        ),
        "predict": (
            "--output-dir runs/reviews 'a gripping film' 'dull and slow'",
            "--output-dir runs/reviews --input sentences.txt",
        ),
        "export": _exports("runs/reviews"),
    },
    "tagger": {
        "train": (
            f"--train {_EWT}-train.conllu --valid {_EWT}-dev.conllu "
            f"--test {_EWT}-test.conllu --output-dir runs/upos",
            "--train ner_train.txt --valid ner_valid.txt --crf --tag-scheme bioes "
            "--embeddings glove.6B.100d.txt --freeze-embeddings --output-dir runs/ner",
        ),
        "evaluate": (
            f"--output-dir runs/upos --test {_EWT}-test.conllu",
            "--output-dir runs/ner --test ner_test.txt",
        ),
        "predict": (
            "--output-dir runs/upos 'The cat sat on the mat .'",
            "--output-dir runs/ner --input sentences.txt",
        ),
        "export": (
            "--output-dir runs/upos",
            "--output-dir runs/ner --format litert --sequence-length 64",
        ),
    },
    "language_model": {
        "train": (
            "--config zaremba_small --output-dir runs/ptb",
            "--train-file text.txt --valid-file valid.txt --test-file '' --level char "
            "--output-dir runs/chars",
        ),
        "evaluate": ("--output-dir runs/ptb", "--output-dir runs/ptb --split test"),
        "generate": (
            "--output-dir runs/ptb 'the market'",
            "--output-dir runs/ptb --method sample --temperature 0.8 --top-k 40 'the market'",
        ),
        "export": _exports("runs/ptb"),
        "export-embeddings": (
            "runs/ptb runs/ptb/embeddings.vec",
            "--output-dir runs/ptb runs/ptb/embeddings.vec",
        ),
    },
    "translator": {
        "train": (
            "--train '[train.de, train.en]' --valid '[valid.de, valid.en]' "
            "--test '[test.de, test.en]' --output-dir runs/de-en",
            f"--train '[{_M30K}/train.de.gz, {_M30K}/train.en.gz]' "
            f"--valid '[{_M30K}/val.de.gz, {_M30K}/val.en.gz]' --lowercase "
            "--attention luong --time-budget 60 --output-dir runs/multi30k",
        ),
        "evaluate": (
            "--output-dir runs/de-en --test '[test.de, test.en]'",
            "--output-dir runs/de-en --test '[test.de, test.en]' --beam-size 1",
        ),
        "translate": (
            "--output-dir runs/de-en 'ein Mann läuft .'",
            "--output-dir runs/de-en --n-best 3 --input sentences.de",
        ),
        "heatmap": (
            "--output-dir runs/de-en 'ein Mann läuft .'",
            "--output-dir runs/de-en --input sentences.de",
        ),
        "lm-text": (
            "--output-dir runs/de-en --text-dir runs/de-en-lm-text",
            "--output-dir runs/multi30k --text-dir runs/multi30k-lm-text",
        ),
        "export": _exports("runs/de-en"),
        "demo": ("", "--data my.src my.tgt --epochs 10 --output-dir runs/my-demo"),
    },
    "pair_classifier": {
        "train": (
            f"--train {_SICK}_train.txt --valid {_SICK}_trial.txt "
            f"--test {_SICK}_test_annotated.txt --output-dir runs/sick",
            f"--train {_SICK}_train.txt --valid {_SICK}_trial.txt --task relatedness "
            "--relatedness-target distribution --output-dir runs/sick-relatedness",
        ),
        "evaluate": (
            f"--output-dir runs/sick --test {_SICK}_test_annotated.txt",
            "--output-dir runs/sick --test pairs.tsv",
        ),
        "predict": (
            "--output-dir runs/sick 'A man is playing a guitar' 'A person plays music'",
            "--output-dir runs/sick --input pairs.txt",
        ),
        "export": _exports("runs/sick"),
    },
}
