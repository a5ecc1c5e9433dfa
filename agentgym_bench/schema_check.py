"""JSON Schema checks of the files users and attackers write (results files, a board's index, suite files), each
violation said in one line that names the field: ``field entries[0].episodes is a string, not an integer``."""

from __future__ import annotations

from typing import Any

import jsonschema

_TYPE_WORDS = {"object": "an object", "array": "an array", "string": "a string", "boolean": "a boolean",
               "integer": "an integer", "number": "a number", "null": "null"}
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number",
               type(None): "null"}
STRICT = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, instance: isinstance(instance, int) and not isinstance(instance, bool)))
"""Draft 2020-12 with ``integer`` meaning an integer as written (``2``), not a number whose value is one (``2.0``,
which JSON Schema counts as an integer): a value Python reads as a float breaks code that takes an int (a seed, a
history window), so the third audit of 2026-12-02 crashed the verifier with ``2.0`` in such fields."""


def violation(schema: dict[str, Any], instance: Any, whole: str = "the whole document",
              patterns: dict[str, str] | None = None) -> str | None:
    """The most relevant way ``instance`` breaks ``schema`` (jsonschema's best match), in one line, or ``None``.

    Args:
        schema: a Draft 2020-12 JSON Schema, read with :data:`STRICT` integers.
        instance: the parsed JSON document.
        whole: how the line names the top level (a board's "the whole file").
        patterns: what breaking a ``pattern`` means, by pattern (default: "which breaks its pattern rule ...").

    Returns:
        ``"field a.b[2] is missing"``, ``"field a is a string, not an integer"``, ``"field a is 'x y', which breaks
        its pattern rule '^\\S+$'"``; otherwise jsonschema's message after the field: ``"field a: [] should be
        non-empty"``.
    """
    error = jsonschema.exceptions.best_match(STRICT(schema).iter_errors(instance))
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    field = f"field {where}" if where else whole
    if error.validator == "required":
        missing = next(k for k in error.validator_value if k not in error.instance)
        return f"field {where + '.' if where else ''}{missing} is missing"
    if error.validator == "type":
        types = [error.validator_value] if isinstance(error.validator_value, str) else error.validator_value
        return (f"{field} is {_TYPE_WORDS[_JSON_TYPES[type(error.instance)]]}, not "
                + " or ".join(_TYPE_WORDS[t] for t in types))
    if error.validator == "pattern":
        rule = (patterns or {}).get(error.validator_value, f"breaks its pattern rule {error.validator_value!r}")
        return f"{field} is {error.instance[:100]!r}, which {rule}"
    return f"{field}: {' '.join(error.message.split())[:200]}"
