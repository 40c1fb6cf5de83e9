"""The translator recipe's data wiring, network and scoring (`recipes.translator` holds
its options, the trained `Translator` and the command line): the two `TextSide` of a
run, the sentence-pair datasets, the configured `kerasrnn.seq2seq.Seq2Seq`, BLEU and
exact-match scores per beam size, the attention heatmaps, and the demo's defaults and
arguments."""

import os

from kerasrnn.data.text import SENTENCEPIECE_KINDS, TextSide, translation_dataset
from recipes import common, vectors
from recipes.config import Option, count, non_negative

# --copy-attention: `kerasrnn.seq2seq.CopyReadout` (docs/seq2seq.md, copy attention)
COPY_OPTIONS = dict(
    copy_attention=Option(
        False,
        "copy attention (a pointer-generator readout): the decoder may copy a source word "
        "its target vocabulary lacks (word tokenizers)",
        group="model",
    ),
    coverage_weight=Option(
        0.0, "with copy_attention: the weight of See et al.'s coverage loss", group="model"
    ),
)

# --beam-groups: `kerasrnn.decoding.DiverseBeamSearch` (docs/decoding.md)
DIVERSE_OPTIONS = dict(
    beam_groups=Option(
        1,
        "diverse beam search (Vijayakumar et al. 2018): the beam in this many groups, each "
        "penalised for the tokens the groups before it chose; beam_size a multiple of it; "
        "1: beam search",
        check=count(),
        group="decoding",
    ),
    beam_diversity=Option(
        0.5,
        "diverse beam search: the penalty lambda per earlier group's hypothesis ending in "
        "the same token",
        check=non_negative("0: independent groups"),
        group="decoding",
    ),
)

# The demo's generated dates: a small model and few epochs reach 100% exact match.
DEMO_DEFAULTS = dict(
    output_dir="runs/translator-demo",
    source_tokenizer="word",
    target_tokenizer="char",
    lowercase=True,
    max_source_length=20,
    max_target_length=20,
    embedding_dim=32,
    encoder_units=64,
    decoder_units=128,
    attention_units=64,
    dropout=0.0,
    batch_size=64,
    learning_rate=3e-3,
    epochs=3,
    patience=2,
    bucket_boundaries=[],
    beam_size=4,
    max_decode_length=12,
    verbose=2,
)

# ------------------------------------------------------------------------------ data


def build_sides(config, sources, targets):
    """The (source, target) `kerasrnn.data.text.TextSide` of the training sentences."""
    sides = []
    for side, texts in (("source", sources), ("target", targets)):
        try:
            sides.append(
                TextSide.build(
                    texts,
                    config[f"{side}_tokenizer"],
                    config["lowercase"],
                    config["max_vocab"],
                    config["min_freq"],
                    config["subword_vocab_size"],
                )
            )
        except ValueError as error:
            raise common.ConfigError(f"{side} side: {error}") from None
    return sides


def side_vectors(config, sides):
    """``(sides, {embedding layer: WordVectors or None})``: the vectors of
    `source_embeddings` (the source side's vocabulary extended by `embeddings_extend`
    words of the file, `recipes.vectors.load`) and `target_embeddings`."""
    if config["embeddings_extend"] and config["source_tokenizer"] != "word":
        raise common.ConfigError(
            f"`embeddings_extend` adds words to the source vocabulary: it needs "
            f"`source_tokenizer` word, not {config['source_tokenizer']!r}; set it to 0."
        )
    found = {}
    for i, side in enumerate(("source", "target")):
        text_side = sides[i]
        found[f"{side}_embedding"] = loaded = vectors.load(
            config,
            text_side.vocabulary,
            f"{side}_embeddings",
            side == "source",
            config["lowercase"],
        )
        if loaded is not None and loaded.added:
            sides[i] = TextSide(
                loaded.vocabulary, text_side.kind, text_side.lowercase, text_side.subword_model
            )
    return sides, found


def save_sides(config, sides):
    """Writes each side's vocabulary (``source_vocab.txt``, ``target_vocab.txt``) and
    learned SentencePiece model (``source_subwords.model``, ...) into the run."""
    for name, side in zip(("source", "target"), sides):
        side.vocabulary.save(os.path.join(config["output_dir"], f"{name}_vocab.txt"))
        if side.subword_model is not None:
            with open(os.path.join(config["output_dir"], f"{name}_subwords.model"), "wb") as f:
                f.write(side.subword_model)


def load_sides(config):
    """The (source, target) `TextSide` of a trained run."""
    sides = []
    for side in ("source", "target"):
        model = None
        if config[f"{side}_tokenizer"] in SENTENCEPIECE_KINDS:
            path = os.path.join(config["output_dir"], f"{side}_subwords.model")
            if not os.path.exists(path):
                raise common.RecipeError(
                    f"{path} is missing: the run's {side} SentencePiece model; train the run again."
                )
            with open(path, "rb") as f:
                model = f.read()
        vocabulary = common.load_vocabulary(config, f"{side}_vocab.txt")
        try:
            kind = config[f"{side}_tokenizer"]
            sides.append(TextSide(vocabulary, kind, config["lowercase"], model))
        except (ValueError, RuntimeError) as error:  # a damaged model file
            raise common.RecipeError(f"{config['output_dir']}: the {side} side: {error}") from None
    return sides


def runtime_subwords(config, folder):
    """Copies the run's SentencePiece models into an ONNX / LiteRT `folder`, where its
    client tokenises with them: ``{side: file name}``."""
    import shutil

    os.makedirs(folder, exist_ok=True)
    names = {}
    for side in ("source", "target"):
        if config[f"{side}_tokenizer"] in SENTENCEPIECE_KINDS:
            names[side] = f"{side}_subwords.model"
            shutil.copyfile(
                os.path.join(config["output_dir"], names[side]), os.path.join(folder, names[side])
            )
    return names


def search_strategy(config, beam_size, n_best):
    """The run's strategy of width `beam_size` returning `n_best` hypotheses (both > 1
    or `n_best` 1): beam search, or diverse beam search with `beam_groups` > 1, with
    the run's length normalisation and `max_length_ratio`."""
    from kerasrnn import decoding

    constraints = decoding.Constraints(max_length_ratio=config["max_length_ratio"] or None)
    if max(beam_size, n_best) <= 1:
        return decoding.GreedySearch(constraints)
    width, groups = max(beam_size, n_best), config["beam_groups"]
    scorer = decoding.Scorer(config["length_normalization"])
    if groups == 1:
        return decoding.BeamSearch(width, n_best, scorer, constraints)
    if width % groups:
        raise common.ConfigError(
            f"diverse beam search splits the beam into `beam_groups` ({groups}) of equal "
            f"size: give a beam size (or n_best) that is a multiple of it, not {width}."
        )
    return decoding.DiverseBeamSearch(
        width, groups, config["beam_diversity"], n_best=n_best, scorer=scorer,
        constraints=constraints,
    )  # fmt: skip


def load_pairs(config, spec, split):
    """One data spec -> ``(sources, targets)``."""
    from kerasrnn.data import loaders
    from kerasrnn.data.specs import tfds_spec

    tfds = tfds_spec(spec, "validation" if split == "valid" else split)
    if tfds:
        return loaders.load_tfds_translation(*tfds, data_dir=config["tfds_data_dir"])
    if not isinstance(spec, (list, tuple)) or len(spec) != 2:
        raise common.ConfigError(
            f"`{split}` must be [SOURCE_FILE, TARGET_FILE] or 'tfds:NAME[:SPLIT]'; got {spec!r}."
        )
    return loaders.load_parallel_text(spec[0], spec[1], config["encoding"])


def pairs_dataset(config, sides, sources, targets, shuffle):
    """The teacher-forcing dataset of the pairs within the length limits
    (`kerasrnn.data.text.translation_dataset`) and the number of pairs kept."""
    if config.get("copy_attention"):
        return copy_pairs_dataset(config, sides, sources, targets, shuffle)
    try:
        return translation_dataset(
            *sides,
            sources,
            targets,
            config["batch_size"],
            config["max_source_length"],
            config["max_target_length"],
            shuffle,
            config["seed"],
            config["bucket_boundaries"],
        )
    except ValueError as error:  # no pair within the limits
        raise common.RecipeError(str(error)) from None


def copy_pairs_dataset(config, sides, sources, targets, shuffle):
    """`pairs_dataset` for copy attention: the same pairs, each target word the target
    vocabulary lacks but the source holds labelled with its extended id
    (`kerasrnn.data.copy_target_ids`)."""
    from kerasrnn.data import copy_target_ids
    from kerasrnn.data.pipeline import sequence_dataset

    source, target = sides
    limits = config["max_source_length"], config["max_target_length"]
    columns = ([], [], [])
    for src, tgt in zip(source.tokenize(sources), target.tokenize(targets)):
        if not src or len(src) > (limits[0] or len(src)) or len(tgt) > (limits[1] or len(tgt)):
            continue
        columns[0].append(source.vocabulary.encode(src))
        columns[1].append(target.vocabulary.encode(tgt, add_start=True))
        columns[2].append(copy_target_ids(src, tgt, source.vocabulary, target.vocabulary))
    if not columns[0]:
        raise common.RecipeError("no sentence pair is left after length filtering.")
    dataset = sequence_dataset(
        {"source": columns[0], "target_in": columns[1]},
        columns[2],
        batch_size=config["batch_size"],
        shuffle=shuffle,
        seed=config["seed"],
        bucket_boundaries=config["bucket_boundaries"] or None,
        length_key="source",
        target_weights=False,
    )
    return dataset, len(columns[0])


def copy_readout(config):
    """The run's `CopyReadout` (None without copy_attention), its id map from the
    run's saved vocabularies."""
    if not config.get("copy_attention"):
        return None
    from kerasrnn.data import copy_vocabulary_map
    from kerasrnn.seq2seq import CopyReadout

    source, target = load_sides(config)
    table = copy_vocabulary_map(source.vocabulary, target.vocabulary)
    return CopyReadout(table, coverage_weight=config["coverage_weight"])


# ----------------------------------------------------------------------------- model


def build_model(config, source_vocab_size, target_vocab_size, pretrained=None):
    """The translator as a `kerasrnn.seq2seq.Seq2Seq`: a bidirectional `RNNEncoder` of
    `num_layers` layers, the learned bridge, the attentive decoder (`attention`), dropout
    on the embeddings, between encoder layers and before the readout, and scheduled
    sampling as configured. It trains on ``{"source", "target_in"}`` -> ``target_out``
    and decodes with `generate`. `pretrained` (`side_vectors`' second value) starts
    the embeddings from vectors, whose width then replaces ``embedding_dim``."""
    pretrained = pretrained or {}
    config = vectors.width(config, *pretrained.values())
    import kerasrnn
    from kerasrnn.seq2seq import RNNEncoder, ScheduledSampling, Seq2Seq, Seq2SeqBackbone

    encoder = RNNEncoder(
        common.make_cell(config["cell"], config["encoder_units"], **config["cell_options"]),
        num_layers=config["num_layers"],
        bidirectional=True,
        dropout=config["dropout"],
        name="encoder",
    )
    cell = common.make_cell(config["cell"], config["decoder_units"], **config["cell_options"])
    if config["attention"] == "bahdanau":
        attention = kerasrnn.BahdanauAttention(config["attention_units"])
    else:
        attention = kerasrnn.LuongAttention(config["luong_score"])
    if config["attention"] == "bahdanau":
        order = kerasrnn.AttendThenRun()
    else:
        order = kerasrnn.RunThenAttend(input_feeding=config["input_feeding"])
    size = config["attention_layer_size"]
    decoder_cell = kerasrnn.AttentionCell(
        cell, attention, order, None if size is None else kerasrnn.LuongProjection(size)
    )
    backbone = Seq2SeqBackbone(
        source_vocab_size,
        target_vocab_size,
        encoder=encoder,
        decoder_cell=decoder_cell,
        bridge="dense",
        embedding_dim=config["embedding_dim"],
        dropout=config["dropout"],
        name="backbone",
    )
    sampling = None
    if config["scheduled_sampling"] != "off":
        sampling = ScheduledSampling(
            config["scheduled_sampling"],
            config["sampling_probability"],
            steps=config["sampling_steps"],
            mode=config["sampling_mode"],
            seed=config["seed"],
        )
    model = Seq2Seq(
        backbone,
        max_target_length=config["max_decode_length"],
        scheduled_sampling=sampling,
        copy_readout=copy_readout(config),
        name="translator",
    )
    model.build()  # the weights exist before fit (BackupAndRestore, --continue need them)
    return vectors.apply(model, config, pretrained)


def load_model(config):
    """The best `Seq2Seq` of a run. A ``best.keras`` of the recipe's earlier layout (a
    functional ``TranslatorModel``) cannot load: the error says how to retrain."""
    return common.load_best_model(config, former=("TranslatorModel",))


def translation_scores(translator, sources, references, beam_sizes=(1,), lowercase=False):
    """Corpus BLEU (sacreBLEU's, `kerasrnn.metrics.corpus_bleu`), exact match,
    speed and 5 samples of ``translator.translate`` (a `Translator`)
    per beam size (1: "greedy", k: "beam<k>").

    `lowercase`: a target side that lower-cases can only write lower-case, so the
    references are lower-cased first as its tokenizer does (a kind of
    `kerasrnn.data.text.TOKENIZERS`, or True for "word"): the scores are then
    case-insensitive (``"cased": false`` in the results)."""
    import time

    from kerasrnn.data.text import lower_graph
    from kerasrnn.metrics import corpus_bleu

    if lowercase:
        kind = "word" if lowercase is True else lowercase
        references = [r.decode("utf-8") for r in lower_graph(list(references), kind).numpy()]
    results = {"examples": len(sources), "cased": not lowercase}
    for beam in beam_sizes:
        translator.translate(sources[:2], beam)  # trace outside the timing
        began = time.perf_counter()
        hypotheses = translator.translate(sources, beam)
        seconds = time.perf_counter() - began
        results["greedy" if beam == 1 else f"beam{beam}"] = {
            "bleu": corpus_bleu(hypotheses, references).score,
            "exact_match": sum(h == r for h, r in zip(hypotheses, references))
            / max(len(references), 1),
            "sentences_per_second": len(sources) / seconds,
            "samples": [
                {"source": s, "reference": r, "translation": h}
                for s, r, h in list(zip(sources, references, hypotheses))[:5]
            ],
        }
    return results


def write_heatmaps(translator, texts, folder, name="attention"):
    """`Translator.heatmap` of each text, ``<folder>/<name>_<i>.png``; their paths."""
    paths = [os.path.join(folder, f"{name}_{i}.png") for i in range(len(texts))]
    for text, path in zip(texts, paths):
        translator.heatmap(text, path)
    return paths


def _demo_arguments(parser):
    parser.add_argument(
        "--data",
        nargs=2,
        metavar=("SOURCE", "TARGET"),
        help="train on these parallel files instead of generated dates",
    )
    parser.add_argument(
        "--examples",
        type=int,
        default=30000,
        metavar="INT",
        help="generated date pairs (train + valid + test; default: 30000)",
    )
    parser.add_argument(
        "--test-examples",
        type=int,
        default=1000,
        metavar="INT",
        help="held-out pairs for the final scores (default: 1000)",
    )
