"""Write pyxis_nb/data/attention_configs.json from transformers' config classes.

The table of attention recipes (``px.memory.attention_table``) runs in a bare
kernel with numpy only, so the configs it reads are stored: for each model,
the config class, the arguments given to it and the keys of its
``to_dict()`` that attention and its cache depend on. Four rows give a
published checkpoint's shape as explicit values (Qwen3-1.7B, SmolLM2-135M,
Llama-3-8B, Gemma 3 4B); four are a class's defaults, each of which equals
one published checkpoint (``GptOssConfig``: gpt-oss-120b;
``DeepseekV3Config``: DeepSeek-V3; ``Qwen3NextConfig``: Qwen3-Next-80B-A3B;
``SmolLM3Config``, with its head_dim: SmolLM3-3B). ``Gemma3TextConfig()``'s
own defaults (26 layers, window 4,096) are Gemma 2 2B's shape and match no
released Gemma 3, so that row does not use them.

    .venv/bin/python tools/attention_configs.py          # write the file
    .venv/bin/python tools/attention_configs.py --check  # compare, exit 1 if not

tests/test_attention_configs_reference.py re-derives every entry with
``derive()`` and compares.
"""

from __future__ import annotations

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = ROOT / "pyxis_nb" / "data" / "attention_configs.json"

# The arguments for each model: FACTS.md section 1 (Qwen3-1.7B) and 5
# (SmolLM2-135M); Llama-3-8B's published config.json; Gemma 3 4B's
# published shape (google/gemma_pytorch gemma/config.py: 34 layers, 29
# sliding and 5 full, 8 query and 4 key/value heads of 256, window 1,024,
# the full layers' RoPE scaled linearly by 8); the class defaults for the
# rest, each a published checkpoint's shape (FACTS.md section 6).
MODELS = {
    "Qwen3-1.7B": ("Qwen3Config", dict(
        hidden_size=2048, num_attention_heads=16, num_key_value_heads=8,
        head_dim=128, num_hidden_layers=28, intermediate_size=6144,
        vocab_size=151936, max_position_embeddings=40960, rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
    "SmolLM2-135M": ("LlamaConfig", dict(
        hidden_size=576, num_attention_heads=9, num_key_value_heads=3,
        head_dim=64, num_hidden_layers=30, intermediate_size=1536,
        vocab_size=49152, max_position_embeddings=8192, rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 100000.0})),
    "Llama-3-8B-style GQA": ("LlamaConfig", dict(
        hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
        head_dim=128, num_hidden_layers=32, intermediate_size=14336,
        vocab_size=128256, max_position_embeddings=8192, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0})),
    "Gemma 3 4B": ("Gemma3TextConfig", dict(
        hidden_size=2560, num_attention_heads=8, num_key_value_heads=4,
        head_dim=256, num_hidden_layers=34, intermediate_size=10240,
        vocab_size=262208, max_position_embeddings=131072,
        sliding_window=1024, query_pre_attn_scalar=256, rms_norm_eps=1e-6,
        rope_parameters={
            "sliding_attention": {"rope_type": "default",
                                  "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "factor": 8.0,
                               "rope_theta": 1000000.0}})),
    "gpt-oss-120b": ("GptOssConfig", {}),
    "DeepSeek-V3": ("DeepseekV3Config", {}),
    "Qwen3-Next-80B-A3B": ("Qwen3NextConfig", {}),
    # the class has no head_dim field: its modules take hidden_size //
    # num_attention_heads = 128, written here for the table to read
    "SmolLM3-3B": ("SmolLM3Config", dict(head_dim=128)),
}

# The keys of to_dict() that the attention recipe and its cache read (kept
# where the config has them and they are not None).
KEYS = (
    "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "max_position_embeddings",
    "rope_parameters", "layer_types", "sliding_window", "attention_bias",
    "query_pre_attn_scalar", "attn_logit_softcapping", "hidden_act",
    "rms_norm_eps",
    # multi-head latent attention (DeepSeek-V3)
    "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "rope_interleave",
    # linear attention (Qwen3-Next)
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
    "linear_value_head_dim", "linear_conv_kernel_dim",
    # NoPE layers (SmolLM3: 1 = RoPE, 0 = none)
    "no_rope_layers",
)


def derive() -> dict:
    """Every entry, computed now from the installed transformers."""
    import transformers
    table = {"_about": (
        "Configs of the attention table (px.memory.attention_configs), "
        "written by tools/attention_configs.py from transformers "
        f"{transformers.__version__}'s config classes: config_class("
        "**kwargs).to_dict(), the keys attention reads.")}
    for name, (cls, kwargs) in MODELS.items():
        full = getattr(transformers, cls)(**kwargs).to_dict()
        table[name] = {
            "config_class": cls, "kwargs": kwargs,
            "config": {k: full[k] for k in KEYS
                       if full.get(k) is not None}}
    return table


def dumps(table: dict) -> str:
    """The file's text: sorted keys, two-space indent, a final newline."""
    return json.dumps(table, indent=2) + "\n"


def main(argv: list[str]) -> int:
    text = dumps(derive())
    if "--check" in argv:
        same = TARGET.exists() and TARGET.read_text() == text
        print(f"{TARGET.relative_to(ROOT)}: "
              f"{'up to date' if same else 'differs'}")
        return 0 if same else 1
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
