"""Hypothesis entry-point hook: registers auxcheck's type strategies lazily.

Hypothesis calls :func:`_hypothesis_setup_hook` whenever it is imported, in every
project where auxcheck is installed, so this module must stay light.
"""

from __future__ import annotations


def _hypothesis_setup_hook() -> None:
    """Registers strategies for the contract types with ``st.register_type_strategy``."""
