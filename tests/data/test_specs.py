"""kerasrnn.data.specs: tfds: data specs and seeded held-out splits."""

import pytest

from kerasrnn.data.specs import holdout, tfds_spec


def test_tfds_spec():
    assert tfds_spec("tfds:imdb_reviews", "train") == ("imdb_reviews", "train")
    assert tfds_spec("tfds:ted_hrlr_translate/pt_to_en:test[:10%]", "train") == (
        "ted_hrlr_translate/pt_to_en",
        "test[:10%]",
    )
    for files in ("train.tsv", ["a.pos", "a.neg"], {"pos": "a.pos"}, None):
        assert tfds_spec(files, "train") is None
    with pytest.raises(ValueError, match="needs a dataset name"):
        tfds_spec("tfds:", "train")


def test_holdout_is_seeded_disjoint_and_aligned():
    texts = [f"t{i}" for i in range(20)]
    labels = list(range(20))
    (kept, kept_labels), (held, held_labels) = holdout(texts, labels, 0.25, seed=3)
    assert len(held) == 5 and len(kept) == 15
    assert sorted(kept + held) == sorted(texts) and not set(kept) & set(held)
    assert all(t == f"t{label}" for t, label in zip(kept + held, kept_labels + held_labels))
    assert holdout(texts, labels, 0.25, seed=3) == ((kept, kept_labels), (held, held_labels))
    assert holdout(texts, labels, 0.25, seed=4)[1] != (held, held_labels)
    assert len(holdout(texts[:3], labels[:3], 0.01, seed=0)[1][0]) == 1  # at least one
    with pytest.raises(ValueError, match=r"`valid_fraction` must be in \(0, 1\), got 1.5"):
        holdout(texts, labels, 1.5, seed=0, option="valid_fraction")
    with pytest.raises(ValueError, match="aligned"):
        holdout(texts, labels[:3], 0.5, seed=0)
