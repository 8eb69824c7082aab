"""Memory and parameter arithmetic of attention, and the real Qwen3-1.7B configuration.

Shape legend (the sizes these formulas multiply):
    layers  num_hidden_layers          Hkv  num_key_value_heads
    H       num_attention_heads        D    head_dim
    C       hidden_size                T    sequence length (tokens)
    bytes   bytes per stored value: 2 for bf16/fp16, 4 for fp32, 1 for fp8

The KV cache stores one key and one value vector of ``D`` numbers per
key/value head, per layer, per token: it grows with ``Hkv``, not ``H``, which
is the memory GQA and MQA save.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ._checks import check_positive_int

__all__ = [
    "ModelConfig",
    "QWEN3_1_7B",
    "kv_cache_bytes",
    "attention_parameter_count",
    "score_matrix_bytes",
    "format_bytes",
]


def _check_count(name: str, value) -> int:
    """An integer >= 0 (lengths and batches of 0 are allowed: they cost 0 bytes)."""
    if value == 0 and not isinstance(value, bool):
        return 0
    return check_positive_int(name, value)


def kv_cache_bytes(num_layers: int, num_kv_heads: int, head_dim: int, seq_len: int,
                   dtype_bytes: int = 2, batch: int = 1) -> int:
    """Bytes of a KV cache: ``2 x layers x Hkv x D x bytes x T x batch``.

    The leading 2 counts keys and values. ``seq_len=1`` gives the cost per token.

    Parameters
    ----------
    num_layers : int
    num_kv_heads : int
        ``num_key_value_heads`` (``Hkv``), *not* the group size ``H // Hkv``:
        mixing the two up is a known error of published estimators.
    head_dim : int
    seq_len : int
        Tokens held (>= 0).
    dtype_bytes : int, default 2
        Bytes per value (bf16).
    batch : int, default 1
        Sequences held (>= 0).

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If a size is not an integer >= 1 (``seq_len`` and ``batch`` may be 0).

    See Also
    --------
    KVCache.nbytes : the bytes a numpy cache actually allocates.

    Examples
    --------
    >>> kv_cache_bytes(28, 8, 128, seq_len=1)  # Qwen3-1.7B, bf16, per token
    114688
    """
    layers = check_positive_int("num_layers", num_layers)
    hkv = check_positive_int("num_kv_heads", num_kv_heads)
    d = check_positive_int("head_dim", head_dim)
    nbytes = check_positive_int("dtype_bytes", dtype_bytes)
    t = _check_count("seq_len", seq_len)
    b = _check_count("batch", batch)
    return 2 * layers * hkv * d * nbytes * t * b


def attention_parameter_count(hidden_size: int, num_attention_heads: int,
                              num_key_value_heads: int, head_dim: int, *,
                              qk_norm: bool = False) -> int:
    """Weights of one attention layer: ``q_proj + k_proj + v_proj + o_proj`` (no biases).

    ``C*H*D`` (q) ``+ 2*C*Hkv*D`` (k, v) ``+ H*D*C`` (o). With ``qk_norm=True``
    it adds Qwen3's ``q_norm`` and ``k_norm`` RMSNorm weights, ``2*D`` more.

    Parameters
    ----------
    hidden_size, num_attention_heads, num_key_value_heads, head_dim : int
        ``C``, ``H``, ``Hkv``, ``D``.
    qk_norm : bool, default False
        Count ``q_norm.weight`` and ``k_norm.weight`` (each of shape (D,)).

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If a size is not an integer >= 1.

    See Also
    --------
    MultiHeadAttention.weight_shapes : the four shapes counted here.

    Examples
    --------
    >>> attention_parameter_count(2048, 16, 8, 128)  # one Qwen3-1.7B layer
    12582912
    """
    C = check_positive_int("hidden_size", hidden_size)
    H = check_positive_int("num_attention_heads", num_attention_heads)
    Hkv = check_positive_int("num_key_value_heads", num_key_value_heads)
    D = check_positive_int("head_dim", head_dim)
    count = C * H * D + 2 * C * Hkv * D + H * D * C
    return count + 2 * D if qk_norm else count


def score_matrix_bytes(seq_len: int, dtype_bytes: int = 2, num_heads: int = 1,
                       batch: int = 1) -> int:
    """Bytes of the (T, T) score matrices if they are stored: ``T^2 x bytes x heads x batch``.

    FlashAttention never stores them; naive attention does.

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
    return (t * t * check_positive_int("dtype_bytes", dtype_bytes)
            * check_positive_int("num_heads", num_heads) * check_positive_int("batch", batch))


def format_bytes(n: int | float) -> str:
    """Binary units, 3 significant digits: ``format_bytes(114688) == '112 KiB'``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{value:.0f} {unit}" if unit == "B" or value >= 100 else f"{value:.3g} {unit}"


@dataclass(frozen=True)
class ModelConfig:
    """The configuration keys of a decoder that the book uses (Hugging Face's names).

    See Also
    --------
    transformers.Qwen3Config : the full configuration class.
    """

    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    num_hidden_layers: int
    rope_theta: float
    rms_norm_eps: float
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int

    @property
    def num_key_value_groups(self) -> int:
        """Query heads per key/value head, ``H // Hkv``."""
        return self.num_attention_heads // self.num_key_value_heads

    def attention_config(self) -> dict[str, int]:
        """The four sizes ``MultiHeadAttention`` takes, as keyword arguments."""
        return {k: v for k, v in asdict(self).items()
                if k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim")}


#: Qwen3-1.7B, from its ``config.json`` on the Hugging Face Hub.
QWEN3_1_7B = ModelConfig(
    hidden_size=2048,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    num_hidden_layers=28,
    rope_theta=1_000_000.0,
    rms_norm_eps=1e-6,
    intermediate_size=6144,
    vocab_size=151_936,
    max_position_embeddings=40_960,
)
