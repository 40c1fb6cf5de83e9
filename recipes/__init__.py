"""Command lines over kerasrnn's tasks: classifier, tagger, language model, translator
and sentence-pair model (``kerasrnn NAME --help``, or ``python -m recipes.NAME --help``),
on one skeleton split by concern: `recipes.config` (an option and its checks),
`recipes.options` (the option tables), `recipes.files` (run files, atomic JSON),
`recipes.run_folder` (one writer at a time), `recipes.training` (the config's training
pieces, `fit`), `recipes.cli` (the parser), `recipes.usage` (the examples of --help) and
`recipes.skeleton` (`Recipe`); `recipes.common` gathers what a recipe uses.
"""

# First, before anything imports TensorFlow: importing kerasrnn quiets a command line's
# start-up (kerasrnn._startup), then imports Keras.
import kerasrnn  # noqa: F401
