"""Plugin source text the tests share: the module SGLang moved names out of, small plugin files."""

from __future__ import annotations

__all__ = ["FIXABLE", "MIGRATED", "MOVED", "MOVED_CLASSES", "NEW", "OLD", "flat_sum"]

OLD = "sglang.srt.sampling.sampling_observer"
"""The module SGLang 0.5.20 moved the contract's names out of."""

NEW = "sglang.srt.managers.auxiliary_output"
"""The module those names live in since 0.5.20."""

MOVED = ("CommittedTokens", "DeviceAuxiliaryOutput", "HostAuxiliaryOutput")
"""The names that moved from :data:`OLD` to :data:`NEW` (``SamplingObserver`` stayed)."""

MOVED_CLASSES = "".join(f"class {name}: pass\n" for name in MOVED)
"""The moved classes, as a fake SGLang module of either layout defines them."""

FIXABLE = f"from {OLD} import CommittedTokens\n"
"""A plugin file migrate rewrites: one moved name imported from the old module (AUX501)."""

MIGRATED = f"from {NEW} import CommittedTokens\n"
"""What migrate writes for :data:`FIXABLE`."""


def flat_sum(terms: int) -> str:
    """Returns a valid module: :data:`FIXABLE`, then one flat sum of ``terms`` ones."""
    return FIXABLE + "x = " + "+".join(["1"] * terms) + "\n"


CLEAN_OUTPUT = """\
class Host:
    def consume(self, batch, commits):
        return None


class Clean:
    def __init__(self):
        self.rows = torch.ones(2, 3)

    def copy_to_host(self, copy_tensor):
        copy_tensor(self.rows)
        return Host()
"""
"""A device output that keeps the contract (``Clean()``), for a module that imports torch."""
