"""The recipes' command line: one `Parser` per recipe (``--version``, a subcommand
per command, a flag per option it takes, each value checked at parse time), `main`
(JSON result on stdout, everything else on stderr, one-line errors with exit status 2)
and the options reference of docs/cli.md (`options_markdown`). Imports neither
TensorFlow nor Keras: ``--help`` and a bad flag answer before TensorFlow would start."""

import argparse
import contextlib
import json
import os
import sys

from recipes.config import (
    ConfigError,
    Option,
    RecipeError,
    _convert,
    check_of,
    load_config,
)
from recipes.files import jsonable, tidy


def _flag(key):
    return "--" + key.replace("_", "-")


def version():
    """The installed kerasrnn version (the source tree's when not installed)."""
    try:
        from importlib.metadata import version as installed

        return installed("kerasrnn")
    except Exception:
        import kerasrnn

        return kerasrnn.__version__


def option_help(option, key=None):
    """The help text of an option: what it does, the allowed values (its choices, or
    the range `check_of` gives for `key`), the default."""
    text = option.help.rstrip(".")
    check = check_of(key, option) if key is not None else None
    if option.choices is not None:
        text += "; one of " + ", ".join(_shown(c) for c in option.choices)
    elif check is not None:
        text += f"; {check.describe()}"
    return f"{text} (default: {_shown(option.default)})"


def _shown(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def option_type(key, option):
    """An argparse `type` that converts a flag's text as `load_config` does (YAML
    scalars and collections) and checks its type, `choices` and range (`check_of`) at
    parse time, before any TensorFlow work: a bad value is one line naming the flag,
    the value and what it must be (exit status 2)."""

    def convert(text):
        try:
            value = _convert(key, text, option.default)
        except ConfigError as error:
            raise argparse.ArgumentTypeError(
                str(error).replace(f"option {key!r} ", "", 1).rstrip(".")
            ) from None
        if option.choices is not None and value not in option.choices:
            raise argparse.ArgumentTypeError(
                f"invalid choice {text!r} (choose from "
                f"{', '.join(_shown(c) for c in option.choices)})"
            )
        check = check_of(key, option)
        problem = check.problem(value) if check is not None and value is not None else None
        if problem:
            raise argparse.ArgumentTypeError(f"{problem}, got {text}")
        return value

    return convert


class Parser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose flags must be spelled out (``--epoch`` is not
    ``--epochs``: prefix matching would break when a new option shares the prefix) and
    whose errors are one line on stderr, ``PROG: error: MESSAGE (see --help)``, exit
    status 2."""

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser(prog, description, options, commands):
    """A `Parser` with ``--version`` and one subcommand per entry of `commands` (name
    -> ``(help, add_arguments function or None[, option names])``); each takes
    ``--config FILE`` and a flag per option of `options` it lists (all without a list;
    ``--batch-size 64``; lists and dicts as YAML/JSON text), whose help says what it
    does, the allowed values and the default, and whose value is checked at parse time
    (`option_type`)."""
    parser = Parser(
        prog=prog,
        description=description,
        epilog="Each command prints its result as JSON on stdout; logs and progress go "
        "to stderr. Errors are one line on stderr, exit status 2.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, add_arguments, *selected) in commands.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        keys = selected[0] if selected and selected[0] is not None else list(options)
        p.add_argument("--config", help="YAML or JSON file of options")
        if add_arguments:
            add_arguments(p)
        group = p.add_argument_group("options (override the config file)")
        for key in keys:
            option = options[key]
            option = option if isinstance(option, Option) else Option(option, "")
            default = option.default
            group.add_argument(
                _flag(key),
                dest=f"opt_{key}",
                default=argparse.SUPPRESS,
                metavar=type(default).__name__.upper() if default is not None else "VALUE",
                help=option_help(option, key).replace("%", "%%"),
                type=option_type(key, option),
            )
    return parser


@contextlib.contextmanager
def _stdout_to_stderr():
    """Everything printed while a command runs (Keras' progress bars, logs) goes to
    stderr, so that stdout holds only the command's JSON result. At the file-descriptor
    level too when stdout is the process' own (native code writes there)."""
    sys.stdout.flush()
    saved = None
    if sys.stdout is sys.__stdout__:
        try:
            saved = os.dup(1)
            os.dup2(2, 1)
        except (OSError, AttributeError, ValueError):
            saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved is not None:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def main(argv, prog, description, options, commands):
    """Runs a recipe's command line. `commands` maps a subcommand to ``(help,
    add_arguments, run[, option names])``; ``run(config, args)`` returns a JSON-able
    result, which is printed on stdout, numbers rounded by `tidy` (``args.overrides``
    holds the options given on the command line). Everything else the command prints goes to stderr.
    Configuration and data errors exit with a one-line message (status 2)."""
    parser = build_parser(
        prog,
        description,
        options,
        {k: (v[0], v[1], *v[3:]) for k, v in commands.items()},
    )
    args = parser.parse_args(argv)
    overrides = {k[4:]: v for k, v in vars(args).items() if k.startswith("opt_")}
    args.overrides = overrides
    from kerasrnn.data.download import CorpusError
    from kerasrnn.data.loaders import DataFormatError, DatasetUnavailableError

    stdout = sys.stdout
    try:
        with _stdout_to_stderr():
            config = load_config(options, args.config, overrides)
            result = commands[args.command][2](config, args)
    except (
        ConfigError,
        RecipeError,
        DataFormatError,
        DatasetUnavailableError,
        CorpusError,
        FileNotFoundError,
        IsADirectoryError,
    ) as error:
        print(f"{prog} {args.command}: error: {error}", file=sys.stderr)
        return 2
    if result is not None:
        print(
            json.dumps(tidy(result), indent=2, ensure_ascii=False, default=jsonable),
            file=stdout,
            flush=True,
        )
    return 0


def options_markdown(recipe):
    """The options reference of a recipe as a Markdown table (docs/cli.md holds it)."""
    lines = [
        f"### `python -m recipes.{recipe.name}`",
        "",
        recipe.description,
        "",
        "| option | what it does | default |",
        "| --- | --- | --- |",
    ]
    for key, option in recipe.options.items():
        text = option.help.rstrip(".")
        check = check_of(key, option)
        if option.choices is not None:
            text += "; one of " + ", ".join(f"`{_shown(c)}`" for c in option.choices)
        elif check is not None:
            text += f"; {check.describe()}"
        text = text.replace("|", "\\|")
        lines.append(f"| `{_flag(key)}` | {text} | `{_shown(option.default)}` |")
    return "\n".join(lines) + "\n"
