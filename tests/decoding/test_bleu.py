"""corpus_bleu against sacreBLEU itself on fixtures that exercise every rule."""

import gzip

import pytest
import sacrebleu

from kerasrnn.metrics import corpus_bleu, tokenize_13a
from tests.conftest import require_data

REFERENCES = [
    "The well-known cat sat on the mat, didn't it?",
    "Prices rose 3.5% to $1,000.50 in 2019-2020.",
    "He said: &quot;Stop&quot; &amp; left &lt;quickly&gt;.",
    "A man in a blue shirt is standing on a ladder cleaning windows.",
    "Two young, White males are outside near many bushes.",
    "Several men in hard hats are operating a giant pulley system.",
]
SECOND_REFERENCES = [
    "The famous cat sat on a mat, did it not?",
    "Prices went up 3.5 % to $ 1,000.50 in 2019 - 2020 .",
    'He said "stop" and left quickly.',
    "A man wearing blue is on a ladder washing a window.",
    "Two young white men are outdoors by some bushes.",
    "Men in hard hats run a huge pulley system.",
]
HYPOTHESES = [
    "the well-known cat sat on a mat , didn't it ?",
    "Prices rose 3.5 % to $1,000.50 in 2019-2020.",
    'He said "Stop" & left quickly.',
    "A man in a blue shirt stands on a ladder.",
    "",
    "Many men in hats operate a big pulley system system system.",
]


def sacre(hypotheses, references, **kwargs):
    return sacrebleu.corpus_bleu(hypotheses, references, **kwargs)


def assert_same(ours, theirs):
    assert ours.score == pytest.approx(theirs.score, abs=1e-10)
    assert ours.counts == list(theirs.counts)
    assert ours.totals == list(theirs.totals)
    assert ours.sys_len == theirs.sys_len
    assert ours.ref_len == theirs.ref_len
    assert ours.bp == pytest.approx(theirs.bp, abs=1e-12)


def test_tokenizer_matches_sacrebleu_13a():
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    reference = Tokenizer13a()
    for line in REFERENCES + SECOND_REFERENCES + HYPOTHESES + ["a-\nb <skipped> 5-6 x.y 1.5."]:
        assert tokenize_13a(line) == reference(line)


@pytest.mark.parametrize("lowercase", [False, True])
def test_single_and_multiple_references(lowercase):
    for references in ([REFERENCES], [REFERENCES, SECOND_REFERENCES]):
        ours = corpus_bleu(HYPOTHESES, references, lowercase=lowercase)
        assert_same(ours, sacre(HYPOTHESES, references, lowercase=lowercase))
    # A plain list is one reference set.
    assert corpus_bleu(HYPOTHESES, REFERENCES).score == pytest.approx(
        sacre(HYPOTHESES, [REFERENCES]).score, abs=1e-10
    )


@pytest.mark.parametrize(
    "hypotheses",
    [
        ["cat"] * 6,  # no bigram at all: the higher orders are empty
        ["zebra zebra"] * 6,  # nothing matches
        [""] * 6,  # empty output
        ["The well-known cat sat on the mat"] + [""] * 5,  # brevity penalty
        REFERENCES,  # perfect
    ],
)
def test_edge_cases(hypotheses):
    assert_same(corpus_bleu(hypotheses, [REFERENCES]), sacre(hypotheses, [REFERENCES]))


def test_tokenize_none_and_errors():
    assert_same(
        corpus_bleu(HYPOTHESES, [REFERENCES], tokenize="none"),
        sacre(HYPOTHESES, [REFERENCES], tokenize="none"),
    )
    with pytest.raises(ValueError, match="reference set 0 has 2 sentences"):
        corpus_bleu(["a", "b", "c"], [["a", "b"]])
    with pytest.raises(ValueError, match="tokenize"):
        corpus_bleu(["a"], ["a"], tokenize="intl")


def test_real_corpus_slice():
    path = require_data("multi30k", "val.en.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        references = [next(f).rstrip("\n") for _ in range(300)]
    # Hypotheses: each reference damaged differently (dropped, swapped, repeated words).
    hypotheses = []
    for i, line in enumerate(references):
        words = line.split()
        if i % 3 == 0:
            words = words[:-2]
        elif i % 3 == 1:
            words = words[1:2] + words[:1] + words[2:]
        else:
            words = words + words[:3]
        hypotheses.append(" ".join(words))
    assert_same(corpus_bleu(hypotheses, [references]), sacre(hypotheses, [references]))
