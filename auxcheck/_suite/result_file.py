"""The schema of ``--auxcheck-results``: one versioned record per item, its findings as fields.

``pytest --auxcheck --auxcheck-results=FILE`` writes it (:mod:`auxcheck._suite.results`)
and ``auxcheck check``'s contract stage reads it back: both go through the dataclasses
here, so a finding's code, location, message and subject cross the process boundary as
fields, never as text to be parsed again. No pytest here: the reader runs without it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from auxcheck._core.errors import ResultsFileError

if TYPE_CHECKING:
    from auxcheck._core.report import Finding

__all__ = [
    "RESULTS_VERSION",
    "ItemKind",
    "ItemResult",
    "ResultFinding",
    "ResultsFile",
    "read_results",
]

RESULTS_VERSION = 2
"""The schema's version: 2 added ``kind``, ``codes``, ``path`` and findings as objects (1
had ``[code, location, message]`` lists). A reader refuses any other."""

ItemKind = Literal["output", "observer", "impl", "imports", "other"]
"""What an item judges: a device-output or an observer fixture value (the plugin's own
objects), the chosen implementation, the import scan, or something else (a user's test)."""

_KINDS: frozenset[str] = frozenset(get_args(ItemKind))


def _text(data: dict[str, Any], key: str, *, optional: bool = False) -> Any:
    value = data.get(key)
    if isinstance(value, str) or (optional and value is None):
        return value
    raise ResultsFileError(f"{key!r} is {type(value).__name__}, expected a string"
                           + (" or null" if optional else ""))


@dataclass(frozen=True, slots=True)
class ResultFinding:
    """One finding an item raised: rule code, ``path:line:col`` or None, message, and the
    offending object described (never its repr run again: the text :func:`describe` gave)."""

    code: str
    message: str
    location: str | None = None
    subject: str | None = None

    @classmethod
    def of(cls, finding: Finding) -> ResultFinding:
        """Returns the record of ``finding`` (its object described, plugin code not run)."""
        from auxcheck._core.report import describe

        subject = None if finding.obj is None else describe(finding.obj)
        return cls(finding.code, finding.message, finding.location, subject)

    def to_dict(self) -> dict[str, Any]:
        """Returns the record as JSON-ready data."""
        return {"code": self.code, "location": self.location, "message": self.message,
                "subject": self.subject}

    @classmethod
    def from_dict(cls, data: Any) -> ResultFinding:
        """Returns the record ``to_dict`` gave; raises ResultsFileError on any other shape."""
        if not isinstance(data, dict):
            raise ResultsFileError(f"a finding is {type(data).__name__}, expected an object")
        return cls(_text(data, "code"), _text(data, "message"),
                   _text(data, "location", optional=True), _text(data, "subject", optional=True))


@dataclass(frozen=True, slots=True)
class ItemResult:
    """One item's worst outcome, what it judges, its rule codes, the file it points at, and
    its findings (None when it did not fail with a ContractViolation: a fixture raised)."""

    nodeid: str
    outcome: str
    message: str = ""
    kind: ItemKind = "other"
    codes: tuple[str, ...] = ()
    path: str | None = None
    findings: tuple[ResultFinding, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Returns the record as JSON-ready data."""
        return {"nodeid": self.nodeid, "outcome": self.outcome, "message": self.message,
                "kind": self.kind, "codes": list(self.codes), "path": self.path,
                "findings": None if self.findings is None
                else [f.to_dict() for f in self.findings]}

    @classmethod
    def from_dict(cls, data: Any) -> ItemResult:
        """Returns the record ``to_dict`` gave; raises ResultsFileError on any other shape."""
        if not isinstance(data, dict):
            raise ResultsFileError(f"an item is {type(data).__name__}, expected an object")
        kind, codes, found = data.get("kind"), data.get("codes"), data.get("findings")
        if kind not in _KINDS:
            raise ResultsFileError(f"'kind' is {kind!r}, expected one of {sorted(_KINDS)}")
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            raise ResultsFileError("'codes' is not a list of strings")
        if found is not None and not isinstance(found, list):
            raise ResultsFileError("'findings' is neither a list nor null")
        return cls(_text(data, "nodeid"), _text(data, "outcome"), _text(data, "message"),
                   kind, tuple(codes), _text(data, "path", optional=True),
                   None if found is None else tuple(ResultFinding.from_dict(f) for f in found))


@dataclass(frozen=True, slots=True)
class ResultsFile:
    """The whole file: its version and every item's record, in the order they ran."""

    items: tuple[ItemResult, ...]
    version: int = RESULTS_VERSION

    def to_json(self) -> str:
        """Returns the file's text."""
        return json.dumps({"version": self.version,
                           "items": [i.to_dict() for i in self.items]}, indent=1)


def read_results(text: str) -> ResultsFile:
    """Returns the results file whose text is ``text``; raises ResultsFileError naming what
    is wrong when it is not JSON, not version :data:`RESULTS_VERSION` or not of the schema."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ResultsFileError(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != RESULTS_VERSION:
        version = data.get("version") if isinstance(data, dict) else None
        raise ResultsFileError(f"version {version!r}, expected {RESULTS_VERSION}")
    items = data.get("items")
    if not isinstance(items, list):
        raise ResultsFileError("'items' is not a list")
    return ResultsFile(tuple(ItemResult.from_dict(i) for i in items))
