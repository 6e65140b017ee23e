"""An auxcheck item's location names its group and itself from the nodes, not from its id.

pytest heads a failure with the item's domain (``reportinfo``): the group and the item's
name with its parameter id, which is the user's text and may hold ``auxcheck::`` itself
(auxcheck/_suite/nodes.py).
"""

from __future__ import annotations

import textwrap

import pytest
import torch  # noqa: F401  # pytester runs in-process: torch is imported once, up front

import auxcheck._suite.item_runs  # noqa: F401

pytest_plugins = ["pytester"]

CONFTEST = textwrap.dedent("""
    import pytest
    import torch

    class Host:
        def __init__(self, rows):
            self.rows = rows

        def consume(self, batch, commits):
            return None

    class Good:
        def __init__(self):
            self.rows = torch.zeros(2, 2)

        def copy_to_host(self, copy_tensor):
            return Host(copy_tensor(self.rows))

    @pytest.fixture(params=[1], ids=[{given!r}])
    def auxcheck_device_output(request):
        return Good()
""")


@pytest.mark.parametrize("given", [
    pytest.param("plain", id="a-plain-id"),
    pytest.param("auxcheck::x", id="an-id-holding-the-suite-s-name"),
])
def test_an_item_s_domain_is_its_group_and_its_name_whatever_its_id_holds(
        pytester: pytest.Pytester, given: str) -> None:
    """The domain is ``group::name[id]``, the id whole."""
    pytester.makeconftest(CONFTEST.format(given=given))
    items, _ = pytester.inline_genitems("--auxcheck", "-p", "no:randomly", "-p", "no:cacheprovider")
    domains = {item.location[2] for item in items if item.name.startswith("AUX101")}
    assert domains == {f"auxcheck_device_output::AUX101-copy-to-host-callable[{given}]"}
