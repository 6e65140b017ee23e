"""Writes a tiny random Llama and its tokenizer to a folder: a model SGLang serves on CPU in seconds.

Run by the environment's own interpreter (``python tiny_model.py OUT``), where transformers
and tokenizers are installed; nothing is downloaded. Two layers, hidden size 64, a vocabulary
of 128 (special tokens, then one token per printable ASCII character), float32, seeded: the
same weights on every build. Its outputs are noise; what matters is that SGLang runs every
step of serving it for real.
"""

from __future__ import annotations

import sys


def main(out: str) -> None:
    """Saves the model and tokenizer into ``out``."""
    import torch
    from tokenizers import (  # type: ignore[import-not-found]  # the environment's own
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
    )
    from transformers import (  # type: ignore[import-not-found]
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
    )

    specials = ["<unk>", "<s>", "</s>", "<pad>"]
    vocab = {token: i for i, token in enumerate(specials + [chr(c) for c in range(32, 127)])}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>",
                                   bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    fast.chat_template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    fast.save_pretrained(out)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512, bos_token_id=1, eos_token_id=2,
                         pad_token_id=3, torch_dtype="float32")
    LlamaForCausalLM(config).to(torch.float32).save_pretrained(out)


if __name__ == "__main__":
    main(sys.argv[1])
