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
