"""What star imports give, followed through chains of them with a worklist, never recursion.

Python's rule for ``from M import *``: with a literal ``__all__``, exactly those names;
without one, every name M binds that does not start with an underscore, including the
names M itself got from its own star imports. A chain of star re-exports can be a
thousand modules deep, or loop; both are walked here iteratively, each module once.
Where auxcheck cannot tell what a module exports (an ``__all__`` computed at run time, a
file it cannot parse), it says so instead of answering no.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from auxcheck._releases.summaries import ModuleSummary

if TYPE_CHECKING:
    from auxcheck._releases.index import ReleaseIndex

__all__ = ["StarSource", "star_names", "star_source"]

StarKind = Literal["binds", "external", "unknown"]


@dataclass(frozen=True, slots=True)
class StarSource:
    """Where a module's star imports lead for one name.

    ``binds``: ``module`` (reached through star imports) binds the name itself, or lists a
    submodule of that name in its ``__all__``; ``external``: the chain reaches ``module``
    outside the release, which may give it; ``unknown``: ``reason`` says why auxcheck
    cannot tell.
    """

    kind: StarKind
    module: str
    reason: str = ""


def _exports(summary: ModuleSummary, name: str) -> bool | None:
    """Returns whether ``from summary's module import *`` gives ``name``, None when unknowable."""
    if summary.exports is not None:
        return name in summary.exports
    if summary.binds("__all__"):
        return None  # __all__ built at run time
    return not name.startswith("_")


def _is_sglang(module: str) -> bool:
    return module == "sglang" or module.startswith("sglang.")


def star_source(index: ReleaseIndex, module: str, name: str) -> StarSource | None:
    """Returns where ``module``'s star imports (followed to any depth) get ``name`` from.

    None when no chain gives it for certain. Star sources are walked depth first in the
    order the imports are written, each module once (a loop ends there).
    """
    start = index.summary(module)
    pending = list(reversed(start.stars)) if start is not None else []
    seen = {module}
    unsure: StarSource | None = None
    while pending:
        source = pending.pop()
        if source in seen:
            continue
        seen.add(source)
        summary = index.summary(source)
        if summary is None:
            if not _is_sglang(source):
                return StarSource("external", source, f"from {source} import *")
            continue  # a missing SGLang module: that star import fails, binding nothing
        gives = _exports(summary, name)
        if gives is None:
            unsure = unsure or StarSource(
                "unknown", source, f"{source} computes its __all__ at run time, so auxcheck "
                                   f"cannot tell whether `from {source} import *` gives {name}")
            continue
        if not gives:
            continue
        if summary.binds(name) or (summary.exports is not None
                                   and index.module_exists(f"{source}.{name}")):
            return StarSource("binds", source)
        if summary.dynamic:
            unsure = unsure or StarSource(
                "unknown", source, f"{source} defines __getattr__ or cannot be parsed, so "
                                   f"auxcheck cannot tell whether it gives {name}")
        pending.extend(reversed(summary.stars))
    return unsure


def star_names(index: ReleaseIndex, module: str) -> set[str]:
    """Returns every name ``module``'s star imports bind in it, followed to any depth.

    What auxcheck can see: a module whose exports it cannot tell adds nothing.
    """
    start = index.summary(module)
    names: set[str] = set()
    pending = [(star, False) for star in reversed(start.stars)] if start is not None else []
    seen: set[tuple[str, bool]] = set()
    while pending:
        source, public_only = item = pending.pop()
        summary = index.summary(source)
        if item in seen or summary is None:
            continue
        seen.add(item)
        if summary.exports is not None:
            names.update(n for n in summary.exports if not (public_only and n.startswith("_")))
        elif not summary.binds("__all__"):
            names.update(n for n in (*summary.defined, *summary.imported) if not n.startswith("_"))
            pending.extend((star, True) for star in reversed(summary.stars))
    return names
