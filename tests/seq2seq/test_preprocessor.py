"""`kerasrnn.seq2seq.Seq2SeqPreprocessor` against its sides' Python tokenization, and
`Seq2Seq.generate` on text against `generate` on the same ids detokenized by hand
(batch order kept, a single text a single result, blank text ""), `attention(text)`,
and the one-line errors of text given where ids are needed and the reverse."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasrnn import decoding
from kerasrnn.data.text import SPACE, TextSide
from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone, Seq2SeqPreprocessor
from kerasrnn.special_tokens import PAD_ID, UNK_ID
from tests.tiny_tasks import seq2seq, seq2seq_sides

# unknown words, case, a source longer than max_source_length (6), blank and empty text
TEXTS = ["The cat sat", "a zebra ran", "", "the dog sat on a mat the cat ran", "   ", "dog"]


def np_(x):
    return keras.ops.convert_to_numpy(x)


@pytest.fixture(scope="module")
def model():
    return seq2seq()


def source_ids(source, texts, width=None):
    """The reference: the side's Python tokens, its vocabulary's `encode`, cut to
    `width` tokens, padded with 0."""
    rows = [source.vocabulary.encode(tokens)[:width] for tokens in source.tokenize(texts)]
    longest = max([len(r) for r in rows] + [1])
    return np.array([r + [PAD_ID] * (longest - len(r)) for r in rows], "int32")


def detokenized(target, tokens):
    """Target ids (n, length) -> the texts: special tokens dropped, characters joined."""
    return [
        "".join(target.vocabulary.decode(row, skip_special=True)).replace(SPACE, " ")
        for row in np_(tokens)
    ]


def test_encode_equals_the_sides_python_tokenization():
    source, target = seq2seq_sides()
    preprocessor = Seq2SeqPreprocessor(source, target)
    assert source.tokenize(["The cat sat"]) == [["the", "cat", "sat"]]  # lower-cased
    ids, words, blank = preprocessor.encode(TEXTS, max_length=6)
    want = source_ids(source, TEXTS, 6)
    assert UNK_ID in want[1]
    np.testing.assert_array_equal(ids, want)
    assert blank.numpy().tolist() == [False, False, True, False, True, False]
    tokens = [[w.decode() for w in row if w] for row in words.numpy()]
    assert tokens == [t[:6] for t in source.tokenize(TEXTS)]
    # a static width pads to max_length exactly; without it, the batch's longest
    static, _, _ = preprocessor.encode(TEXTS[:2], max_length=6, static_width=True)
    assert static.shape == (2, 6)
    np.testing.assert_array_equal(static[:, :3], want[:2, :3])
    with pytest.raises(ValueError, match="a static source width needs"):
        preprocessor.encode(TEXTS, static_width=True)
    # inside Dataset.map
    data = tf.data.Dataset.from_tensor_slices(TEXTS).batch(3)
    mapped = [np.asarray(ids) for ids, _, _ in data.map(lambda t: preprocessor.encode(t, 6))]
    np.testing.assert_array_equal(mapped[0], source_ids(source, TEXTS[:3], 6))
    np.testing.assert_array_equal(mapped[1], source_ids(source, TEXTS[3:], 6))


def test_decode_joins_the_target_tokens_and_blanks_blank_sources():
    source, target = seq2seq_sides()
    preprocessor = Seq2SeqPreprocessor(source, target)
    ids = [target.vocabulary.encode(list("le chat".replace(" ", SPACE)), add_end=True)]
    tokens = np.array([ids, ids], "int32")  # (batch 2, n 1, length)
    result = decoding.DecodeResult(tokens, None, np.array([[-1.5], [-2.0]], "float32"), None)
    _, words, blank = preprocessor.encode(["the cat", " "])
    strings, scores = preprocessor.decode(result, words, blank)
    assert strings.numpy().tolist() == [[b"le chat"], [b""]]
    np.testing.assert_allclose(scores, [[-1.5], [0.0]])


@pytest.mark.parametrize(
    "strategy",
    [decoding.GreedySearch(), decoding.BeamSearch(3, n_best=2)],
    ids=["greedy", "beam"],
)
def test_generate_on_text_equals_generate_on_ids_detokenized(model, strategy):
    source, target = model.preprocessor.source, model.preprocessor.target
    # (the reference decodes eagerly: tracing it too would double the test's time)
    expected = model.generate(source_ids(source, TEXTS, 6), strategy, jit_compile=False)
    texts = [detokenized(target, row) for row in expected.tokens]
    scores = np_(expected.scores)
    got = model.generate(TEXTS, strategy, return_scores=True)
    assert len(got) == len(TEXTS)
    for i, text in enumerate(TEXTS):
        if text.strip():
            assert [h["text"] for h in got[i]] == texts[i]
            np.testing.assert_allclose([h["score"] for h in got[i]], scores[i], atol=1e-5)
        else:  # a blank source: "" and 0, not the answer to all-padding
            assert got[i] == [{"text": "", "score": 0.0}] * strategy.n_best
    assert model.generate(TEXTS, strategy) == [row[0]["text"] for row in got]
    # one text: its translation alone
    assert model.generate(TEXTS[0], strategy) == got[0][0]["text"]
    assert any(h["text"] for row in got for h in row)  # the comparison compared text


def test_generate_on_text_keeps_the_order_of_its_length_sorted_batches(model):
    many = TEXTS * 12  # more than one batch of 64
    alone = {text: model.generate(text, return_scores=True) for text in TEXTS}
    batched = model.generate(many, return_scores=True)
    assert [row[0]["text"] for row in batched] == [alone[t][0]["text"] for t in many]
    np.testing.assert_allclose(
        [row[0]["score"] for row in batched], [alone[t][0]["score"] for t in many], atol=1e-5
    )


def test_attention_of_one_text_is_the_ids_decoding_with_its_alignments(model):
    source, target = model.preprocessor.source, model.preprocessor.target
    result, source_tokens, output_tokens = model.attention("The cat sat", max_length=5)
    assert source_tokens == ["the", "cat", "sat"]
    ids = source_ids(source, ["The cat sat"], 6)
    expected = model.generate(ids, "greedy", 5, jit_compile=False)
    length = int(np_(expected.lengths)[0, 0])
    assert output_tokens == target.vocabulary.decode(np_(expected.tokens)[0, 0, :length])
    np.testing.assert_allclose(np_(result.alignments), np_(expected.alignments), atol=1e-6)
    assert np_(result.alignments).shape[-1] == 3
    # with generate's other settings: the alignments of the fused decoding
    from kerasrnn.models import LanguageModel, LanguageModelBackbone

    fusion = decoding.ShallowFusion(
        LanguageModel(LanguageModelBackbone(len(target.vocabulary), 4)), 5.0
    )
    fused, _, _ = model.attention("The cat sat", max_length=5, fusion=fusion)
    want = model.generate(ids, "greedy", 5, jit_compile=False, fusion=fusion)
    np.testing.assert_array_equal(np_(fused.tokens), np_(want.tokens))
    np.testing.assert_allclose(np_(fused.alignments), np_(want.alignments), atol=1e-6)
    np.testing.assert_allclose(np_(fused.scores), np_(want.scores), atol=1e-5)
    assert not np.allclose(np_(fused.scores), np_(expected.scores))


def test_replace_unk_writes_the_most_attended_source_word():
    model = seq2seq(replace_unk=True)
    model.build()
    # the readout always prefers [UNK]: every output token is a replaced one
    bias = next(w for w in model.weights if w.path.endswith("readout/bias"))
    bias.assign(np_(bias) + 30.0 * np.eye(len(model.preprocessor.target.vocabulary))[UNK_ID])
    result, words, _ = model.attention("the zebra", max_length=3)
    ids = source_ids(model.preprocessor.source, ["the zebra"], 6)
    expected = model.generate(ids, max_length=3, jit_compile=False)
    attended = np_(expected.alignments)[0, 0].argmax(-1)
    assert np_(expected.tokens)[0, 0].tolist() == [UNK_ID] * 3
    assert model.generate("the zebra", max_length=3) == "".join(words[i] for i in attended)


def test_a_blank_text_has_no_alignments_and_says_so(model):
    with pytest.raises(ValueError, match="'  ' has no source tokens, so nothing to attend to"):
        model.attention("  ")


def test_text_where_ids_are_needed_and_ids_where_text_is_needed(model):
    bare = Seq2Seq(Seq2SeqBackbone(12, 9, embedding_dim=4, units=4))
    with pytest.raises(ValueError, match="has no preprocessor, so it takes token ids, not text"):
        bare.generate(["a text"])
    with pytest.raises(ValueError, match="has no preprocessor"):
        bare.generate(np.array([["a", "b"]]))  # a string array is text, too
    with pytest.raises(TypeError, match="`source_ids` holds strings"):
        bare.generate(np.array([[4, "a"]], dtype=object))
    with pytest.raises(ValueError, match="a 1-d array of them; got shape"):
        model.generate(np.array([["the", "cat"]]))
    with pytest.raises(ValueError, match="`return_alignments` is for token ids"):
        model.generate(["the cat"], return_alignments=True)
    with pytest.raises(ValueError, match="`return_scores` and `batch_size` are for text"):
        model.generate(np.array([[4, 5]]), return_scores=True)
    with pytest.raises(TypeError, match="`source_ids` holds strings"):
        model.generate(["the cat", 4])  # not all text: ids, which these are not
    with pytest.raises(ValueError, match="must be None or a kerasrnn Seq2SeqPreprocessor"):
        Seq2Seq(Seq2SeqBackbone(12, 9, embedding_dim=4, units=4), preprocessor="words")
    side = TextSide.build(["a b"], kind="word")
    with pytest.raises(ValueError, match="`target` must be a kerasrnn.data.text.TextSide"):
        Seq2SeqPreprocessor(side, side.vocabulary)


@pytest.mark.large
def test_the_coverage_penalty_decodes_text_as_generate_decodes_ids(model):
    """The coverage penalty reads alignments: the text path asks beam search for them
    (over a static source width, in its traced graph) and decodes as `generate` does."""
    source, target = model.preprocessor.source, model.preprocessor.target
    beam = decoding.BeamSearch(3, scorer=decoding.Scorer("wu", coverage_penalty_weight=0.7))
    texts = ["the cat sat", "dog a"]
    got = model.generate(texts, beam, max_length=6, return_scores=True)
    expected = model.generate(source_ids(source, texts, 6), beam, 6, jit_compile=False)
    plain = model.generate(
        source_ids(source, texts, 6), decoding.BeamSearch(3), 6, jit_compile=False
    )
    assert not np.allclose(np_(plain.scores), np_(expected.scores))  # the penalty counts
    for row, tokens, scores in zip(got, expected.tokens, np_(expected.scores)):
        assert [h["text"] for h in row] == detokenized(target, tokens)
        np.testing.assert_allclose([h["score"] for h in row], scores, atol=1e-5)


def test_text_decoding_follows_a_change_of_its_settings():
    """The traced text decoders are keyed by the settings too: a new max_length or
    fusion is decoded with, not the first call's."""
    from kerasrnn.models import LanguageModel, LanguageModelBackbone
    from kerasrnn.special_tokens import END_ID

    model = seq2seq(seed=3)
    source, target = model.preprocessor.source, model.preprocessor.target
    # no early end: every output runs to max_length, so its value shows
    readout = next(w for w in model.weights if w.path.endswith("readout/bias"))
    readout.assign(np_(readout) - 10.0 * np.eye(len(target.vocabulary))[END_ID])
    texts = ["the cat sat", "a dog ran", "dog"]
    ids = source_ids(source, texts, 6)

    def expected(**settings):
        result = model.generate(ids, "greedy", jit_compile=False, **settings)
        return [row[0] for row in (detokenized(target, r) for r in result.tokens)]

    assert model.generate(texts) == expected(max_length=7)
    assert model.generate(texts, max_length=2) == expected(max_length=2) != expected(max_length=7)
    fusion = decoding.ShallowFusion(
        LanguageModel(LanguageModelBackbone(len(target.vocabulary), 4)), 5.0
    )
    fused = expected(max_length=2, fusion=fusion)
    assert model.generate(texts, max_length=2, fusion=fusion) == fused != expected(max_length=2)


def test_bad_settings_and_mismatched_vocabularies_fail_in_one_line(model):
    with pytest.raises(ValueError, match="`readout_dtype` must be one of"):
        model.generate(["the cat"], readout_dtype="int8")
    with pytest.raises(ValueError, match="Unknown decoding strategy 'beams'"):
        model.generate(["the cat"], "beams")
    source, target = seq2seq_sides()
    with pytest.raises(
        ValueError, match="source vocabulary has .* tokens but the backbone's source_vocab_size"
    ):
        Seq2Seq(
            Seq2SeqBackbone(len(source.vocabulary) + 1, len(target.vocabulary), units=4),
            preprocessor=Seq2SeqPreprocessor(source, target),
        )
    with pytest.raises(ValueError, match="`kind` must be one of"):
        TextSide(source.vocabulary, "bpe2")
    with pytest.raises(ValueError, match="`subword_model` is the learned model"):
        TextSide(source.vocabulary, "bpe")
