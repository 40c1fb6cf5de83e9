"""Griffe extension: the package's docstring conventions, rendered by mkdocstrings.

The docstrings are written for `help()` and editors: Google-style sections, equations
as reST `.. math::` directives, runnable examples as bare doctest blocks, and Args
entries that document several parameters at once ("units, activation: ...") or end with
a sentence ("The other arguments are Keras' ..."). mkdocstrings reads docstrings as
Markdown, so this extension rewrites, before parsing:

* each `.. math::` directive into an arithmatex display block, `\\[ ... \\]`, with
  `aligned` when the equations are multi-line (`&`, `\\\\`);
* each top-level doctest block into a fenced `pycon` block, and each reST simple table
  (`==== ====` borders) into a fenced text block, so it keeps its columns;
* a sentence inside an Args section into a paragraph after the section (the Google
  parser would drop it).

It also checks that every name an Args entry documents is a parameter of the function
(griffe's own check, switched off in mkdocs.yml, would reject "a, b: ..." entries), so a
renamed argument still fails the strict build.
"""

import re

import griffe

_DIRECTIVE = re.compile(r"^(?P<indent>[ ]*)\.\. math::[ ]*(?P<inline>.*)$")
_ARGS = re.compile(r"^(Args|Arguments|Parameters):\s*$")


def _indent(line):
    return len(line) - len(line.lstrip())


def rewrite_math(lines):
    out, i = [], 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent = match["indent"]
        body = [match["inline"]]
        i += 1
        # The directive's content: blank lines and lines indented deeper than it.
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > len(indent)):
            body.append(lines[i])
            i += 1
        equations = [line.strip() for line in body if line.strip()]
        if any("&" in line or line.endswith("\\\\") for line in equations):
            equations = ["\\begin{aligned}", *equations, "\\end{aligned}"]
        out += [indent + line for line in ["\\[", *equations, "\\]"]] + [""]
    return out


_TABLE_BORDER = re.compile(r"^=+( +=+)+$")


def fence_blocks(lines):
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += ["```pycon", *block, "```"]
        elif _TABLE_BORDER.match(lines[i]):
            # A simple table has three borders: top, under the header, bottom.
            block, borders = [], 0
            while i < len(lines) and borders < 3:
                borders += bool(_TABLE_BORDER.match(lines[i]))
                block.append(lines[i])
                i += 1
            out += ["```text", *block, "```"]
        else:
            out.append(lines[i])
            i += 1
    return out


def args_sentences_out(lines):
    """Moves sentences out of Args sections; returns (lines, documented names)."""
    out, names, i = [], [], 0
    while i < len(lines):
        out.append(lines[i])
        if not _ARGS.match(lines[i]):
            i += 1
            continue
        i += 1
        sentences = []
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > 0):
            line = lines[i]
            # An entry is "name: description" or "name (type): description".
            head = line.strip().split(":", 1)[0]
            is_entry = ":" in line and re.fullmatch(r"[\w*]+( \(.*\))?(, [\w*]+)*", head)
            if _indent(line) == 4 and line.strip() and not is_entry:
                sentences.append(line.strip())
            else:
                out.append(line)
                if _indent(line) == 4 and is_entry:
                    names += [name.split(" (")[0].lstrip("*") for name in head.split(", ")]
            i += 1
        if sentences:
            out += ["", " ".join(sentences), ""]
    return out, names


class KerasrnnDocstrings(griffe.Extension):
    def on_object(self, *, obj, **kwargs):
        if obj.docstring is None:
            return
        lines = fence_blocks(rewrite_math(obj.docstring.value.splitlines()))
        lines, names = args_sentences_out(lines)
        obj.docstring.value = "\n".join(lines)
        self._check_names(obj, names)

    @staticmethod
    def _check_names(obj, names):
        if not names or not (obj.is_class or obj.is_function):
            return
        known = set()
        # A constructor that passes **kwargs on accepts its base classes' arguments too.
        for owner in [obj, *obj.mro()] if obj.is_class else [obj]:
            init = owner.members.get("__init__") if owner.is_class else owner
            if init is None:
                continue
            known |= {parameter.name for parameter in init.parameters}
            if not any(p.kind is griffe.ParameterKind.var_keyword for p in init.parameters):
                break
        for name in names:
            if name not in known:
                griffe.logger.warning(
                    f"{obj.relative_filepath}:{obj.lineno}: {obj.path} documents "
                    f"argument '{name}', which is not in its signature"
                )
