"""Strict reading of user values: the one number parser every reader uses, and JSON, YAML and
CSV loading that refuses what the standard modules let through (duplicate keys, NaN and
infinity, unterminated quotes, nesting or alias expansion that exhausts the stack or memory).

Numbers written as text (CSV cells, ``--set`` values, command-line options) use ASCII digits
only: an optional sign, digits with an optional decimal point, an optional exponent
(``12``, ``-3``, ``+0.5``, ``.5``, ``5.``, ``1e3``, ``2.5E-4``); surrounding whitespace is
ignored. Python's ``int()``/``float()`` also take ``1_000``, Arabic-Indic and other Unicode
digits, ``nan`` and ``inf``: all are rejected here. Typed files (JSON, TOML, YAML) must give
numbers as numbers (a quoted ``"4"`` is an error); ``true``/``false`` are never numbers.
Every number must be finite; an integer must be integral (``4.0`` and ``1e3`` are integers,
``2.5`` is not) and fit in 64 bits. See ``docs/formats.md`` ("Numbers").
"""

from __future__ import annotations

import csv
import io
import json
import math
import numbers
import re
from collections.abc import Iterator
from typing import Any

import yaml

from .errors import InputError, quote

#: Largest magnitude of an integer value (numpy's int64, used for ids, counts and seeds).
MAX_INT = 2**63 - 1
#: Deepest nesting of lists/objects accepted in a JSON, TOML or YAML file.
MAX_DEPTH = 64
#: Most nodes that YAML aliases may add to a document by expansion (a "billion laughs" file
#: reaches billions; a cluster file reusing a defaults block a few hundred).
MAX_ALIAS_NODES = 10_000

_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class NumberError(ValueError):
    """A value that is not the number asked for; the message says what was expected in plain
    words (callers add file, line and field)."""


def describe(value: object) -> str:
    """A value as a message shows it: text quoted, JSON/YAML types in words."""
    if isinstance(value, str):
        if _FLOAT_TEXT.fullmatch(value.strip()):
            return f"{quote(value)} (text: write numbers without quotes)"
        return quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "nothing (null)"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, numbers.Real):
        x = float(value)
        if not math.isfinite(x):
            return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
        return repr(value.item() if hasattr(value, "item") else value)  # numpy: 2.5, not np...
    return repr(value)


def parse_float(text: str) -> float:
    """A finite number written as text (the grammar of the module docstring)."""
    s = text.strip()
    if not _FLOAT_TEXT.fullmatch(s):
        if s.lower().lstrip("+-") in ("nan", "inf", "infinity"):
            raise NumberError(f"expected a finite number, got {quote(s)}")
        raise NumberError(f"expected a number, got {quote(s)}")
    x = float(s)
    if not math.isfinite(x):
        raise NumberError(f"expected a finite number, got {quote(s)} (too large)")
    return x


def parse_int(text: str) -> int:
    """An integer written as text: digits, or an integral number such as ``4.0`` or ``1e3``."""
    s = text.strip()
    if _INT_TEXT.fullmatch(s) and len(s) <= 20:
        return _int_range(int(s), s)
    try:
        x = parse_float(s)
    except NumberError:
        raise NumberError(f"expected an integer, got {quote(s)}") from None
    if not x.is_integer():
        raise NumberError(f"expected an integer, got {quote(s)}")
    return _int_range(int(x), s)


def _int_range(n: int, shown: object) -> int:
    if abs(n) > MAX_INT:
        raise NumberError(f"integer {shown} is too large (the limit is 2^63 - 1)")
    return n


def check_float(value: object) -> float:
    """A finite number given as a typed value (JSON/TOML/YAML number, a numpy scalar; not a
    bool or text)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise NumberError(f"expected a number, got {describe(value)}")
    x = float(value)
    if not math.isfinite(x):
        raise NumberError(f"expected a finite number, got {describe(value)}")
    return x


def check_int(value: object) -> int:
    """An integer given as a typed value; an integral float (``4.0``) counts."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return _int_range(int(value), value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return _int_range(int(value), value)
    raise NumberError(f"expected an integer, got {describe(value)}")


def to_float(value: object, *, text: bool) -> float:
    """``value`` as a finite float: parsed if it is a string and ``text`` (CSV cells, CLI),
    else it must be a typed number."""
    return parse_float(value) if text and isinstance(value, str) else check_float(value)


def to_int(value: object, *, text: bool) -> int:
    """``value`` as an integer: parsed if it is a string and ``text``, else a typed integer."""
    return parse_int(value) if text and isinstance(value, str) else check_int(value)


def float_arg(text: str) -> float:
    """``argparse`` type for a finite number option (``--trace-start``, ``--load-scale``)."""
    return parse_float(text)


def int_arg(text: str) -> int:
    """``argparse`` type for an integer option (``--seed``, ``--max-gpus``, ``--sample``)."""
    return parse_int(text)


float_arg.__name__ = "number"  # argparse says "invalid number value: 'x'"
int_arg.__name__ = "integer"


# ---------------------------------------------------------------------------------- nesting
def check_depth(data: Any, source: str, what: str) -> None:
    """``InputError`` when lists/tables nest deeper than :data:`MAX_DEPTH` (walked without
    recursion, so the check itself cannot exhaust the stack; YAML aliases are walked where
    they are used, which their bounded expansion keeps cheap, and cannot form cycles)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= MAX_DEPTH:
            raise InputError(f"{what} nested more than {MAX_DEPTH} levels deep", source=source)
        stack.extend((c, depth + 1) for c in children)


def too_deep(source: str, what: str) -> InputError:
    """The error for a parser that ran out of stack (RecursionError)."""
    return InputError(f"{what} nested too deeply (more than {MAX_DEPTH} levels)", source=source)


# ---------------------------------------------------------------------------------- TOML
_LONG_DIGITS = re.compile(r"[0-9][0-9_]{4000,}")


def toml_value_error(e: ValueError, text: str, source: str) -> InputError:
    """The error for a ``ValueError`` that ``tomllib`` lets through instead of its decode
    error (an integer beyond Python's 4,300-digit limit)."""
    long_int = _LONG_DIGITS.search(text)
    if "digits" in str(e) and long_int is not None:
        line = text.count("\n", 0, long_int.start()) + 1
        return InputError(
            "invalid TOML: an integer of more than 4,300 digits", source=source, line=line
        )
    return InputError(f"invalid TOML: {str(e).splitlines()[0] if str(e) else e!r}", source=source)


def load_toml(text: str, source: str) -> Any:
    """Parse TOML ``text`` of file ``source``: a decode error names its line (the parser's
    "(at line N, column M)" moved into the message's place), a huge integer or deep nesting
    is one line too; the nesting depth is checked."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = re.search(r"\s*\(at line (\d+), column \d+\)", msg)
        line = int(m.group(1)) if m else None
        if m:
            msg = msg[: m.start()] + msg[m.end() :]
        raise InputError(f"invalid TOML: {msg}", source=source, line=line) from None
    except ValueError as e:  # not a TOMLDecodeError: a 5,000-digit integer
        raise toml_value_error(e, text, source) from None
    except RecursionError:
        raise too_deep(source, "TOML") from None
    check_depth(data, source, "TOML")
    return data


# ---------------------------------------------------------------------------------- JSON
class _Rejected(Exception):
    """Raised by the JSON hooks; the message says what, ``_json_problem`` finds the line."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Rejected(f"duplicate key {quote(key)}")
        out[key] = value
    return out


def _constant(name: str) -> float:
    raise _Rejected(f"{name} is not a finite number")


def _json_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise _Rejected(f"the number {text} is too large (not a finite number)")
    return x


def _json_int(text: str) -> int:
    if len(text) > 20:
        raise _Rejected(f"the integer {text[:20]}... is too large (the limit is 2^63 - 1)")
    return int(text)


_JSON_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_JSON_WORD = re.compile(r"-?[A-Za-z]+")


def _json_problem(text: str) -> tuple[str, int, str | None] | None:
    """(message, line, key) of the first duplicate key, NaN/Infinity or overflowing number in
    valid-looking JSON text (key: the object key the value belongs to): one linear scan, no
    recursion."""
    stack: list[list[Any] | None] = []  # per open object [keys seen, last key]; None: array
    i, n = 0, len(text)

    def found(message: str, at: int) -> tuple[str, int, str | None]:
        top = stack[-1] if stack else None
        return message, text.count("\n", 0, at) + 1, top[1] if top is not None else None

    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            k = j + 1
            while k < n and text[k] in " \t\r\n":
                k += 1
            top = stack[-1] if stack else None
            if k < n and text[k] == ":" and top is not None:
                try:
                    key = str(json.loads(text[i : j + 1]))
                except ValueError:
                    key = text[i + 1 : j]
                top[1] = key
                if key in top[0]:
                    return found(f"duplicate key {quote(key)}", i)
                top[0].add(key)
            i = j + 1
            continue
        if ch == "{":
            stack.append([set(), None])
        elif ch == "[":
            stack.append(None)
        elif ch in "]}":
            if stack:
                stack.pop()
        elif ch == "-" or ch.isalnum():
            word = _JSON_WORD.match(text, i)
            if word and word.group().lstrip("-") in ("NaN", "Infinity"):
                return found(f"{word.group()} is not a finite number", i)
            num = _JSON_NUMBER.match(text, i)
            if num:
                token = num.group()
                if len(token) > 20 and "." not in token and "e" not in token.lower():
                    return found("integer too large (the limit is 2^63 - 1)", i)
                if not math.isfinite(float(token)):
                    return found(f"the number {token} is too large", i)
                i = num.end()
                continue
            if word:
                i = word.end()
                continue
        i += 1
    return None


def load_json(text: str, source: str) -> Any:
    """Parse JSON strictly: one ``InputError`` naming file and line for a syntax error, a
    duplicate key, ``NaN``/``Infinity``, a number too large for a float or 64-bit integer, or
    nesting deeper than :data:`MAX_DEPTH`."""
    try:
        data = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_float=_json_float,
            parse_int=_json_int,
        )
    except json.JSONDecodeError as e:
        raise InputError(f"invalid JSON: {e.msg}", source=source, line=e.lineno) from None
    except _Rejected as e:
        found = _json_problem(text)
        message, line, key = found if found is not None else (str(e), None, None)
        raise InputError(f"invalid JSON: {message}", source=source, line=line, field=key) from None
    except RecursionError:
        raise too_deep(source, "JSON") from None
    check_depth(data, source, "JSON")
    return data


# ---------------------------------------------------------------------------------- YAML
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class StrictYamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 numbers (``16e3`` is a number; ``1_000``, ``0x10``,
    ``1:30`` and quoted numbers are text), duplicate keys refused, and aliases bounded:
    an alias to a node that contains it, or aliases expanding to more than
    :data:`MAX_ALIAS_NODES` nodes, is an error at the alias's line."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._sizes: dict[int, int] = {}  # id(node) -> nodes in its expanded subtree
        self._alias_nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            node = self.anchors.get(event.anchor)
            if node is not None:
                size = self._sizes.get(id(node))
                if size is None:
                    raise yaml.composer.ComposerError(
                        None,
                        None,
                        f"alias *{event.anchor} refers to a node that contains it "
                        "(a recursive alias)",
                        event.start_mark,
                    )
                self._alias_nodes += size
                if self._alias_nodes > MAX_ALIAS_NODES:
                    raise yaml.composer.ComposerError(
                        None,
                        None,
                        f"aliases expand to more than {MAX_ALIAS_NODES} nodes "
                        f"(at alias *{event.anchor})",
                        event.start_mark,
                    )
            return super().compose_node(parent, index)
        node = super().compose_node(parent, index)
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        self._sizes[id(node)] = 1 + sum(self._sizes.get(id(c), 1) for c in children)
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue  # ``<<: *defaults``: explicit keys may override merged ones
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:  # unhashable: SafeConstructor reports it
                    continue
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {quote(str(key))}", key_node.start_mark
                    )
        return super().construct_mapping(node, deep=deep)


StrictYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT_TAG, _FLOAT_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
StrictYamlLoader.add_implicit_resolver(_INT_TAG, re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789"))
StrictYamlLoader.add_implicit_resolver(
    _FLOAT_TAG,
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def _construct_number(loader: StrictYamlLoader, node: Any) -> int | float:
    """Plain decimal numbers only (SafeLoader would read ``010`` as octal 8)."""
    text = loader.construct_scalar(node)
    try:
        if node.tag == _INT_TAG:
            return int(text)
        low = text.lower().lstrip("+-")
        if low in (".inf", ".nan"):
            return float(text.replace(".", "", 1))
        return float(text)
    except ValueError:
        raise yaml.constructor.ConstructorError(
            None, None, f"not a number: {quote(text)}", node.start_mark
        ) from None


StrictYamlLoader.add_constructor(_INT_TAG, _construct_number)
StrictYamlLoader.add_constructor(_FLOAT_TAG, _construct_number)


def load_yaml(text: str, source: str) -> Any:
    """Parse YAML with :class:`StrictYamlLoader`: one ``InputError`` naming file and line for a
    syntax error, a duplicate key, a recursive or exploding alias, or nesting deeper than
    :data:`MAX_DEPTH`."""
    try:
        data = yaml.load(text, Loader=StrictYamlLoader)  # noqa: S506 - a SafeLoader subclass
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as e:
        raise yaml_input_error(e, source) from None
    check_depth(data, source, "YAML")
    return data


def yaml_input_error(e: BaseException, source: str) -> InputError:
    """The one-line ``InputError`` for what :class:`StrictYamlLoader` raised on ``source``: a
    YAML error (with its line), a ``RecursionError`` (nesting too deep), or a constructor's
    own ``ValueError``/``TypeError`` (e.g. a bad ``!!timestamp``)."""
    if isinstance(e, yaml.YAMLError):
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        line = mark.line + 1 if mark is not None else None
        return InputError(f"invalid YAML: {problem}", source=source, line=line)
    if isinstance(e, RecursionError):
        return too_deep(source, "YAML")
    return InputError(f"invalid YAML: {e}", source=source)


# ---------------------------------------------------------------------------------- CSV
def csv_rows(text: str, source: str) -> Iterator[tuple[int, int, list[str]]]:
    """``(first line, last line, cells)`` of every record of CSV text, read in strict mode:
    a quote left open (or a stray character after a closing quote) is an ``InputError`` naming
    the line the record starts on."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    end = 0
    while True:
        start = end + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            reason = str(e)
            if "end of data" in reason:
                reason = "a quoted field is not closed (unterminated quote)"
            raise InputError(f"malformed CSV: {reason}", source=source, line=start) from None
        end = reader.line_num
        yield start, end, row


def check_width(row: list[str], width: int, source: str, line: int) -> None:
    """``InputError`` unless a CSV record has ``width`` fields, as its header."""
    if len(row) != width:
        raise InputError(
            f"expected {width} fields (as in the header), got {len(row)}", source=source, line=line
        )
