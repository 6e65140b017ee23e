import logging
from collections.abc import Callable
from enum import Enum
from typing import Any, NamedTuple, TypeVar

logger: logging.Logger

_F = TypeVar("_F", bound=Callable[..., Any])

class HookSource(NamedTuple):
    plugin_name: str
    dist_name: str | None

class HookType(Enum):
    BEFORE = "before"
    AFTER = "after"
    AROUND = "around"
    REPLACE = "replace"

class HookRegistry:
    @classmethod
    def register(
        cls,
        target: str,
        hook: Callable[..., Any],
        hook_type: HookType = ...,
        *,
        source: HookSource | None = ...,
    ) -> None: ...
    @classmethod
    def apply_hooks(cls) -> None: ...
    @classmethod
    def reset(cls) -> None: ...

def plugin_hook(target: str, type: HookType = ...) -> Callable[[_F], _F]: ...
