"""Text from outside made safe to print: on a terminal line, or in a GitHub workflow command.

A file name, an exception's message or what plugin code printed is chosen by whoever wrote
the plugin (or the pull request). Printed as it is, a newline in it starts a line that reads
like one of auxcheck's own findings, an escape sequence clears the screen, and in CI a
``::error`` at a line's start is taken by GitHub as a workflow command. Every renderer passes
such text through these functions (standard library only).
"""

from __future__ import annotations

import re

__all__ = ["github_command", "one_line", "printable"]

_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                          "\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""Control characters (newline and tab apart), bidirectional overrides and lone surrogates."""

_LINE_BREAKING = re.compile("[\n" + _UNPRINTABLE.pattern[1:])
"""What :data:`_UNPRINTABLE` matches, and newlines."""


def _escaped(found: re.Match[str]) -> str:
    return ascii(found.group())[1:-1]


def printable(text: str) -> str:
    """Returns ``text`` with what a terminal would act on, or an encoder refuse, escaped.

    Text plugin code chose (an exception's message, what it printed) may hold escape
    sequences that clear the screen or forge a line, a carriage return, or a lone
    surrogate no encoder writes: each shows as its Python escape (``\\x1b``,
    ``\\ud800``); newlines and tabs stay.
    """
    return _UNPRINTABLE.sub(_escaped, text)


def one_line(text: str) -> str:
    """Returns ``text`` as :func:`printable` does, with newlines escaped too (``\\n``): a
    path or a message shown on a line of its own can start no other line."""
    return _LINE_BREAKING.sub(_escaped, text)


_DATA = {"%": "%25", "\r": "%0D", "\n": "%0A"}
_PROPERTY = {**_DATA, ":": "%3A", ",": "%2C"}


def github_command(command: str, message: str, **properties: object) -> str:
    """Returns one GitHub Actions workflow command line: ``::command key=value,...::message``.

    The message and the property values are escaped as the Actions runner unescapes them
    (``%``, ``\\r`` and ``\\n`` everywhere, ``:`` and ``,`` in property values too), so no
    text in them can end the command, add a property or start a command of its own; the
    message's other control characters show as :func:`printable` shows them. Properties
    whose value is None are left out.
    """
    pairs = ",".join(f"{key}={_github_escaped(str(value), _PROPERTY)}"
                     for key, value in properties.items() if value is not None)
    head = f"::{command} {pairs}" if pairs else f"::{command}"
    return f"{head}::{_github_escaped(message, _DATA)}"


def _github_escaped(text: str, table: dict[str, str]) -> str:
    text = "".join(table.get(ch, ch) for ch in text)
    return printable(text)
