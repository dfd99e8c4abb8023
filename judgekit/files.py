"""The boundary with the disk: read YAML / JSON / JSONL / CSV records, validate them into frozen
models, and write files atomically. Every load error names the file and the line or field.

Each format has one reader here, and every file judgekit reads goes through it. A reader refuses
what would otherwise be read silently wrong or crash later: a key written twice in one mapping
(or a CSV column named twice: the last one would win), a lone UTF-16 surrogate (which no UTF-8
file, cache key or report can hold), and nesting too deep to read.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from judgekit.errors import InputError, Problem

RECORD_SUFFIXES = (".jsonl", ".yaml", ".yml", ".csv")


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


def read_text(path: Path, hint: str = "") -> str:
    """A file's UTF-8 text, or an InputError naming the file (and `hint`, how to fix it)."""
    try:
        return path.read_text(encoding="utf-8-sig")  # a byte-order mark (Excel's CSVs) is not part of the text
    except (OSError, UnicodeDecodeError) as error:
        raise InputError.one(path, "", f"cannot be read ({error}){'; ' + hint if hint else ''}") from None


_SURROGATE = re.compile("[\ud800-\udfff]")
# In text decoded from UTF-8 only an escape can stand for one: a high half with no low half after
# it, or a low half with no high half before it.
_LONE_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
                          r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
SURROGATE_FIX = ("holds a lone surrogate (half of a UTF-16 pair), which no UTF-8 file can store; write the whole "
                 "character (both halves of the pair) or remove it")


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


def _surrogate_at(value: Any, path: str = "") -> str | None:
    """Where in parsed JSON a lone surrogate is (`output`, `tags[1]`), or None; a key names its mapping."""
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
    objects: list[bool | None] = []  # per open bracket: has this object shown `key` yet (None: an array)
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
        elif (token == ":" and key is not None and last is not None and objects and objects[-1] is not None
              and json.loads(last.group()) == key):
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
        data = json.loads(text, object_pairs_hook=_unique_keys)
        lone = _LONE_ESCAPE.search(text) if "\\u" in text else None
        field = _surrogate_at(data) if lone is not None else None
    except json.JSONDecodeError as error:
        raise InputError.one(source, location or f"line {error.lineno}", f"is not valid JSON: {error.msg}") from None
    except _DuplicateKey as error:
        where = location or f"line {_scan(text, error.key)[0]}"
        raise InputError.one(source, where, f"has the key {error.key!r} twice; keep one (a reader would silently "
                             "take the last)") from None
    except RecursionError:
        line, depth = _scan(text)
        raise InputError.one(source, location or f"line {line}", f"is nested {depth} levels deep, deeper than "
                             "judgekit reads; flatten it") from None
    if lone is not None and field is not None:
        raise InputError.one(source, location or f"line {_line(text, lone.start())}", f"{field or 'a key'}: "
                             f"{SURROGATE_FIX}")
    return data


@functools.cache
def _yaml_loader() -> type:
    """PyYAML's safe loader, refusing a key written twice in one mapping and a lone surrogate."""
    import yaml

    class Refused(yaml.MarkedYAMLError):
        pass

    class Loader(yaml.SafeLoader):
        refused = Refused

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            first: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # a merged mapping's keys may be overridden: that is what `<<` is for
                key = self.construct_object(key_node, deep=deep)
                if key in first:
                    raise Refused(problem=f"has the key {key!r} twice (first at line {first[key].line + 1}); "
                                          "keep one (a reader would silently take the last)",
                                  problem_mark=key_node.start_mark)
                first[key] = key_node.start_mark
                if isinstance(value_node, yaml.ScalarNode) and _SURROGATE.search(value_node.value):
                    raise Refused(problem=f"{key}: {SURROGATE_FIX}", problem_mark=value_node.start_mark)
            return super().construct_mapping(node, deep)

        def construct_scalar(self, node: Any) -> Any:
            value = super().construct_scalar(node)
            if isinstance(value, str) and _SURROGATE.search(value):
                raise Refused(problem=f"a value {SURROGATE_FIX}", problem_mark=node.start_mark)
            return value

    return Loader


def read_yaml(path: Path) -> Any:
    """A YAML file's data (safe tags only), or an InputError naming the file and the line."""
    import yaml

    text, loader_class = read_text(path), _yaml_loader()
    loader = None
    try:
        loader = loader_class(text)  # checks the characters first
        return loader.get_single_data()
    except loader_class.refused as error:
        raise InputError.one(path, f"line {error.problem_mark.line + 1}", error.problem) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise InputError.one(path, where, f"is not valid YAML: {problem}") from None
    except RecursionError:
        raise InputError.one(path, f"line {loader.line + 1}" if loader else "", "is nested too deeply to read; "
                             "flatten it") from None
    finally:
        if loader is not None:
            loader.dispose()


def iter_records(path: Path) -> Iterator[tuple[str, Any]]:
    """Yield `(location, record)` pairs from a JSONL, YAML (a list) or CSV file.

    A record that cannot be read (a JSON Lines line that does not parse, a CSV row with too many
    cells) comes as a `Problem` in place of the record, so the caller lists it beside the other
    records' problems. CSV cells stay strings, and an empty cell is None; the caller's model
    decides what they mean. A file that cannot be read at all is an InputError.
    """
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        # Records end at "\n" only: str.splitlines() would also split inside a string at U+2028 or U+0085.
        for number, line in enumerate(read_text(path).split("\n"), start=1):
            if not line.strip():
                continue
            try:
                yield f"line {number}", parse_json(line, path, f"line {number}")
            except InputError as error:
                yield f"line {number}", error.problems[0]
    elif suffix in (".yaml", ".yml"):
        data = read_yaml(path)
        if isinstance(data, dict) and "examples" in data:
            data = data["examples"]
        if not isinstance(data, list):
            raise InputError.one(path, "", "must hold a list of records (or a mapping with an 'examples' list)")
        for index, record in enumerate(data):
            yield f"[{index}]", record
    elif suffix == ".csv":
        for number, row in enumerate(read_csv(path)[1], start=2):
            if None in row:
                yield f"line {number}", Problem(str(path), f"line {number}", "has more cells than the header has "
                                                "columns")
                continue
            yield f"line {number}", {k: (None if v == "" else v) for k, v in row.items()}
    else:
        raise InputError.one(path, "", f"unsupported file type {suffix!r}; use one of {', '.join(RECORD_SUFFIXES)}")


def read_csv(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """A CSV file's columns and its rows as `{column: cell}` (cells as text; the cells of a row
    longer than the header under the key None). A column named twice is an InputError."""
    csv.field_size_limit(1 << 30)  # a long reply is one cell, not an error
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            columns = list(reader.fieldnames or [])
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise InputError.one(path, "", f"cannot be read as CSV ({error})") from None
    seen: set[str] = set()
    for column in columns:
        if column in seen:
            raise InputError.one(path, "line 1", f"has the column {column!r} twice; rename or remove one (a reader "
                                 "would silently keep the last)")
        seen.add(column)
    return columns, rows


def parse_bool(value: Any) -> Any:
    """Read a CSV boolean cell; leave anything else for the model to reject."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "pass", "passed", "yes", "1"):
            return True
        if lowered in ("false", "fail", "failed", "no", "0"):
            return False
    return value


def write_atomic(path: Path, text: str) -> None:
    """Write a whole file or nothing: a killed process never leaves half a file behind. No known
    secret (an API key in the environment, a password of an endpoint) is ever written."""
    from judgekit.secrets import redact_known

    text = redact_known(text)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise InputError.one(path, "", f"cannot be written ({error.strerror or error}); choose a writable place") \
            from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is as readable as any file written
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise InputError.one(path, "", f"cannot be written ({error.strerror or error}); choose a writable place") \
            from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class locked:
    """An exclusive lock on a file beside `path` (`.NAME.lock`), for writers that must take turns:
    each reads what the last one left. Blocks until the lock is free.

    >>> import tempfile, pathlib
    >>> with locked(pathlib.Path(tempfile.mkdtemp()) / "report.json"):
    ...     pass
    """

    def __init__(self, path: Path) -> None:
        self.lock = path.with_name(f".{path.name}.lock")

    def __enter__(self) -> None:
        import fcntl

        try:
            self.lock.parent.mkdir(parents=True, exist_ok=True)
            self.handle = open(self.lock, "a")
        except OSError as error:
            raise InputError.one(self.lock.parent, "", f"cannot be written ({error.strerror or error}); "
                                 "choose a writable place") from None
        fcntl.flock(self.handle, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        import fcntl

        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()
