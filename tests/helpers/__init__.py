"""Helpers the tests share: not tests themselves (pytest collects nothing here).

No test module imports another; what two of them need lives here:
``paths`` (where the checkout's files are), ``doubles`` (plugin objects), ``plugin_sources``
(plugin source text), ``migration`` (the rewrite and scan on text), ``broken_files`` (files
that cannot be read or parsed), ``releases`` (real and fake SGLang releases),
``sglang_process`` (an SGLang process on CPU) and ``processes`` (waiting on processes).
"""
