"""SGLang's defaults on arbiter's options, for its profiles (`constraints.profiles` reads
them through `pack_defaults("sglang")`, on first use, so naming the profiles imports
no module of this pack).

SGLang 0.5.23's own defaults (python/sglang/srt/arg_groups/fields, memory_hook.py,
overrides.py _page_size_default): one-token pages, radix cache and chunked prefill on,
overlap schedule on, an 8192-token chunk and a static fraction of 0.836 (the H100 tier;
the dialect derives both for the actual GPU), and the attention backend SGLang picks on
an H100 for a model without MLA: fa3 (model_override_base.get_default_attn_backend; rules
sglang.default-backend-*).

SGLang 0.5.16's on the same options are the same values (its wheel's field list,
arbiter/engines/sglang/fields-0.5.16.yaml: page_size 1, radix cache and overlap schedule
on; python/sglang/srt/server_args.py _handle_gpu_memory_settings: an 8192-token chunk and
the same reserve on an 80 GB GPU, 0.836 without the prefill CUDA graphs).
"""

from __future__ import annotations

DEFAULTS = {
    "sglang_config.attention_backend": "fa3",
    "kv_cache_config.tokens_per_block": 1,
    "kv_cache_config.enable_block_reuse": True,
    "kv_cache_config.free_gpu_memory_fraction": 0.836,
    "build_config.max_num_tokens": 8192,
    "scheduler_config.enable_chunked_context": True,
    "runtime_config.disable_overlap_scheduler": False,
}
