"""Memory, parameter and FLOP arithmetic of attention.

Shape legend (the sizes these formulas multiply; HF's names in brackets):
    L        layers (num_hidden_layers)
    d_model  hidden_size
    H        query heads (num_attention_heads)
    H_kv     key/value heads (num_key_value_heads)
    d_head   head_dim
    T        sequence length (tokens)
    B        batch (sequences held)

``bytes`` is the size of one stored value: 2 for bf16/fp16, 4 for fp32, 1
for fp8.

The KV cache stores one key and one value vector of ``d_head`` numbers per
key/value head, per layer, per token: it grows with ``H_kv``, not ``H``,
which is the memory GQA and MQA save. Model configurations live in
:mod:`pyxis_nb.qwen3`.
"""

from __future__ import annotations

from ._checks import check_bool, check_int, check_positive_int

__all__ = [
    "decode_step_flops",
    "kv_cache_bytes",
    "attention_parameter_count",
    "score_matrix_bytes",
    "format_bytes",
    "linear_attention_state_bytes",
]


def _check_count(name: str, value) -> int:
    """An integer >= 0 (a length or batch of 0 costs 0 bytes)."""
    return check_int(name, value, low=0)


def kv_cache_bytes(num_hidden_layers: int, num_key_value_heads: int,
                   head_dim: int, seq_len: int, dtype_bytes: int = 2,
                   batch_size: int = 1) -> int:
    """Bytes of a KV cache: ``2 x L x H_kv x d_head x bytes x T x B``.

    The 2 counts keys and values; ``seq_len=1`` gives the cost of a token.

    Parameters
    ----------
    num_hidden_layers : int
        ``L``, >= 1.
    num_key_value_heads : int
        ``H_kv``, >= 1 (*not* the group size ``n_rep``: a known error of
        published estimators).
    head_dim : int
        ``d_head``, >= 1.
    seq_len : int
        Tokens ``T`` held, >= 0.
    dtype_bytes : int, default 2
        Bytes per value (bf16). Allocated by numpy: ``KVCache.nbytes``.
    batch_size : int, default 1
        Sequences held, ``B`` >= 0.

    Returns
    -------
    int

    Examples
    --------
    >>> kv_cache_bytes(28, 8, 128, seq_len=1)  # Qwen3-1.7B, bf16, per token
    114688
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
                                 batch_size: int = 1) -> int:
    """Bytes one linear-attention layer holds, at any length.

    Qwen3-Next's Gated DeltaNet layer keeps a state of ``d_k x d_v``
    numbers per value head and the last ``linear_conv_kernel_dim`` inputs
    of its convolution (queries, keys and values: ``2 H_k d_k + H d_v``
    channels), as transformers' cache stores them
    (:class:`~pyxis_nb.linear_attention.LinearAttentionCache`).

    Parameters
    ----------
    config : dict or transformers config
        ``linear_num_key_heads``, ``linear_num_value_heads``,
        ``linear_key_head_dim``, ``linear_value_head_dim``,
        ``linear_conv_kernel_dim`` (a Qwen3NextConfig, its ``to_dict()``
        or an entry of :func:`attention_configs`).
    dtype_bytes : int, default 2
        Bytes per value (bf16).
    batch_size : int, default 1
        Sequences held, ``B`` >= 0.

    Returns
    -------
    int

    Examples
    --------
    >>> linear_attention_state_bytes(dict(  # Qwen3-Next's defaults
    ...     linear_num_key_heads=16, linear_num_value_heads=32,
    ...     linear_key_head_dim=128, linear_value_head_dim=128,
    ...     linear_conv_kernel_dim=4))
    1114112
    """
    c = _config_values(config, (
        "linear_num_key_heads", "linear_num_value_heads",
        "linear_key_head_dim", "linear_value_head_dim",
        "linear_conv_kernel_dim"))
    nbytes = check_positive_int("dtype_bytes", dtype_bytes)
    B = _check_count("batch_size", batch_size)
    H, d_k, d_v = (c["linear_num_value_heads"], c["linear_key_head_dim"],
                   c["linear_value_head_dim"])
    conv_dim = 2 * c["linear_num_key_heads"] * d_k + H * d_v
    state = H * d_k * d_v + conv_dim * c["linear_conv_kernel_dim"]
    return state * nbytes * B


def _config_values(config, names) -> dict:
    """``names`` of a config (a dict or an object), each an int >= 1."""
    if hasattr(config, "to_dict"):
        config = config.to_dict()
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict or a transformers config, "
                         f"got {type(config).__name__}")
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
    hidden_size : int
        ``d_model``.
    num_attention_heads : int
        ``H``.
    num_key_value_heads : int
        ``H_kv``.
    head_dim : int
        ``d_head`` (the shapes: ``px.multihead.weight_shapes``).
    qk_norm : bool, default False
        Add Qwen3's ``q_norm`` and ``k_norm`` (``d_head`` each).
    bias : bool, default False
        Add Qwen2's q/k/v biases.

    Returns
    -------
    int

    Examples
    --------
    >>> attention_parameter_count(2048, 16, 8, 128)  # one Qwen3-1.7B layer
    12582912
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
    seq_len : int
        ``T``, >= 0.
    dtype_bytes : int, default 2
        Bytes per value (bf16).
    num_attention_heads : int, default 1
        ``H``.
    batch_size : int, default 1
        ``B``.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If a size is not an integer >= 1 (``seq_len`` may be 0).

    Examples
    --------
    >>> score_matrix_bytes(1000)  # one head, 2 bytes a value: about 2 MB
    2000000
    """
    t = _check_count("seq_len", seq_len)
    nbytes = check_positive_int("dtype_bytes", dtype_bytes)
    H = check_positive_int("num_attention_heads", num_attention_heads)
    return t * t * nbytes * H * check_positive_int("batch_size", batch_size)


def format_bytes(n: int | float) -> str:
    """Binary units, 3 significant digits: 114688 bytes is '112 KiB'.

    Parameters
    ----------
    n : int or float
        A number of bytes.

    Returns
    -------
    str
        ``"512 B"``, ``"1.5 KiB"``, ..., up to TiB.
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

    The new token is the last of ``T = context_len`` positions. With the
    cache: 1 token's projections and 1 query against T keys; without: T
    tokens' projections and the full (T, T) scores. Both: ``lm_head`` of
    the last position. Linear in T with the cache, quadratic without;
    norms, RoPE, softmax are left out.

    Parameters
    ----------
    config : ModelConfig
        ``QWEN3_1_7B``, ``TinyDecoder().config``, ...;
        ``intermediate_size`` 0: no MLP.
    context_len : int
        ``T``, >= 1: the positions including the new token.
    use_cache : bool, default True
        Whether the keys and values of the past are cached.

    Returns
    -------
    int

    Examples
    --------
    >>> import pyxis_nb as px
    >>> cached = decode_step_flops(px.QWEN3_1_7B, 2048)
    >>> round(decode_step_flops(px.QWEN3_1_7B, 2048, use_cache=False) / cached)
    1722
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
