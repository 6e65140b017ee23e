"""Start-up of auxcheck's CPU SGLang environment, run by ``_auxcheck_sglang_cpu.pth``.

Third-party stand-ins only; SGLang's own code is never changed.

- ``SGLANG_USE_CPU_ENGINE=1`` unless set: SGLang's CPU engine (without it ``--device cpu``
  imports vllm and fails).
- torchvision: PyPI's Linux wheel is linked against CUDA torch, so its compiled operators do not
  load beside the CPU torch, and its meta registrations then refer to operators that do not
  exist. The two operator schemas they need (no kernels) are defined before its first import.
- triton (only where none is installed): the real wheel is 1 GB and needs a GPU. SGLang ships a
  triton mock for Apple Silicon (``sglang/_platform_stubs.py``); it is installed on the first
  ``import triton``, with its platform checks answered as on Apple Silicon, and the torch
  patches it makes for Apple's GPU undone.

Both hooks act on the first import of their package: an interpreter that never imports them
pays nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

os.environ.setdefault("SGLANG_USE_CPU_ENGINE", "1")

_TORCHVISION_SCHEMAS = {
    "torchvision::nms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "torchvision::qnms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}


class _TorchvisionOperators(importlib.abc.MetaPathFinder):
    """Defines torchvision's operator schemas just before torchvision is first imported."""

    done = False  # the finder stays on sys.meta_path: importlib iterates that very list

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torchvision" or self.done:
            return None
        self.done = True
        import torch

        for name, schema in _TORCHVISION_SCHEMAS.items():
            try:
                torch.library.define(name, schema)
            except RuntimeError:  # already defined (a real torchvision build loaded them)
                pass
        return None


class _Loaded(importlib.abc.Loader):
    """Hands importlib a module that already exists."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.module

    def exec_module(self, module: ModuleType) -> None:
        return None


class _TritonMock(importlib.abc.MetaPathFinder):
    """Installs SGLang's own triton mock on the first ``import triton`` when no triton exists."""

    done = False

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "triton" or self.done:
            return None
        self.done = True
        if importlib.machinery.PathFinder.find_spec("triton") is not None:
            return None  # a real triton: use it
        sglang = importlib.machinery.PathFinder.find_spec("sglang")
        if sglang is None or not sglang.submodule_search_locations:
            return None
        stubs = os.path.join(next(iter(sglang.submodule_search_locations)), "_platform_stubs.py")
        spec = importlib.util.spec_from_file_location("_auxcheck_sglang_platform_stubs", stubs)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _install_as_on_apple_silicon(module)
        triton = sys.modules["triton"]
        # importlib prefers the spec of a module already in sys.modules: without a loader of
        # its own the mock would be replaced by an empty namespace package
        triton.__spec__ = importlib.util.spec_from_loader("triton", _Loaded(triton),
                                                          is_package=True)
        return triton.__spec__


def _install_as_on_apple_silicon(stubs: Any) -> None:
    """Runs SGLang's ``install_platform_stubs`` as on Apple Silicon, then undoes its torch patches."""
    import platform
    from unittest import mock

    import torch

    find_spec = importlib.util.find_spec
    tensor_to, tensor_copy = torch.Tensor.to, torch.Tensor.copy_
    mps_names = set(vars(torch.mps))
    with mock.patch.object(sys, "platform", "darwin"), \
            mock.patch.object(platform, "machine", lambda: "arm64"), \
            mock.patch.object(torch.backends.mps, "is_available", lambda: True), \
            mock.patch.object(importlib.util, "find_spec",
                              lambda name, *a: None if name == "triton" else find_spec(name, *a)):
        stubs.install_platform_stubs()
    torch.Tensor.to, torch.Tensor.copy_ = tensor_to, tensor_copy  # type: ignore[method-assign]
    for name in set(vars(torch.mps)) - mps_names:
        delattr(torch.mps, name)


sys.meta_path.insert(0, _TorchvisionOperators())
sys.meta_path.insert(0, _TritonMock())
