"""Tag schemes of entity tagging (IOB1, BIO/IOB2, BIOES/BIOUL): which transitions a CRF may
take, checks of tagged data against a scheme, and conversions between schemes.

NumPy and Python only: the matrices go into `CRF(allowed_transitions=...)` and
`crf_decode(allowed_transitions=...)`.
"""

import re

import numpy as np

SCHEMES = ("IOB1", "BIO", "IOB2", "BIOES", "BIOUL")
# the prefixes each scheme uses (IOB2 is BIO, BIOUL is BIOES with U = S and L = E)
_PREFIXES = {"IOB1": "BI", "BIO": "BI", "IOB2": "BI", "BIOES": "BIES", "BIOUL": "BILU"}

_ENTITY_TAG = re.compile(r"^(O|[BIES]-.+)$")


def is_entity_tags(tags):
    """Whether every tag is ``O`` or ``B-X``, ``I-X`` (``E-X``, ``S-X``), and one is not
    ``O``: entity tags (IOB1, BIO or BIOES).

    >>> is_entity_tags(["O", "B-PER", "I-PER"]), is_entity_tags(["NOUN", "VERB"])
    (True, False)
    """
    tags = set(tags)
    return bool(tags) and all(_ENTITY_TAG.match(t) for t in tags) and any(t != "O" for t in tags)


def _scheme(scheme):
    name = str(scheme).upper()
    if name not in SCHEMES:
        raise ValueError(f"unknown tag scheme {scheme!r}; use one of {list(SCHEMES)}.")
    return {"IOB2": "BIO", "BIOUL": "BIOES"}.get(name, name), _PREFIXES[name]


def _parse(tag, prefixes, scheme):
    """``B-PER`` -> ("B", "PER"), ``O`` -> ("O", None); U/L read as S/E."""
    if tag == "O":
        return "O", None
    prefix, dash, kind = tag.partition("-")
    if not dash or not kind or prefix not in prefixes:
        allowed = ", ".join(f"{p}-TYPE" for p in prefixes)
        raise ValueError(
            f"tag {tag!r} fits no {scheme} tag (O, {allowed}); rename it or drop the constraints."
        )
    return {"U": "S", "L": "E"}.get(prefix, prefix), kind


def _allowed(scheme, prev, prev_kind, tag, kind):
    """AllenNLP's `is_transition_allowed` (START and END as tags)."""
    if prev == "START":
        return {
            "IOB1": tag in ("O", "I"),
            "BIO": tag in ("O", "B"),
            "BIOES": tag in ("O", "B", "S"),
        }[scheme]
    if tag == "END":
        return {"IOB1": True, "BIO": True, "BIOES": prev in ("O", "E", "S")}[scheme]
    same = prev_kind == kind
    if scheme == "IOB1":
        # I-X may start an entity; B-X only separates two adjacent X entities
        return tag in ("O", "I") or (prev in ("B", "I") and same)
    if scheme == "BIO":
        return tag in ("O", "B") or (prev in ("B", "I") and same)
    # BIOES: inside an entity only I or E of its type; after its end anything that begins
    if prev in ("B", "I"):
        return tag in ("I", "E") and same
    return tag in ("O", "B", "S")


def allowed_transitions(tag_names, scheme):
    """The transitions a tag scheme allows, as the (K + 2, K + 2) bool matrix that
    `CRF(allowed_transitions=...)` and `crf_decode` take.

    Entry [i, j] is True when tag j may follow tag i; row K is START (which tags may
    begin a sentence) and column K + 1 is END (which may end one). BIO (IOB2): I-X only
    after B-X or I-X. IOB1: B-X only after B-X or I-X (it separates two adjacent X
    entities); an entity may begin with I-X. BIOES (BIOUL): B-X and I-X go on with I-X or
    E-X; O, E and S are followed by O, B or S; a sentence begins with O, B or S and ends
    with O, E or S. As AllenNLP's ``allowed_transitions``.

    Args:
        tag_names: the K tag strings in the model's order (``O``, ``B-PER``, ...).
        scheme: "IOB1", "BIO" (or "IOB2"), "BIOES" (or "BIOUL").

    Example:

    >>> m = allowed_transitions(["O", "B-PER", "I-PER"], "BIO")
    >>> bool(m[0, 2]), bool(m[1, 2]), bool(m[3, 2])   # O -> I-PER, B -> I, START -> I
    (False, True, False)
    """
    name, prefixes = _scheme(scheme)
    tags = [_parse(t, prefixes, scheme) for t in tag_names]
    k = len(tags)
    allowed = np.zeros((k + 2, k + 2), bool)
    for i, (prev, prev_kind) in enumerate(tags + [("START", None)]):
        for j, (tag, kind) in enumerate(tags + [("START", None), ("END", None)]):
            if tag == "START" or j == i == k:
                continue
            allowed[min(k, i), j] = _allowed(name, prev, prev_kind, tag, kind)
    return allowed


def check_tags(sequences, scheme, source="data"):
    """Raises a one-line ValueError at the first tag of `sequences` (lists of tag strings)
    that `scheme` does not allow there, e.g. IOB1 data declared BIO (an entity that
    begins with ``I-``) or a tag that fits no scheme."""
    name, prefixes = _scheme(scheme)
    for number, tags in enumerate(sequences, 1):
        prev, prev_kind, prev_text = "START", None, "the sentence start"
        for position, text in enumerate(list(tags) + ["the sentence end"]):
            try:
                tag, kind = (
                    ("END", None) if position == len(tags) else _parse(text, prefixes, scheme)
                )
            except ValueError as error:
                raise ValueError(f"{source}: sentence {number}: {error}") from None
            if not _allowed(name, prev, prev_kind, tag, kind):
                hint = (
                    " (an entity that begins with I- is IOB1: declare the data IOB1)"
                    if name == "BIO" and tag == "I"
                    else ""
                )
                raise ValueError(
                    f"{source}: sentence {number}, token {position + 1}: {text} after "
                    f"{prev_text} is not allowed in {scheme}{hint}."
                )
            prev, prev_kind, prev_text = tag, kind, text


def detect_scheme(sequences):
    """The first of "BIO", "BIOES", "IOB1" that every tag sequence fits (BIO: every
    entity begins with ``B-``; IOB1: some begin with ``I-``); None for tags that are not
    entity tags (e.g. part-of-speech tags)."""
    for scheme in ("BIO", "BIOES", "IOB1"):
        try:
            check_tags(sequences, scheme)
        except ValueError:
            continue
        return scheme
    return None


def training_schemes(sequences, declared="auto"):
    """``(the data's scheme, the scheme to train in)`` of tagged training sentences
    (lists of tag strings): ``(None, None)`` for tags that are not entity tags;
    `declared` "auto" detects the data's scheme (`detect_scheme`), "IOB1" / "BIO"
    checks the data against it (`check_tags`), "BIOES" detects it and trains in BIOES
    (the tags then converted with `convert_tags`).

    Raises:
        ValueError: data that does not fit the declared scheme, or "BIOES" declared for
            tags that are not entity tags (one line).

    >>> training_schemes([["B-PER", "I-PER", "O"]], "bioes")
    ('BIO', 'BIOES')
    """
    declared = str(declared).upper()
    if declared not in ("AUTO", "IOB1", "BIO", "BIOES"):
        raise ValueError(
            f"`declared` must be 'auto', 'IOB1', 'BIO' or 'BIOES'; got {declared.lower()!r}."
        )
    flat = {t for tags in sequences for t in tags}
    found = detect_scheme(sequences) if is_entity_tags(flat) else None
    if declared in ("IOB1", "BIO"):
        check_tags(sequences, declared, "the training tags")
        found = declared
    if found is None:
        if declared == "BIOES":
            raise ValueError(
                "BIOES needs entity tags (O, B-X, I-X ...) in IOB1, BIO or BIOES; the "
                f"training tags are not (e.g. {sorted(flat)[:3]})."
            )
        return None, None
    return found, ("BIOES" if declared == "BIOES" else found)


def to_spans(tags):
    """The entities of one sentence in any scheme, read as conlleval reads them."""
    from kerasrnn.metrics.entities import entity_spans

    return entity_spans(tags)


def from_spans(spans, length, scheme):
    """Entity spans -> tags of one sentence in `scheme` (IOB1, BIO or BIOES)."""
    name, _ = _scheme(scheme)
    tags = ["O"] * length
    previous_end, previous_kind = None, None
    for start, end, kind in sorted(spans):
        if name == "BIOES" and end - start == 1:
            tags[start] = f"S-{kind}"
        else:
            for t in range(start, end):
                tags[t] = f"I-{kind}"
            if name == "BIOES":
                tags[start], tags[end - 1] = f"B-{kind}", f"E-{kind}"
            elif name == "BIO" or (previous_end == start and previous_kind == kind):
                tags[start] = f"B-{kind}"
        previous_end, previous_kind = end, kind
    return tags


def convert_tags(tags, scheme):
    """One sentence's entity tags (any scheme) rewritten in `scheme`.

    Example:

    >>> convert_tags(["B-PER", "I-PER", "O", "B-LOC"], "BIOES")
    ['B-PER', 'E-PER', 'O', 'S-LOC']
    """
    return from_spans(to_spans(tags), len(tags), scheme)
