"""Text parsed as judgekit reads every file: JSON and YAML that refuse what would otherwise be read
silently wrong or crash later — a key written twice in one mapping (the last one would win), a
lone UTF-16 surrogate (which no UTF-8 file, cache key or report can hold), and nesting too deep.

>>> parse_yaml("a: 1\\nb: [x, y]\\n", "x.yaml")
{'a': 1, 'b': ['x', 'y']}
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from judgekit.errors import InputError

_SURROGATE = re.compile("[\ud800-\udfff]")
# In text decoded from UTF-8 only an escape can stand for one: a high half with no low half after
# it, or a low half with no high half before it.
_LONE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
SURROGATE_FIX = (
    "holds a lone surrogate (half of a UTF-16 pair), which no UTF-8 file can store; "
    "write the whole character (both halves of the pair) or remove it"
)


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return data


# One decoder for every parse: json.loads(text, object_pairs_hook=...) builds a new one per call,
# which costs as much as parsing a short JSON Lines record.
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


def _loads(text: str) -> Any:
    """`json.loads(text, object_pairs_hook=_unique_keys)`, with the one decoder."""
    if not isinstance(text, str) or text.startswith("\ufeff"):
        # its errors, as json.loads words them
        return json.loads(text, object_pairs_hook=_unique_keys)
    return _DECODER.decode(text)


def _surrogate_at(value: Any, path: str = "") -> str | None:
    """Where in parsed JSON a lone surrogate is (`output`, `tags[1]`), or None; a key names its
    mapping."""
    if isinstance(value, str):
        return path if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if _SURROGATE.search(key):
                return path
            found = _surrogate_at(item, f"{path}.{key}" if path else key)
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _surrogate_at(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:]')


def _scan(text: str, key: str | None = None) -> tuple[int, int]:
    """`(line, depth)` of the second `key` in one object or, without a key, of the deepest nesting.
    A plain scan of valid JSON, run only to point at an error."""
    # per open bracket: has this object shown `key` yet (None: an array)
    objects: list[bool | None] = []
    deepest, at, last = 0, 0, None
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            objects.append(False if token == "{" else None)
            if len(objects) > deepest:
                deepest, at = len(objects), match.start()
        elif token in ("}", "]"):
            if objects:
                objects.pop()
        elif (
            token == ":"
            and key is not None
            and last is not None
            and objects
            and objects[-1] is not None
            and json.loads(last.group()) == key
        ):
            if objects[-1]:
                return _line(text, last.start()), deepest
            objects[-1] = True
        last = match if token.startswith('"') else None
    return _line(text, at), deepest


def _line(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def parse_json(text: str, source: str | Path, location: str = "") -> Any:
    """Parse JSON as judgekit reads every JSON file. A syntax error, a key written twice in one
    object, a lone surrogate or nesting too deep to read is an InputError at `location` (a JSON
    Lines record's line), or at the line it is on when the text is a whole file.

    >>> parse_json('{"passed": true, "passed": false}', "v.jsonl", "line 3")
    Traceback (most recent call last):
    judgekit.errors.InputError: 1 problem in the input:
      v.jsonl:line 3: has the key 'passed' twice; keep one (a reader would silently take the last)
    """
    try:
        data = _loads(text)
        lone = _LONE_ESCAPE.search(text) if "\\u" in text else None
        field = _surrogate_at(data) if lone is not None else None
    except json.JSONDecodeError as error:
        raise InputError.one(
            source, location or f"line {error.lineno}", f"is not valid JSON: {error.msg}"
        ) from None
    except _DuplicateKey as error:
        where = location or f"line {_scan(text, error.key)[0]}"
        raise InputError.one(
            source,
            where,
            f"has the key {error.key!r} twice; keep one (a reader would silently take the last)",
        ) from None
    except RecursionError:
        line, depth = _scan(text)
        raise InputError.one(
            source,
            location or f"line {line}",
            f"is nested {depth} levels deep, deeper than judgekit reads; flatten it",
        ) from None
    if lone is not None and field is not None:
        raise InputError.one(
            source,
            location or f"line {_line(text, lone.start())}",
            f"{field or 'a key'}: {SURROGATE_FIX}",
        )
    return data


class _Refused(Exception):
    """What judgekit refuses in YAML that PyYAML reads: a key written twice, a lone surrogate."""

    def __init__(self, problem: str, problem_mark: Any) -> None:  # a yaml Mark: PyYAML has no types
        super().__init__(problem)
        self.problem, self.problem_mark = problem, problem_mark


@functools.cache
def _yaml_loader() -> type:
    """PyYAML's safe loader, refusing a key written twice in one mapping and a lone surrogate."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            first: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if (
                    not isinstance(key_node, yaml.ScalarNode)
                    or key_node.tag == "tag:yaml.org,2002:merge"
                ):
                    continue  # a merged mapping's keys may be overridden: that is what `<<` is for
                key = self.construct_object(key_node, deep=deep)
                if key in first:
                    raise _Refused(
                        problem=f"has the key {key!r} twice (first at line {first[key].line + 1}); "
                        "keep one (a reader would silently take the last)",
                        problem_mark=key_node.start_mark,
                    )
                first[key] = key_node.start_mark
                if isinstance(value_node, yaml.ScalarNode) and _SURROGATE.search(value_node.value):
                    raise _Refused(
                        problem=f"{key}: {SURROGATE_FIX}", problem_mark=value_node.start_mark
                    )
            return super().construct_mapping(node, deep)

        def construct_scalar(self, node: Any) -> Any:
            value = super().construct_scalar(node)
            if isinstance(value, str) and _SURROGATE.search(value):
                raise _Refused(problem=f"a value {SURROGATE_FIX}", problem_mark=node.start_mark)
            return value

    return Loader


# What YAML aliases may add to a file's text: `&a` once and `*a` thousands of times is a small file
# that every later step (a prompt, a cache key, a report) would write out whole, many times over.
ALIAS_GROWTH_MAX = 16_000_000  # characters


def _bounded_aliases(root: Any, written: int) -> None:
    """Refuse a document whose aliases expand it by more than ALIAS_GROWTH_MAX characters, or
    that holds itself; sizes are counted once per node, so the count is as cheap as the file."""
    import yaml

    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: Any) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise _Refused(
                "an alias refers to a value that holds it; write it out", node.start_mark
            )
        open_nodes.add(key)
        if isinstance(node, yaml.ScalarNode):
            total = len(node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(child) for child in node.value)
        else:
            total = 1 + sum(size(k) + size(v) for k, v in node.value)
        open_nodes.discard(key)
        sizes[key] = total
        if total - written > ALIAS_GROWTH_MAX:
            raise _Refused(
                f"its aliases (*name) expand it to {total / 1e6:.0f} MB, more than judgekit "
                f"reads ({ALIAS_GROWTH_MAX / 1e6:.0f} MB beyond the file's own text); "
                "write the values out, or repeat fewer of them",
                node.start_mark,
            )
        return total

    size(root)


def parse_yaml(text: str, source: str | Path) -> Any:
    """Parse YAML as judgekit reads every YAML file (safe tags only, no key twice, no lone
    surrogate), or an InputError naming `source` and the line."""
    import yaml

    loader_class = _yaml_loader()
    loader = None
    try:
        loader = loader_class(text)  # checks the characters first
        node = loader.get_single_node()
        if node is None:
            return None
        _bounded_aliases(node, len(text))
        return loader.construct_document(node)
    except _Refused as error:
        raise InputError.one(source, f"line {error.problem_mark.line + 1}", error.problem) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise InputError.one(source, where, f"is not valid YAML: {problem}") from None
    except RecursionError:
        raise InputError.one(
            source,
            f"line {loader.line + 1}" if loader else "",
            "is nested too deeply to read; flatten it",
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
