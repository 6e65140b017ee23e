"""``auxcheck check --sglang 0.5.23``'s verdict on constructions against SGLang 0.5.23 building them.

Each call is judged by auxcheck from the 0.5.23 wheel's source (AUX704 or not), then made
for real in the CPU SGLang environment: an AUX704 must be Python's TypeError on the
arguments there, and a call auxcheck passes must not raise one. The table covers msgspec
Structs (``SamplingParams``: keyword-only fields), dataclasses (``GenerateReqInput``) and
plain ``__init__`` classes.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from helpers.processes import HANG_GUARD
from helpers.releases import real_release
from helpers.sglang_cpu import environment

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import check_release

pytestmark = pytest.mark.slow

IMPORTS = ("from sglang.srt.sampling.sampling_params import SamplingParams\n"
           "from sglang.srt.managers.io_struct import GenerateReqInput\n"
           "from sglang.srt.entrypoints.engine import SchedulerInitResult\n")

CALLS = (
    "SamplingParams(max_new_tokens=8, temperature=0.5)",
    "SamplingParams(max_tokens=8)",
    "SamplingParams(8)",
    "SamplingParams(stop=['x'], n=1, ignore_eos=True)",
    "GenerateReqInput(text='hi')",
    "GenerateReqInput(prompt='hi')",
    "GenerateReqInput('hi', None)",
    "SchedulerInitResult(scheduler_infos=[])",
    "SchedulerInitResult([], wait_for_completion=None)",
)

REAL = """
import json
{imports}
out = {{}}
for text in {calls!r}:
    try:
        eval(text)
        out[text] = "ok"
    except TypeError as exc:
        out[text] = f"TypeError: {{exc}}"
    except Exception as exc:  # a value the constructor refuses: the call itself bound
        out[text] = f"bound ({{type(exc).__name__}})"
print(json.dumps(out))
"""


def auxcheck_verdicts(tmp_path: Path) -> dict[str, bool]:
    """Returns, per call, whether auxcheck finds AUX704 on 0.5.23."""
    (tmp_path / "plug").mkdir()
    body = "".join(f"def f{i}():\n    return {text}\n\n\n" for i, text in enumerate(CALLS))
    (tmp_path / "plug" / "__init__.py").write_text(IMPORTS + "\n\n" + body)
    result = check_release(scan_project(tmp_path), ReleaseIndex(real_release("0.5.23")))
    calls = next(s for s in result.stages if s.stage == "calls")
    failed = {f.message.split("`")[1] for f in calls.findings}
    return {text: text in failed for text in CALLS}


def test_each_construction_fails_exactly_where_sglang_s_real_class_raises(tmp_path: Path) -> None:
    """AUX704 on a construction means 0.5.23's real class raises TypeError on its arguments;
    no AUX704 means it binds (a value it refuses afterwards is not a binding error)."""
    env = environment()
    done = subprocess.run([str(env.python), "-c", textwrap.dedent(REAL).format(
        imports=IMPORTS, calls=CALLS)], capture_output=True, text=True, env=env.environ(),
        timeout=HANG_GUARD, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    real = json.loads(done.stdout.strip().splitlines()[-1])
    verdicts = auxcheck_verdicts(tmp_path)
    assert {t: v for t, v in verdicts.items()} == {t: r.startswith("TypeError") for t, r in
                                                    real.items()}, real
    assert sum(verdicts.values()) >= 4, verdicts  # the table holds real misfits
