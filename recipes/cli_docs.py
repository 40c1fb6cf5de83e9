"""Writes the options reference of every recipe into docs/cli.md (between its
``<!-- options:begin -->`` and ``<!-- options:end -->`` markers) from the recipes'
option tables, the same source as their ``--help``::

    python -m recipes.cli_docs            # rewrite docs/cli.md
    python -m recipes.cli_docs --check    # exit 1 when docs/cli.md is out of date

tests/recipes/test_cli.py checks that the page is up to date.
"""

import os
import sys

BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"
PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "cli.md")


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


def options_section():
    """The generated part of the page: one options table per recipe."""
    from recipes.common import options_markdown

    return "\n".join(options_markdown(recipe) for recipe in recipes())


def updated(text):
    """`text` (the page) with its generated section replaced."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"{PAGE} lacks the {BEGIN} / {END} markers.")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{options_section()}{END}{tail}"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    new = updated(text)
    if "--check" in argv:
        if new != text:
            print(f"{PAGE} is out of date: run python -m recipes.cli_docs", file=sys.stderr)
            return 1
        return 0
    with open(PAGE, "w", encoding="utf-8") as f:
        f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
