"""What a recipe module uses, in one namespace (``from recipes import common``): the
option tables and checks (`recipes.options`, `recipes.config`), the run folder's files
(`recipes.files`), the training flow (`recipes.training`), the command line
(`recipes.cli`) and the skeleton (`recipes.skeleton`). A new recipe subclasses `Recipe`,
sets `name`, `options` and `task` (a `kerasrnn.models` class name) and writes the hooks
`load_examples`, `prepare`, `build` and `evaluate_run` (see recipes/classifier.py)."""

# ruff: noqa: F401 (this module is the namespace: every name is for the recipes to use)
from recipes.cli import Parser, build_parser, main, option_help, version
from recipes.config import (
    CHECKS,
    ConfigError,
    Defaults,
    Option,
    Range,
    RecipeError,
    check_labels,
    check_of,
    defaults_of,
    load_config,
)
from recipes.files import (
    read_json,
    run_files,
    saved_config,
    tidy,
    write_json,
)
from recipes.options import (
    CELLS,
    COMMON_DEFAULTS,
    COMMON_OPTIONS,
    GROUPS,
    STRATEGIES,
    cell_options,
    data_options,
    decoding_options,
    group_of,
    retuned,
    training_options,
    vocabulary_options,
    with_defaults,
)
from recipes.skeleton import Prepared, Recipe
from recipes.training import (
    distribution,
    fit,
    learning_rate_schedule,
    load_splits,
    make_cell,
    optimizer,
    sentence_encoder,
    set_seed,
)
