"""``python -m recipes RECIPE COMMAND [options]``: the ``kerasrnn`` command
(`recipes.console`)."""

import sys

from recipes.console import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m recipes"))
