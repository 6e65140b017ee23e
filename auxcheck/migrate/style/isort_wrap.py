"""How isort wraps a statement too long for its line (``wrap.py``, ``wrap_modes.py``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from auxcheck.migrate.style.model import ImportStyle, WrapMode

__all__ = ["IsortWriter", "with_comments"]


def with_comments(comments: Sequence[str], text: str) -> str:
    """isort's ``comments.add_to_line`` with its default ``  #`` prefix."""
    if not comments:
        return text
    joined = "; ".join(dict.fromkeys(comments))
    base, hashmark, _ = text.partition("#")
    base = base.rstrip() if hashmark else text
    return f"{base}  # {joined}" if joined else f"{base}  #"


class IsortWriter:
    """isort's wrapping (``wrap.py`` and ``wrap_modes.py``) at one line length."""

    def __init__(self, style: ImportStyle, width: int) -> None:
        self.style = style
        self.width = width

    def grouped(self, start: str, names: list[str], comments: list[str], trailing_comma: bool,
                cut: bool) -> str:
        """``_build_grouped_from_imports``: the plain members of one statement."""
        if not names:
            return ""
        style, width = self.style, self.width
        text = with_comments(comments, start + ", ".join(names))
        too_long = len(text) > width
        multiline = ((style.force_grid_wrap and len(names) >= style.force_grid_wrap)
                     or (too_long and len(names) > 1)
                     or (too_long and style.wrap not in ("grid", "vertical")))
        if style.split_on_trailing_comma and not cut and (
                trailing_comma or (style.trailing_comma and multiline)):
            return self.statement(start, names, comments, explode=True)
        if multiline:
            wrapped = self.statement(start, names, comments, style.wrap)
            if style.wrap == "grid" and max(map(len, wrapped.split("\n"))) > width:
                wrapped = self.statement(start, names, comments, "vertical-grid")
            return wrapped
        return self.line(text) if too_long else text

    def statement(self, start: str, names: list[str], comments: list[str],
                  mode: WrapMode = "vertical-hanging-indent", *, explode: bool = False) -> str:
        """``wrap.import_statement``: the members wrapped in one mode."""
        width, comma = (1, True) if explode else (self.width, self.style.trailing_comma)
        formatter = _FORMATTERS["vertical-hanging-indent" if explode else mode]
        text = formatter(_Wrap(start, list(names), " " * (len(start) + 1), self.style.indent,
                               width, list(comments), comma))
        return text if "\n" in text else self.line(text)

    def line(self, content: str) -> str:
        """``wrap.line``: one too-long statement broken at ``import``, ``.`` or ``as``."""
        style, width = self.style, self.width
        if len(content) <= width:
            return content
        code, hashmark, comment = content.partition("#")
        note = comment if hashmark else None
        vertical = style.wrap in ("vertical-hanging-indent", "vertical-grid-grouped")
        if code.rstrip().endswith("*"):
            if style.use_parentheses or vertical:
                return content
            prefix, keyword, _ = code.rstrip().rsplit(" ", 2)
            suffix = f"  #{note}" if note else ""
            return f"{prefix} {keyword} \\\n{style.indent}*{suffix}"
        for splitter in ("import ", "cimport ", ".", "as "):
            pattern = r"\b" + re.escape(splitter) + r"\b"
            if re.search(pattern, code) and not code.strip().startswith(splitter):
                return self._split(content, code, note, splitter, pattern, vertical)
        return content

    def _split(self, content: str, code: str, note: str | None, splitter: str, pattern: str,
               vertical: bool) -> str:
        style = self.style
        parts = re.split(pattern, code)
        hoist = bool(note) and ((style.use_parentheses and "noqa" in (note or ""))
                                or (vertical and not style.use_parentheses))
        if note and not hoist:
            comma = ("," if style.trailing_comma and style.use_parentheses
                     and not code.rstrip().endswith(",") else "")
            parts[-1] = f"{parts[-1].strip()}{comma}  #{note}"
        rest: list[str] = []
        while len(content) + 2 > self.width and parts:
            rest.append(parts.pop())
            content = splitter.join(parts)
        if not content:
            content = rest.pop()
        tail = self.line(style.indent + splitter.join(rest).lstrip())
        if not (style.use_parentheses or vertical):
            return f"{content}{splitter}\\\n{tail}"
        if splitter == "as ":
            return f"{content}{splitter}{tail.lstrip()}"
        comma = "," if style.trailing_comma and not note else ""
        opening = ""
        if hoist:
            opening, tail = f"  #{note}", tail.rstrip()
            comma = "," if style.trailing_comma else ""
        lines = f"{content}{splitter}({opening}\n{tail}{comma}{chr(10) if vertical else ''})"
        last = lines.split("\n")
        if "  #" in last[-1] and last[-1].endswith(")"):
            code_part, after = last[-1].split("  #", 1)
            last[-1] = f"{code_part})  #{after[:-1]}"
        return "\n".join(last)


@dataclass(slots=True)
class _Wrap:
    """The arguments isort passes to every wrap mode."""

    start: str
    names: list[str]
    white_space: str
    indent: str
    width: int
    comments: list[str]
    trailing_comma: bool


def _grid(w: _Wrap) -> str:
    if not w.names:
        return ""
    text = w.start + "(" + w.names.pop(0)
    while w.names:
        name = w.names.pop(0)
        candidate = with_comments(w.comments, f"{text}, {name}")
        if len(candidate.split("\n")[-1]) + 1 > w.width:
            lines = [w.white_space + name.split(" ")[0]]
            for part in name.split(" ")[1:]:
                longer = f"{lines[-1]} {part}"
                if len(longer) + 1 > w.width:
                    lines.append(w.white_space + part)
                else:
                    lines[-1] = longer
            text = with_comments(w.comments, f"{text},") + "\n" + "\n".join(lines)
            w.comments = []
        else:
            text += ", " + name
    return text + ("," if w.trailing_comma else "") + ")"


def _vertical(w: _Wrap) -> str:
    if not w.names:
        return ""
    first = with_comments(w.comments, w.names.pop(0) + ",") + "\n" + w.white_space
    rest = (",\n" + w.white_space).join(w.names)
    return f"{w.start}({first}{rest}{',' if w.trailing_comma else ''})"


def _hanging_end(line: str) -> str:
    return (line if line.endswith(" ") else line + " ") + "\\"


def _hanging_indent(w: _Wrap) -> str:
    if not w.names:
        return ""
    limit = w.width - 3
    name = w.names.pop(0)
    text = w.start + name
    if len(text) > limit:
        text = _hanging_end(w.start) + "\n" + w.indent + name
    while w.names:
        name = w.names.pop(0)
        longer = f"{text}, {name}"
        if len(longer.split("\n")[-1]) > limit:
            longer = _hanging_end(text + ",") + "\n" + w.indent + name
        text = longer
    if w.comments:
        commented = with_comments(w.comments, text)
        if len(commented.split("\n")[-1]) <= limit + 2:
            return commented
        joined = "; ".join(dict.fromkeys(w.comments))
        return _hanging_end(text) + "\n" + f"{w.indent}# {joined}"
    return text


def _vertical_hanging_indent(w: _Wrap) -> str:
    comment = with_comments(w.comments, "")
    names = (",\n" + w.indent).join(w.names)
    comma = "," if w.trailing_comma else ""
    return f"{w.start}({comment}\n{w.indent}{names}{comma}\n)"


def _vertical_grid_common(w: _Wrap, closing_on_line: bool) -> str:
    if not w.names:
        return ""
    text = w.start + with_comments(w.comments, "(") + "\n" + w.indent + w.names.pop(0)
    while w.names:
        name = w.names.pop(0)
        longer = f"{text}, {name}"
        length = len(longer.rsplit("\n", 1)[-1])
        if w.names or w.trailing_comma:
            length += 1
        if not w.names and closing_on_line:
            length += 1
        text = f"{text},\n{w.indent}{name}" if length > w.width else longer
    return text + ("," if w.trailing_comma else "")


def _vertical_grid(w: _Wrap) -> str:
    return _vertical_grid_common(w, True) + ")"


def _vertical_grid_grouped(w: _Wrap) -> str:
    return _vertical_grid_common(w, False) + "\n)"


_FORMATTERS: dict[str, Callable[[_Wrap], str]] = {
    "grid": _grid, "vertical": _vertical, "hanging-indent": _hanging_indent,
    "vertical-hanging-indent": _vertical_hanging_indent, "vertical-grid": _vertical_grid,
    "vertical-grid-grouped": _vertical_grid_grouped,
}
