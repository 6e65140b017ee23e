"""``auxcheck check --sglang`` with hook and call signatures, on a generated 50-hook plugin.

Run by hand: ``.venv/bin/python benchmarks/bench_signatures.py [--repeat N]``
(the wheels come from the cache, ``$AUXCHECK_CACHE_DIR`` or ``~/.cache/auxcheck/sglang``;
``make wheels`` fetches them into ``.cache/sglang``). A plugin project is written to a
temporary folder: package ``plug`` with an ``sglang.srt.plugins`` entry point, 50
``HookRegistry.register`` calls (AFTER, AROUND, BEFORE and REPLACE hooks on targets that
sglang 0.5.19, 0.5.20 and 0.5.23 all have; a few with parameter lists that misfit on a
release, so the slow path that reads SGLang's own call sites runs) and 200 calls into
SGLang. Timed in one process with a warm index cache (one run first, then the median of
``--repeat`` rounds), each run building fresh ``ReleaseIndex`` objects:

- the baseline, the name-only check the signature stages were added to: scan the plugin,
  then per release the ``imports`` stage and each hook target's existence;
- the full check: scan the plugin, then ``check_release`` (all seven stages) per release,
  the other releases its peers, as ``auxcheck check`` runs it;
- the real command, ``auxcheck check PLUGIN --sglang 0.5.19,0.5.20,0.5.23`` with the
  other stages skipped, as a subprocess (exit 1 is expected: some hooks misfit).

Unless ``--small-only``, the same rows for a plugin of 500 hooks and 100 classes deriving from
SGLang classes (a HiCache backend, a LogitsProcessor, a KV pool; some misfit on 0.5.23),
measured in the same run.

And (unless ``--small-only``) two plugins of 5,000 hooks: the 50's shapes a hundred times, and hooks
spread over 600 functions sglang 0.5.23 defines (read from its index; a third of them with
a parameter list that misfits most targets). Each is timed against its parse floor,
reading and ``ast.parse`` of every ``.py`` file of the plugin, side by side in one run.

Targets: the full check of 3 releases under 2 s warm; the large plugin's full check under
3x the 50-hook plugin's; each 5,000-hook plugin's full
check within 10x its parse floor (a check costs in proportion to the plugin, not SGLang).
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from _timing import medians, result_line

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import PluginScan, scan_project
from auxcheck._releases.release_check import ReleaseResult, _Hints, _import_stage, check_release
from auxcheck._releases.signature_check import hook_target_problem
from auxcheck.migrate.moves import builtin_moves
from auxcheck.releases import cache_dir, find_release

RELEASES = ("0.5.19", "0.5.20", "0.5.23")
HOOKS = 50
CALLS = 200
TARGET_SECONDS = 2.0
LARGE = (500, 100)
"""``--large``: a plugin of 500 hooks (the 50's shapes, ten times) and 100 SGLang subclasses."""
LARGE_GROWTH = 3.0
"""``--large``'s target: ten times the hooks, and the classes, cost under 3x the 50-hook check
(the releases' modules are read once, whatever the plugin's size)."""
HUGE = 5000
"""``--huge``: hooks of each huge plugin."""
HUGE_RATIO = 10.0
"""``--huge``'s target: the full check within this many times the plugin's parse floor."""
COUNTED_STAGES = ("hooks", "calls", "attributes", "classes")

# Hook targets every one of the three releases defines (checked against their sources).
TARGETS = (
    "sglang.srt.managers.scheduler.Scheduler.__init__",
    "sglang.srt.managers.scheduler.Scheduler.get_output_streamer_class",
    "sglang.srt.managers.scheduler.Scheduler.event_loop_normal",
    "sglang.srt.managers.scheduler.Scheduler.process_input_requests",
    "sglang.srt.managers.scheduler.Scheduler.get_next_batch_to_run",
    "sglang.srt.managers.scheduler.Scheduler.run_batch",
    "sglang.srt.managers.scheduler.Scheduler.process_batch_result",
    "sglang.srt.model_executor.model_runner.ModelRunner.initialize",
    "sglang.srt.model_executor.model_runner.ModelRunner.forward",
    "sglang.srt.model_executor.model_runner.ModelRunner.load_model",
    "sglang.srt.distributed.parallel_state.init_distributed_environment",
    "sglang.srt.distributed.parallel_state.initialize_model_parallel",
    "sglang.srt.layers.moe.topk.select_experts",
    "sglang.srt.layers.sampler.Sampler.forward",
    "sglang.srt.layers.logits_processor.LogitsProcessor.forward",
    "sglang.srt.managers.schedule_batch.ScheduleBatch._evict_swa",
    "sglang.srt.managers.schedule_batch.ScheduleBatch.prepare_for_extend",
    "sglang.srt.managers.schedule_batch.ScheduleBatch.prepare_for_decode",
    "sglang.srt.managers.schedule_batch.ScheduleBatch.filter_batch",
    "sglang.srt.managers.schedule_batch.ScheduleBatch.merge_batch",
    "sglang.srt.managers.schedule_batch.Req.__init__",
    "sglang.srt.managers.tokenizer_manager.TokenizerManager.generate_request",
    "sglang.srt.entrypoints.engine.Engine.generate",
)

# Hooks with explicit parameter lists: (target, type, definition). Some fit every release;
# the others misfit one (0.5.23 passes eviction_interval=, renames chunked_req_to_exclude,
# adds logprob_logits and dynamic_expert_bias, and drops Scheduler.__init__'s ranks).
EXPLICIT = (
    ("sglang.srt.managers.schedule_batch.ScheduleBatch._evict_swa", "AROUND",
     ("def own_swa(original_fn, batch, req, pre_len):\n"
      "    return original_fn(batch, req, pre_len)\n")),
    ("sglang.srt.managers.schedule_batch.ScheduleBatch.filter_batch", "AFTER",
     ("def own_filter(result, batch, chunked_req_to_exclude=None, keep_indices=None):\n"
      "    return result\n")),
    ("sglang.srt.layers.sampler.Sampler.forward", "BEFORE",
     ("def own_sample(sampler, logits_output, sampling_info, return_logprob,\n"
      "               top_logprobs_nums, token_ids_logprobs, positions=None):\n"
      "    return None\n")),
    ("sglang.srt.layers.moe.topk.select_experts", "AROUND",
     ("def own_select(original_fn, hidden_states, router_logits, topk_config, *,\n"
      "               layer_id=None, num_token_non_padded=None,\n"
      "               expert_location_dispatch_info=None):\n"
      "    return original_fn(hidden_states, router_logits, topk_config, layer_id=layer_id)\n")),
    ("sglang.srt.managers.scheduler.Scheduler.__init__", "AFTER",
     ("def own_scheduler(result, scheduler, server_args, port_args, gpu_id, tp_rank,\n"
      "                  moe_ep_rank, pp_rank, attn_cp_rank, moe_dp_rank, dp_rank):\n"
      "    return result\n")),
    ("sglang.srt.managers.schedule_batch.ScheduleBatch.merge_batch", "AFTER",
     ("def own_merge(result, batch, other):\n"
      "    return result\n")),
    ("sglang.srt.managers.scheduler.Scheduler.run_batch", "BEFORE",
     ("def own_run(scheduler, batch, pp_proxy_tensors=None):\n"
      "    return None\n")),
    ("sglang.srt.managers.scheduler.Scheduler.process_input_requests", "AROUND",
     ("def own_inputs(original_fn, scheduler, recv_reqs):\n"
      "    return original_fn(scheduler, recv_reqs)\n")),
)

HOOK_TYPES = ("AFTER", "AROUND", "BEFORE", "REPLACE")
GENERIC = {
    "AFTER": "def {name}(result, *args, **kwargs):\n    return result\n",
    "AROUND": "def {name}(original_fn, *args, **kwargs):\n"
              "    return original_fn(*args, **kwargs)\n",
    "BEFORE": "def {name}(*args, **kwargs):\n    return None\n",
    "REPLACE": "def {name}(*args, **kwargs):\n    return None\n",
}

# What the call modules import, and the calls they make (names all three releases have;
# two calls do not bind on 0.5.23, whose initialize_model_parallel and TopK changed).
IMPORTS = (
    "from sglang.srt.configs.model_config import ModelConfig",
    ("from sglang.srt.distributed.parallel_state import (\n"
     "    destroy_model_parallel,\n"
     "    get_pp_group,\n"
     "    get_tensor_model_parallel_rank,\n"
     "    get_tensor_model_parallel_world_size,\n"
     "    get_tp_group,\n"
     "    get_world_group,\n"
     "    init_distributed_environment,\n"
     "    initialize_model_parallel,\n"
     ")"),
    "from sglang.srt.entrypoints.engine import SchedulerInitResult",
    "from sglang.srt.layers.logits_processor import LogitsProcessorOutput",
    "from sglang.srt.layers.moe.topk import TopK, TopKConfig, select_experts",
    "from sglang.srt.managers.io_struct import EmbeddingReqInput, GenerateReqInput",
    "from sglang.srt.managers.schedule_batch import Req, ScheduleBatch",
    "from sglang.srt.server_args import PortArgs",
    ("from sglang.srt.utils import (\n"
     "    get_available_gpu_memory,\n"
     "    get_bool_env_var,\n"
     "    get_device_memory_capacity,\n"
     "    get_int_env_var,\n"
     "    is_cuda,\n"
     "    is_hip,\n"
     "    kill_process_tree,\n"
     "    set_random_seed,\n"
     ")"),
)
CALL_TEXTS = (
    "SchedulerInitResult(scheduler_infos=[])",
    "SchedulerInitResult([], all_child_pids=[])",
    "SchedulerInitResult(scheduler_infos=[], wait_for_ready=None)",
    "select_experts(h, r, cfg)",
    "select_experts(h, r, cfg, layer_id=0)",
    "select_experts(hidden_states=h, router_logits=r, topk_config=cfg)",
    "select_experts(h, r, topk_config=cfg, num_token_non_padded=None)",
    "init_distributed_environment(world_size=1, rank=0)",
    "init_distributed_environment(1, 0)",
    "init_distributed_environment(world_size=1, rank=0, local_rank=0, backend='nccl')",
    "init_distributed_environment(distributed_init_method='env://')",
    "initialize_model_parallel(backend='nccl')",
    "initialize_model_parallel()",
    "TopKConfig(top_k=2)",
    "TopKConfig(2, renormalize=True)",
    "TopKConfig(top_k=8, use_grouped_topk=False)",
    "TopK(2, layer_id=0)",
    "TopK(top_k=8, layer_id=1, renormalize=False)",
    "GenerateReqInput(text='hi')",
    "GenerateReqInput(input_ids=[1, 2], sampling_params={})",
    "GenerateReqInput(text='x', return_logprob=True)",
    "EmbeddingReqInput(text='e')",
    "EmbeddingReqInput(input_ids=[1])",
    "ScheduleBatch.init_new(reqs, pool, alloc, cache, cfg, False, spec)",
    "Req('r', 't', [1], sp)",
    ("Req(rid='r', origin_input_text='', origin_input_ids=[], sampling_params=sp,"
     " return_logprob=False)"),
    "LogitsProcessorOutput(next_token_logits=h)",
    "LogitsProcessorOutput(h, hidden_states=None)",
    "ModelConfig('m')",
    "ModelConfig(model_path='m', trust_remote_code=True)",
    "ModelConfig('m', context_length=4096, dtype='auto')",
    "PortArgs.init_new(server_args)",
    "PortArgs.init_new(server_args, dp_rank=0)",
    "get_int_env_var('N')",
    "get_int_env_var('N', 4)",
    "get_int_env_var(name='N', default=1)",
    "get_bool_env_var('B')",
    "get_bool_env_var('B', default='true')",
    "get_available_gpu_memory('cuda', 0)",
    "get_available_gpu_memory(device='cuda', gpu_id=0, empty_cache=False)",
    "get_device_memory_capacity('cuda')",
    "set_random_seed(0)",
    "set_random_seed(seed=1)",
    "kill_process_tree(pid)",
    "kill_process_tree(pid, include_parent=False)",
    "get_pp_group()",
    "get_tp_group()",
    "get_world_group()",
    "get_tensor_model_parallel_world_size()",
    "get_tensor_model_parallel_rank()",
    "destroy_model_parallel()",
    "is_cuda()",
    "is_hip()",
)
MISFITS = (
    "initialize_model_parallel(tensor_model_parallel_size=1)",  # 0.5.23 dropped it
    "TopK(2)",  # 0.5.23 requires layer_id=
)
CALL_PARAMS = "h, r, cfg, reqs, pool, alloc, cache, spec, sp, server_args, pid"

# Plugin classes deriving from SGLang bases all three releases have, as plugins write them:
# a HiCache backend written against 0.5.19's abstract methods (0.5.23 added more), a
# LogitsProcessor whose _compute_lm_head lacks 0.5.23's `out=`, a KV pool taking what its
# callers pass through **kwargs, each calling methods of its base on self and super().
CLASS_SHAPES = (
    ("from sglang.srt.mem_cache.hicache_storage import HiCacheStorage",
     ("class Backend{i}(HiCacheStorage):\n"
      "    def __init__(self, storage_config, **kwargs):\n"
      "        self.config = storage_config\n"
      "    def get(self, key, target_location=None, target_sizes=None):\n        return None\n"
      "    def batch_get(self, keys, target_locations=None, target_sizes=None):\n"
      "        return [self.get(k) for k in keys]\n"
      "    def set(self, key, value=None, target_location=None, target_sizes=None):\n"
      "        return True\n"
      "    def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):\n"
      "        return all(self.set(k) for k in keys)\n"
      "    def exists(self, key):\n        return False\n")),
    ("from sglang.srt.layers.logits_processor import LogitsProcessor",
     ("class Head{i}(LogitsProcessor):\n"
      "    def _compute_lm_head(self, hidden_states, lm_head, embedding_bias=None):\n"
      "        return super()._compute_lm_head(hidden_states, lm_head, embedding_bias)\n")),
    ("from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool",
     ("class Pool{i}(MHATokenToKVPool):\n"
      "    def get_cpu_copy(self, indices, **kwargs):\n"
      "        return super().get_cpu_copy(indices, **kwargs)\n"
      "    def load_cpu_copy(self, kv_cache_cpu, indices, **kwargs):\n"
      "        return super().load_cpu_copy(kv_cache_cpu, indices, **kwargs)\n"
      "    def get_key_buffer(self, layer_id):\n"
      "        return super().get_key_buffer(layer_id)\n"
      "    def size_of(self, layer_id):\n"
      "        return self.get_value_buffer(layer_id).numel()\n")),
)
CLASSES_PER_MODULE = 25
CALLS_PER_FUNCTION = 5
CALL_MODULES = 4


def hooks_source(definitions: Sequence[str],
                 registrations: Sequence[tuple[str, str, str]]) -> str:
    """Returns ``plug/hooks.py``: the hook ``definitions``, then ``register`` making each of
    the ``(target, hook type, hook name)`` registrations."""
    body = "".join(f"    HookRegistry.register(\n        {target!r}, {name}, HookType.{kind}\n"
                   "    )\n" for target, kind, name in registrations)
    return ("from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
            + "\n\n".join(definitions)
            + "\n\ndef register():\n" + body)


def hooks_module(hooks: int = HOOKS) -> str:
    """Returns ``plug/hooks.py``: the hook functions and ``register`` with ``hooks``
    registrations."""
    registrations: list[tuple[str, str, str]] = []  # (target, type, hook name)
    definitions: list[str] = []
    for target, hook_type, source in EXPLICIT:
        name = source.split("(", 1)[0].removeprefix("def ")
        registrations.append((target, hook_type, name))
        definitions.append(source)
    for i in range(hooks - len(EXPLICIT)):
        hook_type = HOOK_TYPES[i % len(HOOK_TYPES)]
        target = TARGETS[i % len(TARGETS)]
        name = f"{hook_type.lower()}_{i}"
        registrations.append((target, hook_type, name))
        definitions.append(GENERIC[hook_type].format(name=name))
    return hooks_source(definitions, registrations)


SPREAD_TARGETS = 600
"""``--huge``'s second plugin: its hooks spread over this many functions 0.5.23 defines."""
EXPLICIT_SHAPES = {
    "AFTER": "def {name}(result, first, second=None):\n    return result\n",
    "AROUND": "def {name}(original_fn, first, second=None):\n"
              "    return original_fn(first, second)\n",
    "BEFORE": "def {name}(first, second=None):\n    return None\n",
    "REPLACE": "def {name}(first, second=None):\n    return None\n",
}
"""Hooks with a fixed parameter list: they misfit most targets, so SGLang's call sites are read."""


def real_functions(index: ReleaseIndex, count: int) -> list[str]:
    """Returns ``count`` module-level functions ``index``'s release defines (``sglang.srt``,
    tests left out), spread evenly over them in sorted order."""
    index.load_all()
    found = sorted(f"{s.name}.{name}" for s in index.summaries()
                   if s.name.startswith("sglang.srt.") and ".test" not in s.name
                   for name, kind in s.defined.items()
                   if kind == "function" and not name.startswith("_"))
    step = max(1, len(found) // count)
    return found[::step][:count]


def spread_hooks_module(targets: Sequence[str], hooks: int) -> str:
    """Returns ``plug/hooks.py`` with ``hooks`` registrations spread over ``targets``: every
    third hook takes a fixed parameter list, the others ``*args, **kwargs``."""
    registrations: list[tuple[str, str, str]] = []
    definitions: list[str] = []
    for i in range(hooks):
        hook_type = HOOK_TYPES[i % len(HOOK_TYPES)]
        name = f"{hook_type.lower()}_{i}"
        shapes = EXPLICIT_SHAPES if i % 3 == 0 else GENERIC
        registrations.append((targets[i % len(targets)], hook_type, name))
        definitions.append(shapes[hook_type].format(name=name))
    return hooks_source(definitions, registrations)


def call_modules() -> list[str]:
    """Returns the call modules' sources: 200 calls, five to a plugin function."""
    texts = [*MISFITS, *(CALL_TEXTS[i % len(CALL_TEXTS)] for i in range(CALLS - len(MISFITS)))]
    per_module = CALLS // CALL_MODULES
    modules = []
    for m in range(CALL_MODULES):
        mine = texts[m * per_module:(m + 1) * per_module]
        functions = []
        for f in range(0, len(mine), CALLS_PER_FUNCTION):
            lines = "".join(f"    out.append({text})\n"
                            for text in mine[f:f + CALLS_PER_FUNCTION])
            functions.append(f"def use_{m}_{f // CALLS_PER_FUNCTION}({CALL_PARAMS}):\n"
                             f"    out = []\n{lines}    return out\n")
        modules.append("\n".join(IMPORTS) + "\n\n\n" + "\n\n".join(functions))
    return modules


def class_modules(classes: int) -> list[str]:
    """Returns the class modules' sources: ``classes`` SGLang subclasses, 25 to a module."""
    imports = "\n".join(line for line, _ in CLASS_SHAPES)
    bodies = [CLASS_SHAPES[i % len(CLASS_SHAPES)][1].format(i=i) for i in range(classes)]
    return [imports + "\n\n\n" + "\n\n".join(bodies[at:at + CLASSES_PER_MODULE])
            for at in range(0, classes, CLASSES_PER_MODULE)]


def write_plugin(root: Path, *, hooks: int = HOOKS, classes: int = 0,
                 targets: Sequence[str] = ()) -> Path:
    """Writes the plugin project under ``root`` and returns its folder (its hooks spread
    over ``targets`` when given)."""
    project = root / "plug-project"
    package = project / "plug"
    package.mkdir(parents=True)
    (project / "pyproject.toml").write_text(textwrap.dedent("""\
        [project]
        name = "plug"
        version = "0.1.0"

        [project.entry-points."sglang.srt.plugins"]
        p = "plug.hooks:register"
        """), encoding="utf-8")
    (package / "__init__.py").write_text('"""A generated SGLang plugin."""\n', encoding="utf-8")
    hooks_text = spread_hooks_module(targets, hooks) if targets else hooks_module(hooks)
    (package / "hooks.py").write_text(hooks_text, encoding="utf-8")
    for i, source in enumerate(call_modules()):
        (package / f"calls_{i}.py").write_text(source, encoding="utf-8")
    for i, source in enumerate(class_modules(classes)):
        (package / f"classes_{i}.py").write_text(source, encoding="utf-8")
    return project


def indexes(cache: Path) -> Iterator[ReleaseIndex]:
    """Yields a fresh index of each release (the on-disk index cache is shared).

    One at a time, as ``auxcheck check`` does: an index keeps the ASTs it parsed, and
    three alive at once make every garbage collection slower.
    """
    for version in RELEASES:
        yield ReleaseIndex(find_release(version, cache=cache), cache=cache)


def name_only(plugin: Path, cache: Path) -> int:
    """The baseline: imports and hook-target existence on each release; returns problems."""
    scan = scan_project(plugin)
    problems = 0
    for index in indexes(cache):
        stage = _import_stage(scan, index, _Hints(builtin_moves()))
        problems += len(stage.findings)
        for hook in scan.hooks:
            if hook.target is not None:
                problems += hook_target_problem(hook.target, hook.hook_type, index) is not None
    return problems


def full_check(plugin: Path, cache: Path) -> list[ReleaseResult]:
    """The full check: every stage of ``check_release`` on each release, the others its
    peers (as ``auxcheck check`` runs it: all three indexes alive at once)."""
    scan = scan_project(plugin)
    found = list(indexes(cache))
    return [check_release(scan, index, moves=builtin_moves(),
                          peers=[i for i in found if i is not index]) for index in found]


def command(plugin: Path, cache: Path) -> float:
    """Returns the wall seconds of one ``auxcheck check --sglang`` subprocess (exit 0 or 1)."""
    env = {**os.environ, "AUXCHECK_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "auxcheck", "check", str(plugin), "--skip", "imports",
         "--skip", "mypy", "--skip", "contract", "--offline", "--sglang", ",".join(RELEASES)],
        env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"auxcheck check failed (exit {done.returncode}):\n{done.stdout}"
                         f"{done.stderr}")
    return seconds


def judged(results: Sequence[ReleaseResult]) -> list[str]:
    """Returns a line per release: how many hooks, calls and attributes its stages judged."""
    lines = []
    for result in results:
        stages = {s.stage: s for s in result.stages}
        counts = ", ".join(f"{name} {stages[name].checked if name in stages else 0}"
                           for name in COUNTED_STAGES)
        failed = [s.stage for s in result.stages if s.failed]
        verdict = f"FAIL ({', '.join(failed)})" if failed else "ok"
        lines.append(f"  sglang {result.version}: {counts}; {verdict}")
    return lines


def describe(scan: PluginScan) -> str:
    """Returns what the scan found in the generated plugin."""
    typed = sum(1 for h in scan.hooks if h.target is not None)
    return (f"plugin: {scan.files} files, {len(scan.hooks)} hook registrations "
            f"({typed} with a string target), {len(scan.calls)} calls into sglang "
            f"(HookRegistry.register included), {len(scan.subclasses)} classes")


def measure(root: Path, cache: Path, repeat: int, *, hooks: int, classes: int) -> tuple[
        PluginScan, list[ReleaseResult], float, float, float]:
    """Returns the plugin's scan, results, and its baseline, full-check and command times."""
    plugin = write_plugin(root, hooks=max(hooks, len(EXPLICIT)), classes=classes)
    scan = scan_project(plugin)
    name_only(plugin, cache)  # warm: builds the on-disk index cache if missing
    results = full_check(plugin, cache)
    baseline, full = medians(repeat, lambda: name_only(plugin, cache),
                             lambda: full_check(plugin, cache))
    command(plugin, cache)  # warm the subprocess's imports
    real = sorted(command(plugin, cache) for _ in range(repeat))[repeat // 2]
    return scan, results, baseline, full, real


def parse_floor(plugin: Path) -> int:
    """The parse floor: reads and parses every ``.py`` file of the plugin; returns how many."""
    files = sorted(plugin.rglob("*.py"))
    for path in files:
        ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return len(files)


def measure_huge(root: Path, cache: Path, repeat: int, *,
                 targets: Sequence[str] = ()) -> tuple[float, float]:
    """Returns the parse floor and the full check's time of a 5,000-hook plugin (spread
    over ``targets`` when given), taken side by side after one warm run."""
    plugin = write_plugin(root, hooks=HUGE, targets=targets)
    full_check(plugin, cache)  # warm: the on-disk caches of each release
    floor, full = medians(repeat, lambda: parse_floor(plugin), lambda: full_check(plugin, cache))
    return floor, full


def report_huge(cache: Path, repeat: int, root: Path) -> bool:
    """Prints the ``--huge`` rows and RESULT lines; returns whether both targets hold."""
    newest = ReleaseIndex(find_release(RELEASES[-1], cache=cache), cache=cache)
    spread = real_functions(newest, SPREAD_TARGETS)
    del newest
    spread_row = (f"check --sglang x3, 5,000 hooks over {len(spread)} sglang {RELEASES[-1]} "
                  "functions vs plugin parse floor")
    rows = (("check --sglang x3, 5,000 hooks vs plugin parse floor", ()), (spread_row, spread))
    ok = True
    for at, (what, targets) in enumerate(rows):
        floor, full = measure_huge(root / f"huge-{at}", cache, repeat, targets=targets)
        print(f"{what}: floor {floor:.3f} s, full check {full:.2f} s")
        ok = result_line(what, full, floor, at_most=HUGE_RATIO) and ok
    return ok


def report(scan: PluginScan, results: Sequence[ReleaseResult], baseline: float, full: float,
           real: float) -> None:
    """Prints one plugin's rows."""
    print(describe(scan))
    print(f"{'run':<52}{'seconds':>8}")
    print(f"{'baseline: name-only check (imports + hook targets)':<52}{baseline:>8.2f}")
    print(f"{'full check: check_release, 3 releases':<52}{full:>8.2f}")
    print(f"{'auxcheck check --sglang (subprocess)':<52}{real:>8.2f}")
    print("judged per release:")
    print("\n".join(judged(results)))
    print(f"full / baseline: {full / baseline:.1f}x")


def main() -> int:
    """Prints the baseline, full-check and command times; exits 1 over target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (median reported)")
    parser.add_argument("--small-only", action="store_true",
                        help=f"only the {HOOKS}-hook plugin (by default the plugin of "
                             f"{LARGE[0]} hooks and {LARGE[1]} classes, and two of {HUGE} "
                             "hooks against their parse floor, are measured too)")
    parser.add_argument("--large", action="store_true", help="(the default; kept for scripts)")
    parser.add_argument("--huge", action="store_true", help="(the default; kept for scripts)")
    args = parser.parse_args()
    args.large = args.huge = not args.small_only
    cache = cache_dir()
    with tempfile.TemporaryDirectory(prefix="auxcheck-bench-") as tmp:
        small = measure(Path(tmp) / "small", cache, args.repeat, hooks=HOOKS, classes=0)
        large = measure(Path(tmp) / "large", cache, args.repeat, hooks=LARGE[0],
                        classes=LARGE[1]) if args.large else None
        if args.huge:
            huge_ok = report_huge(cache, args.repeat, Path(tmp))
            print()
    report(*small)
    ok = result_line(f"check --sglang x3, {HOOKS} hooks + {CALLS} calls, full check vs the "
                     "name-only check", small[3], small[2],
                     target=f"full check < {TARGET_SECONDS:g} s", met=small[3] < TARGET_SECONDS)
    if large is not None:
        print()
        report(*large)
        ok = result_line(f"check --sglang x3, {LARGE[0]} hooks + {LARGE[1]} classes vs "
                         f"{HOOKS} hooks (full checks)", large[3], small[3],
                         at_most=LARGE_GROWTH) and ok
    if args.huge:
        ok = ok and huge_ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
