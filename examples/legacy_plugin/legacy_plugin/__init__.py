"""A plugin written against SGLang before 0.5.20: it imports moved names in several forms.

``auxcheck migrate --diff examples/legacy_plugin`` shows the rewrite; the star import
in ``observer.py`` is reported (AUX502) for a human to fix.
"""

from sglang.srt.sampling.sampling_observer import CommittedTokens, DeviceAuxiliaryOutput

__all__ = ["CommittedTokens", "DeviceAuxiliaryOutput"]
