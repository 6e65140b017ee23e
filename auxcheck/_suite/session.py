"""What every check of one ``--auxcheck`` session shares: its Hypothesis settings and implementation."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from hypothesis import Phase, settings

from auxcheck._properties import strategies as aux
from auxcheck._properties.implementations import Implementation, load_implementation
from auxcheck._suite.options import AuxcheckOptions

__all__ = [
    "FALLBACK_FRACTION",
    "describe_impl",
    "impl_fraction",
    "implementation",
    "light",
    "profile_text",
    "run_seed",
    "seeded",
    "share_of_examples",
    "suite_settings",
    "without_local_constants",
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


# ---------------------------------------------------------------- seed


def run_seed(options: AuxcheckOptions, *, given: str | None = None,
             inherited: int | str | None = None) -> int | str | None:
    """Returns the seed every Hypothesis run of the session draws from; None when derandomized.

    ``given`` is ``--hypothesis-seed`` (read as Hypothesis reads it: a whole number, else
    the text), ``inherited`` the seed a pytest-xdist controller handed its worker;
    without either, a fresh one. A derandomized profile draws the same examples on every
    run without a seed, and Hypothesis lets it win over ``--hypothesis-seed``.
    """
    import secrets

    if suite_settings(options).derandomize:
        return None
    if given is not None:
        try:
            return int(given)
        except ValueError:
            return given
    return inherited if inherited is not None else secrets.randbelow(2**32)


@contextlib.contextmanager
def seeded(seed: int | str | None) -> Iterator[None]:
    """Runs the block with every Hypothesis test in it drawing from ``seed`` alone (None: a
    derandomized profile's own draws).

    Exactly what ``--hypothesis-seed=seed`` does, by the same means, so that option
    re-runs an item's examples: ``hypothesis.core.global_force_seed``, which Hypothesis's
    own pytest plugin sets for that option (checked on Hypothesis 6.170). As with that
    option, a seeded test neither reads nor writes the example database, and a
    derandomized profile wins over the seed. The block also draws from the seed alone:
    see :func:`without_local_constants`.
    """
    from hypothesis import core

    _register_global_random()
    with without_local_constants():
        if seed is None:
            yield
            return
        before = core.global_force_seed
        core.global_force_seed = seed  # type: ignore[assignment]
        try:
            yield
        finally:
            core.global_force_seed = before


@contextlib.contextmanager
def without_local_constants() -> Iterator[None]:
    """Runs the block with Hypothesis drawing no numbers read from the process's own modules.

    Hypothesis mixes into its draws the constants written in every local module the process
    has imported so far (``hypothesis.internal.conjecture.providers``, 6.170). Which those
    are depends on what else ran: a re-run of one item imports fewer test modules than the
    whole run did, and drew other examples from the same seed. With the pool of local
    constants empty, a seed alone decides the examples; Hypothesis's global constants
    (boundaries, special floats and strings) are still drawn. The two private names are
    touched only where this Hypothesis has them; elsewhere the block runs as it is.
    """
    from hypothesis.internal.conjecture import providers

    empty = getattr(providers, "Constants", None)
    cache: Any = getattr(providers, "CONSTANTS_CACHE", None)
    reader = getattr(providers, "_get_local_constants", None)
    size = getattr(cache, "max_size", None)
    if empty is None or reader is None or size is None:
        yield
        return
    nothing = empty()
    providers._get_local_constants = lambda: nothing
    providers.CONSTANTS_CACHE = type(cache)(size)
    try:
        yield
    finally:
        providers._get_local_constants = reader
        providers.CONSTANTS_CACHE = cache


def _register_global_random() -> None:
    """Makes and registers Hypothesis's own global random for this thread, as its first test
    would, without the full garbage collection its ``register_random`` runs.

    ``deterministic_PRNG`` makes that random on a thread's first test and hands it to
    ``register_random``, which runs ``gc.collect()`` and ``gc.get_referrers`` to warn a user
    whose random nothing else holds: a tenth of a second in a process holding torch, and
    nothing to find, as the thread-local holds this one. The same random is registered the
    same way (``RANDOMS_TO_MANAGE``, under the next key), so Hypothesis seeds and restores it
    as before. Checked on Hypothesis 6.170; where a name is missing, Hypothesis does it.
    """
    import random

    from hypothesis import core
    from hypothesis.internal import entropy

    local = getattr(core, "threadlocal", None)
    managed: Any = getattr(entropy, "RANDOMS_TO_MANAGE", None)
    keys = getattr(entropy, "_RKEY", None)
    if local is None or managed is None or keys is None \
            or getattr(local, "_hypothesis_global_random", False) is not None:
        return
    local._hypothesis_global_random = fresh = random.Random()
    managed[next(keys)] = fresh


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
