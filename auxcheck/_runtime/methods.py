"""The shape checks of a plugin's methods: present, callable, and callable as SGLang calls them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auxcheck._core.plugin_calls import MISSING, announce, arity_problem, kind_name, lookup
from auxcheck._core.report import Finding

__all__ = ["method_findings"]


def method_findings(
    obj: Any, name: str, params: Sequence[str], *, missing: str, arity: str,
    keywords: Sequence[str] = (),
) -> tuple[Any, list[Finding]]:
    """Returns the bound method ``obj.name`` (or None) and the findings about its shape."""
    shown = [*params, *(f"{k}=..." for k in keywords)]
    call = f"{name}({', '.join(shown)})"
    announce(missing, "looking up `" + name + "` on {}", obj)
    found = lookup(obj, name)
    if found.error is not None:
        return None, [Finding.of(missing, f"looking up `{name}` raised "
                                 f"{kind_name(found.error)}", f"expected a callable {call}",
                                 obj, detail=found.detail)]
    if found.value is MISSING or not callable(found.value):
        seen = "no attribute" if found.value is MISSING else f"a {kind_name(found.value)}"
        return None, [Finding.of(missing, f"`{name}` is {seen}", f"expected a callable {call}",
                                 obj)]
    problem = arity_problem(found.value, params, keywords)
    if problem is not None:
        return None, [Finding.of(arity, f"`{name}` cannot be called as {call}: {problem}",
                                 "SGLang passes the arguments positionally", obj)]
    return found.value, []
