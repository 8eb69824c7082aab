"""Memory, parameter and FLOP arithmetic of attention.

Shape legend (the sizes these formulas multiply; HF's names in brackets):
    L        layers (num_hidden_layers)
    d_model  hidden_size
    H        query heads (num_attention_heads)
    H_kv     key/value heads (num_key_value_heads)
    d_head   head_dim
    T        sequence length (tokens)
    B        batch (sequences held)

``dtype_bytes`` is the size of one stored value: 2 for bf16/fp16, 4 for
fp32, 1 for fp8. :func:`attention_configs` holds configs taken from
transformers' config classes, so the tables run with numpy alone.
"""

from __future__ import annotations

import json
import pathlib

from ._checks import (as_config_dict, check_bool, check_choice, check_int,
                      check_positive_int)

__all__ = [
    "ATTENTION_CONFIGS",
    "LAYER_TYPES",
    "attention_configs",
    "attention_recipe",
    "attention_table",
    "cache_bytes",
    "layer_cache_bytes",
    "decode_step_flops",
    "kv_cache_bytes",
    "attention_parameter_count",
    "score_matrix_bytes",
    "format_bytes",
    "linear_attention_state_bytes",
    "mla_decode_cost",
]


def _check_count(name: str, value) -> int:
    """An integer >= 0 (a length or batch of 0 costs 0 bytes)."""
    return check_int(name, value, low=0)


def kv_cache_bytes(num_hidden_layers: int, num_key_value_heads: int,
                   head_dim: int, seq_len: int, dtype_bytes: int = 2,
                   batch_size: int = 1) -> int:
    """Bytes of a KV cache: ``2 x L x H_kv x d_head x bytes x T x B``.

    The 2 counts keys and values. ``H_kv`` is not the group size ``n_rep``
    (a known error of published estimators).

    Parameters
    ----------
    num_hidden_layers, num_key_value_heads, head_dim : int, L, H_kv, d_head
    seq_len, batch_size : int >= 0, tokens ``T`` and sequences ``B`` held
    dtype_bytes : int, bytes per value (2: bf16)
    """
    layers = check_positive_int("num_hidden_layers", num_hidden_layers)
    H_kv = check_positive_int("num_key_value_heads",
                              num_key_value_heads)
    d_head = check_positive_int("head_dim", head_dim)
    nbytes = check_positive_int("dtype_bytes", dtype_bytes)
    T = _check_count("seq_len", seq_len)
    B = _check_count("batch_size", batch_size)
    return 2 * layers * H_kv * d_head * nbytes * T * B


def linear_attention_state_bytes(config, dtype_bytes: int = 2,
                                 batch_size: int = 1, *,
                                 state_dtype_bytes: int | None = None
                                 ) -> int:
    """Bytes one linear-attention layer holds, at any length.

    Qwen3-Next's Gated DeltaNet layer keeps a ``d_k x d_v`` state per value
    head and the last ``linear_conv_kernel_dim`` inputs of its convolution
    (``2 H_k d_k + H d_v`` channels), as transformers' cache stores them.

    Parameters
    ----------
    config : a Qwen3NextConfig, its ``to_dict()`` or an attention_configs entry
    dtype_bytes : int, bytes per value of the model and its conv state
    batch_size : int, sequences held, ``B`` >= 0
    state_dtype_bytes : int; None: ``max(dtype_bytes, 4)``, as HF's float32
    """
    c = _config_values(config, (
        "linear_num_key_heads", "linear_num_value_heads",
        "linear_key_head_dim", "linear_value_head_dim",
        "linear_conv_kernel_dim"))
    nbytes = check_positive_int("dtype_bytes", dtype_bytes)
    B = _check_count("batch_size", batch_size)
    H, d_k, d_v = (c["linear_num_value_heads"], c["linear_key_head_dim"],
                   c["linear_value_head_dim"])
    state_nbytes = (max(nbytes, 4) if state_dtype_bytes is None else
                    check_positive_int("state_dtype_bytes",
                                       state_dtype_bytes))
    conv_dim = 2 * c["linear_num_key_heads"] * d_k + H * d_v
    return (H * d_k * d_v * state_nbytes
            + conv_dim * c["linear_conv_kernel_dim"] * nbytes) * B


def _config_values(config, names) -> dict:
    """``names`` of a config (a dict or an object), each an int >= 1."""
    config = as_config_dict(config)
    missing = [n for n in names if n not in config]
    if missing:
        raise ValueError(f"config has no {missing}: expected the keys "
                         f"{list(names)}")
    return {n: check_positive_int(f"config[{n!r}]", config[n])
            for n in names}


def attention_parameter_count(hidden_size: int, num_attention_heads: int,
                              num_key_value_heads: int, head_dim: int, *,
                              qk_norm: bool = False, bias: bool = False
                              ) -> int:
    """Weights of one layer: ``q_proj + k_proj + v_proj + o_proj``.

    Parameters
    ----------
    hidden_size, num_attention_heads, num_key_value_heads, head_dim : int
    qk_norm : bool, add Qwen3's ``q_norm`` and ``k_norm`` (``d_head`` each)
    bias : bool, add Qwen2's q/k/v biases
    """
    d_model = check_positive_int("hidden_size", hidden_size)
    H = check_positive_int("num_attention_heads", num_attention_heads)
    H_kv = check_positive_int("num_key_value_heads", num_key_value_heads)
    d_head = check_positive_int("head_dim", head_dim)
    qk_norm, bias = check_bool("qk_norm", qk_norm), check_bool("bias", bias)
    count = 2 * d_model * H * d_head  # q_proj, o_proj
    count += 2 * d_model * H_kv * d_head  # k_proj, v_proj
    count += 2 * d_head if qk_norm else 0  # q_norm, k_norm
    return count + (H + 2 * H_kv) * d_head if bias else count  # biases


def score_matrix_bytes(seq_len: int, dtype_bytes: int = 2,
                       num_attention_heads: int = 1,
                       batch_size: int = 1) -> int:
    """Bytes of stored (T, T) score matrices: ``T^2 x bytes x H x batch``.

    FlashAttention never stores them; naive attention does.

    Parameters
    ----------
    seq_len, dtype_bytes, num_attention_heads, batch_size : T, bytes, H, B
    """
    t = _check_count("seq_len", seq_len)
    nbytes = check_positive_int("dtype_bytes", dtype_bytes)
    H = check_positive_int("num_attention_heads", num_attention_heads)
    return t * t * nbytes * H * check_positive_int("batch_size", batch_size)


def format_bytes(n: int | float) -> str:
    """Binary units, 3 significant digits: 114688 bytes is '112 KiB'.

    Parameters
    ----------
    n : int or float, a number of bytes (up to TiB)
    """
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            break
        value /= 1024
    if unit == "B" or value >= 100:
        return f"{value:.0f} {unit}"
    return f"{value:.3g} {unit}"


def decode_step_flops(config, context_len: int, *,
                      use_cache: bool = True) -> int:
    """FLOPs of one decode step, the matrix products only (2 a multiply-add).

    Parameters
    ----------
    config : ModelConfig (``intermediate_size`` 0: no MLP)
    context_len : int, ``T`` >= 1, the new token included
    use_cache : bool, whether the past keys and values are cached
    """
    T = check_positive_int("context_len", context_len)
    d_model, H, H_kv, d_head = (config.hidden_size, config.num_attention_heads,
                                config.num_key_value_heads, config.head_dim)
    d_ff = config.intermediate_size
    per_token = (2 * d_model * (H + 2 * H_kv) * d_head  # q, k, v
                 + 2 * H * d_head * d_model + 6 * d_model * d_ff)  # o, MLP
    if check_bool("use_cache", use_cache):  # one query row against T keys
        per_layer = per_token + 4 * H * d_head * T
    else:  # every token; the full (T, T) scores
        per_layer = T * per_token + 4 * H * d_head * T * T
    L = config.num_hidden_layers
    return L * per_layer + 2 * d_model * config.vocab_size


def mla_decode_cost(config, context_len: int, *, absorb: bool,
                    dtype_bytes: int = 2) -> dict[str, int]:
    """One MLA layer's decode step: bytes read and multiply-adds.

    One new token, batch 1, as ``DeepseekV3Attention.decode`` runs it. Both
    forms read every weight and the latent cache once; the expanded one
    also makes and reads every head's key and value of every cached token.

    Parameters
    ----------
    config : a DeepseekV3Config, its ``to_dict()`` or a dict of the keys read
    context_len : int, ``S`` >= 1, the cached tokens, the new one included
    absorb : bool, the absorbed form (True) or the expanded one
    dtype_bytes : int, bytes per value (2: bf16)
    """
    config = as_config_dict(config)
    c = _config_values(config, (
        "hidden_size", "num_attention_heads", "kv_lora_rank",
        "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    D, H, r = c["hidden_size"], c["num_attention_heads"], c["kv_lora_rank"]
    d_nope, d_rope, d_v = (c["qk_nope_head_dim"], c["qk_rope_head_dim"],
                           c["v_head_dim"])
    r_q = config.get("q_lora_rank")
    r_q = None if r_q is None else check_positive_int("config['q_lora_rank']",
                                                      r_q)
    bias = check_bool("config['attention_bias']",
                      config.get("attention_bias", False))
    S = check_positive_int("context_len", context_len)
    absorb = check_bool("absorb", absorb)
    nbytes = check_positive_int("dtype_bytes", dtype_bytes)
    d_qk = d_nope + d_rope
    # the new token's projections: the same in both forms
    if r_q is None:  # q_proj
        weights = macs = D * H * d_qk
    else:  # q_a_proj, q_a_layernorm, q_b_proj
        weights = D * r_q + r_q + r_q * H * d_qk + bias * r_q
        macs = D * r_q + r_q * H * d_qk
    weights += D * (r + d_rope) + r + H * d_v * D  # kv_a (+ norm), o_proj
    weights += bias * (r + d_rope + D)
    macs += D * (r + d_rope) + H * d_v * D
    weights += H * (d_nope + d_v) * r  # kv_b_proj (W_uk and W_uv)
    cache = S * (r + d_rope)
    if absorb:  # W_uk on q; scores over r + d_rope; sum of r; W_uv
        expanded = 0
        macs += H * d_nope * r + H * S * (r + d_rope) + H * S * r
        macs += H * r * d_v
    else:  # kv_b_proj on S tokens; scores over d_qk; sum of d_v
        expanded = S * H * (d_qk + d_v)
        macs += S * r * H * (d_nope + d_v) + H * S * d_qk + H * S * d_v
    out = {"weight_bytes": weights * nbytes, "cache_bytes": cache * nbytes,
           "expanded_bytes": expanded * nbytes}
    out["bytes"] = sum(out.values())
    out["macs"] = macs
    return out


# --------------------------------------------- the recipes of 2024-26 models
#: the shipped configs (tools/attention_configs.py writes the file)
ATTENTION_CONFIGS = (pathlib.Path(__file__).parent / "data"
                     / "attention_configs.json")
#: the layer types of a config's ``layer_types`` that this module knows
LAYER_TYPES = ("full_attention", "sliding_attention", "linear_attention")
_SHORT = {"full_attention": "full", "sliding_attention": "sliding",
          "linear_attention": "linear"}


def attention_configs() -> dict[str, dict]:
    """Eight models' attention configs, by name, from transformers' classes.

    Each holds the keys of the config's ``to_dict()`` that attention reads,
    as tools/attention_configs.py wrote them from transformers 5.24.
    """
    table = json.loads(ATTENTION_CONFIGS.read_text())
    return {name: entry["config"] for name, entry in table.items()
            if not name.startswith("_")}


def _recipe_config(config) -> dict:
    """A config as a dict, with ``layer_types`` (all full without one)."""
    c = dict(as_config_dict(config))
    L = _config_values(c, ("num_hidden_layers",))["num_hidden_layers"]
    types = c.get("layer_types") or ["full_attention"] * L
    if len(types) != L:
        raise ValueError(f"config's layer_types has {len(types)} entries, "
                         f"expected num_hidden_layers = {L}")
    for t in set(types):
        check_choice("an entry of config's layer_types", t, LAYER_TYPES)
    c["layer_types"] = list(types)
    if "sliding_attention" in types:
        _config_values(c, ("sliding_window",))
    if "linear_attention" in types:
        linear_attention_state_bytes(c)  # its keys are there
    if "full_attention" in types or "sliding_attention" in types:
        _config_values(c, ("kv_lora_rank", "qk_rope_head_dim")
                       if "kv_lora_rank" in c else
                       ("num_attention_heads", "num_key_value_heads",
                        "head_dim"))
    return c


def _per_token(c: dict) -> int:
    """Numbers one attention layer caches a token: K and V, or MLA's."""
    if "kv_lora_rank" in c:  # the latent c_kv and the shared k_pe
        return c["kv_lora_rank"] + c["qk_rope_head_dim"]
    return 2 * c["num_key_value_heads"] * c["head_dim"]


def layer_cache_bytes(config, layer_type: str, seq_len: int, *,
                      dtype_bytes: int = 2, batch_size: int = 1) -> int:
    """Bytes one layer of this type holds after ``seq_len`` tokens.

    A sliding layer holds at most ``sliding_window`` tokens (transformers
    keeps ``sliding_window - 1`` between calls, then adds the new one).

    Parameters
    ----------
    config : an attention_configs entry, a config or its ``to_dict()``
    layer_type : an entry of :data:`LAYER_TYPES` (``config.layer_types``)
    seq_len, batch_size : int >= 0, tokens ``T`` seen and sequences ``B``
    dtype_bytes : int, bytes per value (2: bf16)
    """
    c = _recipe_config(config)
    check_choice("layer_type", layer_type, LAYER_TYPES)
    T = _check_count("seq_len", seq_len)
    nbytes = check_positive_int("dtype_bytes", dtype_bytes)
    B = _check_count("batch_size", batch_size)
    if layer_type == "linear_attention":
        return linear_attention_state_bytes(c, nbytes, B)
    if layer_type == "sliding_attention":
        T = min(T, c["sliding_window"])
    return _per_token(c) * T * nbytes * B


def cache_bytes(config, seq_len: int, *, dtype_bytes: int = 2,
                batch_size: int = 1) -> int:
    """Bytes a model's cache holds after ``seq_len`` tokens, every layer.

    Parameters
    ----------
    config : as :func:`layer_cache_bytes` takes it; no ``layer_types``: full
    seq_len, dtype_bytes, batch_size : as :func:`layer_cache_bytes` takes them
    """
    c = _recipe_config(config)
    return sum(layer_cache_bytes(c, t, seq_len, dtype_bytes=dtype_bytes,
                                 batch_size=batch_size)
               for t in c["layer_types"])


def _pattern(types: list) -> str:
    """``"5 sliding : 1 full (29 sliding, 5 full)"``, or ``"28 full"``."""
    L = len(types)
    counts = {t: types.count(t) for t in dict.fromkeys(types)}
    if len(counts) == 1:
        return f"{L} {_SHORT[types[0]]}"
    period = next(p for p in range(1, L + 1)
                  if all(types[i] == types[i % p] for i in range(L)))
    runs = []  # the repeating unit, as (type, run length)
    for t in types[:period]:
        if runs and runs[-1][0] == t:
            runs[-1][1] += 1
        else:
            runs.append([t, 1])
    total = ", ".join(f"{n} {_SHORT[t]}" for t, n in counts.items())
    if period == L:
        return total
    unit = " : ".join(f"{n} {_SHORT[t]}" for t, n in runs)
    return f"{unit} ({total})"


def _cache_form(c: dict) -> str:
    """What an attention layer and a linear layer keep, in words."""
    types = set(c["layer_types"])
    if "kv_lora_rank" in c:
        form = (f"latent c_kv ({c['kv_lora_rank']}) + rotated key k_pe "
                f"({c['qk_rope_head_dim']})")
    else:
        form = (f"K and V, {c['num_key_value_heads']} heads of "
                f"{c['head_dim']}")
    if "sliding_attention" in types:
        form += f"; sliding layers keep {c['sliding_window']} tokens"
    if "linear_attention" in types:
        form += (f"; linear layers a {c['linear_key_head_dim']} x "
                 f"{c['linear_value_head_dim']} state per head "
                 f"({c['linear_num_value_heads']}) and the conv inputs")
    return form


def attention_recipe(config, *, seq_len: int = 131_072,
                     dtype_bytes: int = 2) -> dict:
    """A model's attention recipe and what its cache costs.

    In bytes: ``bytes_per_token`` (a token inside every window),
    ``bytes_per_token_past_window`` (past them), ``constant_bytes`` (linear
    layers' states), ``bytes_at_seq_len`` (all of it after ``seq_len``
    tokens), ``mha_bytes_per_token`` (plain multi-head attention of the same
    heads: no sharing, window, latent or state).

    Parameters
    ----------
    config : an attention_configs entry, a config or its ``to_dict()``
    seq_len : int, the length of ``bytes_at_seq_len`` (128k tokens)
    dtype_bytes : int, bytes per value (2: bf16)
    """
    c = _recipe_config(config)
    T = _check_count("seq_len", seq_len)
    nbytes = check_positive_int("dtype_bytes", dtype_bytes)
    types, L = c["layer_types"], len(c["layer_types"])
    attention = [t for t in types if t != "linear_attention"]
    per_token = _per_token(c) * nbytes if attention else 0
    mla = "kv_lora_rank" in c
    head_dim = (c["qk_nope_head_dim"] + c["qk_rope_head_dim"] if mla
                else c.get("head_dim"))
    v_head_dim = c["v_head_dim"] if mla else head_dim
    H = c.get("num_attention_heads")
    return {
        "num_attention_heads": H,
        "num_key_value_heads": c.get("num_key_value_heads"),
        "head_dim": head_dim,
        "layer_pattern": _pattern(types),
        "sliding_window": (c["sliding_window"]
                           if "sliding_attention" in types else None),
        "cache_form": _cache_form(c),
        "bytes_per_token": per_token * len(attention),
        "bytes_per_token_past_window": per_token * attention.count(
            "full_attention"),
        "constant_bytes": linear_attention_state_bytes(c, nbytes) * (
            L - len(attention)) if len(attention) < L else 0,
        "bytes_at_seq_len": cache_bytes(c, T, dtype_bytes=nbytes),
        "mha_bytes_per_token": (L * H * (head_dim + v_head_dim) * nbytes
                                if H else None),
        "seq_len": T,
    }


def attention_table(configs: dict | None = None, *,
                    seq_len: int = 131_072, dtype_bytes: int = 2
                    ) -> list[dict]:
    """:func:`attention_recipe` of each model, one row each.

    Parameters
    ----------
    configs : dict, model name -> config; None: :func:`attention_configs`
    seq_len, dtype_bytes : as :func:`attention_recipe` takes them
    """
    configs = attention_configs() if configs is None else configs
    if not isinstance(configs, dict):
        raise ValueError("configs must be a dict of model name -> config, "
                         f"got {type(configs).__name__}")
    return [{"model": name, **attention_recipe(
        c, seq_len=seq_len, dtype_bytes=dtype_bytes)}
        for name, c in configs.items()]
