"""The one shape check of a document read back from a cache (:func:`auxcheck._core.shapes.shaped`)."""

from __future__ import annotations

import pytest

from auxcheck._core.shapes import Shape, shaped

ENTRY: Shape = {"old": str, "names": [str], "since": (str, None), "count": int}

FITS = {
    "every-field-of-its-type": {"old": "a", "names": ["x", "y"], "since": "1", "count": 2},
    "an-empty-list": {"old": "a", "names": [], "since": "1", "count": 0},
    "one-of-the-options": {"old": "a", "names": [], "since": None, "count": 0},
}
MISFITS = {
    "a-string-for-a-list": {"old": "a", "names": "xy", "since": "1", "count": 2},
    "a-number-in-a-list-of-strings": {"old": "a", "names": ["x", 1], "since": "1", "count": 2},
    "a-key-missing": {"old": "a", "names": [], "since": "1"},
    "a-key-more": {"old": "a", "names": [], "since": "1", "count": 2, "extra": 1},
    "a-bool-for-an-int": {"old": "a", "names": [], "since": "1", "count": True},
    "none-of-the-options": {"old": "a", "names": [], "since": 1, "count": 2},
    "a-list-for-the-dict": ["old", "names", "since", "count"],
}


@pytest.mark.parametrize("value", FITS.values(), ids=FITS.keys())
def test_a_document_of_the_shape_fits(value: object) -> None:
    """Every key there, every value of its type all the way down."""
    assert shaped(value, ENTRY)


@pytest.mark.parametrize("value", MISFITS.values(), ids=MISFITS.keys())
def test_a_document_of_another_shape_does_not_fit(value: object) -> None:
    """A wrong type anywhere, a key missing or more, is not the shape."""
    assert not shaped(value, ENTRY)
