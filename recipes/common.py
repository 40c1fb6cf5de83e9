"""What a recipe module uses, in one namespace (``from recipes import common``): the
names of the recipe toolkit, each defined in the module of its concern:

* `recipes.config` -- one option (`Option`), the ranges of numeric options (`Range`,
  `CHECKS`), `load_config` (defaults <- a YAML or JSON file <- flags) and
  `check_labels` (held-out labels seen in training);
* `recipes.options` -- the option tables: the groups the recipes share, each defined
  once (`COMMON_OPTIONS`, `data_options`, `training_options`, `vocabulary_options`,
  `cell_options`, `decoding_options`; `retuned`, `with_defaults`), and the ``--help``
  groups (`GROUPS`, `group_of`);
* `recipes.files` -- the run folder (`run_files`), results JSON (`tidy`, `write_json`,
  `read_json`), `save_model`, `saved_config`;
* `recipes.training` -- `make_cell`, `sentence_encoder`, `optimizer`,
  `learning_rate_schedule`, `distribution`, `load_splits`, `fit` (a
  `kerasrnn.callbacks.TrainingRun`), `set_seed`;
* `recipes.cli` -- `Parser`, `build_parser`, `main`;
* `recipes.usage` -- the example commands of every recipe's ``--help``;
* `recipes.skeleton` -- `Recipe` and `Prepared`.

The crash-safe checkpoints, the epoch log and the training curves are library callbacks:
`kerasrnn.callbacks`.

A new recipe: subclass `Recipe`, set `name`, `options` (``data_options(...)`` or
``dict(COMMON_OPTIONS, ...)``), `task` (the name of the `kerasrnn.models` task it
trains) and write the hooks `load_examples`, `prepare`, `build` and `evaluate_run`;
`Recipe.main` is then its whole command line (see recipes/classifier.py).
"""

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
    save_model,
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
