"""The recipes' command line: one `Parser` per recipe (``--version``, a subcommand
per command, a flag per option it takes in its ``--help`` group, booleans as
``--crf`` / ``--no-crf`` switches, choices shown, example commands, each value checked
at parse time) and `main` (JSON result on stdout, everything else on stderr, one-line
errors with exit status 2); tools/cli_docs.py writes docs/cli.md from the same tables.
Imports neither TensorFlow nor Keras: ``--help`` and a bad flag answer before
TensorFlow would start."""

import argparse
import contextlib
import json
import os
import re
import sys
import textwrap
from collections.abc import Mapping

from recipes.config import (
    ConfigError,
    Option,
    Range,
    RecipeError,
    _convert,
    check_of,
    load_config,
)
from recipes.files import jsonable, tidy
from recipes.options import GROUPS, group_of


def _flag(key):
    return "--" + key.replace("_", "-")


def version():
    """`kerasrnn.__version__`, which ``--version`` prints."""
    import kerasrnn  # already imported: `recipes` imports it first (the quiet start-up)

    return kerasrnn.__version__


def option_help(option, key=None):
    """An option's help: what it does, its range (choices: the metavar) and default."""
    check = check_of(key, option) if key is not None and option.choices is None else None
    interval = check.short() if check is not None else ""
    shown = f"default: {_shown(option.default)}"
    return f"{option.help.rstrip('.')} ({interval + '; ' if interval else ''}{shown})"


def _shown(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


METAVARS = {int: "INT", float: "FLOAT", str: "TEXT", list: "LIST", dict: "DICT"}


def option_metavar(option, key=None):
    """An option's ``--help`` value: its choices, ``{lstm,gru}``, or INT, FLOAT, TEXT..."""
    if option.choices is not None:
        return "{" + ",".join(_shown(c) for c in option.choices) + "}"
    if option.default is None:
        check = check_of(key, option) if key is not None else None
        if isinstance(check, Range):
            return "INT" if check.integer else "FLOAT"
    return METAVARS.get(type(option.default), "VALUE")


def is_switch(option):
    """A boolean option: a ``--name`` / ``--no-name`` pair on the command line."""
    return isinstance(option.default, bool) and option.choices is None


def option_type(key, option):
    """An argparse `type` that converts a flag's text as `load_config` does and checks
    its type, choices and range at parse time, before TensorFlow starts."""

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


# The words a boolean takes in a config file (YAML 1.1), which the old ``--crf true``
# form of a switch still takes on the command line.
_TRUE, _FALSE = ("true", "yes", "on"), ("false", "no", "off")


class Parser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` with flags spelled out (``--epoch`` is not
    ``--epochs``), one-line errors (exit status 2), and switches (``--crf`` /
    ``--no-crf``) that also take a config file's form, ``--crf true``."""

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.switches = set()  # the flags of the boolean options
        self.groups = {}  # --help group name -> argparse group

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def group(self, name):
        """The ``--help`` group `name` of `GROUPS`, made on first use."""
        if name not in self.groups:
            self.groups[name] = self.add_argument_group(f"{name} options", GROUPS.get(name))
        return self.groups[name]

    def add_switch(self, group, flag, **kwargs):
        """A boolean option: ``--flag`` sets it, ``--no-flag`` clears it."""
        group.add_argument(flag, action=argparse.BooleanOptionalAction, **kwargs)
        self.switches.add(flag)

    def parse_known_args(self, args=None, namespace=None):
        args = self._switches_spelled(sys.argv[1:] if args is None else list(args))
        namespace, extras = super().parse_known_args(args, namespace)
        for before, arg in zip(args, args[1:]):
            if before in self.switches and arg in extras:  # ``--crf maybe``
                self.error(self._no_value(before, arg))
        return namespace, extras

    @staticmethod
    def _no_value(flag, value):
        return (
            f"argument {flag}: must be true or false, got {value!r} (a switch: {flag} or "
            f"--no-{flag[2:]})"
        )

    def _switches_spelled(self, args):
        """`args` with a switch's ``--flag true`` / ``--flag=false`` as ``--flag`` /
        ``--no-flag`` (nothing after ``--``)."""
        out, i = [], 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                return out + args[i:]
            flag, eq, value = arg.partition("=")
            if flag in self.switches:
                if not eq and i + 1 < len(args) and args[i + 1].lower() in _TRUE + _FALSE:
                    value, eq = args[i + 1], "="
                    i += 1
                if eq:
                    if value.lower() not in _TRUE + _FALSE:
                        self.error(self._no_value(flag, value))
                    arg = flag if value.lower() in _TRUE else f"--no-{flag[2:]}"
            out.append(arg)
            i += 1
        return out


def invocation(prog):
    """How a user types `prog` (``recipes.NAME`` as ``python -m recipes.NAME``)."""
    return f"python -m {prog}" if prog.startswith("recipes.") else prog


def _wrapped(command, width=80):
    """A shell command broken before flags into lines of at most `width` characters."""
    lines = []
    for part in re.split(r" (?=--)", command):
        if lines and len(lines[-1]) + 1 + len(part) + 2 <= width:
            lines[-1] += " " + part
        else:
            lines.append(part if not lines else "      " + part)
    return " \\\n".join(lines)


def examples_epilog(prog, command, examples):
    """The epilog of a command's ``--help``: its example commands, as typed."""
    if not examples:
        return None
    lines = [_wrapped(f"  {invocation(prog)} {command} {example}".rstrip()) for example in examples]
    return "examples:\n" + "\n".join(lines)


def build_parser(prog, description, options, commands, examples=None):
    """A `Parser` with ``--version`` and a subcommand per `commands` entry (name ->
    ``(help, add_arguments or None, run[, options])``: names of `options`, all without
    them, or a table of its own); each takes ``--config`` and a checked flag per option
    in its ``--help`` group, `examples` as its epilog. Runs nothing."""
    examples = examples or {}
    parser = Parser(
        prog=prog,
        description=textwrap.fill(description, 80),
        epilog=textwrap.fill(
            "Each command prints its result as JSON on stdout; logs and progress go "
            "to stderr. Errors are one line on stderr, exit status 2. "
            f"`{invocation(prog)} COMMAND --help` lists a command's options, grouped, "
            "with examples.",
            80,
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add_arguments, _, *selected) in commands.items():
        chosen = selected[0] if selected else None
        if isinstance(chosen, Mapping):
            table = {k: v if isinstance(v, Option) else Option(v, "") for k, v in chosen.items()}
        else:
            keys = list(options) if chosen is None else chosen
            table = {k: options[k] for k in keys}
            table = {k: v if isinstance(v, Option) else Option(v, "") for k, v in table.items()}
        p = sub.add_parser(
            name,
            help=help_text,
            description=textwrap.fill(help_text, 80),
            epilog=examples_epilog(prog, name, examples.get(name)),
        )
        p.add_argument(
            "--config",
            metavar="FILE|NAME",
            help="YAML or JSON file of options, or a shipped config's name (`kerasrnn "
            "configs` lists them); flags override it",
        )
        if add_arguments:
            add_arguments(p)
        usage = p.format_usage().split(":", 1)[1].strip()
        p.usage = f"{usage} [OPTION ...]" if table else usage
        order = list(GROUPS)
        for key in sorted(table, key=lambda k: order.index(group_of(k, table[k]))):
            option = table[key]
            kwargs = dict(
                dest=f"opt_{key}",
                default=argparse.SUPPRESS,
                help=option_help(option, key).replace("%", "%%"),
            )
            group = p.group(group_of(key, option))
            if is_switch(option):
                p.add_switch(group, _flag(key), **kwargs)
            else:
                group.add_argument(
                    _flag(key),
                    metavar=option_metavar(option, key),
                    type=option_type(key, option),
                    **kwargs,
                )
    return parser


@contextlib.contextmanager
def _stdout_to_stderr():
    """What a command prints goes to stderr (at the file-descriptor level too, where
    native code writes), so that stdout holds only its JSON result."""
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


def main(argv, parser, options, commands):
    """Runs a recipe's command line (`parser`: `build_parser` of `options` and
    `commands`): ``run(config, args)`` of the chosen command (``args.overrides``: the
    flags given) returns what is printed as JSON on stdout; configuration and data
    errors are one line (status 2)."""
    prog = parser.prog
    args = parser.parse_args(argv)
    overrides = {k[4:]: v for k, v in vars(args).items() if k.startswith("opt_")}
    args.overrides = overrides
    from kerasrnn.data.download import CorpusError
    from kerasrnn.data.loaders import DataFormatError, DatasetUnavailableError
    from kerasrnn.models import PresetError

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
        PresetError,
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
