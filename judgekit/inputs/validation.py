"""The pydantic side of the boundary: the frozen base every file model extends (unknown keys
rejected), and pydantic's errors turned into judgekit's problems, one per field.

>>> from pydantic import ValidationError
>>> class Thing(Frozen):
...     n: int
>>> try:
...     Thing.model_validate({"n": "x", "m": 1})
... except ValidationError as error:
...     [str(p) for p in problems_of(error, "thing.yaml")]
['thing.yaml:n: Input should be a valid integer, unable to parse string as an integer', 'thing.yaml:m: unknown key; remove it or check its spelling']
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from judgekit.errors import Problem


class Frozen(BaseModel):
    """A model of something read from disk: immutable, and an unknown key is an error, not a no-op."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def _int_as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


# An example's id: text; whole numbers (common in exported data) are read as their text.
ExampleId = Annotated[str, BeforeValidator(_int_as_text), Field(min_length=1)]


def problems_of(error: ValidationError, source: str, prefix: str = "") -> list[Problem]:
    """Turn a pydantic error into judgekit problems, one per field, located as `prefix.field`."""
    out = []
    for item in error.errors(include_url=False):
        loc = ".".join(str(p) for p in item["loc"] if p != "__root__")
        location = ".".join(x for x in (prefix, loc) if x)
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key; remove it or check its spelling"
        elif item["type"] == "missing":
            message = "required key is missing"
        elif item["type"] == "value_error":  # our own validators' messages, without pydantic's prefix
            message = message.removeprefix("Value error, ")
        out.append(Problem(source, location, message))
    return out


