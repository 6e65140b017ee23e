"""A stand-in for ``sgl_kernel``, SGLang's compiled kernel package, in auxcheck's CPU environment.

SGLang's CPU kernels are built from source (AMX/AVX-512) and are not on PyPI, yet SGLang's
modules import names from ``sgl_kernel`` at import time. Every name here resolves to a
function that raises NotImplementedError when called. No ``torch.ops.sgl_kernel`` operator
is registered, so SGLang finds no AMX support and its layers take their native-torch paths:
serving a Llama on the ``torch_native`` attention backend calls none of these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn


def _unavailable(name: str) -> Callable[..., NoReturn]:
    def call(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(
            f"sgl_kernel.{name} is not available in auxcheck's CPU SGLang environment (a stand-in "
            "sgl_kernel without compiled kernels); this model or option needs SGLang's real kernels")

    call.__name__ = call.__qualname__ = name
    return call


def __getattr__(name: str) -> Callable[..., NoReturn]:
    if name.startswith("__"):
        raise AttributeError(name)
    return _unavailable(name)
