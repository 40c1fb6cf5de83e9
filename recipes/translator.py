"""Attention encoder-decoder translation: a command line over `kerasrnn.seq2seq.Seq2Seq`.

The model (`build_model`) is a `Seq2Seq`: embeddings, a bidirectional `RNNEncoder` of any kerasrnn
cell, the learned bridge s_0 = tanh(W_s [h_fwd; h_bwd] + b), an attentive decoder (Bahdanau or
Luong attention) and a readout, trained with teacher forcing (optionally step-wise scheduled
sampling) on `kerasrnn.losses.SequenceCrossEntropy` by the recipe skeleton
(`recipes.common.Recipe`: best checkpoint, BackupAndRestore, ``--continue``, ``--strategy
mirrored``). Translation is `Seq2Seq.generate` (greedy or beam search) between the two sides'
`kerasrnn.data.text.TextSide`; BLEU is sacreBLEU's corpus BLEU (`kerasrnn.metrics.corpus_bleu`).

Command line::

    python -m recipes.translator demo                        # the self-contained demo
    python -m recipes.translator demo --data my.src my.tgt   # the demo on your corpus
    python -m recipes.translator train --train '[train.de.gz, train.en.gz]' \\
        --valid '[val.de.gz, val.en.gz]' --test '[test.de.gz, test.en.gz]' \\
        --output-dir runs/t
    python -m recipes.translator evaluate --output-dir runs/t --test '[a.de, a.en]'
    python -m recipes.translator translate --output-dir runs/t "ein Mann läuft ."
    python -m recipes.translator heatmap --output-dir runs/t "ein Mann läuft ."  # heatmap_0.png
    python -m recipes.translator export --output-dir runs/t --export-dir runs/t/sm

Data (`train`, `valid`, `test`): ``[SOURCE_FILE, TARGET_FILE]``, two files with one sentence per
line (plain or gzip, aligned line by line), or ``tfds:NAME[:SPLIT]`` (e.g.
``tfds:ted_hrlr_translate/pt_to_en``). Tokenisers: ``word`` (punctuation split off words, then
whitespace), ``char`` (characters, the space as ``▁``), or subwords learned from the training
side: ``wordpiece`` (keras-hub WordPiece), ``sentencepiece`` (SentencePiece's unigram model) or
``bpe`` (SentencePiece's byte-pair encoding), chosen per side.
"""

import os
import sys

from kerasrnn.data.text import TOKENIZERS
from kerasrnn.export import TextTranslator
from kerasrnn.seq2seq import SCHEDULES, SamplingProbabilityLog
from kerasrnn.validation import is_int
from recipes import common, vectors
from recipes.common import Option
from recipes.translator_lm import FUSION_OPTIONS, fusion
from recipes.translator_parts import (  # noqa: F401 (the recipe's parts, by their old names)
    COPY_OPTIONS,
    DEMO_DEFAULTS,
    DIVERSE_OPTIONS,
    _demo_arguments,
    build_model,
    build_sides,
    load_model,
    load_pairs,
    load_sides,
    pairs_dataset,
    runtime_subwords,
    save_sides,
    search_strategy,
    side_vectors,
    translation_scores,
    write_heatmaps,
)

OPTIONS = common.data_options(
    "runs/translator",
    "[SOURCE_FILE, TARGET_FILE] (aligned line by line, plain or gzip) or tfds:NAME[:SPLIT]",
    holdouts=("valid",),
    valid_fraction=Option(
        0.05, "part of `train` held out for validation when `valid` is not given"
    ),
    source_tokenizer=Option(
        "word",
        "source tokens: words (punctuation split off), characters, or subwords learned "
        "from the training side (WordPiece, SentencePiece's unigram model, BPE)",
        TOKENIZERS,
    ),
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
    subword_vocab_size=Option(
        8000, "subword tokenizers: learned pieces per side, special tokens included"
    ),
    **common.cell_options(
        "gru", num_layers=1, notes={"num_layers": "of the bidirectional encoder"}
    ),
    encoder_units=Option(256, "encoder units per direction"),
    decoder_units=Option(512, "decoder cell units"),
    attention=Option(
        "bahdanau",
        "attention: Bahdanau (additive, s_{i-1}) or Luong (multiplicative, the current state)",
        ("bahdanau", "luong"),
    ),
    attention_units=Option(256, "Bahdanau's W_a width"),
    luong_score=Option("general", "Luong's score function", ("dot", "general", "concat")),
    input_feeding=Option(True, "Luong: feed the previous attentional vector to the cell"),
    attention_layer_size=Option(
        None, "width of the attentional vector tanh(W_c [c; h]); null: the mode's default"
    ),
    dropout=Option(
        0.2, "dropout rate on embeddings, between encoder layers and before the output layer"
    ),
    label_smoothing=Option(0.0, "label smoothing of the token cross-entropy"),
    scheduled_sampling=Option(
        "off",
        "scheduled sampling: the probability p of feeding "
        "the model's own prediction, by training step",
        SCHEDULES,
    ),
    sampling_probability=Option(0.25, "the p the sampling schedule grows to"),
    sampling_steps=Option(5000, "linear: steps to reach p; inverse_sigmoid: steps to reach p / 2"),
    sampling_mode=Option(
        "sample",
        "scheduled sampling feeds a token drawn from the "
        "model's distribution (as TFA's sampler) or its argmax",
        ("sample", "argmax"),
    ),
    bucket_boundaries=Option(
        [10, 20, 30, 40],
        "source lengths (tokens) where length buckets split; [] for plain batching",
    ),
    **vectors.SIDE_EMBEDDING_OPTIONS,
    **common.decoding_options(
        5, notes={"beam_size": "translate, export and the scores; 1: greedy"}
    ),
    max_decode_length=Option(80, "tokens generated at most"),
    max_length_ratio=Option(0.0, "> 0: at most ceil(ratio * source length) tokens"),
    readout_dtype=Option(
        "float32",
        "precision of the readout matmul when decoding: "
        "bfloat16 is faster on a CPU with AVX512-BF16 and approximate "
        "(Seq2Seq.generate)",
        ("float32", "bfloat16", "float16"),
    ),
    n_best=Option(
        None,
        "hypotheses per input of the SavedModel's translate_n_best "
        "signature (null: beam_size); given to `translate`, it prints the K "
        "best of each input with their scores (beam search widens to K)",
    ),
    replace_unk=Option(
        False,
        "an output [UNK] becomes the source token with the highest "
        "attention weight at that step (translate, evaluate, SavedModel)",
    ),
    heatmaps=Option(3, "evaluate / demo: attention heatmap PNGs of the first N test sentences"),
    **FUSION_OPTIONS,
    **COPY_OPTIONS,
    **DIVERSE_OPTIONS,
)
DEFAULTS = common.defaults_of(OPTIONS)


# ------------------------------------------------------------------------ translator


class Translator(TextTranslator):
    """A trained translator: `kerasrnn.export.TextTranslator` (raw strings in,
    translations out, the graph the SavedModel serves) between the run's two
    `TextSide`, decoding with the run's strategy (`strategy`), with n-best, scores and
    heatmaps."""

    def __init__(self, model, source, target, config):
        super().__init__(
            model,
            source,
            target,
            max_source_length=config["max_source_length"],
            replace_unk=config["replace_unk"],
            max_length=config["max_decode_length"],
            readout_dtype=config["readout_dtype"],
        )
        self.config, self.source, self.target = config, source, target
        self.settings["fusion"] = fusion(config, self.target_vocabulary)  # --lm

    @classmethod
    def from_run(cls, config):
        return cls(load_model(config), *load_sides(config), config)

    def n_best(self, k=None):
        k = k or self.config["n_best"] or self.config["beam_size"]
        if not is_int(k) or k < 1:
            raise common.ConfigError(f"`n_best` must be an integer >= 1; got {k!r}.")
        return int(k)

    def strategy(self, beam_size=None, n_best=1):
        """The run's decoding strategy: greedy search for a beam size of 1, else beam
        search (widened to `n_best` beams; diverse with `beam_groups` > 1) with the run's
        length normalisation; both with its `max_length_ratio`. `beam_size` None: the
        run's (`translator_parts.search_strategy`)."""
        beam_size = self.config["beam_size"] if beam_size is None else int(beam_size)
        return search_strategy(self.config, beam_size, n_best)

    def translate(self, texts, strategy=None, return_scores=False, batch_size=64):
        """`TextTranslator.translate`; `strategy` may also be a beam size (the run's
        `strategy` of that width) or None (the run's beam size)."""
        if strategy is None or isinstance(strategy, int):
            strategy = self.strategy(strategy)
        return super().translate(texts, strategy, return_scores, batch_size)

    def evaluate(self, sources, references, beam_sizes=None):
        """BLEU (sacreBLEU's corpus BLEU), exact match and speed, per beam size.

        With `lowercase` the translations can only be lower-case, so the references
        are lower-cased too: the scores are then case-insensitive (``"cased": false``
        in the results)."""
        config = self.config
        return translation_scores(
            self,
            sources,
            references,
            beam_sizes or sorted({1, config["beam_size"]}),
            config["lowercase"] and config["target_tokenizer"],
        )

    def heatmap(self, text, path):
        """Writes the attention weights that decoding `text` returned (beam search of
        the run's `beam_size`, as `translate`; greedy for 1) as a PNG: one column per
        source token, one row per token of the best hypothesis, its end included
        (`kerasrnn.visualize.plot_alignments`). Returns the drawn matplotlib Axes."""
        from kerasrnn.visualize import plot_alignments

        if not text.strip():
            raise common.ConfigError("heatmap: a blank sentence has no alignments.")
        return plot_alignments(*self.alignments(text, self.strategy()), path=path)

    def export(self, path):
        """A SavedModel (`TextTranslator.export`) with ``translate(text:
        string[batch]) -> {"translation", "score"}`` (the configured beam size; also
        ``serving_default``) and ``translate_n_best(text) -> {"translations":
        string[batch, K], "scores": float32[batch, K]}`` (K: `n_best`)."""
        return super().export(path, self.strategy(), self.strategy(n_best=self.n_best()))

    def runtime_strategies(self):
        """The runtimes' strategies: ``{"greedy": ..., "beam": ...}`` (beam only for a
        beam size > 1; `kerasrnn.export.translator_runtime`)."""
        strategies = {"greedy": self.strategy(1)}
        if self.config["beam_size"] > 1:
            strategies["beam"] = self.strategy()
        return strategies

    def export_runtime(self, path, format_name, sequence_length=64, quantization=None):
        """Writes the decoding graphs for onnxruntime or LiteRT
        (`kerasrnn.export.export_bundle`): source ids (1, max_source_length) in, the best
        hypothesis' target ids (1, 1, max_decode_length) and its score out, the whole loop
        inside the graph (an ONNX `Loop`, a LiteRT builtin `WHILE`), as ``greedy`` and, for
        a beam size > 1, ``beam``; with both vocabularies and the numpy-only ``client.py``
        (`Client.translate`). `sequence_length` is unused: the source width is the run's
        `max_source_length`. `quantization`: the weights, as `export_bundle` takes it."""
        from kerasrnn.export.translator_runtime import export_translator_runtime

        config = self.config
        for option, bad, fix in (
            ("replace_unk", config["replace_unk"], "pass --replace-unk false"),
            ("beam_groups", config["beam_groups"] > 1, "pass --beam-groups 1"),
            *(
                (name, config[name] == "wordpiece", "train with another tokenizer")
                for name in ("source_tokenizer", "target_tokenizer")
            ),
        ):
            if bad:
                raise common.ConfigError(
                    f"the {format_name} export of the translator cannot hold `{option}` "
                    f"({config[option]!r}): {fix}, or use --format saved_model."
                )
        metadata = {
            "max_length_ratio": config["max_length_ratio"] or None,
            "lowercase": config["lowercase"],
            "source_tokenizer": config["source_tokenizer"],
            "target_tokenizer": config["target_tokenizer"],
        }
        metadata["subword_models"] = runtime_subwords(config, path)
        runtime = self.runtime_strategies()
        return export_translator_runtime(self, path, format_name, runtime, metadata, quantization)


# -------------------------------------------------------------------------- commands


class TranslatorRecipe(common.Recipe):
    """The translator on the recipe skeleton (`common.Recipe`)."""

    name = "translator"
    options = OPTIONS
    predictor = Translator
    holdouts = ("valid",)
    test_help = "[SOURCE_FILE, TARGET_FILE]"
    predict_command = "translate"
    run_options = (
        (
            "beam_size",
            "length_normalization",
            "max_decode_length",
            "max_length_ratio",
            "readout_dtype",
            "n_best",
            "replace_unk",
            "heatmaps",
        )
        + tuple(FUSION_OPTIONS)
        + tuple(DIVERSE_OPTIONS)
    )

    def load_examples(self, config, spec, split):
        return load_pairs(config, spec, split)

    def prepare(self, config, splits):
        """The vocabularies (source_vocab.txt, target_vocab.txt) and the datasets."""
        sources, targets = splits["train"]
        sides, pretrained = side_vectors(config, build_sides(config, sources, targets))
        save_sides(config, sides)
        data, used = pairs_dataset(config, sides, sources, targets, shuffle=True)
        valid = splits.get("valid")
        valid = pairs_dataset(config, sides, *valid, shuffle=False)[0] if valid else None
        sizes = [len(side.vocabulary) for side in sides]
        return common.Prepared(
            data,
            valid,
            {"sizes": sizes, "vectors": pretrained},
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
            model = build_model(config, *prepared.model["sizes"], prepared.model["vectors"])
            model.compile(
                optimizer=common.optimizer(config),
                loss=SequenceCrossEntropy(label_smoothing=config["label_smoothing"]),
                metrics=[MaskedAccuracy(name="accuracy")],
            )
        except ValueError as error:  # kerasrnn's checks of the model's options
            raise common.ConfigError(str(error)) from None
        return model

    def monitor(self, config, prepared):
        return ("val_loss" if prepared.valid is not None else "loss"), "min"

    def fit_callbacks(self, config, prepared):
        return [SamplingProbabilityLog()] if config["scheduled_sampling"] != "off" else []

    def evaluate_splits(self, config, splits):
        """BLEU on the test pairs (greedy and beam search) and attention heatmaps."""
        if not splits.get("test"):
            return {}
        scores = self.evaluate_run(Translator.from_run(config), config, splits["test"])
        return {"test": scores, "heatmaps": scores.pop("heatmaps")}

    def evaluate_run(self, trained, config, examples):
        chosen = [text for text in examples[0] if text.strip()][: config["heatmaps"]]
        heatmaps = write_heatmaps(trained, chosen, config["output_dir"])
        return {**trained.evaluate(*examples), "heatmaps": heatmaps}

    def predict_arguments(self, parser):
        parser.add_argument("texts", nargs="*", help="sentences to translate")
        parser.add_argument("--input", help="a file with one sentence per line")

    def _predict(self, config, args):
        """``translate``; with ``--n-best K`` given, the K best of each input with
        their scores."""
        config = self.stored(config, args)
        translator, texts = Translator.from_run(config), self.inputs_of(config, args)
        if "n_best" in args.overrides:
            strategy = translator.strategy(n_best=translator.n_best())
            hypotheses = translator.translate(texts, strategy, return_scores=True)
            return [{"text": s, "hypotheses": h} for s, h in zip(texts, hypotheses)]
        return [{"text": s, "translation": t} for s, t in zip(texts, translator.translate(texts))]

    def extra_commands(self):
        return {
            "heatmap": (
                "attention heatmap PNGs (source x translation tokens) of chosen "
                "sentences, written to the run folder",
                self.predict_arguments,
                _run_heatmap,
                self.options_of("heatmap"),
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


def train(config, splits=None, callbacks=(), continue_run=False):
    """Trains a translator (`common.Recipe.train`; `splits`: optional ``{"train":
    (sources, targets), "valid": ..., "test": ...}``) and writes ``source_vocab.txt``,
    ``target_vocab.txt``, ``best.keras``, ``results.json`` (history; BLEU on the test
    set, greedy and beam search) and ``training_curves.png`` into ``output_dir``."""
    return RECIPE.train(config, splits, callbacks, continue_run)


def _run_heatmap(config, args):
    """One attention heatmap PNG per sentence, ``heatmap_<i>.png`` in the run folder:
    the alignments decoding returned for the translation `translate` gives."""
    config = RECIPE.stored(config, args)
    texts = RECIPE.inputs_of(config, args)
    if not texts:
        raise common.ConfigError("heatmap needs sentences: as arguments or --input FILE.")
    translator = Translator.from_run(config)
    paths = write_heatmaps(translator, texts, config["output_dir"], "heatmap")
    return [
        {"text": text, "translation": translation, "heatmap": path}
        for text, translation, path in zip(texts, translator.translate(texts), paths)
    ]


def demo(config, data=None, examples=30000, test_examples=1000, log=print):
    """The main job: trains on generated dates (or the `data` files), scores the
    held-out pairs, prints beam-search translations, writes attention heatmaps and
    exports the SavedModel. Returns the summary (also in ``demo.json``)."""
    from kerasrnn.data.specs import holdout
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
    summary = {
        "exact_match": {k: v["exact_match"] for k, v in scores.items() if isinstance(v, dict)},
        "bleu": {k: v["bleu"] for k, v in scores.items() if isinstance(v, dict)},
        "train_seconds": results["train_seconds"],
        "heatmaps": results["heatmaps"],
        "saved_model": Translator.from_run(config).export(os.path.join(out, "saved_model")),
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
    log(
        f"attention heatmaps: {', '.join(summary['heatmaps'])}; SavedModel: "
        f"{summary['saved_model']}"
    )
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


def main(argv=None):
    return RECIPE.main(argv)


if __name__ == "__main__":
    sys.exit(main())
