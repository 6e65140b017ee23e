"""The byte prefilter (MoveTable.could_use): it turns away only files the scanner finds clean.

A file the prefilter turns away is never parsed, so a wrong "no" is a finding lost. The
tables below spell a use of a moved name in every form the scanner reports (each must get
through) and name-alikes that are no use (each is turned away, which is what keeps a table of
thousands of inferred moves fast); the real-tree tests check the promise on SGLang's own
sources with the moves inferred between two releases.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.releases import REAL_CACHE, real_tree

from auxcheck.migrate.moves import Move, MoveTable
from auxcheck.migrate.scan import scan_source

TABLE = MoveTable((
    Move("sglang.srt.utils", "sglang.srt.utils.common", ("get_bool_env_var", "logger")),
    Move("sglang.srt.sampling.sampling_observer", "sglang.srt.managers.auxiliary_output",
         ("CommittedTokens",)),
))

USES = {
    "from-import": "from sglang.srt.utils import get_bool_env_var\n",
    "parenthesized list": "from sglang.srt.utils import (\n    other,\n    logger,\n)\n",
    "continued list": "from sglang.srt.utils import other, \\\n    logger\n",
    "star import": "from sglang.srt.utils import *\n",
    "relative": "from ..utils import logger\n",
    "relative, deeper": "from ...srt.utils import logger\n",
    "from the package": "from sglang.srt import utils\nutils.logger.info('x')\n",
    "from the package, aliased": "from sglang.srt import utils as u\nu.logger.info('x')\n",
    "from a relative package": "from .. import utils\nx = utils.get_bool_env_var\n",
    "dotted import": "import sglang.srt.utils\nsglang.srt.utils.logger.info('x')\n",
    "aliased import": "import sglang.srt.utils as su\nsu.logger.info('x')\n",
    "package alias": "import sglang.srt as s\ns.utils.logger.info('x')\n",
    "mock target": "patch('sglang.srt.utils.get_bool_env_var')\n",
    "entry-point target": "target = 'sglang.srt.utils:get_bool_env_var'\n",
    "computed entry point": "target = f'sglang.srt.utils:{name}'\n",
    "computed attribute": "target = f'sglang.srt.utils.{name}'\n",
    "joined strings": "t = 'sglang.srt.' + 'utils' + '.logger'\n",
    "joined at the name": "t = 'sglang.srt.utils.log' 'ger'\n",
    "format spec": "x = f'{v:sglang.srt.utils.logger}'\n",
    "in a longer string": "x = 'see sglang.srt.utils.logger'\n",
    "sys.modules": "sys.modules['sglang.srt.utils'].logger\n",
    "getattr on the module": "import sglang.srt.utils as m\ngetattr(m, 'logger')\n",
    "dynamic import": "importlib.import_module('sglang.srt.utils')\n",
    "__import__": "m = __import__('sglang.srt.utils')\n",
    "module assigned": "import sglang.srt\nm = sglang.srt.utils\nm.logger\n",
    "the built-in move": "from sglang.srt.sampling.sampling_observer import CommittedTokens\n",
}
"""Every form, each a use of a moved name (or a star or dynamic import) of an old module."""

NOT_USES = {
    "another module's utils": "from torch.utils import get_bool_env_var\n",
    "a name that did not move": "from sglang.srt.utils import other\n",
    "an attribute named like the module": "self.utils.logger.info('x')\n",
    "a call of such an attribute": "import sglang\nsglang.srt.utils(3)\n",
    "a decorator": "import triton\n@triton.utils\ndef f():\n    logger = 1\n",
    "a module's own name in a plain import": "import torch.utils as logger\n",
    "a bare word in a string": "x = 'utils'\nlogger = 1\n",
    "another moved name elsewhere": "from sglang.srt.layers import utils2\nlogger = 1\n",
}
"""Files that name an old module's last part and a moved name, but no use of one."""


@pytest.mark.parametrize("text", USES.values(), ids=USES.keys())
def test_every_form_of_a_use_gets_through_the_prefilter(text: str) -> None:
    assert TABLE.could_use(text.encode())


@pytest.mark.parametrize("text", NOT_USES.values(), ids=NOT_USES.keys())
def test_a_name_alike_that_is_no_use_is_turned_away_and_the_scanner_agrees(text: str) -> None:
    assert (TABLE.could_use(text.encode()),
            scan_source(text, moves=TABLE, module="plugin.module")) == (False, [])


@pytest.mark.parametrize("text", USES.values(), ids=USES.keys())
def test_what_the_scanner_reports_the_prefilter_lets_through(text: str) -> None:
    """The promise itself, form by form: a finding implies the prefilter said yes."""
    found = scan_source(text, moves=TABLE, module="sglang.srt.managers.plugin")
    assert not found or TABLE.could_use(text.encode())


@pytest.fixture(scope="module")
def inferred() -> MoveTable:
    from auxcheck._releases.moves_infer import moves_between

    return moves_between("0.5.19", "0.5.23", cache=REAL_CACHE, download=False).table()


def _sample(version: str, every: int) -> list[Path]:
    paths = sorted(real_tree(version).rglob("*.py"))
    return paths[::every]


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_on_sglang_s_own_files_a_file_turned_away_has_no_finding(
        inferred: MoveTable, version: str) -> None:
    """Every 7th file of a real SGLang tree, with the 2,000-odd names SGLang moved between
    0.5.19 and 0.5.23: each file the prefilter turns away is scanned anyway, and clean."""
    turned_away = []
    for path in _sample(version, 7):
        data = path.read_bytes()
        if not inferred.could_use(data):
            turned_away.append(path)
            text = data.decode("utf-8-sig")  # some of SGLang's files start with a BOM
            assert scan_source(text, moves=inferred, path=str(path)) == [], path
    assert len(turned_away) > 300


def test_a_table_of_thousands_of_moves_lets_few_of_sglang_s_files_through(
        inferred: MoveTable) -> None:
    """With the names moved between 0.5.19 and 0.5.23, under a fifth of 0.5.19's own files
    get through (the old test, any old module's last part and any moved name anywhere, let
    nine in ten through: `utils` and `logger` are everywhere)."""
    paths = sorted(real_tree("0.5.19").rglob("*.py"))
    through = sum(1 for path in paths if inferred.could_use(path.read_bytes()))
    assert len(inferred.moves) > 1000 and through < len(paths) / 5, (through, len(paths))


def test_a_table_sent_to_a_worker_prefilters_as_the_original_does() -> None:
    import pickle

    copy = pickle.loads(pickle.dumps(TABLE))
    texts = [*USES.values(), *NOT_USES.values()]
    assert [copy.could_use(t.encode()) for t in texts] == [
        TABLE.could_use(t.encode()) for t in texts]
