"""Every `python -m recipes.X ...` (or `kerasrnn X ...`) command in a code block of
README.md or docs/ parses with that recipe's own command-line parser, so that no page
shows an option that does not exist, a value outside an option's choices or a renamed
subcommand.

Commands are read from fenced code blocks (any language but python), continuation lines
(a trailing backslash) joined, shell comments dropped; a line may hold several commands
(`;`, `&&`, `|`) and environment assignments before `python`. Nothing is run: the
parser is built from the recipe's option tables, as its `--help` is, without TensorFlow.
"""

import contextlib
import importlib
import io
import pathlib
import shlex

import pytest

from tests.test_docs import PAGES, REPO, _blocks

RECIPES = ("classifier", "tagger", "language_model", "pair_classifier", "translator")
_SEPARATORS = {";", "&&", "||", "|", "&", ">", ">>", "2>", "<", "(", ")"}


def recipe_parser(name):
    """The `argparse` parser of ``python -m recipes.NAME``, as its `main` builds it."""
    return importlib.import_module(f"recipes.{name}").RECIPE.parser()


def _logical_lines(code):
    """The lines of a code block with backslash continuations joined."""
    lines, current = [], ""
    for line in code.splitlines():
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        lines.append(current + line)
        current = ""
    if current:
        lines.append(current)
    return lines


def _console_command(tokens, i):
    """The recipe of a ``kerasrnn RECIPE ...`` command starting at ``tokens[i]`` (the
    console script, where a command starts: first, or after a separator or an
    environment assignment), else None (``kerasrnn configs``, ``kerasrnn --version``)."""
    if tokens[i] != "kerasrnn" or i + 1 >= len(tokens):
        return None
    if i and tokens[i - 1] not in _SEPARATORS and "=" not in tokens[i - 1]:
        return None
    name = tokens[i + 1]
    return None if name == "configs" or name.startswith("-") else name.replace("-", "_")


def commands_in(code):
    """``(module, argv, fails)`` for each ``python -m recipes.X ...`` or ``kerasrnn X
    ...`` command in a block; `fails` when the block shows it as a prompt (``$ python
    ...``) followed by an ``error:`` line, an example of a command that must be
    refused."""
    found = []
    lines = _logical_lines(code)
    # a block of prompts (``$ kerasrnn ...``) and what they print: only the prompts are
    # commands (an error line, ``kerasrnn classifier train: error: ...``, is output)
    prompted = any(line.lstrip().startswith("$ ") for line in lines)
    for n, line in enumerate(lines):
        if "-m recipes." not in line and "kerasrnn " not in line:
            continue
        if prompted and not line.lstrip().startswith("$ "):
            continue
        following = lines[n + 1] if n + 1 < len(lines) else ""
        fails = line.lstrip().startswith("$ ") and ": error: " in following
        line = line.lstrip().removeprefix("$ ")
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            tokens = list(lexer)
        except ValueError as error:  # an unclosed quote
            raise ValueError(f"cannot split {line!r}: {error}") from None
        for i, token in enumerate(tokens):
            recipe = _console_command(tokens, i)
            if recipe is not None:
                module, start = recipe, i + 2
            elif (
                tokens[i + 1 : i + 2] == ["-m"]
                and tokens[i + 2 : i + 3]
                and tokens[i + 2].startswith("recipes.")
                and (token.endswith("python") or token.endswith("python3"))
            ):
                module, start = tokens[i + 2][len("recipes.") :], i + 3
            else:
                continue
            argv = []
            for arg in tokens[start:]:
                if arg in _SEPARATORS:
                    break
                argv.append(arg)
            found.append((module, argv, fails))
    return found


def all_commands():
    commands = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for info, line, code, _ in _blocks(text):
            if info.split()[:1] == ["python"]:
                continue
            for module, argv, fails in commands_in(code):
                name = f"{page.relative_to(REPO)}:{line}:{module} {' '.join(argv[:1])}"
                commands.append(pytest.param(module, argv, fails, id=name))
    return commands


def parse_error(module, argv):
    """None when `argv` parses with the recipe's parser, else argparse's message."""
    if module not in RECIPES:
        return f"recipes.{module} is not a recipe command line ({', '.join(RECIPES)})"
    if any(arg in ("-h", "--help", "--version") for arg in argv):
        argv = [arg for arg in argv if arg not in ("-h", "--help", "--version")]
        if not argv:
            return None
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            recipe_parser(module).parse_args(argv)
        except SystemExit as exit_:
            if exit_.code:
                return stderr.getvalue().strip() or f"exit status {exit_.code}"
    return None


COMMANDS = all_commands()
# lm_corpus is a plain script (one argparse parser), not a recipe; it is checked apart.
OTHER_MODULES = {"lm_corpus"}


@pytest.mark.parametrize("module,argv,fails", COMMANDS)
def test_documented_command_parses(module, argv, fails):
    if fails:  # shown with the error it gets
        assert parse_error(module, argv) is not None
        return
    if module in OTHER_MODULES:
        script = importlib.import_module(f"recipes.{module}")
        with pytest.raises(SystemExit) as exit_:
            script.main([*argv, "--help"])
        assert exit_.value.code == 0
        return
    assert parse_error(module, argv) is None


def test_the_pages_hold_commands_of_every_recipe():
    modules = {param.values[0] for param in COMMANDS}
    assert set(RECIPES) <= modules, sorted(set(RECIPES) - modules)


@pytest.mark.parametrize(
    "command,problem",
    [
        ("python -m recipes.tagger train --train a.conllu --no-such-option 3", "unrecognized"),
        ("python -m recipes.classifier train --cell banana", "invalid choice"),
        ("python -m recipes.translator train --averaging swa", "invalid choice"),
        ("python -m recipes.language_model sample --output-dir runs/x", "invalid choice"),
        ("python -m recipes.classifier train --epochs zero", "epochs"),
        ("python -m recipes.tagger train --epoch 3", "unrecognized"),  # no prefix matching
        ("python -m recipes.parser train", "not a recipe"),
    ],
)
def test_a_wrong_command_fails(command, problem):
    ((module, argv, _),) = commands_in(command)
    error = parse_error(module, argv)
    assert error is not None and problem in error, error


def test_commands_are_read_as_a_shell_reads_them():
    code = (
        "# a comment: python -m recipes.tagger nothing\n"
        "KERAS_BACKEND=jax python -m recipes.classifier train \\\n"
        '    --train "[a.pos, b.neg]" --encoding cp1252 \\\n'
        "    --output-dir runs/x  # trailing comment\n"
        "python -m recipes.tagger predict --output-dir r 'a b' && python -m recipes.language_model"
        " generate --output-dir r x > out.json\n"
    )
    assert commands_in(code) == [
        ("classifier", ["train", "--train", "[a.pos, b.neg]", "--encoding", "cp1252",
                        "--output-dir", "runs/x"], False),
        ("tagger", ["predict", "--output-dir", "r", "a b"], False),
        ("language_model", ["generate", "--output-dir", "r", "x"], False),
    ]  # fmt: skip
    shown = "$ python -m recipes.tagger train --cell x\nrecipes.tagger train: error: ...\n"
    assert commands_in(shown) == [("tagger", ["train", "--cell", "x"], True)]
    # the error line a kerasrnn prompt prints is output, not another command
    shown = "$ kerasrnn tagger train --cell x\nkerasrnn tagger train: error: ...\n"
    assert commands_in(shown) == [("tagger", ["train", "--cell", "x"], True)]
    console = (
        "KERASRNN_DATA=d kerasrnn classifier train --config sentence_polarity\n"
        "kerasrnn configs; kerasrnn --version\n"
        "pip install kerasrnn && kerasrnn language-model evaluate --output-dir r\n"
    )
    assert commands_in(console) == [
        ("classifier", ["train", "--config", "sentence_polarity"], False),
        ("language_model", ["evaluate", "--output-dir", "r"], False),
    ]


CONFIGS = sorted((REPO / "recipes" / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_shipped_config_loads_with_its_recipe(path):
    # Each config names its recipe and the command that trains it in its header; the
    # command must parse with that recipe's command line, and every key of the file be
    # one of that recipe's options.
    from recipes.config import load_config

    text = path.read_text()
    assert text.startswith("# recipe: ")
    header = [line.lstrip("# ") for line in text.splitlines() if "kerasrnn " in line]
    ((module, argv, _),) = commands_in("\n".join(header))
    assert module == text.split("\n", 1)[0][len("# recipe: ") :]
    assert argv == ["train", "--config", path.stem], argv
    assert parse_error(module, argv) is None
    recipe = importlib.import_module(f"recipes.{module}").RECIPE
    config = load_config(recipe.options, str(path))
    assert config["output_dir"] == f"runs/{path.stem}"


def test_configs_named_in_the_docs_exist():
    # the docs name a shipped config by its name (`--config ptb_awd`), which works from
    # any folder; a path into recipes/configs/ only in a recorded benchmark command
    named = set()
    for param in COMMANDS:
        _, argv, _ = param.values
        named |= {argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--config"}
    shipped = {p.stem for p in CONFIGS}
    paths = {n for n in named if n.startswith("recipes/configs/")}
    assert {pathlib.PurePath(n).stem for n in paths} <= shipped
    names = {n for n in named if "/" not in n and not n.endswith((".yaml", ".json"))}
    assert names <= shipped, sorted(names - shipped)
    assert shipped <= names, sorted(shipped - names)  # every shipped config is documented
