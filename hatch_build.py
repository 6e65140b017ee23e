"""Hatchling's metadata hook: the package's long description is README.md with absolute links.

README.md links the docs relatively (``docs/check.md``): GitHub resolves those links, and
``tests/test_docs.py`` checks that each one does. A package index shows the README with no
repository beside it, so the wheel and the sdist get the README with each relative link target
made ``{Source}/blob/v{version}/{path}``: ``Source`` from ``[project.urls]`` and the version
from ``[project]`` in pyproject.toml, so the links name the release's own tag. Links inside
fenced blocks and code spans are text, not links, and stay as they are.
"""

from __future__ import annotations

import posixpath
import re
from functools import partial
from pathlib import Path
from typing import Any

from hatchling.metadata.plugin.interface import MetadataHookInterface

README = "README.md"

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
"""A line opening or closing a fenced block (CommonMark: up to three spaces of indent)."""

LINK_OR_CODE = re.compile(
    r"(?P<code>(?P<ticks>`+).+?(?<!`)(?P=ticks)(?!`))"
    r"|\]\((?P<target>[^)\s]+)(?P<title>\s+\"[^\"]*\")?\)")
"""A code span (kept as it is), or the ``](target "title")`` that ends an inline link."""

KEPT = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|#)")
"""Targets that are not relative paths: a URL with a scheme (https:, mailto:), an in-page
anchor."""


def _absolute(match: re.Match[str], *, base: str) -> str:
    target = match["target"]
    if match["code"] or KEPT.match(target):
        return match[0]
    path, hashed, anchor = target.partition("#")
    normalized = posixpath.normpath(path)
    if normalized.startswith(("../", "/")) or normalized == "..":
        raise ValueError(f"{README} links {target!r}, outside the repository; expected a path "
                         "inside it (or a URL): link the file by a path from the README, or "
                         "by its URL")
    return f"]({base}/{normalized}{hashed}{anchor}{match['title'] or ''})"


def absolute_links(text: str, base: str) -> str:
    """Returns the Markdown ``text`` with each relative link target made ``base/target``."""
    lines, fence = [], ""
    for line in text.splitlines(keepends=True):
        found = FENCE.match(line)
        if fence:
            closes = found is not None and found[1][0] == fence[0] and len(found[1]) >= len(fence)
            if closes and not line.strip().strip(fence[0]):
                fence = ""
        elif found is not None:
            fence = found[1]
        else:
            line = LINK_OR_CODE.sub(partial(_absolute, base=base), line)
        lines.append(line)
    return "".join(lines)


class AbsoluteReadmeHook(MetadataHookInterface):
    """Sets ``readme``: README.md, as Markdown, with its relative links made absolute."""

    def update(self, metadata: dict[str, Any]) -> None:
        """Sets ``metadata["readme"]`` from the README and ``[project.urls] Source``."""
        source = metadata.get("urls", {}).get("Source")
        if not isinstance(source, str) or not source:
            raise ValueError("pyproject.toml's [project.urls] has no Source; expected the "
                             "repository's URL, which the README's relative links are made "
                             "absolute against: add Source = \"https://...\" there")
        base = f"{source.rstrip('/')}/blob/v{metadata['version']}"
        text = (Path(self.root) / README).read_text(encoding="utf-8")
        metadata["readme"] = {"content-type": "text/markdown",
                              "text": absolute_links(text, base)}
