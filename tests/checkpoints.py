"""Small Qwen3 checkpoints in Hugging Face's format, written for the tests.

Written with ``safetensors`` itself (bf16 by default, as Qwen3 ships), with
a ``config.json`` in transformers 5's form, one file or several shards with
``model.safetensors.index.json``. No torch needed.
"""

import json
import pathlib

import numpy as np

import pyxis_nb as px

SIZES = dict(vocab_size=64, hidden_size=16, intermediate_size=24,
             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             head_dim=4, max_position_embeddings=32, rms_norm_eps=1e-6,
             rope_theta=10_000.0)
# the circuit tests' model: 50 tokens (the bad-input messages name 0 .. 49)
CIRCUIT_SIZES = SIZES | dict(vocab_size=50, rope_theta=100.0)


def config_json(tied=True, **changes) -> dict:
    """A config.json of SIZES as transformers 5 writes it, with changes."""
    sizes = {k: v for k, v in SIZES.items() if k != "rope_theta"}
    return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
            **sizes, "hidden_act": "silu", "attention_bias": False,
            "rope_parameters": {"rope_theta": SIZES["rope_theta"],
                                "rope_type": "default"},
            "use_sliding_window": False, "sliding_window": None,
            "tie_word_embeddings": tied, "eos_token_id": 0, **changes}


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 values cut to bfloat16 (round toward zero), as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32)


def tiny_model(tied=True, seed=0, mlp=True) -> px.Qwen3ForCausalLM:
    """A random float32 model of SIZES whose weights are exact in bf16."""
    sizes = SIZES | ({} if mlp else {"intermediate_size": 0})
    model = px.Qwen3ForCausalLM.from_config(
        px.ModelConfig(**sizes), seed=seed, dtype=np.float32,
        tie_word_embeddings=tied)
    state = {k: bf16_round(v) for k, v in model.state_dict().items()}
    return px.Qwen3ForCausalLM.from_state_dict(state, model.config)


def write_safetensors(file, arrays: dict, dtype: str = "BF16") -> None:
    """``arrays`` (float) into one safetensors file, in ``dtype``."""
    from safetensors import TensorSpec, serialize_file
    kept, specs = [], {}
    for name, x in arrays.items():
        if dtype == "BF16":
            raw = (np.asarray(x, np.float32).view(np.uint32) >> 16)
            raw = np.ascontiguousarray(raw.astype("<u2"))
        else:
            raw = np.ascontiguousarray(np.asarray(x).astype(
                {"F32": "<f4", "F64": "<f8", "I64": "<i8"}[dtype]))
        kept.append(raw)
        specs[name] = TensorSpec(
            dtype={"BF16": "bfloat16", "F32": "float32", "F64": "float64",
                   "I64": "int64"}[dtype],
            shape=list(raw.shape), data_ptr=raw.ctypes.data,
            data_len=raw.nbytes)
    serialize_file(specs, str(file), metadata={"format": "pt"})


def write_checkpoint(folder, model=None, *, shards=1, dtype="BF16",
                     config=None, state=None) -> pathlib.Path:
    """A checkpoint folder of ``model`` (default ``tiny_model()``)."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model = tiny_model() if model is None else model
    state = model.state_dict() if state is None else state
    config = config_json(model.tie_word_embeddings) if config is None \
        else config
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "generation_config.json").write_text(
        json.dumps({"eos_token_id": 0, "pad_token_id": 0}))
    if shards == 1:
        write_safetensors(folder / "model.safetensors", state, dtype)
        return folder
    names = list(state)
    weight_map = {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = names[s::shards]
        write_safetensors(folder / file, {k: state[k] for k in part}, dtype)
        weight_map |= {k: file for k in part}
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": weight_map}, indent=2))
    return folder


# ------------------------------------------------------------------ GGUF
# HF name (without .weight) -> llama.cpp's tensor name, as its converter
# writes them (gguf's TensorNameMap), for the two architectures px reads.
GGUF_NAMES = {"model.embed_tokens": "token_embd", "model.norm": "output_norm",
              "lm_head": "output"}
GGUF_LAYER_NAMES = {
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down"}


def gguf_name(hf_name: str) -> str:
    """``model.layers.3.mlp.up_proj.weight`` -> ``blk.3.ffn_up.weight``."""
    stem = hf_name.removesuffix(".weight")
    if stem in GGUF_NAMES:
        return GGUF_NAMES[stem] + ".weight"
    _, _, i, rest = stem.split(".", 3)
    return f"blk.{i}.{GGUF_LAYER_NAMES[rest]}.weight"


def llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's converter's ``permute`` of q/k rows (Llama models)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def write_gguf(file, state: dict, config: px.ModelConfig, *, arch="qwen3",
               tokenizer=None, types=None, metadata=None, eos_token_id=0,
               skip=(), permute=True, extra=None,
               pre="gpt-2") -> pathlib.Path:
    """``state`` (HF names) as a GGUF file, as llama.cpp's converter would.

    ``types``: {HF name: ggml type name} (default F32; 2-D weights may be
    Q8_0, Q4_1, F16, ...). ``tokenizer``: a tokenizer.json (dict) whose BPE
    vocabulary and merges go into ``tokenizer.ggml.*``, ``pre`` naming
    how it splits text (llama.cpp's names: GPT-2's regex, ``qwen2``, ...).
    ``metadata``:
    extra ``{key: value}`` (a str, bool, float or int; ``None`` removes a
    key). Llama q/k rows are permuted as llama.cpp does (``permute``).
    ``extra``: more tensors, {GGUF name: array}, written as they are.
    """
    import gguf
    from gguf import GGMLQuantizationType as Q
    c, file = config, pathlib.Path(file)
    w = gguf.GGUFWriter(str(file), arch)
    fields = {
        f"{arch}.block_count": c.num_hidden_layers,
        f"{arch}.context_length": c.max_position_embeddings,
        f"{arch}.embedding_length": c.hidden_size,
        f"{arch}.feed_forward_length": c.intermediate_size,
        f"{arch}.attention.head_count": c.num_attention_heads,
        f"{arch}.attention.head_count_kv": c.num_key_value_heads,
        f"{arch}.rope.freq_base": float(c.rope_theta),
        f"{arch}.attention.layer_norm_rms_epsilon": float(c.rms_norm_eps),
        f"{arch}.vocab_size": c.vocab_size,
        "tokenizer.ggml.eos_token_id": eos_token_id,
    }
    fields |= ({f"{arch}.rope.dimension_count": c.head_dim} if arch == "llama"
               else {f"{arch}.attention.key_length": c.head_dim,
                     f"{arch}.attention.value_length": c.head_dim})
    for key, value in (fields | dict(metadata or {})).items():
        if value is None:
            continue
        if isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        else:
            w.add_uint32(key, value)
    if tokenizer is not None:
        model = tokenizer["model"]
        tokens = sorted(model["vocab"], key=model["vocab"].get)
        special = {t["content"] for t in tokenizer["added_tokens"]}
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(pre)
        w.add_token_list(tokens)
        w.add_token_types([3 if t in special else 1 for t in tokens])
        w.add_token_merges([" ".join(m) if isinstance(m, list) else m
                            for m in model["merges"]])
    for name, x in state.items():
        if name in skip:
            continue
        x = np.asarray(x, np.float32)
        if arch == "llama" and permute and (".q_proj." in name
                                            or ".k_proj." in name):
            heads = (c.num_attention_heads if ".q_proj." in name
                     else c.num_key_value_heads)
            x = llama_cpp_permute(x, heads)
        kind = Q[(types or {}).get(name, "F32")]
        if kind in (Q.F32, Q.F16, Q.F64):
            w.add_tensor(gguf_name(name), x.astype(
                {Q.F32: np.float32, Q.F16: np.float16,
                 Q.F64: np.float64}[kind]))
        else:
            w.add_tensor(gguf_name(name), gguf.quants.quantize(x, kind),
                         raw_dtype=kind)
    for name, x in (extra or {}).items():
        w.add_tensor(name, x)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return file
