"""The recipes' layout (issue 27): no recipe imports another, and every Keras object a
recipe's saved model needs is registered by kerasrnn itself."""

import ast
import pathlib

import keras

RECIPES = ("classifier", "tagger", "language_model", "translator", "pair_classifier")
FOLDER = pathlib.Path(__file__).resolve().parents[2] / "recipes"


def _imported_modules(path):
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            if node.module == "recipes":
                names.update(f"recipes.{alias.name}" for alias in node.names)
    return names


def test_no_recipe_imports_another():
    for name in RECIPES:
        imported = _imported_modules(FOLDER / f"{name}.py")
        others = sorted(
            m for m in imported if m.startswith("recipes.") and m.split(".")[1] in RECIPES
        )
        assert others == [], (name, others)


def test_every_registered_kerasrnn_object_is_kerasrnns():
    import kerasrnn  # noqa: F401
    import recipes.classifier
    import recipes.language_model
    import recipes.pair_classifier
    import recipes.tagger
    import recipes.translator  # noqa: F401

    registered = keras.saving.get_custom_objects()
    foreign = {
        k: v.__module__
        for k, v in registered.items()
        if k.startswith("kerasrnn>") and not v.__module__.startswith("kerasrnn.")
    }
    assert foreign == {}
    assert "kerasrnn>BiLMFeatures" in registered and "kerasrnn>PairFeatures" in registered


def test_recipes_are_configuration_over_the_library():
    """No Keras layer, model, loss, metric or callback is defined in recipes/, nothing
    private of kerasrnn is imported there, no file exists to meet a line count, and the
    whole of recipes/ stays within 4,500 lines."""
    files = sorted(FOLDER.glob("*.py"))
    assert not [p.name for p in files if p.name.endswith("_parts.py")]
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base) for base in node.bases]
                assert not [b for b in bases if "keras" in b or "Callback" in b], (path.name, bases)
            if isinstance(node, ast.Import):
                assert not [a.name for a in node.names if "._" in a.name], path.name
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kerasrnn"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert "._" not in f".{node.module}" and not private, (path.name, node.module)
    assert sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files) <= 4500
