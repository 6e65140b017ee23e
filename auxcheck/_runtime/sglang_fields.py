"""The public attributes of SGLang 0.5.23's real request, batch and sampling objects.

auxcheck's stand-ins (:mod:`auxcheck._runtime.scheduler`, :mod:`auxcheck._runtime.forward`) carry the
fields plugins commonly read; a plugin reading one of these that a stand-in does not simulate
gets a note ("cannot tell"), never a failure. Taken from real objects built in SGLang's CPU
environment by ``tests/sglang_cpu/fields.py``; ``tests/sglang_cpu/test_stand_ins.py`` checks
this table against them.
"""

from __future__ import annotations

from auxcheck._core.report import Finding

__all__ = ["REAL_FIELDS", "STAND_INS", "unsimulated", "unsimulated_note"]

REAL_FIELDS: dict[str, frozenset[str]] = {
    "Req": frozenset({
        'advance_cache_request_handle', 'already_computed', 'arrival_processed_tokens',
        'auxiliary_swa_host_hit_length', 'beam_group', 'best_match_node', 'bootstrap_host',
        'bootstrap_port', 'bootstrap_room', 'build_rebootstrap_payload', 'cache_request_handle',
        'cache_salt', 'cached_tokens', 'cached_tokens_device', 'cached_tokens_host',
        'cached_tokens_storage', 'check_match_stop_str_prefix', 'custom_logit_processor',
        'customized_info', 'decision_layout', 'decode_batch_idx', 'decoded_text', 'detach_kv',
        'determine_dllm_phase', 'dimensions', 'disagg_decode_prefix_len', 'disagg_kv_sender',
        'disagg_prefill_dp_rank', 'discard_output_reason', 'dllm_algo_state', 'dllm_block_offset',
        'dllm_config', 'dllm_has_literal_mask', 'dllm_incomplete_ids', 'dllm_initialized',
        'dllm_phase', 'early_send_prefix_end', 'embedding', 'eos_token_ids',
        'expected_kv_checksum', 'extend_batch_idx', 'extend_end', 'extend_image_inputs',
        'extend_len', 'extra_key', 'finished', 'finished_len', 'finished_output',
        'finished_reason', 'fulfilled_storage_hit_len', 'full_untruncated_fill_ids',
        'get_fill_ids', 'get_mm_token_counts', 'grammar', 'grammar_key', 'grammar_wait_ct',
        'has_log_time_stats', 'hidden_states', 'hidden_states_tensor', 'hisparse_staging',
        'host_hit_is_storage', 'host_hit_length', 'host_loaded_length', 'http_worker_ipc',
        'indexer_topk', 'inflight_middle_chunks', 'inherit_mm_token_counts', 'init_diffusion_llm',
        'init_incremental_detokenize', 'init_next_round_input', 'input_embeds',
        'input_logprob_sent', 'input_token_logprobs', 'is_beam_leader', 'is_dllm',
        'is_dllm_prefill', 'is_prefill_only', 'is_retracted', 'kv', 'kv_hints',
        'kv_rotation_base', 'last_host_node', 'last_node', 'load_kv_cache', 'lock',
        'log_time_stats', 'logprob', 'logprob_start_len', 'lora_id', 'mamba_branching_seqlen',
        'mamba_host_hit_length', 'mamba_lazy_checkpoint', 'materialized_host_hit_len',
        'metadata_buffer_index', 'metrics_collector', 'mm_audio_tokens', 'mm_image_tokens',
        'mm_token_counts_ready', 'mm_video_tokens', 'multi_item_delimiter_indices',
        'multimodal_inputs', 'needs_host_load_back', 'next_output_finishes_by_length',
        'num_matched_prefix_tokens', 'offload_kv_cache', 'origin_input_ids',
        'origin_input_ids_unpadded', 'output_dsa_topk_indices', 'output_ids',
        'output_ids_through_stop', 'output_topk_index', 'output_topk_p', 'owned_kv_len',
        'pd_rebootstrap_forced_output_id', 'pending_bootstrap', 'pooled_hidden_state',
        'positional_embed_overrides', 'prefill_attempt_count', 'prefix_len', 'priority',
        'read_offset', 'reasoning_tokens', 'refresh_fill_ids', 'release_mm_inputs_on_abort',
        'require_reasoning', 'reset_for_retract', 'retracted_stain', 'retraction_count',
        'retraction_mb_id', 'return_flat_raw_top_logprobs', 'return_hidden_states',
        'return_hidden_states_mode', 'return_indexer_topk', 'return_logprob',
        'return_pooled_hidden_states', 'return_routed_experts', 'return_sampling_mask', 'rid',
        'routed_dp_rank', 'routed_experts', 'routed_experts_start_len', 'routing_key',
        'sampling_logprobs_mode', 'sampling_mask_rows', 'sampling_params',
        'send_decode_id_offset', 'send_output_token_logprobs_offset', 'send_token_offset',
        'seqlen', 'session', 'session_generation', 'session_id', 'set_finish_with_abort',
        'skip_radix_cache_insert', 'spec_cap_lens_histogram', 'spec_correct_drafts_histogram',
        'spec_num_block_accept_tokens', 'spec_num_cap_tokens', 'spec_num_correct_drafts',
        'spec_verify_ct', 'staged_prefetch_plan', 'start_send_idx', 'storage_hit_length',
        'storage_hit_start', 'storage_prefetch_last_match_len', 'storage_prefetch_retry_attempts',
        'stream', 'surr_offset', 'swa_branching_seqlen', 'swa_host_hit_length', 'tail_str',
        'temp_input_token_ids_logprobs_idx', 'temp_input_token_ids_logprobs_val',
        'temp_input_top_logprobs_idx', 'temp_input_top_logprobs_val', 'temp_scaled_logprobs',
        'time_stats', 'tmp_end_idx', 'to_finish', 'token_indices_to_pool', 'token_type_ids',
        'tokenizer', 'top_p_normalized_logprobs', 'update_finish_state',
        'update_reasoning_tokens', 'update_self_opened_reasoning_tokens',
        'update_spec_cap_lens_histogram', 'update_spec_correct_drafts_histogram', 'vocab_size',
        'weight_version_events'
    }),
    "SamplingParams": frozenset({
        'beam_width', 'custom_params', 'ebnf', 'ebnf_full_assistant', 'frequency_penalty',
        'ignore_eos', 'is_normalized', 'json_schema', 'logit_bias', 'max_new_tokens',
        'min_new_tokens', 'min_p', 'n', 'no_stop_trim', 'normalize', 'presence_penalty', 'regex',
        'repetition_penalty', 'sampling_seed', 'skip_special_tokens',
        'spaces_between_special_tokens', 'stop', 'stop_regex', 'stop_regex_max_len',
        'stop_regex_strs', 'stop_str_max_len', 'stop_strs', 'stop_token_ids', 'stream_interval',
        'structural_tag', 'temperature', 'top_k', 'top_p', 'verify', 'watermark'
    }),
    "ScheduleBatch": frozenset({
        'after_idle_gap', 'batch_is_full', 'batch_size', 'beam_tail', 'can_run_decode_cuda_graph',
        'can_run_dp_draft_cuda_graph', 'can_run_dp_prefill_cuda_graph', 'check_decode_mem',
        'chunked_req', 'chunked_req_next_prompt_token', 'contains_last_prefill_chunk',
        'convert_decode_to_extend', 'copy', 'cumulate_penalty_output_tokens', 'decoding_reqs',
        'device', 'dllm_config', 'dp_balance_stats', 'dp_cooperation_info',
        'dp_prefill_cuda_graph_max_prefix_len', 'dp_spec_prefill_coordination_applied',
        'dp_spec_prefill_coordination_metadata', 'draft_global_num_tokens',
        'draft_global_num_tokens_for_logprob', 'enable_overlap', 'encoder_cached', 'encoder_lens',
        'encoder_lens_cpu', 'encoder_out_cache_loc', 'encoder_swa_reset', 'engram_history',
        'engram_staged_rows', 'extend_input_logprob_token_ids', 'extend_lens',
        'extend_logprob_start_lens', 'extend_num_tokens', 'filter_batch', 'forward_iter',
        'forward_mode', 'global_forward_mode', 'global_num_tokens',
        'global_num_tokens_for_logprob', 'global_spec_verify_tier_num_tokens',
        'grammar_needs_sync', 'has_grammar', 'hicache_consumer_index', 'hisparse_coordinator',
        'init_new', 'inner_idle_batch', 'input_embeds', 'input_ids', 'is_dllm', 'is_empty',
        'is_extend_in_batch', 'is_prefill_only', 'launch_ts', 'mamba_clear_indices',
        'mamba_cow_dst_indices', 'mamba_cow_src_indices', 'mamba_decode_batch_idx_cpu',
        'mamba_lazy_prealloc_at_boundary', 'mamba_lazy_spec_prepare',
        'mamba_lazy_spec_track_positions_cpu', 'mamba_lazy_undo_prealloc_at_boundary',
        'mamba_prefill_track_mask_cpu', 'mamba_track_buffer_indices', 'mamba_track_indices',
        'mamba_track_mask', 'mamba_track_mask_cpu', 'mamba_track_mask_next_cpu',
        'mamba_track_seqlens', 'mamba_track_seqlens_cpu', 'maybe_evict_swa', 'merge_batch',
        'mix_running_indices', 'mix_running_indices_cpu', 'mix_with_running', 'model_config',
        'multimodal_inputs', 'ne_skip_token_table_update', 'ne_token_table',
        'new_tokens_required_next_decode', 'orig_seq_lens', 'out_cache_loc', 'out_cache_loc_dsv4',
        'prefill_chunk_processed', 'prefill_input_ids_cpu', 'prefill_stats', 'prefix_lens',
        'prepare_encoder_info_decode', 'prepare_encoder_info_extend', 'prepare_for_decode',
        'prepare_for_extend', 'prepare_for_idle', 'prepare_for_prebuilt',
        'prepare_for_split_prefill', 'process_prebuilt', 'recv_skipper_forward_mode',
        'release_req', 'replace_embeds', 'replace_positions', 'req_pool_indices',
        'req_pool_indices_cpu', 'req_to_token_pool', 'reqs', 'retract_decode',
        'return_hidden_states', 'return_hidden_states_mode', 'return_logprob', 'sampling_info',
        'seq_lens', 'seq_lens_cpu', 'seq_lens_sum', 'spec_algorithm', 'spec_info',
        'spec_verify_tier_num_tokens', 'split_forward_batch', 'split_forward_count',
        'split_index', 'split_prefill_finished', 'split_prefill_start', 'tbo_split_seq_index',
        'token_ids_logprobs', 'token_to_kv_pool_allocator', 'top_logprobs_nums', 'tree_cache'
    }),
    "SamplingBatchInfo": frozenset({
        'acc_additive_penalties', 'acc_scaling_penalties', 'adjusted_filter_batch',
        'adjusted_from_schedule_batch', 'adjusted_merge_batch', 'apply_logits_bias',
        'apply_logits_bias_with_observer', 'bootstrap_room_ids_int', 'copy_for_forward',
        'custom_logit_processor', 'custom_params', 'device', 'filter_batch',
        'from_schedule_batch', 'grammar_mask', 'grammars', 'has_custom_logit_processor',
        'has_watermark_candidates', 'is_all_greedy', 'is_any_greedy', 'logit_bias', 'max_top_k',
        'merge_batch', 'min_ps', 'need_min_p_sampling', 'need_top_k_sampling',
        'need_top_p_sampling', 'npu_top_k_top_p_eligible', 'penalizer_orchestrator',
        'return_sampling_masks', 'return_sampling_support_logprobs', 'rids_int',
        'sampling_mask_batch_indices', 'sampling_mask_top_ks', 'sampling_seed',
        'sampling_support_logprobs_capture_indices', 'temperatures', 'top_ks', 'top_ps',
        'update_penalties', 'update_regex_vocab_mask', 'vocab_size', 'watermark_candidates_host',
        'watermark_context_windows', 'watermark_enabled', 'watermark_keys'
    }),
    "BaseGrammarObject": frozenset({
        'accept_token', 'allocate_vocab_mask', 'apply_vocab_mask', 'copy', 'current_token',
        'fill_vocab_mask', 'fill_vocab_mask_batched', 'finished', 'grammar_stats',
        'is_terminated', 'jump_and_retokenize', 'jump_forward_str_state', 'maybe_init_reasoning',
        'move_vocab_mask', 'reset_vocab_mask', 'rollback', 'try_jump_forward',
    }),
}
"""SGLang's class name -> the public names its objects have (fields, methods, properties)."""

STAND_INS = {"FakeReq": "Req", "FakeBatch": "ScheduleBatch",
             "FakeSamplingParams": "SamplingParams", "FakeSamplingInfo": "SamplingBatchInfo",
             "FakeGrammar": "BaseGrammarObject"}
"""auxcheck's stand-in class name -> the SGLang class it stands for."""


def unsimulated(error: BaseException) -> tuple[str, str, str] | None:
    """Returns (stand-in, SGLang class, attribute) when ``error`` is a stand-in's missing real field.

    That is an AttributeError raised by one of auxcheck's stand-ins for a name the SGLang
    object it stands for has: the plugin is not wrong, auxcheck cannot simulate it. Any
    other error gives None.
    """
    if not isinstance(error, AttributeError):
        return None
    obj, name = getattr(error, "obj", None), getattr(error, "name", None)
    stand_in = type(obj).__name__
    real = STAND_INS.get(stand_in)
    if (real is None or not isinstance(name, str)
            or not type(obj).__module__.startswith("auxcheck.")
            or name not in REAL_FIELDS[real]):
        return None
    return stand_in, real, name


def unsimulated_note(error: BaseException, what: str, at: str, obj: object) -> Finding | None:
    """Returns the AUX205 note for ``error`` raised in ``what`` (a hook, consume), or None."""
    found = unsimulated(error)
    if found is None:
        return None
    stand_in, real, name = found
    return Finding.of("AUX205", f"{what} read `{name}` of SGLang's {real}, which auxcheck's "
                      f"{stand_in} does not simulate {at}".rstrip(),
                      "auxcheck cannot tell what the rest of it does", obj)
