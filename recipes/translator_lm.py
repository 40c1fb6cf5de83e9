"""A target-side language model for the translator (shallow fusion,
`kerasrnn.decoding.ShallowFusion`): the training text in the translator's own target
tokens, and the fusion its ``--lm RUN --lm-weight W`` options build.

    # 1. the translator's training (and validation) targets, tokenised as it reads them
    python -m recipes.translator_lm --output-dir runs/t --text-dir runs/t_lm_text
    # 2. an LM on them with the translator's target vocabulary
    python -m recipes language_model train --output-dir runs/t_lm --batching sentences \\
        --train-file runs/t_lm_text/train.txt --valid-file runs/t_lm_text/valid.txt \\
        --test-file '' --vocabulary-file runs/t/target_vocab.txt
    # 3. decoding with it
    python -m recipes translator translate --output-dir runs/t --lm runs/t_lm --lm-weight 0.3 \\
        "ein Mann läuft ."

The text holds one target sentence per line, its tokens (the target tokenizer's: words,
characters or WordPiece pieces, none with a space) joined by spaces, so the language
model recipe reads back exactly the translator's tokens.
"""

import argparse
import json
import os
import sys

from recipes import common
from recipes.common import Option

FUSION_OPTIONS = dict(
    lm=Option(
        None,
        "run folder of a language model trained on the target side with the target "
        "vocabulary (recipes.translator_lm); decoding adds lm_weight * its log-"
        "probabilities (shallow fusion); null: none",
        group="decoding",
    ),
    lm_weight=Option(
        0.3,
        "the language model's weight lambda in shallow fusion (with `lm`)",
        group="decoding",
    ),
)


def load_language_model(lm_dir, target_vocabulary):
    """The kerasrnn `LanguageModel` task of the run in `lm_dir` and the id it reads
    before a sentence, after checking that its vocabulary is `target_vocabulary`."""
    from recipes import language_model as lm_recipe

    try:
        config = common.saved_config(lm_recipe.OPTIONS, lm_dir)
        trained = lm_recipe.LanguageModel.from_run(config)
    except (common.RecipeError, OSError) as error:
        raise common.ConfigError(
            f"`lm` {lm_dir} is not a trained language model run (recipes language_model "
            f"train): {error}"
        ) from None
    tokens, target = list(trained.vocabulary.tokens), list(target_vocabulary.tokens)
    if tokens != target:
        where = next((i for i, (a, b) in enumerate(zip(tokens, target)) if a != b), None)
        detail = (
            f"{len(tokens)} tokens, the translator's target vocabulary {len(target)}"
            if where is None
            else f"id {where} is {tokens[where]!r}, the translator's {target[where]!r}"
        )
        raise common.ConfigError(
            f"`lm` {lm_dir}: its vocabulary differs from the translator's target "
            f"vocabulary ({detail}): train it with --vocabulary-file "
            "<translator run>/target_vocab.txt."
        )
    if config["bidirectional"]:
        raise common.ConfigError(f"`lm` {lm_dir} is a biLM: train a forward language model.")
    return trained.task, lm_recipe.first_token(config)


def fusion(config, target_vocabulary):
    """The `ShallowFusion` of the config's `lm` and `lm_weight`, or None without `lm`."""
    from kerasrnn import decoding
    from kerasrnn.data.vocabulary import START_ID

    if not config.get("lm"):
        return None
    task, first = load_language_model(config["lm"], target_vocabulary)
    try:
        weight = decoding.ShallowFusion(task, config["lm_weight"]).weight
    except ValueError as error:
        raise common.ConfigError(str(error)) from None
    return decoding.ShallowFusion(task, weight, None if first == START_ID else first)


def write_text(config, text_dir):
    """Writes the run's training (and validation) targets as target tokens into
    `text_dir` (train.txt, valid.txt); returns the file paths and line counts."""
    from recipes.translator_parts import load_pairs, load_sides

    target = load_sides(config)[1]
    os.makedirs(text_dir, exist_ok=True)
    written = {}
    for split in ("train", "valid"):
        if not config.get(split):
            continue
        targets = load_pairs(config, config[split], split)[1]
        path = os.path.join(text_dir, f"{split}.txt")
        lines = [" ".join(tokens) for tokens in target.tokenize(list(targets)) if tokens]
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        written[split] = {"path": path, "lines": len(lines)}
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m recipes.translator_lm",
        description="Write a translator run's training and validation targets in its own "
        "target tokens, one sentence per line, for `language_model train`.",
    )
    parser.add_argument("--output-dir", required=True, help="the translator's run folder")
    parser.add_argument("--text-dir", required=True, help="where train.txt / valid.txt go")
    args = parser.parse_args(argv)
    try:
        # the run's config.json as `train` stored it (read here, not through the
        # translator's options: recipes.translator imports this module)
        path = os.path.join(args.output_dir, "config.json")
        config = dict(common.read_json(path, kind=dict), output_dir=args.output_dir)
        print(json.dumps(write_text(config, args.text_dir), indent=2))
    except (common.ConfigError, common.RecipeError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
