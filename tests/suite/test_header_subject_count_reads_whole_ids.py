"""The header line counts each fixture value once, whatever its parameter id holds.

On the pytest-xdist controller only the items' ids exist, so the count reads them: the
group is the part after ``auxcheck``, and the rest, ``::`` inside a parameter id included,
is one item's name and parameter (auxcheck/_suite/header.py).
"""

from __future__ import annotations

import pytest

from auxcheck._suite.header import Subjects, count_subjects

GROUP = "conftest.py::auxcheck::auxcheck_device_output"
OBSERVER = "conftest.py::auxcheck::auxcheck_sampling_observer"


@pytest.mark.parametrize(("ids", "subjects"), [
    pytest.param([f"{GROUP}::AUX101-copy-to-host-callable[plain]",
                  f"{GROUP}::AUX104-single-copy[plain]"], Subjects(1, 0), id="plain-id"),
    pytest.param([f"{GROUP}::AUX101-copy-to-host-callable[a::b]",
                  f"{GROUP}::AUX104-single-copy[a::b]",
                  f"{GROUP}::AUX101-copy-to-host-callable[c]"], Subjects(2, 0),
                 id="an-id-holding-the-separator"),
    pytest.param([f"{OBSERVER}::AUX102-observer-hooks[x::y]",
                  f"{OBSERVER}::AUX101-published-output[x::y]"], Subjects(0, 1),
                 id="an-observer-id-holding-the-separator"),
    pytest.param(["conftest.py::auxcheck::impl::AUX301-append[reference]",
                  "conftest.py::auxcheck::imports"], Subjects(0, 0), id="no-fixture-value"),
])
def test_each_fixture_value_is_counted_once_whatever_its_id_holds(
        ids: list[str], subjects: Subjects) -> None:
    """Values are counted by group and parameter; ``::`` in an id splits nothing."""
    assert count_subjects(ids) == subjects
