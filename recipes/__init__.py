"""Command lines over kerasrnn's tasks: classifier, tagger, language model, translator
and sentence-pair model (``kerasrnn NAME --help``, or ``python -m recipes.NAME --help``),
on one skeleton (`recipes.skeleton`); `recipes.common` gathers what a recipe uses."""

# First, before anything imports TensorFlow: importing kerasrnn quiets a command line's
# start-up (kerasrnn._startup), then imports Keras.
import kerasrnn  # noqa: F401
