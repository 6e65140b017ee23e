"""Import statements written as the tool writes them: one statement, or a whole sorted block."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from auxcheck.migrate.style.isort_format import IsortFrom, isort_from_lines, isort_width
from auxcheck.migrate.style.isort_wrap import with_comments
from auxcheck.migrate.style.model import ImportStatement, ImportStyle, Kind, comment_text
from auxcheck.migrate.style.ordering import as_clause, isort_line_key, section_of, statement_key
from auxcheck.migrate.style.ruff_format import RuffFrom, ruff_format_from, ruff_from_key, ruff_take

__all__ = ["render_from", "render_import", "sort_block"]


def render_import(style: ImportStyle, module: str, asname: str | None = None, *,
                  comment: str | None = None) -> str:
    """Returns ``import <module> [as <asname>]`` with its comment; neither tool wraps it."""
    text = comment_text(comment)
    return f"import {module}{as_clause(asname)}" + (f"  # {text}" if text is not None else "")


def render_from(style: ImportStyle, level: int, module: str, names: Sequence[tuple[str, str | None]],
                *, indent: str = "", magic_comma: bool = False, sort: bool = True,
                comment: str | None = None) -> list[str]:
    """Returns the statements the tool writes for ``from <dots><module> import <names>``.

    The result is what the tool makes of that statement written on one line with
    ``comment`` after it (and a trailing comma inside parentheses when
    ``magic_comma``): one string per statement, lines joined by ``\\n`` and each
    prefixed by the block indentation ``indent``, which counts toward the line
    length.  Several statements come back under ``force_single_line``, or when
    aliased members are not combined: ruff gathers the plain members into one
    statement and gives each aliased member its own, ordered by first member;
    isort cuts the plain members at every aliased one.  The comment is kept
    where the tool keeps it: ruff after ``(`` of a wrapped statement (after the
    member when there is only one), isort as its wrap mode puts it, counted
    toward the line length except where isort itself does not count it.
    ``sort=False`` keeps the order of ``names``.
    """
    statement = ImportStatement("from", tuple(names), module, level, comment, magic_comma)
    if style.tool == "isort":
        state = IsortFrom("." * level + module)
        state.take(style, statement)
        lines = isort_from_lines(style, state, isort_width(style, indent), sort)
        if sort and style.force_sort_within_sections:
            lines.sort(key=lambda line: isort_line_key(style, line))
    else:
        entries: dict[tuple[object, ...], RuffFrom] = {}
        ruff_take(style, entries, statement, 0)
        ordered = sorted(entries.values(), key=lambda e: ruff_from_key(style, e, sort))
        lines = [ruff_format_from(style, entry, indent, sort) for entry in ordered]
    return [_indent(line, indent) for line in lines]


def _indent(text: str, indent: str) -> str:
    return "\n".join(indent + line if line else line for line in text.split("\n"))


def sort_block(style: ImportStyle, statements: Iterable[ImportStatement], *,
               indent: str = "") -> str:
    """Returns the block the tool writes for these statements, ending in a newline.

    Statements of one module are merged as the tool merges them; sections come
    in order with one blank line between them, each ordered by
    :func:`statement_key` (``lines_between_types`` blank lines between its
    ``import`` and ``from`` statements).  Every line is prefixed by ``indent``.
    """
    sections: dict[int, list[tuple[tuple[object, ...], Kind, str]]] = {}
    for section, key, kind, text in _block_statements(style, list(statements), indent):
        sections.setdefault(section, []).append((key, kind, text))
    chunks = []
    for section in sorted(sections):
        ordered = sorted(sections[section], key=lambda item: item[0])
        chunks.append(_join_kinds(style, ordered, indent))
    return "\n\n".join(chunks) + "\n" if chunks else ""


def _join_kinds(style: ImportStyle, ordered: list[tuple[tuple[object, ...], Kind, str]],
                indent: str) -> str:
    lines: list[str] = []
    for index, (_, kind, text) in enumerate(ordered):
        changed = index and kind != ordered[index - 1][1]
        if changed and not style.force_sort_within_sections:
            lines += [""] * style.lines_between_types
        lines.append(_indent(text, indent))
    return "\n".join(lines)


def _block_statements(style: ImportStyle, statements: list[ImportStatement],
                      indent: str) -> list[tuple[int, tuple[object, ...], Kind, str]]:
    if style.tool == "isort":
        return _isort_block(style, statements, indent)
    return _ruff_block(style, statements, indent)


def _ruff_block(style: ImportStyle, statements: list[ImportStatement],
                indent: str) -> list[tuple[int, tuple[object, ...], Kind, str]]:
    plain: dict[tuple[str, str | None], tuple[int, list[str]]] = {}
    entries: dict[tuple[object, ...], RuffFrom] = {}
    for index, statement in enumerate(statements):
        if statement.kind == "from":
            ruff_take(style, entries, statement, index)
            continue
        text = comment_text(statement.comment)
        for position, alias in enumerate(statement.names):
            _, comments = plain.setdefault(alias, (index, []))
            if position == 0 and text is not None:
                comments.append(f"# {text}")
    out: list[tuple[int, tuple[object, ...], Kind, str]] = []
    for (module, asname), (index, comments) in plain.items():
        key = statement_key(style, kind="import", level=0, module=module, asname=asname)
        line = f"import {module}{as_clause(asname)}" + "".join(f"  {c}" for c in comments)
        out.append((section_of(style, 0, module), (*key, index), "import", line))
    for entry in entries.values():
        out.append((section_of(style, entry.level, entry.module),
                    ruff_from_key(style, entry, True), "from",
                    ruff_format_from(style, entry, indent, True)))
    return out


def _isort_block(style: ImportStyle, statements: list[ImportStatement],
                 indent: str) -> list[tuple[int, tuple[object, ...], Kind, str]]:
    plain: dict[str, dict[str | None, list[str]]] = {}
    modules: dict[str, tuple[int, str, IsortFrom]] = {}
    for statement in statements:
        if statement.kind == "from":
            dotted = "." * statement.level + statement.module
            _, _, state = modules.setdefault(
                dotted, (statement.level, statement.module, IsortFrom(dotted)))
            state.take(style, statement)
            continue
        text = comment_text(statement.comment)
        # isort gives the comment to the first aliased module, else to the first module.
        owner = next((alias for alias in statement.names if alias[1] is not None),
                     statement.names[0])
        for module, asname in statement.names:
            comments = plain.setdefault(module, {}).setdefault(asname, [])
            if (module, asname) == owner and text is not None:
                comments[:] = [text] if asname is None else [*comments, text]
    out: list[tuple[int, tuple[object, ...], Kind, str]] = []
    for module, spellings in plain.items():
        ordered = sorted(spellings.items(), key=lambda item: item[0] is not None)
        for asname, comments in ordered:
            line = with_comments(comments, f"import {module}{as_clause(asname)}")
            out.append((section_of(style, 0, module),
                        _isort_text_key(style, "import", 0, module, asname, line),
                        "import", line))
    for level, module, state in modules.values():
        for line in isort_from_lines(style, state, isort_width(style, indent), True):
            out.append((section_of(style, level, module),
                        _isort_text_key(style, "from", level, module, None, line), "from", line))
    return out


def _isort_text_key(style: ImportStyle, kind: Kind, level: int, module: str,
                    asname: str | None, line: str) -> tuple[object, ...]:
    key = statement_key(style, kind=kind, level=level, module=module, asname=asname)
    if style.force_sort_within_sections:
        return (*isort_line_key(style, line), *key[-2:])
    return key
