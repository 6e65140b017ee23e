"""Forms a codemod cannot rewrite safely: a star import and a dynamic import."""

import importlib

from sglang.srt.sampling.sampling_observer import *  # noqa: F403

try:
    from sglang.srt.sampling.sampling_observer import DeviceAuxiliaryOutput as Device
except ImportError:
    Device = None


def load_contract() -> object:
    """Returns the old contract module, looked up by name at run time."""
    return importlib.import_module("sglang.srt.sampling.sampling_observer")
