"""How isort reads one module's ``from`` imports and writes them again (``output.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from auxcheck.migrate.style.isort_wrap import IsortWriter, with_comments
from auxcheck.migrate.style.model import ImportStatement, ImportStyle, comment_text
from auxcheck.migrate.style.ordering import as_clause, isort_line_key, isort_member_text, natural

__all__ = ["IsortFrom", "isort_from_lines", "isort_width"]


@dataclass(slots=True)
class IsortFrom:
    """What isort's parser gathers about one module's ``from`` imports."""

    module: str
    names: dict[str, bool] = field(default_factory=dict)  # name -> imported without alias
    aliases: dict[str, list[str]] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)
    combined_comments: list[str] = field(default_factory=list)
    alias_comments: dict[str, list[str]] = field(default_factory=dict)
    nested: dict[str, str] = field(default_factory=dict)
    trailing_comma: bool = False

    def take(self, style: ImportStyle, statement: ImportStatement) -> None:
        """Adds one statement as isort parses it written on one line."""
        members = ", ".join(f"{name}{as_clause(asname)}" for name, asname in statement.names)
        if statement.magic_comma:
            members = f"({members},)"
        text = comment_text(statement.comment)
        tail = f"  # {text}" if text is not None else ""
        self.take_text(style, f"from {self.module} import {members}{tail}")

    def take_text(self, style: ImportStyle, text: str) -> None:
        """Adds one written statement, as isort's ``parse.file_contents`` reads it."""
        first, *rest = text.split("\n")
        code, comments, nested = _isort_first_line(first)
        for line in rest:
            part, hashmark, comment = line.partition("#")
            code += "\n" + part
            if hashmark:
                comments.append(comment.strip())
                stripped = _strip_syntax(part).strip()
                if stripped and " " not in stripped.replace(" as ", ""):
                    nested[stripped] = comment.strip()
        code = _normalize_from(code)
        tokens = _strip_syntax(code).split()
        direct = tokens[1:]
        attach = self._take_aliases(style, tokens, direct, comments, nested)
        names = tokens[1:]
        for name in names:
            own = nested.get(name)
            if own is not None:
                self.nested[name] = own
                if own in comments:
                    comments.remove(own)
        if style.force_single_line and comments and attach is None and len(names) == 1:
            before = self.nested.get(names[0], "")
            self.nested[names[0]] = f"{before}{'; ' if before else ''}{'; '.join(comments)}"
            comments = []
        for name in names:
            self.names[name] = self.names.get(name, False) or name in direct
        (self.comments if attach is None else attach).extend(comments)
        if names and names[-1] and "," in code.split(names[-1])[-1]:
            self.trailing_comma = True

    def _take_aliases(self, style: ImportStyle, tokens: list[str], direct: list[str],
                      comments: list[str], nested: dict[str, str]) -> list[str] | None:
        """Reads the ``name as alias`` pairs out of ``tokens``; returns where comments go."""
        attach: list[str] | None = None
        if "as" not in tokens or tokens.index("as") + 1 >= len(tokens):
            return None
        while "as" in tokens:
            at = tokens.index("as")
            name, asname = tokens[at - 1], tokens[at + 1]
            for token in (name, asname, "as"):
                direct.remove(token)
            aliases = self.aliases.setdefault(name, [])
            if asname not in aliases:
                aliases.append(asname)
            spelled = f"{name} as {asname}"
            if spelled in nested:
                self.nested[spelled] = nested[spelled]
                if nested[spelled] in comments:
                    comments.remove(nested[spelled])
            if comments and attach is None:
                attach = (self.combined_comments if style.combine_as
                          else self.alias_comments.setdefault(name, []))
            del tokens[at:at + 2]
        return attach


def _isort_first_line(line: str) -> tuple[str, list[str], dict[str, str]]:
    """The code, comments and per-name comments of a statement's first line."""
    code, hashmark, comment = line.partition("#")
    comments = [comment.strip()] if hashmark else []
    parts = _strip_syntax(code).split()
    nested = {parts[-1]: comments[0]} if len(parts) == 2 and comments else {}
    return code, comments, nested


def _strip_syntax(text: str) -> str:
    """isort's ``strip_syntax``: the words of an import without its punctuation."""
    text = text.replace("_import", "[[i]]").replace("_cimport", "[[ci]]")
    for mark in "\\(),":
        text = text.replace(mark, " ")
    words = text.split()
    for keyword in ("from", "import", "cimport"):
        if keyword in words:
            words.remove(keyword)
    text = " ".join(words).replace("[[i]]", "_import").replace("[[ci]]", "_cimport")
    return text.replace("{ ", "{|").replace(" }", "|}")


def _normalize_from(text: str) -> str:
    """isort's ``normalize_from_import_string``."""
    text = text.replace("import(", "import (").replace("\\", " ").replace("\n", " ")
    head, *tail = text.split(" import ")
    words = head.split(" ")
    return " import ".join([words[0] + " " + "".join(words[1:]), *tail])


def isort_width(style: ImportStyle, indent: str) -> int:
    """Returns the line length isort sorts a block indented by ``indent`` with: the line
    length less the indentation."""
    return max(style.line_length - len(indent), 0)


def isort_from_lines(style: ImportStyle, state: IsortFrom, width: int,
                      sort: bool) -> list[str]:
    """The statements of one module that ``isort --check`` accepts.

    isort does not always accept its own output (a wrapped aliased member makes
    the module's next statement explode, a comment on the first line of a
    wrapped statement becomes that member's own comment), so the output is read
    back and written again until it stops changing, as repeated runs of isort do.
    """
    lines = _isort_emit(style, state, width, sort)
    for _ in range(_ISORT_ROUNDS if sort else 0):
        again = IsortFrom(state.module)
        # The next run reads the statements in the order this one leaves them in.
        for text in (sorted(lines, key=lambda line: isort_line_key(style, line))
                     if style.force_sort_within_sections else lines):
            again.take_text(style, text)
        latest = _isort_emit(style, again, width, sort)
        if latest == lines:
            break
        lines = latest
    return lines


_ISORT_ROUNDS = 8


def _isort_emit(style: ImportStyle, state: IsortFrom, width: int, sort: bool) -> list[str]:
    """The statements isort writes for one module (``output._with_from_imports``)."""
    writer = IsortWriter(style, width)
    start = f"from {state.module} import "
    names = list(state.names)
    if sort or style.force_single_line:
        names.sort(key=lambda name: natural(isort_member_text(style, name)))
    aliased = {name: [f"{name} as {a}" for a in state.aliases[name]]
               for name in names if name in state.aliases}
    nested = dict(state.nested)
    if style.combine_as:
        names = _isort_combine(state, names, aliased)
    comments, combined = list(state.comments), list(state.combined_comments)
    output: list[str] = []
    if "*" in names:  # a star import goes first, with only its own comment
        names.remove("*")
        own = nested.pop("*", None)
        output.append(writer.line(with_comments([own] if own else [], start + "*")))
    if style.force_single_line and state.module not in style.single_line_exclusions:
        return output + _isort_single_lines(writer, state, start, names, aliased, nested,
                                            comments)
    while names:
        cut = False
        while names and names[0] in aliased:
            cut = True
            name = names.pop(0)
            output += _isort_aliases(writer, start, name, aliased[name],
                                     state.alias_comments.get(name, []), nested,
                                     state.names[name])
        comments = _isort_nested_singles(writer, start, names, aliased, nested, comments,
                                         output)
        group = []
        while names and names[0] not in aliased:
            group.append(names.pop(0))
        if style.combine_as:
            comments += combined
            combined = []
        text = writer.grouped(start, group, comments, state.trailing_comma and not cut, cut)
        if text:
            output.append(text)
        comments = []
    return output


def _isort_combine(state: IsortFrom, names: list[str],
                   aliased: dict[str, list[str]]) -> list[str]:
    combined: list[str] = []
    for name in names:
        if name in aliased:
            spelled = sorted(aliased.pop(name), key=natural)
            combined += [name, *spelled] if state.names[name] else spelled
        else:
            combined.append(name)
    return combined


def _isort_nested_singles(writer: IsortWriter, start: str, names: list[str],
                          aliased: dict[str, list[str]], nested: dict[str, str],
                          comments: list[str], output: list[str]) -> list[str]:
    """Writes the names that carry their own comment, each on its own; returns the rest."""
    for name in list(names):
        comment = nested.get(name)
        if comment is None or name in aliased:
            continue
        del nested[name]
        if comment.lower().startswith("noqa") and writer.style.wrap == "hanging-indent":
            comments = [*comments, comment]
            continue
        names.remove(name)
        use, comments = ([], comments) if names else (comments, [])
        line = with_comments(use, start + name)
        line += f"{';' if use else '  #'} {comment}"
        output.append(writer.line(line))
    return comments


def _isort_aliases(writer: IsortWriter, start: str, name: str, spelled: list[str],
                   comments: list[str], nested: dict[str, str], plain: bool) -> list[str]:
    """isort's ``_build_as_imports``: a name's plain import, then its aliases."""
    comments = list(comments)
    output = []
    if plain:
        own = nested.pop(name, None)
        output.append(writer.line(with_comments(comments + ([own] if own else []),
                                                 start + name)))
        comments = []
    for text in sorted(spelled, key=natural):
        own = nested.pop(text, None)
        if comments and writer.style.use_parentheses:
            lines = writer.line(with_comments([own] if own else [], start + text)).split("\n")
            lines[0] += with_comments(comments, "")
            output.append("\n".join(lines))
        else:
            output.append(writer.line(with_comments(comments + ([own] if own else []),
                                                     start + text)))
        comments = []
    return output


def _isort_single_lines(writer: IsortWriter, state: IsortFrom, start: str, names: list[str],
                        aliased: dict[str, list[str]], nested: dict[str, str],
                        comments: list[str]) -> list[str]:
    output: list[str] = []
    for name in names:
        if name in aliased:
            output += _isort_aliases(writer, start, name, aliased[name],
                                     [*comments, *state.alias_comments.get(name, [])], nested,
                                     state.names[name])
        else:
            own = nested.pop(name, None)
            output.append(writer.line(with_comments(comments + ([own] if own else []),
                                                     start + name)))
        comments = []
    return output
