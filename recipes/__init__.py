"""Command lines over kerasrnn: classifier, tagger, language model, translator and
sentence-pair model (``python -m recipes.NAME --help``, or ``kerasrnn NAME --help``:
`recipes.console`), on one skeleton split by concern: `recipes.config` (an option and
its checks), `recipes.options` (the option tables), `recipes.files` (run folders, atomic
JSON), `recipes.distribute` (tf.distribute strategies), `recipes.training` (model
parts, `fit`), `recipes.evaluation`, `recipes.cli` (the parser), `recipes.usage` (the
examples of --help) and `recipes.skeleton` (`Recipe`); `recipes.common` gathers what a
recipe uses.
"""

# First, before anything imports TensorFlow: a command line's start-up is quiet.
from kerasrnn._startup import quiet_command_line

quiet_command_line()  # (kerasrnn's import has done it already; runs once)
