"""Hook shapes that read one way and bind another, run in SGLang 0.5.23's real HookRegistry on CPU.

Runs inside auxcheck's CPU SGLang environment: ``python hostile_shapes_driver.py MODEL ROOT``.
The plugin package ``hostile_plugin`` under ROOT is imported and its ``install_all()`` called
inside SGLang's plugin-source context, as ``load_plugins()`` calls a plugin;
``HookRegistry.apply_hooks()`` patches SGLang's real modules; then SGLang's real
``TopK.forward_native`` calls the hooked ``select_experts``, and the plugin's ``make()``
builds its own ``TopK`` subclass. Prints one JSON object: ``ran`` (the hooks that ran, in
order), ``forward`` and ``make`` ("ok" or the error the call raised).
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from typing import Any

from real_sglang import publish_cpu_context


def outcome(call: Callable[[], Any]) -> str:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - what the real call raises is the result
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def main(model: str, root: str) -> None:
    import torch

    publish_cpu_context(model)
    from sglang.srt.plugins.hook_registry import (
        HookRegistry,
        HookSource,
        _current_plugin_source,
    )

    sys.path.insert(0, root)
    token = _current_plugin_source.set(HookSource("hostile", "hostile-plugin"))
    try:
        plugin = importlib.import_module("hostile_plugin.hooks")
        plugin.install_all()
    finally:
        _current_plugin_source.reset(token)
    HookRegistry.apply_hooks()

    from sglang.srt.layers.moe.topk import TopK

    forward = outcome(lambda: TopK(top_k=2, layer_id=0, renormalize=True)
                      .forward_native(torch.randn(3, 8), torch.randn(3, 4)))
    made = outcome(plugin.make)
    print(json.dumps({"ran": plugin.RAN, "forward": forward, "make": made}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
