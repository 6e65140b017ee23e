"""What every check of one ``--auxcheck`` session shares: its Hypothesis settings and implementation."""

from __future__ import annotations

import functools

from hypothesis import Phase, settings

from auxcheck import strategies as aux
from auxcheck._suite.options import AuxcheckOptions
from auxcheck.properties import Implementation, load_implementation

__all__ = [
    "FALLBACK_FRACTION",
    "describe_impl",
    "impl_fraction",
    "implementation",
    "light",
    "profile_text",
    "share_of_examples",
    "suite_settings",
]


# ---------------------------------------------------------------- settings


def suite_settings(options: AuxcheckOptions, *, your_outputs: bool = False) -> settings:
    """Returns the run's Hypothesis settings: the profile's, with no deadline.

    Each example runs plugin code and SGLang's step loop: how long that takes is no
    test's to judge (a hang is pytest-timeout's). Runs that draw ``your_outputs`` (a
    strategy fixture value, your outputs among the properties' leaves) always
    generate: a profile without the generate phase would judge none of them. The
    header says what was set aside (:func:`profile_text`).
    """
    chosen = settings(aux.resolve_profile(options.profile), deadline=None)
    if your_outputs and Phase.generate not in chosen.phases:
        chosen = settings(chosen, phases=(*chosen.phases, Phase.generate))
    return chosen


def profile_text(options: AuxcheckOptions) -> str:
    """Returns the profile's name for the header, and what of it the suite sets aside."""
    profile = aux.resolve_profile(options.profile)
    changes = ["deadline ignored" if profile.deadline is not None else "",
               "generate phase added for your outputs" if Phase.generate not in profile.phases
               else ""]
    said = ", ".join(c for c in changes if c)
    return f"{options.profile} ({said})" if said else options.profile


def light(chosen: settings, *, fraction: int = 5) -> settings:
    """Returns ``chosen`` with 1/``fraction`` of its examples (at least 5).

    Per-rule items on strategy values and the mixed-leaf properties take a fifth: the
    impl group runs every property with all of them.
    """
    return settings(chosen, max_examples=share_of_examples(chosen, fraction))


def share_of_examples(chosen: settings, fraction: int) -> int:
    """Returns 1/``fraction`` of ``chosen``'s examples, at least 5: the one rule of every share."""
    return max(5, chosen.max_examples // fraction)


# ---------------------------------------------------------------- implementation


@functools.cache
def implementation(spec: str) -> Implementation:
    """Returns the implementation ``--auxcheck-impl`` names (loaded once per process).

    ``sglang==X`` is read from that release's wheel, fetched into the user's cache once.
    """
    return load_implementation(spec)


def describe_impl(spec: str, *, short: bool = False) -> str:
    """Returns the implementation's name, with ``(auto)`` when it was chosen automatically.

    ``sglang==0.5.23`` reads as itself: the release whose wheel the contract is proved on.
    """
    name = implementation(spec).name
    return name if short or spec != "auto" else f"{name} (auto)"


FALLBACK_FRACTION = 5
"""When ``auto`` falls back to auxcheck's own reference, whose full proof is auxcheck's own
test suite, the impl items run this fraction of the profile's examples."""


def impl_fraction(options: AuxcheckOptions) -> int:
    """Returns the share of examples the impl items run: all, or a fifth for the fallback."""
    fallback = options.impl == "auto" and implementation("auto").name == "reference"
    return FALLBACK_FRACTION if fallback else 1
