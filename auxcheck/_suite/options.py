"""The settings of one ``pytest --auxcheck`` run, shared by the plugin and the checks it runs.

Standard library only: the pytest plugin imports it whether or not the flag is on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["AuxcheckOptions"]


@dataclass(frozen=True, slots=True)
class AuxcheckOptions:
    """The validated ``--auxcheck`` settings of one run.

    ``impl`` is the ``--auxcheck-impl`` value, ``profile`` the Hypothesis settings
    profile, ``ignore`` the rule codes left out, ``paths`` the import scan's roots and
    ``impl_given`` whether the implementation was chosen explicitly.
    """

    impl: str
    profile: str
    ignore: frozenset[str]
    paths: tuple[Path, ...]
    impl_given: bool = False
