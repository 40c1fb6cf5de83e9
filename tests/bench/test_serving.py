"""bench/serving.py and bench/quantization.py: their pure helpers (padding, batching,
the output check, the table cells, accuracy and file sizes). No model is built."""

import numpy as np
import pytest

from bench import quantization, serving, suite


def test_pad_ids_right_pads_with_zero_and_refuses_long_rows():
    out = serving.pad_ids([[3, 4], [], [5, 6, 7]], 3)
    np.testing.assert_array_equal(out, [[3, 4, 0], [0, 0, 0], [5, 6, 7]])
    assert out.dtype == np.int32
    with pytest.raises(ValueError, match="row 0 has 3 ids, more than length=2"):
        serving.pad_ids([[1, 2, 3]], 2)


def test_pad_chars_pads_tokens_and_cuts_long_words():
    out = serving.pad_chars([[[1, 2, 3], [4]], [[5, 6]]], length=3, width=2)
    expected = np.zeros((2, 3, 2), "int32")
    expected[0, 0] = [1, 2]  # the third character is cut
    expected[0, 1] = [4, 0]
    expected[1, 0] = [5, 6]
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(ValueError, match="row 0 has 2 tokens"):
        serving.pad_chars([[[1], [2]]], length=1, width=1)


def test_batches_of_wraps_around_so_every_batch_is_full():
    x = np.arange(5)[:, None]
    y = 10 * np.arange(5)
    batches = serving.batches_of((x, y), 2)
    assert [b[1].tolist() for b in batches] == [[0, 10], [20, 30], [40, 0]]
    # fewer rows than a batch: one batch, the rows repeated
    (only,) = serving.batches_of((y,), 7)
    assert only[0].tolist() == [0, 10, 20, 30, 40, 0, 10]
    with pytest.raises(ValueError, match="no rows"):
        serving.batches_of((np.zeros((0, 2)),), 2)


def test_max_difference_is_the_largest_gap_and_inf_on_a_shape_mismatch():
    a = [np.array([[0.5, 0.25]]), np.array([1, 2])]
    b = [np.array([[0.5, 0.2]]), np.array([1, 3])]
    assert serving.max_difference(a, b) == pytest.approx(1.0)
    assert serving.max_difference(a[:1], b[:1]) == pytest.approx(0.05)
    assert serving.max_difference(a, b[:1]) == float("inf")
    assert serving.max_difference([np.zeros((2, 2))], [np.zeros((2, 3))]) == float("inf")
    assert serving.max_difference([np.ones(3)], [np.ones(3)]) == 0.0


def test_cells_give_the_median_over_rounds_and_the_spread():
    # per-round seconds; ratios 0.5, 0.25, 1.0 -> median 0.5, range 0.25-1.0
    assert serving.ratio_cell([1.0, 1.0, 2.0], [2.0, 4.0, 2.0]) == "0.50x [0.25-1.00]"
    assert serving.ratio_cell([], []) == "-"
    # ms: median 2, quartiles by linear interpolation (numpy.percentile)
    assert serving.ms_cell([0.001, 0.002, 0.003]) == "2.00 [1.50-2.50]"
    assert serving.ms_cell([]) == "-"


def test_markdown_table():
    text = suite.markdown_table(["a", "b"], [[1, "x"], [2, "y"]])
    assert text.splitlines() == ["| a | b |", "|---|---|", "| 1 | x |", "| 2 | y |"]


def test_token_accuracy_counts_real_tokens_only():
    # 2 sentences, 3 steps, 2 tags; the second sentence has one real token
    probabilities = np.array(
        [
            [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]],
            [[0.3, 0.7], [0.9, 0.1], [0.9, 0.1]],
        ]
    )
    word_ids = np.array([[4, 5, 6], [7, 0, 0]])
    gold = np.array([[0, 1, 1], [0, 1, 1]])  # padding's gold is never read
    # real tokens: (0,0) right, (0,1) right, (0,2) wrong, (1,0) wrong -> 2 / 4
    assert quantization.token_accuracy(probabilities, gold, word_ids) == 0.5
    predicted = probabilities.argmax(-1)
    assert quantization.changed_share(predicted, predicted) == 0.0
    flipped = predicted.copy()
    flipped[1, 2] = 1 - flipped[1, 2]  # a padded step: not counted under the mask
    flipped[0, 0] = 1 - flipped[0, 0]
    assert quantization.changed_share(flipped, predicted, word_ids != 0) == 0.25
    assert quantization.changed_share(flipped, predicted) == pytest.approx(2 / 6)


def test_predict_all_runs_full_batches_and_keeps_one_row_per_input():
    calls = []

    def run(batch):
        calls.append(len(batch[0]))
        return [batch[0] * 2]

    x = np.arange(5)[:, None]
    out = quantization.predict_all(run, (x,), 2)
    assert calls == [2, 2, 2]
    np.testing.assert_array_equal(out, 2 * x)


def test_size_of_a_file_and_of_a_folder(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"12345")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.bin").write_bytes(b"123")
    assert quantization.size_of(str(tmp_path / "a.bin")) == 5
    assert quantization.size_of(str(tmp_path)) == 8


def test_latency_sentences_keep_short_sentences_of_short_words_in_order():
    sentences = [["a", "bb"], [], ["c"] * 4, ["dddd", "e"], ["f"], ["g", "h"]]
    assert serving.latency_sentences(sentences, 3, 3, 10) == [["a", "bb"], ["f"], ["g", "h"]]
    assert serving.latency_sentences(sentences, 3, None, 2) == [["a", "bb"], ["dddd", "e"]]


@pytest.mark.parametrize("lowercase", [False, True])
def test_multi30k_test_sentences_and_references(shared_data, lowercase):
    folder = shared_data("multi30k", "test_2016_flickr.de.gz").parent
    config = {"lowercase": lowercase, "target_tokenizer": "word"}
    sources, references = serving.multi30k_test(folder, 3, config)
    assert len(sources) == len(references) == 3
    assert sources[0].startswith("Ein Mann")  # German in, English references
    assert references[0].startswith("A man" if not lowercase else "a man")
