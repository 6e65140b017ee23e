"""The settings of one ``pytest --auxcheck`` run: read from the command line and ini, validated.

Light: the pytest plugin imports it whether or not the flag is on, so it imports nothing
heavier than pytest.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from auxcheck._core.config import project_ignore
from auxcheck._core.errors import InvalidArgument
from auxcheck._core.rules import parse_codes

__all__ = [
    "DEFAULT_PROFILE",
    "IMPL_CHOICES",
    "OPTIONS",
    "AuxcheckOptions",
    "ignore_value",
    "impl_value",
    "profile_value",
    "release_value",
    "resolve_options",
]


@dataclass(frozen=True, slots=True)
class AuxcheckOptions:
    """The validated ``--auxcheck`` settings of one run.

    ``impl`` is the ``--auxcheck-impl`` value, ``profile`` the Hypothesis settings
    profile, ``ignore`` the rule codes left out, ``paths`` the import scan's roots,
    ``impl_given`` whether the implementation was chosen explicitly and ``speculative``
    whether the plugin's observers run under speculative decoding (multi-token steps).
    ``seed`` is the Hypothesis seed every run of the suite draws from (None: the profile
    is derandomized, or not chosen yet).
    """

    impl: str
    profile: str
    ignore: frozenset[str]
    paths: tuple[Path, ...]
    impl_given: bool = False
    speculative: bool = False
    seed: int | str | None = None


OPTIONS = pytest.StashKey[AuxcheckOptions]()
"""Where the run's options are kept on the config (only with ``--auxcheck``)."""

IMPL_CHOICES = ("auto", "reference", "sglang")
DEFAULT_PROFILE = "auxcheck-default"
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


# ---------------------------------------------------------------- option values


def impl_value(text: str) -> str:
    """Returns a valid ``--auxcheck-impl`` value; raises ArgumentTypeError naming the choices.

    Only the form is read here (argparse runs it without ``--auxcheck`` too, where the
    plugin imports nothing): ``sglang==X``'s version is checked by :func:`release_value`.
    """
    value = text.strip()
    if value.startswith("sglang==") or value in IMPL_CHOICES or _DOTTED.fullmatch(value):
        return value
    raise argparse.ArgumentTypeError(
        f"invalid value {text!r}; expected auto, reference, sglang, sglang==X.Y.Z (a release "
        "such as sglang==0.5.23) or a dotted module path such as my_plugin.aux_impl"
    )


def release_value(value: str) -> str:
    """Returns ``value`` when it names no release or one release version (``sglang==0.5.23``);
    raises ArgumentTypeError saying what the version should be."""
    if not value.startswith("sglang=="):
        return value
    from auxcheck._properties.implementations import release_version

    try:
        release_version(value)
    except InvalidArgument as exc:
        raise argparse.ArgumentTypeError(f"invalid value {value!r}: {exc}") from None
    return value


def profile_value(text: str) -> str:
    """Returns a plausible Hypothesis profile name; raises ArgumentTypeError when empty."""
    value = text.strip()
    if value:
        return value
    raise argparse.ArgumentTypeError(
        f"invalid value {text!r}; expected a Hypothesis settings profile name such as "
        f"{DEFAULT_PROFILE} or auxcheck-ci"
    )


def ignore_value(text: str) -> str:
    """Returns ``text`` when it names rule codes; raises ArgumentTypeError naming the form."""
    try:
        parse_codes([text])
    except InvalidArgument as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


# ---------------------------------------------------------------- the run's options


def _ini_error(name: str, exc: Exception) -> pytest.UsageError:
    return pytest.UsageError(f"ini option {name}: {exc}")


def _option_or_ini(config: pytest.Config, name: str, parse: Callable[[str], str]) -> str:
    """Returns option ``name`` from the command line (already parsed), else its ini value parsed."""
    value: str | None = config.getoption(name)
    if value is not None:
        return value
    try:
        return parse(str(config.getini(name)))
    except argparse.ArgumentTypeError as exc:
        raise _ini_error(name, exc) from None


def resolve_options(config: pytest.Config) -> AuxcheckOptions:
    """Returns the run's options: command line over ini, every value validated."""
    impl = _option_or_ini(config, "auxcheck_impl", impl_value)
    try:
        release_value(impl)
    except argparse.ArgumentTypeError as exc:
        given = config.getoption("auxcheck_impl") is not None
        raise (pytest.UsageError(f"argument --auxcheck-impl: {exc}") if given
               else _ini_error("auxcheck_impl", exc)) from None
    profile = _option_or_ini(config, "auxcheck_profile", profile_value)
    try:
        ignore = parse_codes(project_ignore(config.rootpath))
    except InvalidArgument as exc:
        raise pytest.UsageError(str(exc)) from None
    try:
        ignore |= parse_codes([*config.getini("auxcheck_ignore"),
                               *config.getoption("auxcheck_ignore")])
    except InvalidArgument as exc:
        raise _ini_error("auxcheck_ignore", exc) from None
    paths = tuple(Path(p) for p in config.getini("auxcheck_paths")) or (config.rootpath,)
    given = config.getoption("auxcheck_impl") is not None or impl != "auto"
    speculative = config.getoption("auxcheck_speculative")
    if speculative is None:
        try:
            speculative = bool(config.getini("auxcheck_speculative"))
        except (ValueError, pytest.UsageError) as exc:  # pytest's reading of a bool ini value
            raise _ini_error("auxcheck_speculative", ValueError(
                f"{exc}; expected true or false")) from None
    return AuxcheckOptions(impl, profile, ignore, paths, given, speculative)
