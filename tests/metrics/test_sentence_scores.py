"""sentence_bleu, sentence_chrf and corpus_chrf against sacreBLEU itself: the fixtures
of corpus BLEU's test (punctuation, numbers, entities, an empty hypothesis) and random
texts that reach every rule (no match, orders the hypothesis lacks, several
references, whitespace)."""

import random

import pytest
import sacrebleu

from kerasrnn.metrics import corpus_chrf, sentence_bleu, sentence_chrf
from tests.decoding.test_bleu import HYPOTHESES, REFERENCES, SECOND_REFERENCES

WORDS = "a b the cat sat on mat . , didn't Straße 3.5 % -".split()


def random_texts(seed, count=400):
    rng = random.Random(seed)

    def text():
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 7)))

    return [(text(), [text() for _ in range(rng.randint(1, 3))]) for _ in range(count)]


FIXTURES = [(h, [r1, r2]) for h, r1, r2 in zip(HYPOTHESES, REFERENCES, SECOND_REFERENCES)]


@pytest.mark.parametrize("seed", [0, 1])
def test_sentence_bleu_is_sacrebleus(seed):
    for hypothesis, references in FIXTURES + random_texts(seed):
        want = sacrebleu.sentence_bleu(hypothesis, references)
        got = sentence_bleu(hypothesis, references)
        assert got.score == pytest.approx(want.score, abs=1e-9), (hypothesis, references)
        assert (got.sys_len, got.ref_len) == (want.sys_len, want.ref_len)
    lowered = sacrebleu.sentence_bleu("The Cat", ["the cat"], lowercase=True).score
    assert sentence_bleu("The Cat", "the cat", lowercase=True).score == pytest.approx(lowered)


@pytest.mark.parametrize("seed", [0, 1])
def test_chrf_is_sacrebleus(seed):
    pairs = FIXTURES + random_texts(seed)
    for hypothesis, references in pairs:
        want = sacrebleu.sentence_chrf(hypothesis, references).score
        assert sentence_chrf(hypothesis, references) == pytest.approx(want, abs=1e-9)
    hypotheses = [h for h, _ in pairs]
    streams = [[refs[min(k, len(refs) - 1)] for _, refs in pairs] for k in range(3)]
    want = sacrebleu.corpus_chrf(hypotheses, streams).score
    assert corpus_chrf(hypotheses, streams) == pytest.approx(want, abs=1e-9)


def test_bad_references_are_one_line_errors():
    with pytest.raises(ValueError, match="sentence_bleu: give at least one reference"):
        sentence_bleu("a cat", [])
    with pytest.raises(ValueError, match="chrF: give at least one reference"):
        sentence_chrf("a cat", [])
    with pytest.raises(ValueError, match="corpus_chrf: reference set 0 has 1 sentences"):
        corpus_chrf(["a", "b"], ["a"])
