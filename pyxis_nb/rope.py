"""Rotary position embeddings (RoPE), in both pairing layouts.

RoPE rotates pair ``i`` of a query or key at position ``m`` by
``m * inv_freq[i]``; a pair is ``(i, i + d_head/2)`` in the ``"half"``
layout (Hugging Face, Qwen3), ``(2i, 2i + 1)`` in the ``"interleaved"`` one
(RoFormer, Meta's Llama code).

Shape legend:
    ...      any leading batch/head dimensions
    B        batch
    H        query heads
    H_kv     key/value heads
    T        positions
    d_head   size of one head's vectors, even: ``d_head / 2`` pairs
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import (as_float_array, check_bool, check_choice, check_even,
                      check_fits, check_float_dtype, check_frequencies,
                      check_keys, check_number, check_pairs, check_positions,
                      check_positive_int, check_shape, check_theta)

__all__ = [
    "ROPE_INIT_FUNCTIONS",
    "ROPE_KEYS",
    "ROPE_LAYOUTS",
    "ROPE_TYPES",
    "apply_rope",
    "apply_rotary_pos_emb",
    "compute_default_rope_parameters",
    "compute_dynamic_ntk_parameters",
    "compute_linear_scaling_rope_parameters",
    "compute_llama3_parameters",
    "compute_rope_parameters",
    "compute_yarn_parameters",
    "half_to_interleaved_permutation",
    "interleaved_to_half_permutation",
    "permute_qk_proj",
    "rope_frequencies",
    "rotary_cos_sin",
    "rotary_cos_sin_core",
    "rotate_half",
    "yarn_get_mscale",
]

ROPE_LAYOUTS = ("half", "interleaved")


def rope_frequencies(head_dim: int,
                     rope_theta: float = 1_000_000.0) -> np.ndarray:
    """Radians per position of each pair: ``rope_theta ** (-2i / d_head)``.

    Parameters
    ----------
    head_dim, rope_theta : ``d_head`` (even) and the base (Qwen3: 1e6)
    """
    d_head, rope_theta = check_frequencies("head_dim", head_dim, rope_theta)
    return rope_theta ** (-np.arange(0, d_head, 2) / d_head)  # (d_head/2,)


def rotary_cos_sin(position_ids, head_dim: int, *,
                   rope_theta: float | None = None,
                   dtype=np.float32, inv_freq=None,
                   attention_scaling: float = 1.0):
    """The ``cos`` and ``sin`` tables of Hugging Face's rotary embedding.

    Parameters
    ----------
    position_ids : (B, T) or (T,), for tables (B, T, d_head) or (1, T, d_head)
    head_dim : int, ``d_head``, even: the rotated width of a head
    rope_theta : float, the base; None: 1e6 (Qwen3), unless ``inv_freq``
    dtype : numpy float dtype the float64 angles are rounded to, once
    inv_freq, attention_scaling : from :func:`compute_rope_parameters`

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3RotaryEmbedding.forward
    """
    pos = check_positions("position_ids", position_ids)
    dtype = check_float_dtype("dtype", dtype)
    inv_freq = _check_inv_freq(head_dim, rope_theta, inv_freq)
    scaling = check_number("attention_scaling", attention_scaling, above=0)
    return rotary_cos_sin_core(pos, inv_freq, scaling, dtype)


def _check_inv_freq(head_dim, rope_theta, inv_freq) -> np.ndarray:
    """``inv_freq`` (d_head/2,) as float64, given or from ``rope_theta``."""
    if inv_freq is None:
        theta = 1_000_000.0 if rope_theta is None else rope_theta
        return rope_frequencies(head_dim, theta)
    if rope_theta is not None:
        raise ValueError(
            f"pass rope_theta or inv_freq, not both: got rope_theta = "
            f"{rope_theta!r} and inv_freq of shape {np.shape(inv_freq)}")
    d_head = check_even("head_dim", head_dim)
    freq = as_float_array("inv_freq", inv_freq, ndim=1, finite=True)
    check_shape("inv_freq", freq, freq.shape == (d_head // 2,),
                f"(head_dim/2,) = ({d_head // 2},)")
    return freq.astype(np.float64)


def rotary_cos_sin_core(position_ids, inv_freq, attention_scaling: float,
                        dtype) -> tuple[np.ndarray, np.ndarray]:
    """Unchecked core of :func:`rotary_cos_sin`.

    Parameters
    ----------
    position_ids, inv_freq, attention_scaling, dtype : as rotary_cos_sin checks
    """
    pos = position_ids[None, :] if position_ids.ndim == 1 else position_ids
    freqs = pos[:, :, None] * inv_freq  # (B, T, 1) * (d_head/2,)
    emb = np.concatenate([freqs, freqs], axis=-1)  # (B, T, d_head)
    cos, sin = np.cos(emb), np.sin(emb)
    if attention_scaling != 1.0:
        cos, sin = cos * attention_scaling, sin * attention_scaling
    return cos.astype(dtype), sin.astype(dtype)


def _check_even_last(name: str, x) -> np.ndarray:
    """A float array (..., d_head) with an even last axis."""
    x = as_float_array(name, x)
    if x.shape[-1] % 2:
        raise ValueError(
            f"{name} has shape {x.shape}, expected (..., d_head) with d_head "
            "even"
        )
    return x


def rotate_half(x):
    """Map the halves ``[x1, x2]`` of the last axis to ``[-x2, x1]``.

    Parameters
    ----------
    x : ndarray of float, shape (..., d_head), d_head even
    """
    x1, x2 = np.split(_check_even_last("x", x), 2, axis=-1)  # (..., d_head/2)
    return np.concatenate([-x2, x1], axis=-1)  # (..., d_head)


def _check_rotary(q, k, cos, sin, unsqueeze_dim: int):
    """q, k float; cos, sin of one shape, unsqueezed, fitting q and k."""
    q, k = as_float_array("q", q), as_float_array("k", k)
    tables = []
    for name, t in (("cos", cos), ("sin", sin)):
        t = as_float_array(name, t)
        if not -t.ndim - 1 <= unsqueeze_dim <= t.ndim:
            raise ValueError(
                f"unsqueeze_dim = {unsqueeze_dim} is out of range for {name} "
                f"of shape {t.shape}"
            )
        tables.append(np.expand_dims(t, unsqueeze_dim))
    cos, sin = tables
    if cos.shape != sin.shape:
        raise ValueError(
            f"cos and sin must have one shape, got cos {cos.shape}, "
            f"sin {sin.shape}"
        )
    for name, x in (("q", q), ("k", k)):
        check_fits(name, x.shape, "cos (after unsqueeze)", cos.shape)
    return q, k, cos, sin


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim: int = 1):
    """Rotate queries and keys: ``x * cos + rotate_half(x) * sin``.

    Parameters
    ----------
    q, k, cos, sin, unsqueeze_dim : as transformers' (tables: rotary_cos_sin)
    """
    q, k, cos, sin = _check_rotary(q, k, cos, sin, unsqueeze_dim)
    return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)


def apply_rotary(x, cos, sin, layout="half"):
    """Unchecked core: rotate ``x`` by the angles of ``cos`` and ``sin``."""
    cos, sin = cos.astype(x.dtype, copy=False), sin.astype(x.dtype,
                                                           copy=False)
    half = x.shape[-1] // 2
    if layout == "half":  # pairs (i, i + d_head/2)
        # x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1], one
        # half at a time (the same sums, bit for bit, without the copies)
        x1, x2 = x[..., :half], x[..., half:]  # (..., d_head/2) each
        out = x * cos
        term = x2 * sin[..., :half]
        out[..., :half] -= term  # + (-x2) * sin
        out[..., half:] += np.multiply(x1, sin[..., half:], out=term)
        return out
    # pairs (2i, 2i + 1), one angle each
    cos, sin = cos[..., :half], sin[..., :half]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = rotate_pairs(x[..., 0::2], x[..., 1::2],
                                                  cos, sin)
    return out


def rotate_pairs(x1, x2, cos, sin):
    """Rotate the points ``(x1, x2)`` by the angles with these cos and sin."""
    return x1 * cos - x2 * sin, x1 * sin + x2 * cos


def _check_rope_args(x, positions, layout, layouts: tuple):
    """:func:`check_pairs` for ``x``, its positions and the layout name."""
    x = check_pairs("x", x)
    pos = check_positions("positions", positions, x)
    check_choice("layout", layout, layouts)
    return x, pos


def apply_rope(x, positions, *, rope_theta: float = 1_000_000.0,
               layout: str = "half"):
    """Rotate pair ``i`` of the row at position ``p`` by ``p * inv_freq[i]``.

    Parameters
    ----------
    x : ndarray of float, shape (..., T, d_head), d_head even: q or k
    positions : array_like of int, (T,) or broadcasting to x's (..., T)
    rope_theta : float, the base of the frequencies (Qwen3: 1e6), > 1
    layout : "half" (HF, Qwen3) or "interleaved" (RoFormer, Meta's Llama)
    """
    x, pos = _check_rope_args(x, positions, layout, ROPE_LAYOUTS)
    # (..., T, 1) * (d_head/2,) -> (..., T, d_head/2), both halves alike
    angles = pos[..., None] * rope_frequencies(x.shape[-1], rope_theta)
    angles = np.concatenate([angles, angles], axis=-1)  # (..., T, d_head)
    return apply_rotary(x, np.cos(angles), np.sin(angles), layout)


def interleaved_to_half_permutation(head_dim: int) -> np.ndarray:
    """``perm`` with ``x[..., perm]`` = an interleaved ``x`` in half layout.

    Parameters
    ----------
    head_dim : int, ``d_head``, even
    """
    d_head = check_even("head_dim", head_dim)
    return np.concatenate([np.arange(0, d_head, 2), np.arange(1, d_head, 2)])


def half_to_interleaved_permutation(head_dim: int) -> np.ndarray:
    """The inverse of :func:`interleaved_to_half_permutation`.

    Parameters
    ----------
    head_dim : int, ``d_head``, even
    """
    return np.argsort(interleaved_to_half_permutation(head_dim))


def _check_proj_rows(weight, head_dim) -> tuple[np.ndarray, int]:
    """A q/k projection (heads * d_head, d_model) or bias; its d_head."""
    w = as_float_array("weight", weight)
    d_head = check_even("head_dim", head_dim)
    if w.ndim not in (1, 2) or w.shape[0] % d_head:
        raise ValueError(
            f"weight has shape {w.shape}, expected (heads * head_dim, "
            f"d_model) or (heads * head_dim,) with head_dim = {d_head}")
    return w, d_head


def permute_qk_proj(weight, *, head_dim: int,
                    inverse: bool = False) -> np.ndarray:
    """Reorder a q/k projection's rows per head, interleaved -> half layout.

    Permute ``q_norm`` / ``k_norm`` alike; never ``v_proj`` or ``o_proj``.

    Parameters
    ----------
    weight : ndarray (heads * d_head, d_model), or its bias (heads * d_head,)
    head_dim : int, ``d_head``, even: the rows are cut into heads of this many
    inverse : bool, half -> interleaved instead

    See Also
    --------
    transformers/models/llama/convert_llama_weights_to_hf.py : ``permute``.
    """
    w, d_head = _check_proj_rows(weight, head_dim)
    perm = (half_to_interleaved_permutation if inverse
            else interleaved_to_half_permutation)(d_head)
    per_head = w.reshape(-1, d_head, *w.shape[1:])  # (H, d_head, ...)
    return per_head[:, perm].reshape(w.shape)  # (H * d_head, ...)


# ------------------------------------------------------------ RoPE scaling
# transformers' modeling_rope_utils: each rope_type turns a config's
# ``rope_parameters`` into ``inv_freq`` and an attention scaling (a factor
# on cos and sin). transformers computes ``inv_freq`` in float32; these
# compute it in float64.

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")

#: the keys of ``rope_parameters`` each rope_type reads besides
#: ``rope_type``, ``rope_theta`` and ``partial_rotary_factor``: (required,
#: optional), as transformers' ``_validate_<rope_type>_rope_parameters``
ROPE_KEYS = {
    "default": ((), ()),
    "linear": (("factor",), ()),
    "dynamic": (("factor",), ()),
    "yarn": (("factor", "original_max_position_embeddings"),
             ("attention_factor", "beta_fast", "beta_slow", "mscale",
              "mscale_all_dim", "truncate")),
    "llama3": (("factor", "original_max_position_embeddings",
                "low_freq_factor", "high_freq_factor"), ()),
}


def _check_rope_mapping(rope_parameters):
    """A flat dict of RoPE parameters, not one nested by layer type."""
    if not isinstance(rope_parameters, dict):
        raise ValueError(
            "rope_parameters must be a dict (a config's rope_parameters), "
            f"got {type(rope_parameters).__name__} {rope_parameters!r}")
    nested = [k for k, v in rope_parameters.items() if isinstance(v, dict)]
    if nested:
        raise ValueError(
            f"rope_parameters is nested by layer type (keys {nested}): pass "
            f"one layer type's dict, e.g. rope_parameters[{nested[0]!r}]")
    return rope_parameters


def _check_rope_parameters(rope_type: str, rope_parameters, head_dim,
                           max_position_embeddings=None,
                           seq_len=None) -> dict:
    """``rope_parameters`` of ``rope_type`` with its defaults filled in,
    its rotated width ``dim`` and the checked sizes."""
    got = _check_rope_mapping(rope_parameters).get("rope_type")
    if got != rope_type:
        raise ValueError(
            f"rope_parameters['rope_type'] is {got!r}, expected "
            f"{rope_type!r} (or call compute_rope_parameters)")
    required, optional = ROPE_KEYS[rope_type]
    check_keys("rope_parameters", rope_parameters,
               ("rope_type", "rope_theta", "partial_rotary_factor",
                *required, *optional), ("rope_type", "rope_theta", *required))
    p = {**dict.fromkeys(optional), "partial_rotary_factor": 1.0,
         **rope_parameters}

    def key(name):
        return f"rope_parameters[{name!r}]"

    p["rope_theta"] = check_theta(key("rope_theta"), p["rope_theta"])
    fraction = check_number(key("partial_rotary_factor"),
                            p["partial_rotary_factor"], above=0)
    if fraction > 1:
        raise ValueError(f"{key('partial_rotary_factor')} must be a number "
                         f"in (0, 1], got {fraction!r}")
    d_head = check_positive_int("head_dim", head_dim)
    p["dim"] = check_even("int(head_dim * partial_rotary_factor)",
                          int(d_head * fraction))
    for name, value in (("max_position_embeddings", max_position_embeddings),
                        ("seq_len", seq_len)):
        p[name] = None if value is None else check_positive_int(name, value)
    if rope_type == "default":
        return p
    if rope_type == "yarn" and p["factor"] is None:  # max / original
        if p["max_position_embeddings"] is None:
            raise ValueError(
                "max_position_embeddings is None: YaRN with "
                f"{key('factor')} None needs it (factor = "
                "max_position_embeddings / original_max_position_embeddings)")
    else:
        check_number(key("factor"), p["factor"], at_least=1)
    if rope_type == "dynamic":
        if p["max_position_embeddings"] is None:
            raise ValueError(
                "max_position_embeddings is None: dynamic RoPE scales by "
                "seq_len / max_position_embeddings")
        if p["dim"] < 4:
            raise ValueError(
                "int(head_dim * partial_rotary_factor) must be >= 4 for "
                f"dynamic RoPE (it raises to dim / (dim - 2)), got {p['dim']}")
    if rope_type in ("yarn", "llama3"):
        check_positive_int(key("original_max_position_embeddings"),
                           p["original_max_position_embeddings"])
    if rope_type == "yarn":
        for name, default in (("beta_fast", 32), ("beta_slow", 1)):
            if p[name] is None:  # transformers: `beta_fast or 32`
                p[name] = default
            check_number(key(name), p[name], above=0)
        if p["beta_fast"] < p["beta_slow"]:
            raise ValueError(
                f"{key('beta_fast')} = {p['beta_fast']!r} must be >= "
                f"{key('beta_slow')} = {p['beta_slow']!r}")
        if p["attention_factor"] is not None:
            check_number(key("attention_factor"), p["attention_factor"],
                         above=0)
        for name in ("mscale", "mscale_all_dim"):
            if p[name] is not None:
                check_number(key(name), p[name], at_least=0)
        p["truncate"] = (True if p["truncate"] is None
                         else check_bool(key("truncate"), p["truncate"]))
    if rope_type == "llama3":
        low = check_number(key("low_freq_factor"), p["low_freq_factor"],
                           above=0)
        high = check_number(key("high_freq_factor"), p["high_freq_factor"],
                            above=0)
        if high <= low:
            raise ValueError(
                f"{key('high_freq_factor')} = {high!r} must be > "
                f"{key('low_freq_factor')} = {low!r}")
    return p


def compute_default_rope_parameters(rope_parameters, head_dim: int,
                                    max_position_embeddings=None,
                                    seq_len=None) -> tuple[np.ndarray, float]:
    """Plain RoPE: ``inv_freq = rope_theta ** (-2i / dim)``, no scaling.

    Parameters
    ----------
    rope_parameters : dict, ``rope_type`` "default" and ``rope_theta``
    head_dim, max_position_embeddings, seq_len : ``d_head``; two unused here

    See Also
    --------
    LlamaRotaryEmbedding.compute_default_rope_parameters : transformers'.
    """
    p = _check_rope_parameters("default", rope_parameters, head_dim,
                               max_position_embeddings, seq_len)
    base, dim = p["rope_theta"], p["dim"]
    return base ** (-np.arange(0, dim, 2) / dim), 1.0  # (dim/2,)


def compute_linear_scaling_rope_parameters(
        rope_parameters, head_dim: int, max_position_embeddings=None,
        seq_len=None) -> tuple[np.ndarray, float]:
    """Position interpolation: every frequency divided by ``factor``.

    Parameters
    ----------
    rope_parameters : dict, "linear", ``rope_theta``, ``factor`` >= 1
    head_dim, max_position_embeddings, seq_len : ``d_head``; two unused here

    See Also
    --------
    transformers.modeling_rope_utils._compute_linear_scaling_rope_parameters
    """
    p = _check_rope_parameters("linear", rope_parameters, head_dim,
                               max_position_embeddings, seq_len)
    base, dim = p["rope_theta"], p["dim"]
    # positions m / factor: the same angles as frequencies / factor
    return base ** (-np.arange(0, dim, 2) / dim) / p["factor"], 1.0


def compute_dynamic_ntk_parameters(
        rope_parameters, head_dim: int, max_position_embeddings=None,
        seq_len=None) -> tuple[np.ndarray, float]:
    """Dynamic NTK: a larger base once ``seq_len`` outgrows the model.

    Parameters
    ----------
    rope_parameters : dict, "dynamic", ``rope_theta``, ``factor`` >= 1
    head_dim : int, ``d_head``; the rotated width must be at least 4
    max_position_embeddings : int, the config's: up to it, plain RoPE
    seq_len : int, the length so far (HF: ``max(position_ids) + 1``)

    See Also
    --------
    transformers.modeling_rope_utils._compute_dynamic_ntk_parameters
    """
    p = _check_rope_parameters("dynamic", rope_parameters, head_dim,
                               max_position_embeddings, seq_len)
    base, dim, factor = p["rope_theta"], p["dim"], p["factor"]
    L = p["max_position_embeddings"]
    T = max(p["seq_len"] or L, L)
    base = base * (factor * T / L - (factor - 1)) ** (dim / (dim - 2))
    return base ** (-np.arange(0, dim, 2) / dim), 1.0  # (dim/2,)


def yarn_get_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's attention factor: ``0.1 * mscale * ln(scale) + 1``, 1 at 1.

    Parameters
    ----------
    scale : float, the context extension ``factor``
    mscale : float, a multiplier of the log (transformers' DeepSeek-V3's)
    """
    scale = check_number("scale", scale, above=0)
    mscale = check_number("mscale", mscale, at_least=0)
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def compute_yarn_parameters(rope_parameters, head_dim: int,
                            max_position_embeddings=None,
                            seq_len=None) -> tuple[np.ndarray, float]:
    """YaRN: slow pairs interpolated, fast pairs kept, a ramp between.

    Parameters
    ----------
    rope_parameters : dict, "yarn" and the keys of ``ROPE_KEYS["yarn"]``
    head_dim : int, ``d_head`` (DeepSeek-V3: ``qk_rope_head_dim``)
    max_position_embeddings : int, needed only when ``factor`` is None
    seq_len : unused by this rope_type

    See Also
    --------
    transformers.modeling_rope_utils._compute_yarn_parameters
    """
    p = _check_rope_parameters("yarn", rope_parameters, head_dim,
                               max_position_embeddings, seq_len)
    base, dim = p["rope_theta"], p["dim"]
    L = p["original_max_position_embeddings"]
    factor = p["factor"] or p["max_position_embeddings"] / L
    if p["attention_factor"] is not None:
        attention_factor = p["attention_factor"]
    elif p["mscale"] and p["mscale_all_dim"]:
        attention_factor = (yarn_get_mscale(factor, p["mscale"])
                            / yarn_get_mscale(factor, p["mscale_all_dim"]))
    else:
        attention_factor = yarn_get_mscale(factor)

    def pair_turning(turns):  # the pair that turns `turns` times in L
        return dim * math.log(L / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_turning(p["beta_fast"]), pair_turning(p["beta_slow"])
    if p["truncate"]:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    # 0 up to pair `low` (keep), 1 from pair `high` on (interpolate)
    ramp = np.clip((np.arange(dim // 2) - low) / ((high - low) or 0.001),
                   0, 1)  # (dim/2,)
    inv_freq = base ** (-np.arange(0, dim, 2) / dim)  # (dim/2,)
    return (inv_freq * (1 - ramp) + inv_freq / factor * ramp,
            float(attention_factor))


def compute_llama3_parameters(rope_parameters, head_dim: int,
                              max_position_embeddings=None,
                              seq_len=None) -> tuple[np.ndarray, float]:
    """Llama 3.1: long waves divided by ``factor``, short ones kept.

    Parameters
    ----------
    rope_parameters : dict, "llama3" and the keys of ``ROPE_KEYS["llama3"]``
    head_dim, max_position_embeddings, seq_len : ``d_head``; two unused here

    See Also
    --------
    transformers.modeling_rope_utils._compute_llama3_parameters
    """
    p = _check_rope_parameters("llama3", rope_parameters, head_dim,
                               max_position_embeddings, seq_len)
    base, dim, factor = p["rope_theta"], p["dim"], p["factor"]
    L, low, high = (p["original_max_position_embeddings"],
                    p["low_freq_factor"], p["high_freq_factor"])
    inv_freq = base ** (-np.arange(0, dim, 2) / dim)  # (dim/2,)
    wavelen = 2 * math.pi / inv_freq
    scaled = np.where(wavelen > L / low, inv_freq / factor, inv_freq)
    smooth = (L / wavelen - low) / (high - low)  # 0 at L/low, 1 at L/high
    medium = (wavelen >= L / high) & (wavelen <= L / low)
    mixed = (1 - smooth) * inv_freq / factor + smooth * inv_freq
    return np.where(medium, mixed, scaled), 1.0


#: rope_type -> its function, as transformers' ``ROPE_INIT_FUNCTIONS``
#: (which keeps "default" in each model's rotary embedding)
ROPE_INIT_FUNCTIONS = {
    "default": compute_default_rope_parameters,
    "linear": compute_linear_scaling_rope_parameters,
    "dynamic": compute_dynamic_ntk_parameters,
    "yarn": compute_yarn_parameters,
    "llama3": compute_llama3_parameters,
}


def compute_rope_parameters(rope_parameters, head_dim: int, *,
                            max_position_embeddings: int | None = None,
                            seq_len: int | None = None
                            ) -> tuple[np.ndarray, float]:
    """``inv_freq`` and the attention scaling of a config's RoPE.

    Parameters
    ----------
    rope_parameters : dict, ``rope_type`` (:data:`ROPE_TYPES`) and its keys
    head_dim : int, ``d_head``: ``int(head_dim * partial_rotary_factor)`` turn
    max_position_embeddings, seq_len : int, read by "dynamic" (and "yarn")

    See Also
    --------
    transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS
    """
    rope_type = _check_rope_mapping(rope_parameters).get("rope_type")
    check_choice("rope_parameters['rope_type']", rope_type, ROPE_TYPES)
    return ROPE_INIT_FUNCTIONS[rope_type](
        rope_parameters, head_dim, max_position_embeddings, seq_len)
