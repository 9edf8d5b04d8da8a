"""A strict parser for the front matter of entry files: the small part of YAML entries use.

Entries should not need a YAML library, and a permissive parser would let typos through, so
this one accepts only what it can read without guessing, and every refusal names the line:

    key: plain text            key: "quoted", key: 'quoted'    key: 12, key: 1.5, key: true
    key: [a, b, "c, d"]        key: {name: K, by: 64}          (flat: scalars inside only)
    key: |  (text, newlines kept)     key: >  (text folded into one paragraph per blank line)
    key:                       key:
      nested: mapping            - list item
                                 - name: a mapping item
                                   more: keys of the same item

Plain scalars that YAML 1.1 would read as something else (yes, no, null, dates, 1e5, 0x10)
are refused: quote them. So a file this parser accepts means the same to a YAML parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from .errors import EntryError

Scalar = str | int | float | bool


class MappingNode(dict[str, Any]):
    """A mapping that remembers its own line and the line of each key."""

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.key_lines: dict[str, int] = {}

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class ListNode(list[Any]):
    """A list that remembers its own line and the line of each item."""

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.item_lines: list[int] = []

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if 0 <= index < len(self.item_lines) else self.line


@dataclass(frozen=True)
class Document:
    """An entry file split in two: the parsed front matter and the Markdown body."""

    data: MappingNode
    body: str
    body_line: int
    """The file line on which the body starts."""


@dataclass(frozen=True)
class _Line:
    number: int
    indent: int
    text: str


_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):(?:\s+(.*))?$")
_INT = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"^[-+]?[0-9]+\.[0-9]+$")
#: Plain values YAML 1.1 reads as something other than text, or as numbers this parser does not
#: accept: booleans in other spellings, null, octal/hex/binary/underscored/sexagesimal numbers,
#: floats in other forms, dates, infinities and NaN.
_SPECIAL = re.compile(
    r"^(?:yes|no|on|off|true|false|null|~)$"
    r"|^[-+]?(?:0[0-7_]+|0b[01_]+|0x[0-9a-f_]+|0o[0-7_]+|[0-9][0-9_]*_[0-9_]*)$"
    r"|^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$"
    r"|^[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:e[-+]?[0-9]+)?$"
    r"|^[-+]?[0-9]+(?:\.[0-9]*)?e[-+]?[0-9]+$"
    r"|^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"|^[-+]?\.(?:inf|nan)$",
    re.IGNORECASE,
)
_INDICATORS = "-?:,[]{}#&*!|>'\"%@`"


def split(text: str, path: str | PurePath) -> Document:
    """Parse an entry file: ``---``, the front matter, ``---``, then the Markdown body."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        raise EntryError(path, 1, "an entry file starts with a line '---' that opens its front matter")
    for end in range(1, len(lines)):
        if lines[end].rstrip() == "---":
            break
    else:
        raise EntryError(path, len(lines), "the front matter is never closed: end it with a line '---'")
    data = parse(lines[1:end], path, first_line=2)
    return Document(data, "\n".join(lines[end + 1:]), end + 2)


def parse(raw: list[str], path: str | PurePath, first_line: int = 1) -> MappingNode:
    """The mapping that the lines `raw` (the first of them on line `first_line`) spell."""
    return _Parser(raw, str(path), first_line).document()


class _Parser:
    def __init__(self, raw: list[str], path: str, first_line: int) -> None:
        self.raw = raw
        self.path = path
        self.first = first_line
        self.lines: list[_Line] = []
        for i, text in enumerate(raw):
            number = first_line + i
            stripped = text.rstrip()
            body = stripped.lstrip(" ")
            if "\t" in stripped[: len(stripped) - len(body) + 1]:
                raise self.error(number, "indent with spaces, not tabs")
            if not body or body.startswith("#"):
                continue
            self.lines.append(_Line(number, len(stripped) - len(body), body))

    def error(self, line: int, message: str) -> EntryError:
        return EntryError(self.path, line, message)

    def document(self) -> MappingNode:
        if not self.lines:
            raise self.error(self.first, "the front matter is empty; it needs at least 'id', 'title' and 'kind'")
        if self.lines[0].indent != 0:
            raise self.error(self.lines[0].number, "the front matter's keys start at the first column")
        if self.lines[0].text.startswith("-"):
            raise self.error(self.lines[0].number, "the front matter is a mapping of keys, not a list")
        value, i = self._mapping(0, 0)
        if i < len(self.lines):
            raise self.error(self.lines[i].number, "unexpected indentation")
        return value

    # ---- blocks ---------------------------------------------------------------------------

    def _block(self, i: int, parent: _Line) -> tuple[Any, int]:
        """The nested block under `parent` (a key with no value, or a bare '-')."""
        if i < len(self.lines) and self.lines[i].indent == parent.indent and not parent.text.startswith("-") \
                and (self.lines[i].text == "-" or self.lines[i].text.startswith("- ")):
            raise self.error(self.lines[i].number, "a list item at its key's indentation; indent the list under its key")
        if i >= len(self.lines) or self.lines[i].indent <= parent.indent:
            what = "key" if not parent.text.startswith("-") else "list item"
            raise self.error(parent.number, f"this {what} has no value; accepted: a scalar, [a, b], {{k: v}}, "
                                            f"| or > text, or a block indented under it")
        line = self.lines[i]
        if line.text == "-" or line.text.startswith("- "):
            return self._list(i, line.indent)
        return self._mapping(i, line.indent)

    def _mapping(self, i: int, indent: int) -> tuple[MappingNode, int]:
        node = MappingNode(self.lines[i].number)
        while i < len(self.lines) and self.lines[i].indent == indent:
            line = self.lines[i]
            if line.text == "-" or line.text.startswith("- "):
                raise self.error(line.number, "a list item where a key was expected; indent a list under its key")
            match = _KEY.match(line.text)
            if match is None:
                raise self.error(line.number, f"expected 'key: value', got {line.text!r} (keys are letters, digits, "
                                              f"'-' and '_'; a ': ' separates the value)")
            key, rest = match.group(1), (match.group(2) or "").strip()
            if key in node:
                raise self.error(line.number, f"key {key!r} appears twice (first on line {node.key_lines[key]})")
            node.key_lines[key] = line.number
            if rest in ("|", "|-", ">", ">-"):
                node[key], i = self._text(i, line, rest)
            elif rest == "" or rest.startswith("#"):
                node[key], i = self._block(i + 1, line)
            else:
                node[key] = self._inline(rest, line.number)
                i += 1
        if i < len(self.lines) and self.lines[i].indent > indent:
            raise self.error(self.lines[i].number, "unexpected indentation")
        return node, i

    def _list(self, i: int, indent: int) -> tuple[ListNode, int]:
        node = ListNode(self.lines[i].number)
        while i < len(self.lines) and self.lines[i].indent == indent:
            line = self.lines[i]
            if not (line.text == "-" or line.text.startswith("- ")):
                raise self.error(line.number, "a key where a list item ('- ...') was expected")
            node.item_lines.append(line.number)
            content = line.text[1:].strip()
            if content == "" or content.startswith("#"):
                value, i = self._block(i + 1, line)
            elif _KEY.match(content) and not content.startswith(("'", '"', "[", "{")):
                # '- key: value' opens a mapping whose keys sit two columns right of the dash
                self.lines[i] = _Line(line.number, indent + 2, content)
                value, i = self._mapping(i, indent + 2)
            else:
                value = self._inline(content, line.number)
                i += 1
            node.append(value)
        if i < len(self.lines) and self.lines[i].indent > indent:
            raise self.error(self.lines[i].number, "unexpected indentation")
        return node, i

    def _text(self, i: int, line: _Line, style: str) -> tuple[str, int]:
        """A block scalar: the raw lines indented under `line` (blank lines included)."""
        start = line.number - self.first + 1
        end = start
        while end < len(self.raw):
            text = self.raw[end].rstrip()
            if text and len(text) - len(text.lstrip(" ")) <= line.indent:
                break
            end += 1
        while end > start and not self.raw[end - 1].strip():
            end -= 1
        chunk = [t.rstrip() for t in self.raw[start:end]]
        if not chunk:
            raise self.error(line.number, f"'{style}' opens a text block, but no indented line follows")
        margin = min(len(t) - len(t.lstrip(" ")) for t in chunk if t)
        body = [t[margin:] for t in chunk]
        if style.startswith(">"):
            for k, t in enumerate(body):
                if t.startswith(" "):
                    raise self.error(self.first + start + k, "a '>' text block keeps one indentation; use '|' for "
                                                             "indented lines")
            paragraphs = "\n".join(body).split("\n\n")
            text = "\n".join(" ".join(p.split("\n")) for p in paragraphs)
        else:
            text = "\n".join(body)
        if not style.endswith("-"):
            text += "\n"
        # skip the parsed lines that belong to the block
        last = self.first + end - 1
        while i < len(self.lines) and self.lines[i].number <= last:
            i += 1
        return text, i

    # ---- inline values --------------------------------------------------------------------

    def _inline(self, text: str, number: int) -> Any:
        if text.startswith("["):
            return self._flow(text, number, "[", "]")
        if text.startswith("{"):
            return self._flow(text, number, "{", "}")
        value, rest = self._scalar(text, number, inline=False)
        if rest:
            raise self.error(number, f"unexpected text after the value: {rest!r}")
        return value

    def _flow(self, text: str, number: int, opening: str, closing: str) -> Any:
        node: Any = ListNode(number) if opening == "[" else MappingNode(number)
        rest = text[1:].lstrip()
        if rest.startswith(closing):
            rest = rest[1:]
        else:
            while True:
                if opening == "{":
                    match = re.match(r"([A-Za-z_][A-Za-z0-9_-]*):\s+", rest)
                    if match is None:
                        raise self.error(number, "a {...} mapping holds 'key: value' pairs separated by ', '")
                    key = match.group(1)
                    if key in node:
                        raise self.error(number, f"key {key!r} appears twice in one {{...}} mapping")
                    rest = rest[match.end():]
                if rest.startswith(("[", "{")):
                    raise self.error(number, "[...] and {...} values hold scalars only; write nested values as "
                                             "indented blocks")
                value, rest = self._scalar(rest, number, inline=True)
                if opening == "{":
                    node[key] = value
                    node.key_lines[key] = number
                else:
                    node.append(value)
                    node.item_lines.append(number)
                rest = rest.lstrip()
                if rest.startswith(","):
                    rest = rest[1:].lstrip()
                    continue
                if rest.startswith(closing):
                    rest = rest[1:]
                    break
                raise self.error(number, f"expected ',' or '{closing}' in {text!r}")
        rest = rest.strip()
        if rest and not rest.startswith("#"):
            raise self.error(number, f"unexpected text after '{closing}': {rest!r}")
        return node

    def _scalar(self, text: str, number: int, inline: bool) -> tuple[Scalar, str]:
        """One scalar at the start of `text`, and what follows it (a comment is dropped)."""
        if text.startswith('"'):
            out, k = [], 1
            while k < len(text) and text[k] != '"':
                if text[k] == "\\":
                    escape = text[k + 1: k + 2]
                    mapped = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}.get(escape)
                    if mapped is None:
                        raise self.error(number, f"unknown escape '\\{escape}' in a quoted string; accepted: "
                                                 f"\\\" \\\\ \\n \\t")
                    out.append(mapped)
                    k += 2
                else:
                    out.append(text[k])
                    k += 1
            if k >= len(text):
                raise self.error(number, "a string opened with \" is never closed on its line")
            return "".join(out), self._after(text[k + 1:], number)
        if text.startswith("'"):
            out, k = [], 1
            while k < len(text):
                if text[k] == "'":
                    if text[k + 1: k + 2] == "'":
                        out.append("'")
                        k += 2
                        continue
                    break
                out.append(text[k])
                k += 1
            if k >= len(text):
                raise self.error(number, "a string opened with ' is never closed on its line")
            return "".join(out), self._after(text[k + 1:], number)
        stop = len(text)
        if inline:
            ends = [k for k in (text.find(","), text.find("]"), text.find("}")) if k >= 0]
            stop = min(ends) if ends else len(text)
        comment = text.find(" #")
        if 0 <= comment < stop:
            stop = comment
        plain, rest = text[:stop].strip(), text[stop:]
        if comment == stop:
            rest = ""
        return self._plain(plain, number), rest

    def _after(self, rest: str, number: int) -> str:
        stripped = rest.strip()
        if stripped.startswith("#"):
            return ""
        return rest

    def _plain(self, text: str, number: int) -> Scalar:
        if not text:
            raise self.error(number, "an empty value; write \"\" for empty text")
        if text[0] in _INDICATORS:
            raise self.error(number, f"a plain value cannot start with {text[0]!r}: quote it ({text!r})")
        if ": " in text or text.endswith(":"):
            raise self.error(number, f"a plain value cannot contain ': ': quote it ({text!r})")
        if text in ("true", "false"):
            return text == "true"
        if _INT.match(text):
            return int(text)
        if _FLOAT.match(text):
            return float(text)
        if _SPECIAL.match(text):
            raise self.error(number, f"{text!r} would be read as a special value by YAML; quote it")
        return text
