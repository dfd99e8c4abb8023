"""The pydantic side of the boundary: the frozen base every file model extends (unknown keys
rejected), and pydantic's errors turned into judgekit's problems, one per field.

>>> from pydantic import ValidationError
>>> class Thing(Frozen):
...     n: int
>>> try:
...     Thing.model_validate({"n": "x", "m": 1})
... except ValidationError as error:
...     for p in problems_of(error, "thing.yaml"):
...         print(p)
thing.yaml:n: Input should be a valid integer, unable to parse string as an integer
thing.yaml:m: unknown key; remove it or check its spelling
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from judgekit.errors import Problem


class Frozen(BaseModel):
    """A model of something read from disk: immutable, an unknown key an error, not a no-op."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def _int_as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


# An example's id: text; whole numbers (common in exported data) are read as their text.
ExampleId = Annotated[str, BeforeValidator(_int_as_text), Field(min_length=1)]


Model = TypeVar("Model", bound=BaseModel)


def shared_names(model: Model, names: dict[frozenset[str], set[str]]) -> Model:
    """`model`, stored compactly for the bulk readers: its fields in an instance dictionary that
    shares its keys with every model of its class stored so (CPython's key-sharing dictionaries:
    a table of values, not the whole dictionary pydantic builds), and holding the one set of field
    names given (pydantic's `model_fields_set`) that every model read with the same names holds,
    kept in `names`. An example weighs about a quarter of what pydantic builds, its texts apart.
    A frozen model never changes either, and `model_copy` copies both first."""
    given = model.__pydantic_fields_set__
    compact = object.__new__(type(model))
    for name, value in model.__dict__.items():
        object.__setattr__(compact, name, value)
    object.__setattr__(
        compact, "__pydantic_fields_set__", names.setdefault(frozenset(given), given)
    )
    object.__setattr__(compact, "__pydantic_extra__", model.__pydantic_extra__)
    object.__setattr__(compact, "__pydantic_private__", model.__pydantic_private__)
    return compact


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
        # our own validators' messages, without pydantic's prefix
        elif item["type"] == "value_error":
            message = message.removeprefix("Value error, ")
        out.append(Problem(source, location, message))
    return out
