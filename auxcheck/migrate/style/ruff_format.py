"""How ruff gathers the ``from`` imports of one module into statements and writes them."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

from auxcheck.migrate.style.model import ImportStatement, ImportStyle, comment_text
from auxcheck.migrate.style.ordering import as_clause, member_key, statement_key

__all__ = ["RuffFrom", "ruff_format_from", "ruff_from_key", "ruff_take"]


@dataclass(slots=True)
class RuffFrom:
    """One statement ruff will write: the members it gathered and their comments."""

    level: int
    module: str
    index: int
    aliases: dict[tuple[str, str | None], list[str]] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)
    trailing_comma: bool = False


def ruff_take(style: ImportStyle, entries: dict[tuple[object, ...], RuffFrom],
               statement: ImportStatement, index: int) -> None:
    """Adds one statement to ruff's entries, as ruff's ``normalize_imports`` does."""
    level, module, names = statement.level, statement.module, statement.names
    text = comment_text(statement.comment)
    comment = [f"# {text}"] if text is not None else []
    isolate = (style.force_single_line and module not in style.single_line_exclusions
               and names[0][0] != "*")

    def entry_of(name: str, asname: str | None) -> RuffFrom:
        if name == "*":
            key: tuple[object, ...] = (level, module, "*")
        elif not isolate and (asname is None or style.combine_as):
            key = (level, module)
        else:
            key = (level, module, name, asname)
        return entries.setdefault(key, RuffFrom(level, module, index))

    # A lone member's comment belongs to the member, several members' to the statement.
    single = len(names) == 1
    if not single:
        targets = [entry_of(*alias) for alias in names] if isolate else [entry_of(*names[0])]
        for target in targets:
            target.comments.extend(comment)
    for name, asname in names:
        entry = entry_of(name, asname)
        entry.aliases.setdefault((name, asname), []).extend(comment if single else [])
        if not isolate and statement.magic_comma and style.split_on_trailing_comma:
            entry.trailing_comma = True


def _ruff_members(style: ImportStyle, entry: RuffFrom,
                  sort: bool) -> list[tuple[tuple[str, str | None], list[str]]]:
    members = list(entry.aliases.items())
    if sort:
        members.sort(key=lambda item: member_key(style, *item[0]))
    return members


def ruff_from_key(style: ImportStyle, entry: RuffFrom, sort: bool) -> tuple[object, ...]:
    """Returns the key ruff orders one gathered ``from`` statement by in its section."""
    first = _ruff_members(style, entry, sort)[0][0]
    return (*statement_key(style, kind="from", level=entry.level, module=entry.module,
                           first=first), entry.index)


def ruff_format_from(style: ImportStyle, entry: RuffFrom, indent: str, sort: bool) -> str:
    """Returns one gathered ``from`` statement as ruff writes it, wrapped when too long."""
    members = _ruff_members(style, entry, sort)
    start = f"from {'.' * entry.level}{entry.module} import "
    spelled = [f"{name}{as_clause(asname)}" for (name, asname), _ in members]
    star = any(name == "*" for (name, _), _ in members)
    if star or (not entry.trailing_comma
                and (len(members) == 1 or not any(comments for _, comments in members))
                and (not style.force_wrap_aliases or len(members) == 1
                     or all(asname is None for (_, asname), _ in members))):
        comments = entry.comments + [c for _, alias_comments in members for c in alias_comments]
        line = start + ", ".join(spelled) + "".join(f"  {c}" for c in comments)
        counted = start + ", ".join(spelled) + "".join(
            f"  {c}" for c in comments if not _is_pragma(c))
        if star or _ruff_width(style, indent + counted) <= style.line_length:
            return line
    head = start + "(" + "".join(f"  {c}" for c in entry.comments)
    body = [style.indent + text + "," + "".join(f"  {c}" for c in comments)
            for text, (_, comments) in zip(spelled, members)]
    return "\n".join([head, *body, ")"])


_PRAGMAS = ("isort", "type", "pyright", "pyrefly", "pylint", "flake8", "ruff", "ty")


def _is_pragma(comment: str) -> bool:
    """ruff's ``is_pragma_comment``: such comments do not count toward the line length."""
    if not comment.startswith("#"):
        return False
    text = comment[1:].lstrip()
    if text[:4].lower() == "noqa" or text.startswith("nosec"):
        return True
    head, colon, _ = text.partition(":")
    return bool(colon) and head in _PRAGMAS


def _ruff_width(style: ImportStyle, text: str) -> int:
    width = 0
    for char in text:
        if char == "\t":
            width += style.tab_size - width % style.tab_size
        elif unicodedata.combining(char):
            continue
        else:
            width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width
