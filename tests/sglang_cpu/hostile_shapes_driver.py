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

import json
import sys

from real_sglang import apply_plugin_hooks, outcome, publish_cpu_context


def main(model: str, root: str) -> None:
    import torch

    publish_cpu_context(model)
    plugin = apply_plugin_hooks(root, "hostile_plugin.hooks", "install_all",
                                ("hostile", "hostile-plugin"))

    from sglang.srt.layers.moe.topk import TopK

    forward = outcome(lambda: TopK(top_k=2, layer_id=0, renormalize=True)
                      .forward_native(torch.randn(3, 8), torch.randn(3, 4)))
    made = outcome(plugin.make)
    print(json.dumps({"ran": plugin.RAN, "forward": forward, "make": made}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
