"""SGLang's Req, ScheduleBatch and SamplingBatchInfo are partial in the stubs: a plugin that
builds them with SGLang's own parameters and sets fields the stubs do not declare passes, as
the call binds in every release (`auxcheck check --sglang` judges the call per release)."""

from __future__ import annotations

from sglang.srt.managers.schedule_batch import Req, ScheduleBatch
from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo


def build() -> ScheduleBatch:
    req = Req(rid="r0", origin_input_text="hi", origin_input_ids=[1, 2], sampling_params=None,
              return_logprob=False, top_logprobs_num=0, stream=False, eos_token_ids={2})
    req.plugin_tag = "mine"
    req.rid = "r1"
    batch = ScheduleBatch(reqs=[req])
    batch.plugin_state = {}
    info = SamplingBatchInfo(temperatures=None, top_ps=None, top_ks=None, min_ps=None,
                             is_all_greedy=True, vocab_size=128)
    info.plugin_scale = 1.0
    return batch
