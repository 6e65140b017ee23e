"""Hypothesis entry-point hook: registers auxcheck's type strategies lazily.

Hypothesis calls :func:`_hypothesis_setup_hook` whenever it is imported, in every
project where auxcheck is installed, so this module must stay light: it imports
neither torch nor :mod:`auxcheck._properties.strategies` until a registered type is drawn.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def _lazy(name: str) -> Callable[[type], Any]:
    """Returns a type-strategy function that builds ``auxcheck._properties.strategies.<name>()`` on first draw."""
    from hypothesis import strategies as st

    def resolve(_type: type) -> Any:
        # flatmap, not deferred: Hypothesis checks a registered strategy for emptiness
        # when it resolves the type, which would force a deferred (and import torch).
        return st.just(name).flatmap(_named_strategy)

    return resolve


def _named_strategy(name: str) -> Any:
    return getattr(importlib.import_module("auxcheck._properties.strategies"), name)()


def _hypothesis_setup_hook() -> None:
    """Registers strategies for the contract types with ``st.register_type_strategy``.

    ``st.from_type`` then generates recording leaf outputs for DeviceAuxiliaryOutput,
    recording host outputs for HostAuxiliaryOutput, and well-formed CommittedTokens.
    """
    from hypothesis import strategies as st

    from auxcheck._core import protocols

    st.register_type_strategy(protocols.DeviceAuxiliaryOutput, _lazy("device_outputs"))
    st.register_type_strategy(protocols.HostAuxiliaryOutput, _lazy("host_outputs"))
    st.register_type_strategy(protocols.CommittedTokens, _lazy("committed_tokens"))
