"""Partial classes still type what the stubs declare: a plugin setting a declared field to
the wrong type is caught, though undeclared fields are accepted."""

from __future__ import annotations

from sglang.srt.managers.schedule_batch import Req


def retag(req: Req) -> None:
    req.plugin_tag = "mine"
    req.rid = 3  # type: ignore[assignment]
    req.finished_len = "x"  # type: ignore[assignment]
