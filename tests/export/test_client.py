"""The reference client's batching and command line, without a model file: `_pad`
(ragged rows -> one zero-padded array), `_batched` (length-sorted batches, results in
input order, a file's fixed batch kept) and the command line's errors. The clients of
real exports, at batch 1 and batched, are tested in test_recipe_runtimes.py."""

import numpy as np
import pytest

from kerasrnn.export import client


def test_pad_pads_ragged_rows_at_every_depth():
    words = client._pad([[4, 5, 6], [7]], [None, None])
    np.testing.assert_array_equal(words, [[4, 5, 6], [7, 0, 0]])
    assert words.dtype == np.int32
    chars = client._pad([[[1, 2], [3]], [[4, 5, 6]]], [None, None, None])
    np.testing.assert_array_equal(chars, [[[1, 2, 0], [3, 0, 0]], [[4, 5, 6], [0, 0, 0]]])
    # a file's fixed dimensions are kept; an empty row is one padding position
    np.testing.assert_array_equal(client._pad([[]], [1, 4]), [[0, 0, 0, 0]])
    np.testing.assert_array_equal(client._pad([3, 1], [None]), [3, 1])


def test_pad_refuses_an_input_longer_than_a_fixed_length():
    with pytest.raises(ValueError) as error:
        client._pad([[1] * 66], [1, 64])
    assert str(error.value) == (
        "an input of shape (66,) does not fit the exported fixed shape (64,): export "
        "again with a larger --sequence-length."
    )


class FakeFile:
    def __init__(self, batch):
        self.shapes = [[batch, None]]


def _recording():
    calls = []

    def run(batch):
        calls.append([len(row) for row in batch])
        return [f"len {len(row)}" for row in batch]

    return calls, run


def test_batched_sorts_by_length_and_returns_the_input_order():
    calls, run = _recording()
    items = [[1, 1, 1], None, [1], [1, 1, 1, 1], [1, 1]]
    got = client._batched(FakeFile(None), items, run, 2, empty={"tags": []})
    assert got == ["len 3", {"tags": []}, "len 1", "len 4", "len 2"]
    assert calls == [[1, 2], [3, 4]]  # None needs no call; each batch pads little


def test_a_file_with_a_fixed_batch_runs_one_input_a_call():
    calls, run = _recording()
    got = client._batched(FakeFile(1), [[1, 1], [1]], run, 32)
    assert got == ["len 2", "len 1"] and calls == [[1], [2]]


@pytest.mark.parametrize("batch_size", [0, -1, 2.5, True, "8"])
def test_batch_size_must_be_a_positive_integer(batch_size):
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        client._batched(FakeFile(None), [[1]], lambda batch: batch, batch_size)


def test_a_pair_file_needs_a_tab_on_every_line():
    assert client.pair_lines(["a b\tc d", "e\tf"], "p.tsv") == [("a b", "c d"), ("e", "f")]
    with pytest.raises(ValueError) as error:
        client.pair_lines(["a\tb", "no tab here"], "p.tsv")
    assert str(error.value) == "p.tsv line 2: a pair needs two sentences separated by a tab."


def test_command_line_errors_are_one_line(tmp_path, capsys):
    # the input file is read before the folder loads: a wrong path fails at once
    missing = tmp_path / "missing.txt"
    assert client.main([str(tmp_path), "--input", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == f"client.py: error: --input {missing}: No such file or directory\n"
    for argv, message in [
        ([str(tmp_path), "a text", "--batch-size", "0"], "--batch-size: must be at least 1"),
        ([str(tmp_path)], "give INPUTs or --input FILE"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            client.main(argv)
        assert exit_.value.code == 2
        assert message in capsys.readouterr().err
