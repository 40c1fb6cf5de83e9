"""Attention encoder-decoder translation: a command line over `kerasrnn.seq2seq.Seq2Seq`.

The model (`build_model`): embeddings, a bidirectional `RNNEncoder` of any kerasrnn cell,
the learned bridge, an attentive decoder (Bahdanau or Luong attention) and a readout,
trained with teacher forcing (or scheduled sampling); its `Seq2SeqPreprocessor` holds
both sides' tokenizers (words, characters, or learned WordPiece / SentencePiece / BPE
subwords). Translation is `Seq2Seq.generate` on text; BLEU is sacreBLEU's corpus BLEU.
Data: ``[SOURCE_FILE, TARGET_FILE]`` aligned line by line, or ``tfds:NAME[:SPLIT]``.
``demo`` trains on generated dates with no files at all. The commands, options and
measured results: docs/recipes/translator.md.
"""

import os
import sys

from kerasrnn.data.text import TOKENIZERS
from kerasrnn.seq2seq import SCHEDULES
from recipes import common, decoding, vectors
from recipes.common import Option
from recipes.decoding import strategy as search_strategy

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

OPTIONS = common.data_options(
    "runs/translator",
    "[SOURCE_FILE, TARGET_FILE] (aligned line by line, plain or gzip) or tfds:NAME[:SPLIT]",
    holdouts=("valid",),
    valid_fraction=Option(0.05, "part of `train` held out for validation without `valid`"),
    source_tokenizer=Option("word", "source tokens: words, characters or subwords", TOKENIZERS),
    target_tokenizer=Option("word", "target tokens, as `source_tokenizer`", TOKENIZERS),
    **common.vocabulary_options(
        30000,
        256,
        lowercase=False,
        notes={
            "lowercase": "both sides (scores are then case-insensitive)",
            "max_vocab": "per side, of words or characters (subwords: `subword_vocab_size`)",
            "embedding_dim": "each side's",
        },
    ),
    max_source_length=Option(50, "training pairs with a longer source (tokens) are dropped"),
    max_target_length=Option(50, "training pairs with a longer target (tokens) are dropped"),
    subword_vocab_size=Option(8000, "subword tokenizers: pieces per side, special tokens in"),
    **common.cell_options("gru", num_layers=1, notes={"num_layers": "of the encoder"}),
    encoder_units=Option(256, "encoder units per direction"),
    decoder_units=Option(512, "decoder cell units"),
    attention=Option("bahdanau", "additive or multiplicative", ("bahdanau", "luong")),
    attention_units=Option(256, "Bahdanau's W_a width"),
    luong_score=Option("general", "Luong's score function", ("dot", "general", "concat")),
    input_feeding=Option(True, "Luong: feed the previous attentional vector to the cell"),
    attention_layer_size=Option(None, "width of tanh(W_c [c; h]); null: the mode's default"),
    dropout=Option(0.2, "dropout on embeddings, between encoder layers, before the readout"),
    label_smoothing=Option(0.0, "label smoothing of the token cross-entropy"),
    scheduled_sampling=Option("off", "p(feed the model's own token) by step", SCHEDULES),
    sampling_probability=Option(0.25, "the p the sampling schedule grows to"),
    sampling_steps=Option(5000, "linear: steps to reach p; inverse_sigmoid: steps to reach p / 2"),
    sampling_mode=Option("sample", "feed a drawn token or the argmax", ("sample", "argmax")),
    bucket_boundaries=Option([10, 20, 30, 40], "source lengths where buckets split; []: none"),
    **vectors.SIDE_EMBEDDING_OPTIONS,
    **common.decoding_options(5, notes={"beam_size": "translate, export, scores; 1: greedy"}),
    max_decode_length=Option(80, "tokens generated at most"),
    max_length_ratio=Option(0.0, "> 0: at most ceil(ratio * source length) tokens"),
    readout_dtype=Option(
        "float32",
        "the readout's precision (bfloat16: AVX512-BF16)",
        ("float32", "bfloat16", "float16"),
    ),
    n_best=Option(None, "`translate` gives the K best of each input with scores (null: beam)"),
    replace_unk=Option(False, "an output [UNK] becomes the source token it attended to most"),
    heatmaps=Option(3, "evaluate / demo: attention heatmap PNGs of the first N test sentences"),
    **decoding.FUSION_OPTIONS,
    # `kerasrnn.seq2seq.CopyReadout` (docs/seq2seq.md, copy attention)
    copy_attention=Option(False, "a pointer-generator readout: it may copy source words"),
    coverage_weight=Option(0.0, "with copy_attention: See et al.'s coverage loss weight"),
    **decoding.DIVERSE_OPTIONS,
)
DEFAULTS = common.defaults_of(OPTIONS)


# ------------------------------------------------------------------------------ data


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


def build_sides(config, sources, targets):
    """The (source, target) `TextSide` of the training sentences (the source extended
    by `embeddings_extend`), and ``{embedding layer: WordVectors or None}``."""
    from kerasrnn.data.text import TextSide

    if config["embeddings_extend"] and config["source_tokenizer"] != "word":
        raise common.ConfigError(
            f"`embeddings_extend` adds words to the source vocabulary: it needs "
            f"`source_tokenizer` word, not {config['source_tokenizer']!r}; set it to 0."
        )
    sides, found = [], {}
    for side, texts in (("source", sources), ("target", targets)):
        try:
            built = TextSide.build(
                texts,
                config[f"{side}_tokenizer"],
                config["lowercase"],
                config["max_vocab"],
                config["min_freq"],
                config["subword_vocab_size"],
            )
        except ValueError as error:
            raise common.ConfigError(f"{side} side: {error}") from None
        found[f"{side}_embedding"] = loaded = vectors.load(
            config, built.vocabulary, f"{side}_embeddings", side == "source", config["lowercase"]
        )
        if loaded is not None and loaded.added:
            built = TextSide(loaded.vocabulary, built.kind, built.lowercase, built.subword_model)
        sides.append(built)
    return sides, found


# ----------------------------------------------------------------------------- model


def build_model(config, preprocessor, pretrained=None):
    """The configured `kerasrnn.seq2seq.attentive_seq2seq` over `preprocessor`: the
    cell, the attention and its step order, scheduled sampling and copy attention;
    `pretrained` (`build_sides`' second value) starts the embeddings from vectors."""
    pretrained = pretrained or {}
    config = vectors.width(config, *pretrained.values())
    import kerasrnn
    from kerasrnn.data import copy_vocabulary_map
    from kerasrnn.seq2seq import CopyReadout, ScheduledSampling, attentive_seq2seq

    def cell(units):
        return common.make_cell(config["cell"], units, **config["cell_options"])

    if config["attention"] == "bahdanau":
        attention = kerasrnn.BahdanauAttention(config["attention_units"])
        order = kerasrnn.AttendThenRun()
    else:
        attention = kerasrnn.LuongAttention(config["luong_score"])
        order = kerasrnn.RunThenAttend(input_feeding=config["input_feeding"])
    size = config["attention_layer_size"]
    projection = None if size is None else kerasrnn.LuongProjection(size)
    sampling = copying = None
    if config["scheduled_sampling"] != "off":
        sampling = ScheduledSampling(
            config["scheduled_sampling"],
            config["sampling_probability"],
            steps=config["sampling_steps"],
            mode=config["sampling_mode"],
            seed=config["seed"],
        )
    if config.get("copy_attention"):
        table = copy_vocabulary_map(preprocessor.source.vocabulary, preprocessor.target.vocabulary)
        copying = CopyReadout(table, coverage_weight=config["coverage_weight"])
    model = attentive_seq2seq(
        preprocessor,
        cell(config["encoder_units"]),
        kerasrnn.AttentionCell(cell(config["decoder_units"]), attention, order, projection),
        num_layers=config["num_layers"],
        embedding_dim=config["embedding_dim"],
        dropout=config["dropout"],
        max_lengths=(config["max_source_length"], config["max_decode_length"]),
        scheduled_sampling=sampling,
        copy_readout=copying,
    )
    return vectors.apply(model, config, pretrained)


def translation_scores(task, config, sources, references, beam_sizes, settings=None):
    """`kerasrnn.metrics.translation_report` per beam size (1: "greedy", k: "beam<k>"),
    with `generate`'s `settings` (default: the run's, `decoding.generate_settings`)."""
    from kerasrnn.metrics import translation_report

    strategies = {
        "greedy" if beam == 1 else f"beam{beam}": search_strategy(config, beam)
        for beam in beam_sizes
    }
    settings = settings or decoding.generate_settings(config, task)
    return translation_report(task, sources, references, strategies, **settings)


def write_heatmaps(task, config, texts, settings, name="attention"):
    """`kerasrnn.visualize.plot_alignments` of decoding each text with `generate`'s
    `settings`, as ``<output_dir>/<name>_<i>.png``; returns their paths."""
    from kerasrnn.visualize import plot_alignments

    paths = []
    for i, text in enumerate(texts):
        paths.append(os.path.join(config["output_dir"], f"{name}_{i}.png"))
        alignments = task.attention(text, search_strategy(config), **settings)
        plot_alignments(*alignments, path=paths[-1])
    return paths


# -------------------------------------------------------------------------- commands


class TranslatorRecipe(common.Recipe):
    """The translator on the recipe skeleton (`common.Recipe`)."""

    name = "translator"
    options = OPTIONS
    task = "Seq2Seq"
    holdouts = ("valid",)
    test_help = "[SOURCE_FILE, TARGET_FILE]"
    predict_command = "translate"
    run_options = (
        "beam_size length_normalization max_decode_length max_length_ratio readout_dtype "
        "n_best replace_unk heatmaps"
    ).split() + [*decoding.FUSION_OPTIONS, *decoding.DIVERSE_OPTIONS]

    load_examples = staticmethod(load_pairs)

    def prepare(self, config, splits):
        from kerasrnn.seq2seq import Seq2SeqPreprocessor

        sources, targets = splits["train"]
        sides, pretrained = build_sides(config, sources, targets)
        for name, side in zip(("source", "target"), sides):  # for a target-side LM
            side.save(config["output_dir"], name)
        preprocessor = Seq2SeqPreprocessor(*sides, replace_unk=config["replace_unk"])

        def dataset(split, shuffle):
            try:
                return preprocessor.dataset(
                    *split,
                    batch_size=config["batch_size"],
                    max_lengths=(config["max_source_length"], config["max_target_length"]),
                    shuffle=shuffle,
                    seed=config["seed"],
                    bucket_boundaries=config["bucket_boundaries"],
                    copy_targets=config["copy_attention"],
                )
            except ValueError as error:  # no pair within the limits
                raise common.RecipeError(str(error)) from None

        data, used = dataset(splits["train"], True)
        valid = splits.get("valid")
        sizes = [len(side.vocabulary) for side in sides]
        return common.Prepared(
            data,
            dataset(valid, False)[0] if valid else None,
            {"preprocessor": preprocessor, "vectors": pretrained},
            {
                "train_pairs": len(sources),
                "train_pairs_used": used,
                "source_vocabulary": sizes[0],
                "target_vocabulary": sizes[1],
                **vectors.info(pretrained),
            },
        )

    def build(self, config, prepared):
        from kerasrnn.losses import SequenceCrossEntropy
        from kerasrnn.metrics import MaskedAccuracy

        try:
            model = build_model(config, prepared.model["preprocessor"], prepared.model["vectors"])
            model.compile(
                optimizer=common.optimizer(config),
                loss=SequenceCrossEntropy(label_smoothing=config["label_smoothing"]),
                metrics=[MaskedAccuracy(name="accuracy")],
                sampler=search_strategy(config),
            )
        except ValueError as error:  # kerasrnn's checks of the model's options
            raise common.ConfigError(str(error)) from None
        return model

    def monitor(self, config, prepared):
        return ("val_loss" if prepared.valid is not None else "loss"), "min"

    def fit_callbacks(self, config, prepared):
        from kerasrnn.seq2seq import SamplingProbabilityLog

        return [SamplingProbabilityLog()] if config["scheduled_sampling"] != "off" else []

    def evaluate_splits(self, config, splits):
        """BLEU on the test pairs (greedy and beam search) and attention heatmaps."""
        if not splits.get("test"):
            return {}
        scores = self.evaluate_run(self.load(config), config, splits["test"])
        return {"test": scores, "heatmaps": scores.pop("heatmaps")}

    def evaluate_run(self, trained, config, examples):
        sources, references = examples
        chosen = [text for text in sources if text.strip()][: config["heatmaps"]]
        settings = decoding.generate_settings(config, trained)  # loads --lm once
        heatmaps = write_heatmaps(trained, config, chosen, settings)
        beams = sorted({1, config["beam_size"]})
        return {
            **translation_scores(trained, config, sources, references, beams, settings),
            "heatmaps": heatmaps,
        }

    def predict_arguments(self, parser):
        parser.add_argument("texts", nargs="*", help="sentences to translate")
        parser.add_argument("--input", help="a file with one sentence per line")

    def _predict(self, config, args):
        config = self.stored(config, args)
        task, texts = self.load(config), self.inputs_of(config, args)
        settings = decoding.generate_settings(config, task)
        if "n_best" in args.overrides:
            strategy = search_strategy(config, n_best=config["n_best"] or config["beam_size"])
            found = task.generate(texts, strategy, return_scores=True, **settings)
            hypotheses = [
                [{"translation": h["text"], "score": h["score"]} for h in row] for row in found
            ]
            return [{"text": s, "hypotheses": h} for s, h in zip(texts, hypotheses)]
        translations = task.generate(texts, search_strategy(config), **settings)
        return [{"text": s, "translation": t} for s, t in zip(texts, translations)]

    def export_options(self, config):
        return {
            "strategy": search_strategy(config),
            "n_best_strategy": search_strategy(
                config, n_best=config["n_best"] or config["beam_size"]
            ),
            "max_length": config["max_decode_length"],
            "readout_dtype": config["readout_dtype"],
        }

    def extra_commands(self):
        return {
            "heatmap": (
                "attention heatmap PNGs (source x translation tokens) of chosen "
                "sentences, written to the run folder",
                self.predict_arguments,
                _run_heatmap,
                self.options_of("heatmap"),
            ),
            "lm-text": (
                "write the training and validation targets in the run's target tokens, "
                "one sentence per line, for a target-side language model (--lm)",
                lambda parser: parser.add_argument(
                    "--text-dir", required=True, help="where train.txt / valid.txt go"
                ),
                _run_lm_text,
                self.options_of("lm-text"),
            ),
            "demo": (
                "the self-contained demo: dates written many ways -> ISO dates (the "
                "defaults below are the demo's; with --data, train's)",
                _demo_arguments,
                _run_demo,
                common.with_defaults(OPTIONS, DEMO_DEFAULTS),
            ),
        }


RECIPE = TranslatorRecipe()
train, main = RECIPE.train, RECIPE.main  # the module's API: `train(config, splits)`


def _run_lm_text(config, args):
    """The run's training and validation targets in its target tokens, one sentence a
    line, as ``--text-dir``'s train.txt and valid.txt: a target-side LM's text."""
    config = RECIPE.stored(config, args)
    target = RECIPE.load(config).preprocessor.target
    os.makedirs(args.text_dir, exist_ok=True)
    written = {}
    for split in ("train", "valid"):
        if not config.get(split):
            continue
        targets = load_pairs(config, config[split], split)[1]
        path = os.path.join(args.text_dir, f"{split}.txt")
        lines = [" ".join(tokens) for tokens in target.tokenize(list(targets)) if tokens]
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        written[split] = {"path": path, "lines": len(lines)}
    return written


def _run_heatmap(config, args):
    """One attention heatmap PNG per sentence, ``heatmap_<i>.png`` in the run folder."""
    config = RECIPE.stored(config, args)
    texts = RECIPE.inputs_of(config, args)
    if not texts or not all(text.strip() for text in texts):  # a blank one has no alignments
        raise common.ConfigError("heatmap needs sentences, none blank: as arguments or --input.")
    task = RECIPE.load(config)
    settings = decoding.generate_settings(config, task)
    paths = write_heatmaps(task, config, texts, settings, "heatmap")
    translations = task.generate(texts, search_strategy(config), **settings)
    return [
        {"text": text, "translation": translation, "heatmap": path}
        for text, translation, path in zip(texts, translations, paths)
    ]


def demo(config, data=None, examples=30000, test_examples=1000, log=print):
    """Trains on generated dates (or the `data` files), scores the held-out pairs,
    prints translations, draws heatmaps, exports the SavedModel; returns the summary."""
    from kerasrnn.data.specs import holdout
    from kerasrnn.export import export_task
    from kerasrnn.tasks import date_translation_task

    if data:
        sources, targets = load_pairs(config, list(data), "train")
    else:
        sources, targets = date_translation_task(examples, seed=config["seed"])
    if len(sources) < 3:
        raise common.RecipeError(f"the demo needs at least 3 sentence pairs, got {len(sources)}.")
    fraction = min(0.5, test_examples / len(sources))
    train_pairs, test_pairs = holdout(sources, targets, fraction, config["seed"] + 1)
    splits = {"test": test_pairs}
    splits["train"], splits["valid"] = holdout(
        *train_pairs, min(0.5, config["valid_fraction"]), config["seed"] + 2
    )
    log(
        f"training on {len(splits['train'][0])} pairs "
        f"({'generated dates' if not data else ' / '.join(data)}), "
        f"validating on {len(splits['valid'][0])}, testing on {len(test_pairs[0])}"
    )
    results = train(config, splits)  # and scores the test pairs, draws the heatmaps
    scores, out = results["test"], config["output_dir"]
    saved_model = os.path.join(out, "saved_model")
    export_task(RECIPE.load(config), saved_model, **RECIPE.export_options(config))
    summary = {
        "exact_match": {k: v["exact_match"] for k, v in scores.items() if isinstance(v, dict)},
        "bleu": {k: v["bleu"] for k, v in scores.items() if isinstance(v, dict)},
        "train_seconds": results["train_seconds"],
        "heatmaps": results["heatmaps"],
        "saved_model": saved_model,
        "epochs_run": results["history"]["epochs_run"],
        "test": scores,
    }
    beam = f"beam{config['beam_size']}" if config["beam_size"] > 1 else "greedy"
    log(
        f"held-out exact match: greedy {summary['exact_match']['greedy']:.2%}, beam "
        f"search {summary['exact_match'][beam]:.2%}; BLEU greedy "
        f"{summary['bleu']['greedy']:.2f}, beam {summary['bleu'][beam]:.2f}"
    )
    for sample in scores[beam]["samples"]:
        log(
            f"  {sample['source']!r:40} -> {sample['translation']!r}"
            f"   (reference {sample['reference']!r})"
        )
    log(f"attention heatmaps: {', '.join(summary['heatmaps'])}; SavedModel: {saved_model}")
    common.write_json(os.path.join(out, "demo.json"), summary)
    return summary


def _run_demo(config, args):
    """The demo's summary without the full scores (they are in demo.json)."""
    overrides = dict(args.overrides)
    if not args.data:  # the generated task has its own tuned defaults
        overrides = {**DEMO_DEFAULTS, **overrides}
    config = common.load_config(OPTIONS, args.config, overrides)

    def log(line):
        print(line, file=sys.stderr)

    summary = demo(config, args.data, args.examples, args.test_examples, log=log)
    return {k: v for k, v in summary.items() if k not in ("epochs_run", "test")}


def _demo_arguments(parser):
    files = "train on these parallel files instead of generated dates"
    parser.add_argument("--data", nargs=2, metavar=("SOURCE", "TARGET"), help=files)
    pairs = "generated date pairs, train + valid + test (default: 30000)"
    parser.add_argument("--examples", type=int, default=30000, metavar="INT", help=pairs)
    held_out = "held-out pairs for the final scores (default: 1000)"
    parser.add_argument("--test-examples", type=int, default=1000, metavar="INT", help=held_out)


if __name__ == "__main__":
    sys.exit(main())
