"""A prefix cache written against SGLang 0.5.19's ``BasePrefixCache``, as cache plugins are.

SGLang builds it (``register_radix_cache_backend`` factories) and calls its methods; a
release whose base gained an abstract method refuses to build it at all.
"""

from __future__ import annotations

from typing import Any

from sglang.srt.mem_cache.base_prefix_cache import BasePrefixCache


class AuditedPrefixCache(BasePrefixCache):
    """Breaks on 0.5.23: ``BasePrefixCache`` gained the abstract ``checkpoint``, so Python
    refuses to instantiate this class (``TypeError: Can't instantiate abstract class``)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def reset(self) -> None:
        self._count("reset")

    def match_prefix(self, *args: Any, **kwargs: Any) -> Any:
        self._count("match_prefix")

    def cache_finished_req(self, *args: Any, **kwargs: Any) -> None:
        self._count("cache_finished_req")

    def cache_unfinished_req(self, *args: Any, **kwargs: Any) -> None:
        self._count("cache_unfinished_req")

    def evict(self, *args: Any, **kwargs: Any) -> Any:
        self._count("evict")

    def inc_lock_ref(self, *args: Any, **kwargs: Any) -> Any:
        self._count("inc_lock_ref")

    def dec_lock_ref(self, *args: Any, **kwargs: Any) -> Any:
        self._count("dec_lock_ref")
