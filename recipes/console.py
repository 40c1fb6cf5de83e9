"""The ``kerasrnn`` command: ``kerasrnn RECIPE COMMAND [options]`` runs a recipe's
command line as ``python -m recipes.RECIPE COMMAND [options]`` does (pyproject.toml's
console script; ``python -m recipes`` is the same). ``kerasrnn --help`` lists the
recipes, ``kerasrnn configs`` the shipped configurations (``--config NAME``),
``kerasrnn lm_corpus`` writes the transfer language model's English text.

Imports no recipe (so no TensorFlow) before it knows which one is asked for: ``--help``
reads the recipes' descriptions from their source.
"""

import ast
import importlib
import importlib.util
import json
import sys
import textwrap

from recipes.cli import Parser, version
from recipes.config import shipped_configs

# The recipes, in the order ``kerasrnn --help`` lists them.
RECIPES = ("classifier", "tagger", "language_model", "translator", "pair_classifier")


def summary(name):
    """The first sentence of recipe `name`'s module docstring, read from its source."""
    spec = importlib.util.find_spec(f"recipes.{name}")
    with open(spec.origin, encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    return first.split(": ")[0].split(". ")[0].rstrip(".")


def recipe_of(name):
    """The `recipes.skeleton.Recipe` of recipe `name` (``language-model`` spelled with a
    hyphen too); an unknown name is a ValueError that lists the recipes."""
    key = name.replace("-", "_")
    if key not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}: choose from {', '.join(RECIPES)}")
    return importlib.import_module(f"recipes.{key}").RECIPE


def _parser(prog):
    width = max(len(name) for name in RECIPES)
    listing = "\n".join(f"  {name:{width}}  {summary(name)}" for name in RECIPES)
    parser = Parser(
        prog=prog,
        usage=f"{prog} [-h] [--version] RECIPE COMMAND [options]",
        description="Command lines over kerasrnn: train, evaluate, predict and export "
        "the recipes' models.\n\nrecipes:\n" + listing + "\n\nother commands:\n"
        f"  {'configs':{width}}  {CONFIGS_HELP}\n  {'lm_corpus':{width}}  {LM_CORPUS_HELP}",
        epilog=textwrap.fill(
            f"`{prog} RECIPE --help` lists a recipe's commands; `{prog} RECIPE COMMAND "
            f"--help` a command's options, with examples, e.g. `{prog} translator train "
            "--help`.",
            80,
        ),
        add_help=False,
    )
    parser.add_argument("-h", "--help", action="help", help="show this help and exit")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    return parser


CONFIGS_HELP = "list the shipped configurations (--config NAME) and the figure each reproduces"
LM_CORPUS_HELP = "write the offline corpora's training text for a transfer language model"


def configs(argv, prog):
    """``kerasrnn configs``: prints `recipes.config.shipped_configs` as JSON on stdout
    (each name's recipe, the figure it reproduces, its docs/results.md sections and the
    command that trains it); returns the exit status."""
    parser = Parser(prog=f"{prog} configs", description=CONFIGS_HELP)
    parser.parse_args(argv)
    print(json.dumps(shipped_configs(), indent=2, ensure_ascii=False))
    return 0


def main(argv=None, prog="kerasrnn"):
    """``kerasrnn RECIPE ...``: runs the recipe's command line on the rest of `argv`
    (``kerasrnn configs``: `configs`); returns its exit status (2 and one line on
    stderr for an unknown recipe)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0].startswith("-"):
        parser = _parser(prog)
        if not argv:
            parser.error("a recipe is needed: " + ", ".join(RECIPES))
        parser.parse_args(argv[:1])  # --help, --version or an unknown flag: exits
    if argv[0] == "configs":
        return configs(argv[1:], prog)
    if argv[0] in ("lm_corpus", "lm-corpus"):
        from recipes import lm_corpus

        return lm_corpus.main(argv[1:], prog=f"{prog} lm_corpus")
    try:
        recipe = recipe_of(argv[0])
    except ValueError as error:
        print(f"{prog}: error: {error} (see --help)", file=sys.stderr)
        return 2
    return recipe.main(argv[1:], prog=f"{prog} {recipe.name}")


def console():
    """The console script's entry point (pyproject.toml: ``kerasrnn``)."""
    sys.exit(main())
