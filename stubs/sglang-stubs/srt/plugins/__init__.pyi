import logging
from collections.abc import Callable
from typing import Any

from sglang.srt.plugins.hook_registry import HookRegistry as HookRegistry
from sglang.srt.plugins.hook_registry import HookSource as HookSource

logger: logging.Logger

PLATFORM_PLUGINS_GROUP: str
GENERAL_PLUGINS_GROUP: str

def load_plugins_by_group(
    group: str, excluded_dists: set[str] | None = ...
) -> dict[str, tuple[Callable[[], Any], str | None]]: ...
def load_plugins() -> None: ...
