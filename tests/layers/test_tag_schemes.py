"""`kerasrnn.layers.training_schemes` and `is_entity_tags`: the data's tag scheme and
the one a tagger trains in, by hand-made tag sequences of each scheme."""

import pytest

from kerasrnn.layers import convert_tags, is_entity_tags, training_schemes

BIO = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG"]]
IOB1 = [["I-PER", "I-PER", "O", "I-LOC"], ["I-LOC", "B-LOC"]]  # B- between two entities
BIOES = [convert_tags(s, "BIOES") for s in BIO]
POS = [["DET", "NOUN", "VERB"], ["PRON", "VERB"]]


@pytest.mark.parametrize(
    "sequences,declared,expected",
    [
        (BIO, "auto", ("BIO", "BIO")),
        (IOB1, "auto", ("IOB1", "IOB1")),
        (BIOES, "auto", ("BIOES", "BIOES")),
        (BIO, "bioes", ("BIO", "BIOES")),  # trained in BIOES, reported in BIO
        (IOB1, "BIOES", ("IOB1", "BIOES")),
        (IOB1, "iob1", ("IOB1", "IOB1")),
        (POS, "auto", (None, None)),
        ([["O", "O"]], "auto", (None, None)),  # no entity at all: not entity tags
    ],
)
def test_the_datas_scheme_and_the_training_scheme(sequences, declared, expected):
    assert training_schemes(sequences, declared) == expected


def test_data_that_does_not_fit_the_declared_scheme_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"the training tags: sentence 1, token 1: I-PER .*IOB1"):
        training_schemes(IOB1, "BIO")
    # a B- with no entity of its type before is not IOB1's
    with pytest.raises(ValueError, match="B-PER after the sentence start is not allowed in IOB1"):
        training_schemes(BIO, "IOB1")
    with pytest.raises(ValueError, match="BIOES needs entity tags .* the training tags are not"):
        training_schemes(POS, "BIOES")
    with pytest.raises(ValueError, match="`declared` must be 'auto', 'IOB1', 'BIO' or 'BIOES'"):
        training_schemes(BIO, "bilou")


def test_entity_tags_are_o_and_prefixed_types_with_one_entity():
    assert is_entity_tags(["O", "B-PER", "I-PER"]) and is_entity_tags({"S-LOC", "E-LOC"})
    assert not is_entity_tags(["NOUN", "VERB"])
    assert not is_entity_tags(["O"]) and not is_entity_tags([])
    assert not is_entity_tags(["B-PER", "X-PER"]) and not is_entity_tags(["B-"])
