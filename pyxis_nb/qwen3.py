"""Qwen3's configuration, and seeded random attention layers of its shapes.

Shape legend (Hugging Face's config names in brackets):
    L        layers (num_hidden_layers)
    d_model  hidden_size
    H        query heads (num_attention_heads)
    H_kv     key/value heads (num_key_value_heads)
    d_head   head_dim

The random layers have the real model's shapes, norms and RoPE, not its
knowledge (real weights: ``MultiHeadAttention.from_state_dict``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ._checks import check_bool, check_heads, check_positive_int
from .multihead import MultiHeadAttention, weight_shapes

__all__ = ["ModelConfig", "QWEN3_1_7B", "random_attention", "qwen3_attention",
           "weight_order"]


def weight_order(shape) -> str:
    """How the checkpoint readers lay out a weight: ``"F"`` for a matrix.

    Column-major (out, in) makes ``w.T`` row-major, OpenBLAS's fastest for
    ``x @ w.T`` of one row (``make bench BENCH=bench_generate``); a
    ``shape`` of one axis, a vector, stays ``"C"``."""
    return "F" if len(shape) == 2 else "C"


@dataclass(frozen=True)
class ModelConfig:
    """The configuration keys of a decoder that the book uses (HF's names).

    Parameters
    ----------
    hidden_size : int, ``d_model``, the width of the residual stream
    num_attention_heads, num_key_value_heads : int, ``H``; ``H_kv`` divides it
    head_dim : int, ``d_head`` (need not be ``d_model // H``)
    num_hidden_layers : int, ``L``
    rope_theta : float, RoPE's base (Qwen3: 1_000_000.0)
    rms_norm_eps : float, the epsilon of every RMSNorm
    intermediate_size : int, ``d_ff``, the MLP's width; 0: no MLP
    vocab_size : int, ``V``
    max_position_embeddings : int, the most positions a sequence may have
    rope_parameters : dict, a RoPE scaling as transformers'; None: plain RoPE
    _attn_implementation : "flex_attention" or "eager", every layer's kernel

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
    rope_parameters: dict | None = field(default=None, hash=False)
    _attn_implementation: str = field(default="flex_attention",
                                      compare=False)

    def to_dict(self) -> dict:
        """The configuration keys as a dict, as a config.json holds them
        (transformers' ``to_dict``: the kernel's name is not one;
        ``rope_parameters`` only when set)."""
        return {k: v for k, v in asdict(self).items()
                if not k.startswith("_")
                and not (k == "rope_parameters" and v is None)}

    @property
    def num_key_value_groups(self) -> int:
        """Query heads per key/value head, ``n_rep = H // H_kv``."""
        return self.num_attention_heads // self.num_key_value_heads

    def attention_config(self) -> dict[str, int]:
        """The four sizes ``MultiHeadAttention`` takes, as keywords."""
        keys = ("hidden_size", "num_attention_heads", "num_key_value_heads",
                "head_dim")
        return {k: v for k, v in asdict(self).items() if k in keys}


def state_shapes(config: ModelConfig, tied: bool, *,
                 qk_norm: bool = True) -> dict:
    """Every tensor name of a checkpoint of ``config`` and its shape.

    Hugging Face's names (``model.layers.{i}.self_attn.q_proj.weight``);
    ``qk_norm`` False: Llama's, without ``q_norm`` / ``k_norm``;
    ``lm_head.weight`` is listed even when ``tied`` (it may be absent).
    """
    c = config
    d, d_ff = c.hidden_size, c.intermediate_size
    att = weight_shapes(**c.attention_config())
    shapes = {"model.embed_tokens.weight": (c.vocab_size, d)}
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        shapes |= {f"{p}self_attn.{n}.weight": att[n] for n in (
            "q_proj", "k_proj", "v_proj", "o_proj")
            + (("q_norm", "k_norm") if qk_norm else ())}
        shapes[p + "input_layernorm.weight"] = (d,)
        if d_ff:
            shapes |= {p + "post_attention_layernorm.weight": (d,),
                       p + "mlp.gate_proj.weight": (d_ff, d),
                       p + "mlp.up_proj.weight": (d_ff, d),
                       p + "mlp.down_proj.weight": (d, d_ff)}
    shapes["model.norm.weight"] = (d,)
    shapes["lm_head.weight"] = (c.vocab_size, d)  # optional when tied
    return shapes


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


def random_attention(hidden_size: int, num_attention_heads: int,
                     num_key_value_heads: int, head_dim: int, *,
                     seed: int = 0, dtype=np.float64, qk_norm: bool = False,
                     bias: bool = False, rms_norm_eps: float = 1e-6,
                     rope_theta: float | None = None,
                     attn_implementation: str = "flex_attention"
                     ) -> MultiHeadAttention:
    """A layer with seeded normal weights of std ``1 / sqrt(in_features)``.

    That scale keeps projected entries near unit variance. Drawn in float64
    and cast, so one seed gives the same layer in both dtypes.

    Parameters
    ----------
    hidden_size, num_attention_heads, num_key_value_heads, head_dim : int
    seed : int, the seed of the weights
    dtype : numpy float dtype of the weights
    qk_norm : bool, add Qwen3's ``q_norm`` and ``k_norm``
    bias : bool, add Qwen2's q/k/v biases
    rms_norm_eps : float, the epsilon of ``q_norm`` and ``k_norm``
    rope_theta : float or None, RoPE's base; None leaves RoPE out
    attn_implementation : "flex_attention", or "eager" for the weights
    """
    d_model = check_positive_int("hidden_size", hidden_size)
    H, H_kv = check_heads(num_attention_heads, num_key_value_heads)
    d_head = check_positive_int("head_dim", head_dim)
    qk_norm, bias = check_bool("qk_norm", qk_norm), check_bool("bias", bias)
    shapes = weight_shapes(d_model, H, H_kv, d_head)
    rng = np.random.default_rng(seed)
    arrays = {n: rng.standard_normal(shapes[n]) / np.sqrt(shapes[n][1])
              for n in ("q_proj", "k_proj", "v_proj", "o_proj")}
    if qk_norm:
        arrays |= {n: 1.0 + 0.1 * rng.standard_normal(d_head)
                   for n in ("q_norm", "k_norm")}
    if bias:
        arrays |= {n: 0.1 * rng.standard_normal(shapes[n])
                   for n in ("q_proj_bias", "k_proj_bias", "v_proj_bias")}
    arrays = {n: a.astype(dtype) for n, a in arrays.items()}
    return MultiHeadAttention(d_model, H, H_kv, d_head, **arrays,
                              rms_norm_eps=rms_norm_eps, rope_theta=rope_theta,
                              attn_implementation=attn_implementation)


def qwen3_attention(config: ModelConfig = QWEN3_1_7B, *, seed: int = 0,
                    dtype=np.float64) -> MultiHeadAttention:
    """A random layer of a Qwen3 configuration: shapes, q/k norms, RoPE, eps.

    Qwen3-1.7B's four projections hold 12.6 million numbers (96 MiB in
    float64, 48 MiB in float32).

    Parameters
    ----------
    config : ModelConfig, the sizes, ``rms_norm_eps`` and ``rope_theta``
    seed, dtype : as :func:`random_attention` takes them

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3Attention
    """
    return random_attention(
        config.hidden_size, config.num_attention_heads,
        config.num_key_value_heads, config.head_dim, seed=seed, dtype=dtype,
        qk_norm=True, rms_norm_eps=config.rms_norm_eps,
        rope_theta=config.rope_theta,
        attn_implementation=config._attn_implementation)
