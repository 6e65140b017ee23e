"""Findings and the reports that collect them, shared by every checker."""

from auxcheck._core.report import (
    Finding,
    Report,
    describe,
    printable,
)

__all__ = [
    "Finding",
    "Report",
    "describe",
    "printable",
]
