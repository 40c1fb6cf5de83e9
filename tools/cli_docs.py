"""Writes the reference of every recipe command and option into docs/cli.md (between its
``<!-- options:begin -->`` and ``<!-- options:end -->`` markers), from the recipes'
parsers and option tables, the same source as their ``--help``::

    python tools/cli_docs.py            # rewrite docs/cli.md
    python tools/cli_docs.py --check    # exit 1 when docs/cli.md is out of date

Per recipe: each command, what it does, the arguments of its own (``predict``'s inputs,
``export``'s format ...) and which options it takes; then one table per ``--help`` group
of every option (what it does, its values, its default). tests/recipes/test_cli.py
checks that the page is up to date.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "cli.md")
BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"


def recipes():
    """The recipes' skeleton objects, in the order the page lists them."""
    from recipes import classifier, language_model, pair_classifier, tagger, translator

    return [
        classifier.RECIPE,
        tagger.RECIPE,
        language_model.RECIPE,
        translator.RECIPE,
        pair_classifier.RECIPE,
    ]


def _cell(text):
    return " ".join(str(text).split()).replace("|", "\\|")


def _own_arguments(parser, option_dests):
    """The arguments a command's parser has beyond ``--config`` and the option flags."""
    found = []
    for action in parser._actions:  # argparse keeps its arguments here alone
        if isinstance(action, argparse._HelpAction) or action.dest in option_dests:
            continue
        if "--config" in action.option_strings:
            continue
        name = ", ".join(action.option_strings) or (action.metavar or action.dest)
        if action.choices and action.option_strings:
            name += " {" + ",".join(map(str, action.choices)) + "}"
        found.append(f"`{name}`: {_cell(action.help or '')}")
    return found


def commands_markdown(recipe):
    """A recipe's commands as a Markdown table: each command's help, its own arguments
    and the options it takes."""
    parser = recipe.parser(f"kerasrnn {recipe.name}")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    lines = [
        "| command | what it does | its own arguments | options |",
        "| --- | --- | --- | --- |",
    ]
    for name, (help_text, _, _, *selected) in recipe.commands().items():
        command = sub.choices[name]
        dests = {a.dest for a in command._actions if a.dest.startswith("opt_")}
        own = "; ".join(_own_arguments(command, dests)) or "none"
        chosen = selected[0] if selected else None
        if chosen is None:
            taken = "every option"
        else:
            taken = ", ".join(f"`--{k.replace('_', '-')}`" for k in chosen) or "none"
        lines.append(f"| `{name}` | {_cell(help_text)} | {own} | {taken} |")
    return "\n".join(lines)


def options_markdown(recipe):
    """A recipe's options as Markdown tables, one per ``--help`` group."""
    from recipes.cli import _flag, _shown, is_switch
    from recipes.config import check_of
    from recipes.options import GROUPS, group_of

    tables = {}
    for key, option in recipe.options.items():
        tables.setdefault(group_of(key, option), []).append((key, option))
    lines = []
    for group in GROUPS:
        if group not in tables:
            continue
        lines += [
            f"#### {recipe.name}: {group} options",
            "",
            "| option | what it does | default |",
            "| --- | --- | --- |",
        ]
        for key, option in tables[group]:
            text = option.help.rstrip(".")
            check = check_of(key, option)
            if option.choices is not None:
                text += "; one of " + ", ".join(f"`{_shown(c)}`" for c in option.choices)
            elif check is not None and check.short():
                text += f"; {check.short()}"
            flag = f"`{_flag(key)}`"
            if is_switch(option):
                flag += f" / `--no-{_flag(key)[2:]}`"
            lines.append(f"| {flag} | {_cell(text)} | `{_shown(option.default)}` |")
        lines.append("")
    return "\n".join(lines)


def section():
    """The generated part of the page: per recipe its commands, then its options."""
    parts = []
    for recipe in recipes():
        parts += [
            f"### `kerasrnn {recipe.name}`",
            "",
            recipe.description,
            "",
            commands_markdown(recipe),
            "",
            options_markdown(recipe),
        ]
    return "\n".join(parts)


def updated(text):
    """`text` (the page) with its generated section replaced."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"{PAGE} lacks the {BEGIN} / {END} markers.")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{section()}{END}{tail}"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    sys.path.insert(0, ROOT)
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    new = updated(text)
    if "--check" in argv:
        if new != text:
            print(f"{PAGE} is out of date: run python tools/cli_docs.py", file=sys.stderr)
            return 1
        return 0
    with open(PAGE, "w", encoding="utf-8") as f:
        f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
