"""A tiny random decoder: ``Qwen3ForCausalLM`` without MLPs, seeded weights.

Shape legend:
    B        batch
    T        positions fed to one forward call
    S        positions the new queries attend over (cache + T)
    d_model  hidden_size
    V        vocab_size
    L        num_hidden_layers

``TinyDecoder`` is a constructor, not a second model: it builds
``Qwen3ForCausalLM.from_config`` with ``intermediate_size = 0``, so its
``forward``, ``generate`` and cache are the real model's (the book's one
decoder). Embed the ids; in each layer add ``attention(rms_norm(h))`` to
the residual stream ``h``; a final ``rms_norm``; ``lm_head``. The attention
layers are complete Qwen3 layers (q/k norms, RoPE, GQA). The weights are
seeded random numbers, so the tokens it produces mean nothing; what the
book measures is that the cache (and left padding) changes the cost of
producing them and nothing else.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_bool, check_positive_int
from .model import Qwen3ForCausalLM
from .qwen3 import ModelConfig

__all__ = ["TinyDecoder", "decode_step_flops"]


class TinyDecoder(Qwen3ForCausalLM):
    """Qwen3's skeleton without the MLPs, with seeded random weights.

    A ``Qwen3ForCausalLM`` (same ``forward``, ``generate``, ``new_cache``)
    built by ``Qwen3ForCausalLM.from_config(config, seed=seed,
    dtype=dtype)`` with ``intermediate_size=0`` and an untied ``lm_head``.

    Parameters
    ----------
    vocab_size : int, default 64
    hidden_size : int, default 32
    num_hidden_layers : int, default 2
    num_attention_heads : int, default 4
    num_key_value_heads : int, default 2
    head_dim : int, default 8
        Even (RoPE).
    rope_theta : float, default 10_000.0
    max_position_embeddings : int, default 4096
        The longest sequence the model accepts.
    seed : int, default 0
    dtype : numpy float dtype, default float64

    See Also
    --------
    Qwen3ForCausalLM : the model, with MLPs and checkpoint loading.
    """

    def __init__(self, vocab_size: int = 64, hidden_size: int = 32,
                 num_hidden_layers: int = 2, num_attention_heads: int = 4,
                 num_key_value_heads: int = 2, head_dim: int = 8, *,
                 rope_theta: float = 10_000.0,
                 max_position_embeddings: int = 4096,
                 seed: int = 0, dtype=np.float64):
        config = ModelConfig(
            hidden_size=hidden_size, num_attention_heads=num_attention_heads,
            num_key_value_heads=num_key_value_heads, head_dim=head_dim,
            num_hidden_layers=num_hidden_layers, rope_theta=rope_theta,
            rms_norm_eps=1e-6, intermediate_size=0, vocab_size=vocab_size,
            max_position_embeddings=max_position_embeddings)
        model = Qwen3ForCausalLM.from_config(config, seed=seed, dtype=dtype)
        super().__init__(model.config, model.embed_tokens, model.layers,
                         model.norm, model.lm_head)


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
