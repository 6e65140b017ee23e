"""Hostile but valid forms for the rewrite: pragmas the sorters honour, f-string targets,
import-error fallbacks, dotted string annotations, and the rule that whatever the scan
calls fixable (AUX501) the rewrite fixes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from textwrap import dedent

import pytest
from helpers.migration import MOVES, codes, migrate
from helpers.paths import TORCH_STANDIN
from helpers.plugin_sources import NEW, OLD
from helpers.processes import HANG_GUARD

from auxcheck.migrate.scan import scan_source

# --- item 1: what the import sorters leave alone stays where it is -------------------------

PRAGMAS = {
    "fmt off region: the split stays in the region, unsorted": (
        (f"import os\n# fmt: off\nfrom {OLD} import SamplingObserver, CommittedTokens\n"
        "import sys\n# fmt: on\n\nx = (os, sys, SamplingObserver, CommittedTokens)\n"),
        (f"import os\n# fmt: off\nfrom {OLD} import SamplingObserver\n"
        f"from {NEW} import CommittedTokens\nimport sys\n# fmt: on\n\n"
        "x = (os, sys, SamplingObserver, CommittedTokens)\n")),
    "isort off region": (
        (f"import zlib\n# isort: off\nimport sys\nfrom {OLD} import CommittedTokens, "
        "SamplingObserver\nimport os\n# isort: on\n\nx = (os, sys, zlib, SamplingObserver, "
        "CommittedTokens)\n"),
        (f"import zlib\n# isort: off\nimport sys\nfrom {OLD} import SamplingObserver\n"
        f"from {NEW} import CommittedTokens\nimport os\n# isort: on\n\n"
        "x = (os, sys, zlib, SamplingObserver, CommittedTokens)\n")),
    "isort skip on the line": (
        (f"import sys\nimport os\nfrom {OLD} import CommittedTokens, SamplingObserver  "
        "# isort: skip\n\nx = (os, sys, SamplingObserver, CommittedTokens)\n"),
        (f"import sys\nimport os\nfrom {OLD} import SamplingObserver  # isort: skip\n"
        f"from {NEW} import CommittedTokens\n\nx = (os, sys, SamplingObserver, CommittedTokens)\n")),
    "fmt skip on the line": (
        (f"import sys\nfrom {OLD} import CommittedTokens, SamplingObserver  # fmt: skip\n\n"
        "x = (sys, SamplingObserver, CommittedTokens)\n"),
        (f"import sys\nfrom {OLD} import SamplingObserver  # fmt: skip\n"
        f"from {NEW} import CommittedTokens\n\nx = (sys, SamplingObserver, CommittedTokens)\n")),
    "isort skip_file": (
        (f"# isort: skip_file\nimport sys\nimport os\nfrom {OLD} import CommittedTokens, "
        "SamplingObserver\n\nx = (os, sys, SamplingObserver, CommittedTokens)\n"),
        (f"# isort: skip_file\nimport sys\nimport os\nfrom {OLD} import SamplingObserver\n"
        f"from {NEW} import CommittedTokens\n\nx = (os, sys, SamplingObserver, CommittedTokens)\n")),
    "ruff noqa I001 for the file": (
        (f"# ruff: noqa: I001\nimport sys\nimport os\nfrom {OLD} import CommittedTokens, "
        "SamplingObserver\n\nx = (os, sys, SamplingObserver, CommittedTokens)\n"),
        (f"# ruff: noqa: I001\nimport sys\nimport os\nfrom {OLD} import SamplingObserver\n"
        f"from {NEW} import CommittedTokens\n\nx = (os, sys, SamplingObserver, CommittedTokens)\n")),
    "isort split: nothing crosses it": (
        (f"from {OLD} import SamplingObserver\n# isort: split\nfrom {OLD} import CommittedTokens\n"
        "import abc\n\nx = (abc, SamplingObserver, CommittedTokens)\n"),
        (f"from {OLD} import SamplingObserver\n# isort: split\nimport abc\n"
        f"from {NEW} import CommittedTokens\n\nx = (abc, SamplingObserver, CommittedTokens)\n")),
    "a whole statement in a region is renamed in place, layout kept": (
        (f"import os\n# fmt: off\nfrom {OLD} import (CommittedTokens,\n    HostAuxiliaryOutput)\n"
        "x = (os, CommittedTokens, HostAuxiliaryOutput)\n"),
        (f"import os\n# fmt: off\nfrom {NEW} import (CommittedTokens,\n    HostAuxiliaryOutput)\n"
        "x = (os, CommittedTokens, HostAuxiliaryOutput)\n")),
}


@pytest.mark.parametrize(("before", "after"), PRAGMAS.values(), ids=PRAGMAS.keys())
def test_imports_the_sorters_leave_alone_are_rewritten_in_place(before: str, after: str) -> None:
    """In a region or line the sorters skip, the module is renamed where it stands."""
    assert migrate(before) == after
    assert migrate(after) == after


COMPAT_PRAGMAS = {
    "fmt off region": (
        (f"import os\n# fmt: off\nfrom {OLD} import SamplingObserver, CommittedTokens\n"
        "import sys\n# fmt: on\n\nx = (os, sys, SamplingObserver, CommittedTokens)\n"),
        (f"import os\nfrom typing import TYPE_CHECKING\n# fmt: off\nfrom {OLD} import "
        f"SamplingObserver\n\nif TYPE_CHECKING:\n    from {NEW} import CommittedTokens\nelse:\n"
        f"    try:\n        from {NEW} import CommittedTokens\n    except ImportError:\n"
        f"        from {OLD} import CommittedTokens\nimport sys\n"
        "# fmt: on\n\nx = (os, sys, SamplingObserver, CommittedTokens)\n")),
}


@pytest.mark.parametrize(("before", "after"), COMPAT_PRAGMAS.values(), ids=COMPAT_PRAGMAS.keys())
def test_compat_keeps_frozen_imports_and_puts_type_checking_outside_them(
        before: str, after: str) -> None:
    """--compat neither sorts a skipped region nor imports TYPE_CHECKING inside it."""
    assert migrate(before, compat=True) == after


# --- item 2: f-string targets ---------------------------------------------------------------

FSTRINGS = {
    "literal target": (
        f'x = f"{OLD}.CommittedTokens"\n', f'x = f"{NEW}.CommittedTokens"\n'),
    "target then an attribute field": (
        f'x = f"{OLD}.CommittedTokens.{{attr}}"\n', f'x = f"{NEW}.CommittedTokens.{{attr}}"\n'),
    "raw f-string with a hook target": (
        f'x = rf"{OLD}:HostAuxiliaryOutput\\n"\n', f'x = rf"{NEW}:HostAuxiliaryOutput\\n"\n'),
    "inside a format spec": (
        f'x = f"{{v:{OLD}.CommittedTokens}}"\n', f'x = f"{{v:{NEW}.CommittedTokens}}"\n'),
    "escaped braces around it": (
        f'x = f"{{{{{OLD}.CommittedTokens}}}}"\n', f'x = f"{{{{{NEW}.CommittedTokens}}}}"\n'),
}


@pytest.mark.parametrize(("before", "after"), FSTRINGS.values(), ids=FSTRINGS.keys())
def test_an_fstring_naming_the_old_module_literally_is_rewritten(before: str, after: str) -> None:
    """The old dotted path and the moved name written out in an f-string are rewritten."""
    assert (codes(before), migrate(before), codes(after)) == (["AUX501"], after, [])


UNSAFE = {
    "computed attribute": (f'x = f"{OLD}.{{name}}"\n', "computed at run time"),
    "field glued after the name": (f'x = f"{OLD}.CommittedTokens{{s}}"\n', "joins"),
    "field glued before the module": (f'x = f"{{p}}{OLD}.CommittedTokens"\n', "joins"),
    "module from a constant": (f'OLD = "{OLD}"\nx = f"{{OLD}}.CommittedTokens"\n',
                               "from OLD, the old module's name"),
    "module from a constant, concatenated": (f'OLD = "{OLD}"\nx = OLD + ".CommittedTokens"\n',
                                             "from the old module's name"),
    "escape in the dotted name": (
        f'x = f"{OLD}\\x2eCommittedTokens"\n', "escapes"),
    "escape in a plain string": (f'x = "{OLD}\\x2eCommittedTokens"\n', "escapes"),
    "string continued on the next line": (
        'x = "sglang.srt.sampling.\\\nsampling_observer.CommittedTokens"\n', "line continuation"),
    "getattr on an alias": (f'import {OLD} as so\nx = getattr(so, "CommittedTokens")\n',
                            "looks up a moved name"),
}


@pytest.mark.parametrize(("source", "why"), UNSAFE.values(), ids=UNSAFE.keys())
def test_a_target_that_cannot_be_rewritten_safely_is_aux502_with_the_reason(
        source: str, why: str) -> None:
    """The scan says why a human is needed, and migrate leaves the text as it was."""
    findings = scan_source(source, moves=MOVES)
    assert [f.code for f in findings] == ["AUX502"]
    assert why in findings[0].message
    assert migrate(source) == source


# --- item 3: a fallback import keeps every name bound ------------------------------------

FALLBACKS = {
    "alias with staying uses": (
        f"try:\n    import {OLD} as so\nexcept ImportError:\n    import my_fallback as so\n\n"
        "x = so.CommittedTokens\ny = getattr(so, 'SamplingObserver', None)\n"),
    "from-import without alias, set to None": (
        "try:\n    from sglang.srt.sampling import sampling_observer\n"
        "except ImportError: import my_fallback as sampling_observer\n\n"
        "x = sampling_observer.CommittedTokens\nprint(sampling_observer)\n"),
    "tuple of exceptions": (
        f"try:\n    import {OLD} as so\nexcept (ImportError, AttributeError):\n"
        "    import my_fallback as so\n\nx = so.CommittedTokens\nprint(so)\n"),
    "module not found, with else and finally": (
        f"try:\n    import {OLD} as so\nexcept ModuleNotFoundError:\n    import my_fallback as so\n"
        "else:\n    pass\nfinally:\n    z = 1\n\nx = so.HostAuxiliaryOutput\nprint(so)\n"),
    "nested try": (
        f"try:\n    try:\n        import {OLD} as so\n    except ImportError:\n"
        "        import my_fallback as so\nexcept Exception:\n    raise\n\n"
        "x = so.CommittedTokens\nprint(so)\n"),
    "except star": (
        f"try:\n    import {OLD} as so\nexcept* ImportError:\n    import my_fallback as so\n\n"
        "x = so.CommittedTokens\nprint(so)\n"),
}


@pytest.fixture(scope="module")
def fallback_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Returns {case: "ok" or the error} for every output run where SGLang is absent."""
    root = tmp_path_factory.mktemp("no-sglang")
    (root / "my_fallback.py").write_text(
        "class CommittedTokens: pass\nclass HostAuxiliaryOutput: pass\n")
    names = []
    for i, source in enumerate(FALLBACKS.values()):
        for compat in (False, True):
            name = f"case_{i}_{int(compat)}"
            (root / f"{name}.py").write_text(migrate(source, compat=compat))
            names.append(name)
    driver = ("import json, runpy, sys\nout = {}\nfor n in sys.argv[1:]:\n    try:\n"
              "        runpy.run_module(n)\n    except BaseException as e:\n"
              "        out[n] = repr(e)\n    else:\n        out[n] = 'ok'\nprint(json.dumps(out))\n")
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    completed = subprocess.run([sys.executable, "-c", driver, *names], cwd=root, env=env,
                               capture_output=True, text=True, check=True, timeout=HANG_GUARD)
    return dict(json.loads(completed.stdout.splitlines()[-1]))


@pytest.mark.parametrize("compat", [False, True], ids=["plain", "compat"])
@pytest.mark.parametrize("case", range(len(FALLBACKS)), ids=FALLBACKS.keys())
def test_a_fallback_branch_still_binds_every_name_the_rewrite_uses(
        case: int, compat: bool, fallback_runs: dict[str, str]) -> None:
    """Without SGLang the except branch runs, and the rewritten uses still resolve."""
    assert fallback_runs[f"case_{case}_{int(compat)}"] == "ok"


# --- item 4: a rewritten dotted string annotation names an imported module -----------------

ANNOTATIONS = {
    "parameter and return": dedent(f"""\
        import {OLD}


        def f(x: "{OLD}.CommittedTokens") -> "{OLD}.HostAuxiliaryOutput | None":
            return None
        """),
    "under TYPE_CHECKING": dedent(f"""\
        from __future__ import annotations

        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            import {OLD}


        def f(x: "{OLD}.CommittedTokens") -> None:
            return None
        """),
    "annotated name, nested": dedent(f"""\
        import {OLD}

        x: "{OLD}.DeviceAuxiliaryOutput | None" = None
        y: list["{OLD}.CommittedTokens"] = []
        """),
    "staying use keeps the old import": dedent(f"""\
        import {OLD}


        def f(x: "{OLD}.CommittedTokens") -> None:
            return None


        y = {OLD}.SamplingObserver
        """),
}
MYPY_ERROR = re.compile(r"^(?P<file>[\w.]+\.py):\d+: error: .*\[(?P<code>[a-z-]+)\]$")


@pytest.fixture(scope="module")
def annotation_mypy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Returns {file: mypy error codes} for every migrated annotation case, one mypy run."""
    root = tmp_path_factory.mktemp("annotations")
    files = []
    for i, source in enumerate(ANNOTATIONS.values()):
        for compat in (False, True):
            name = f"case_{i}_{int(compat)}.py"
            (root / name).write_text(migrate(source, compat=compat))
            files.append(name)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["MYPYPATH"] = str(TORCH_STANDIN)
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull,
         "--config-file", os.devnull, "--show-error-codes", "--no-pretty", *files],
        cwd=root, env=env, capture_output=True, text=True, check=False, timeout=300)
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    found: dict[str, set[str]] = {name: set() for name in files}
    for line in completed.stdout.splitlines():
        if (match := MYPY_ERROR.match(line)) and match["file"] in found:
            found[match["file"]].add(match["code"])
    return found


@pytest.mark.parametrize("compat", [False, True], ids=["plain", "compat"])
@pytest.mark.parametrize("case", range(len(ANNOTATIONS)), ids=ANNOTATIONS.keys())
def test_a_rewritten_dotted_annotation_names_a_module_the_file_imports(
        case: int, compat: bool, annotation_mypy: dict[str, set[str]]) -> None:
    """mypy finds every module a rewritten string annotation names (no name-defined)."""
    assert annotation_mypy[f"case_{case}_{int(compat)}.py"] == set()


# --- the rule: whatever the scan calls fixable, migrate fixes ------------------------------

CORPUS = {
    **{f"f-string: {k}": v[0] for k, v in FSTRINGS.items()},
    **{f"unsafe: {k}": UNSAFE[k][0] for k in (
        "field glued after the name", "field glued before the module",
        "escape in the dotted name", "escape in a plain string",
        "string continued on the next line")},
    "nested f-string": (f"n = 1\nT = f\"{{f'{OLD}.{{n}}'}}\"\n"
                        f"U = f\"{{'x' if n else f'{OLD}.CommittedTokens'}}\"\n"),
}
"""The string forms that name a target in their own text: the ones the rewrite handles and
the ones it must leave to a human."""


@pytest.mark.parametrize("compat", [False, True], ids=["plain", "compat"])
@pytest.mark.parametrize("source", CORPUS.values(), ids=CORPUS.keys())
def test_what_the_scan_calls_fixable_migrate_fixes_once_and_for_all(
        source: str, compat: bool) -> None:
    """After migrate no AUX501 is left, the output compiles, and a second run changes nothing."""
    once = migrate(source, compat=compat)
    compile(once, "<migrated>", "exec")
    assert "AUX501" not in codes(once)
    assert migrate(once, compat=compat) == once
    if "AUX501" not in codes(source):
        assert once == source
