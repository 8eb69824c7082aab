"""Rotary position embeddings (RoPE), in both pairing layouts.

RoPE treats the head dimension as ``D / 2`` pairs of coordinates, each pair a
point in the plane, and rotates pair ``i`` of the vector at position ``m`` by
the angle ``m * inv_freq[i]``. Only queries and keys are rotated. Two layouts
decide which coordinates form a pair:

* ``"half"`` (Hugging Face ``rotate_half``, used by Qwen3 checkpoints): element
  ``i`` pairs with element ``i + D/2``;
* ``"interleaved"`` (the RoFormer paper, Meta's original Llama code): elements
  ``(0, 1), (2, 3), ...`` pair up, each pair read as one complex number.

Weights trained for one layout give wrong scores under the other unless the
rows of ``q_proj`` and ``k_proj`` are permuted per head (see
:func:`permute_qk_proj`).

Shape legend:
    B   batch                       H   heads (query or key/value heads)
    T   positions (tokens)          D   head_dim, even; D/2 rotated pairs
    ... any leading batch/head dimensions
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_positive_int

__all__ = [
    "ROPE_LAYOUTS",
    "apply_rope",
    "apply_rotary_pos_emb",
    "half_to_interleaved_permutation",
    "interleaved_to_half_permutation",
    "permute_qk_proj",
    "rope_frequencies",
    "rotary_cos_sin",
    "rotate_half",
]

ROPE_LAYOUTS = ("half", "interleaved")


# ----------------------------------------------------------------- validation helpers
def _check_head_dim(name: str, head_dim) -> int:
    head_dim = check_positive_int(name, head_dim)
    if head_dim % 2:
        raise ValueError(
            f"{name} must be even, got {head_dim} (RoPE rotates pairs of coordinates)"
        )
    return head_dim


def _check_theta(theta, name: str = "theta") -> float:
    if (isinstance(theta, bool) or not np.isscalar(theta) or not np.isreal(theta)
            or not np.isfinite(theta) or theta <= 1):
        raise ValueError(f"{name} must be a finite number > 1 (Qwen3: 1_000_000.0), got {theta!r}")
    return float(theta)


def _check_layout(layout) -> str:
    if layout not in ROPE_LAYOUTS:
        raise ValueError(f"layout must be one of {ROPE_LAYOUTS}, got {layout!r}")
    return layout


def _as_positions(name: str, positions) -> np.ndarray:
    """Positions as a float64 array (integers or floats; not bool, not complex)."""
    pos = np.asarray(positions)
    if pos.dtype == bool or not (np.issubdtype(pos.dtype, np.integer)
                                 or np.issubdtype(pos.dtype, np.floating)):
        raise ValueError(
            f"{name} must hold integer (or real) positions, got dtype {pos.dtype} "
            f"with shape {pos.shape}"
        )
    return pos.astype(np.float64)


def _check_x(name: str, x) -> np.ndarray:
    x = as_float_array(name, x, min_ndim=2)
    if x.shape[-2] == 0 or x.shape[-1] == 0:
        raise ValueError(f"{name} has shape {x.shape}, expected (..., T, D) with T, D >= 1")
    if x.shape[-1] % 2:
        raise ValueError(
            f"{name} has shape {x.shape}: its last axis (head_dim D = {x.shape[-1]}) "
            "must be even, since RoPE rotates pairs of coordinates"
        )
    return x


# ------------------------------------------------------------------------ frequencies
def rope_frequencies(head_dim: int, theta: float = 1_000_000.0) -> np.ndarray:
    """The rotation speed of each pair: ``inv_freq[i] = theta ** (-2 i / head_dim)``.

    Pair 0 turns by 1 radian per position; the last pair turns slowest, by
    ``theta ** (-(head_dim - 2) / head_dim)`` radians. Its wavelength, the
    number of positions for one full turn, is ``2 pi / inv_freq[i]``.

    Parameters
    ----------
    head_dim : int
        D, even (Qwen3: 128).
    theta : float, default 1_000_000.0
        The base, ``rope_theta`` in the model config (Qwen3: 1e6; Llama 2: 1e4).

    Returns
    -------
    inv_freq : ndarray, shape (D/2,), float64
        Radians per position, pair by pair.

    Raises
    ------
    ValueError
        If ``head_dim`` is not a positive even integer or ``theta`` is not > 1.

    See Also
    --------
    transformers.modeling_rope_utils._compute_default_rope_parameters :
        the same formula (Hugging Face computes it in float32).
    """
    head_dim = _check_head_dim("head_dim", head_dim)
    theta = _check_theta(theta)
    i = np.arange(head_dim // 2, dtype=np.float64)  # (D/2,)
    return theta ** (-2.0 * i / head_dim)


def rotary_cos_sin(position_ids, head_dim: int, *, theta: float = 1_000_000.0,
                   dtype=np.float32):
    """``cos`` and ``sin`` tables laid out as Hugging Face's rotary embedding returns them.

    ``angle[b, t, i] = position_ids[b, t] * inv_freq[i]``, and both halves of
    the last axis repeat the same ``D/2`` angles (``emb = cat(freqs, freqs)``),
    which is what :func:`apply_rotary_pos_emb` expects.

    Parameters
    ----------
    position_ids : array_like of int, shape (B, T) or (T,)
        Absolute position of every token. A 1-D input is treated as batch 1.
    head_dim : int
        D, even.
    theta : float, default 1_000_000.0
    dtype : numpy dtype, default float32
        Dtype of the returned tables (Hugging Face casts to the query's dtype).

    Returns
    -------
    cos, sin : ndarray, shape (B, T, D)

    Raises
    ------
    ValueError
        Non-integer/real positions, positions that are not 1-D or 2-D, an odd
        ``head_dim``, or a non-float ``dtype``.

    Notes
    -----
    The angles are computed in float64 and rounded once to ``dtype``.
    ``Qwen3RotaryEmbedding.forward`` computes them in float32, so at position
    ``p`` its angles can be off by about ``p * 6e-8`` radians; at the 40,960
    positions of Qwen3 that is a few thousandths of a radian in the fastest pair.

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3RotaryEmbedding.forward
    """
    pos = _as_positions("position_ids", position_ids)
    if pos.ndim == 1:
        pos = pos[None, :]  # (T,) -> (1, T)
    if pos.ndim != 2:
        raise ValueError(f"position_ids has shape {pos.shape}, expected (B, T) or (T,)")
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating):
        raise ValueError(f"dtype must be a floating dtype (float32 or float64), got {dtype}")
    inv_freq = rope_frequencies(head_dim, theta)  # (D/2,)
    freqs = pos[:, :, None] * inv_freq  # (B, T, 1) * (D/2,) -> (B, T, D/2)
    emb = np.concatenate([freqs, freqs], axis=-1)  # (B, T, D): both halves share the angles
    return np.cos(emb).astype(dtype), np.sin(emb).astype(dtype)


# --------------------------------------------------------- Hugging Face (half layout)
def rotate_half(x):
    """Map the halves ``[x1, x2]`` of the last axis to ``[-x2, x1]``.

    Paired with the duplicated ``cos``/``sin`` tables this rotates each pair
    ``(x[i], x[i + D/2])`` by 90 degrees; applying it twice negates ``x``.

    Parameters
    ----------
    x : ndarray, shape (..., D)
        D even.

    Returns
    -------
    ndarray, shape (..., D), same dtype as ``x``

    Raises
    ------
    ValueError
        Non-float input or an odd last axis.

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.rotate_half
    """
    x = as_float_array("x", x)
    if x.shape[-1] % 2:
        raise ValueError(f"x has shape {x.shape}, expected (..., D) with D even")
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]  # (..., D/2) each
    return np.concatenate([-x2, x1], axis=-1)  # (..., D)


def _expand_table(name: str, table, unsqueeze_dim: int) -> np.ndarray:
    t = as_float_array(name, table)
    if not -t.ndim - 1 <= unsqueeze_dim <= t.ndim:
        raise ValueError(
            f"unsqueeze_dim = {unsqueeze_dim} is out of range for {name} of shape {t.shape}"
        )
    return np.expand_dims(t, unsqueeze_dim)


def _check_fits(name: str, x: np.ndarray, table_name: str, table: np.ndarray) -> None:
    """The table must broadcast against x without making x bigger."""
    try:
        fits = np.broadcast_shapes(x.shape, table.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"{table_name} (after unsqueeze) has shape {table.shape}, which does not "
            f"broadcast to {name} of shape {x.shape}; expected e.g. cos (B, T, D) with "
            f"{name} (B, H, T, D) and unsqueeze_dim=1"
        )


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim: int = 1):
    """Rotate queries and keys in the half layout: ``x * cos + rotate_half(x) * sin``.

    Parameters
    ----------
    q : ndarray, shape (B, Hq, T, D)
    k : ndarray, shape (B, Hkv, T, D)
        Any shapes work that the unsqueezed tables broadcast to.
    cos, sin : ndarray, shape (B, T, D)
        From :func:`rotary_cos_sin`.
    unsqueeze_dim : int, default 1
        Axis inserted into ``cos`` and ``sin`` so that they broadcast over the
        heads: 1 for (B, H, T, D) tensors, 2 for (B, T, H, D).

    Returns
    -------
    q_embed : ndarray, shape and dtype of ``q``
    k_embed : ndarray, shape and dtype of ``k``

    Raises
    ------
    ValueError
        Non-float input, ``cos`` and ``sin`` of different shapes, or tables
        that do not broadcast to ``q`` / ``k`` without enlarging them.

    Notes
    -----
    The tables are cast to the dtype of ``q`` (and of ``k``) first, so float32
    stays float32; torch would promote to the wider dtype instead.

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.apply_rotary_pos_emb
    apply_rope : the same rotation from positions, in either layout.
    """
    q = as_float_array("q", q)
    k = as_float_array("k", k)
    cos = _expand_table("cos", cos, unsqueeze_dim)
    sin = _expand_table("sin", sin, unsqueeze_dim)
    if cos.shape != sin.shape:
        raise ValueError(f"cos and sin must have one shape, got cos {cos.shape}, sin {sin.shape}")
    for name, x in (("q", q), ("k", k)):
        _check_fits(name, x, "cos", cos)
    q_embed = q * cos.astype(q.dtype) + rotate_half(q) * sin.astype(q.dtype)
    k_embed = k * cos.astype(k.dtype) + rotate_half(k) * sin.astype(k.dtype)
    return q_embed, k_embed


# ------------------------------------------------------------------ both layouts
def _rotate_pairs(x1, x2, cos, sin):
    """Rotate the 2-D points ``(x1, x2)`` by the angles whose cos/sin are given."""
    return x1 * cos - x2 * sin, x1 * sin + x2 * cos


def apply_rope(x, positions, *, theta: float = 1_000_000.0, layout: str = "half"):
    """Rotate every pair of ``x`` at position ``p`` by ``p * inv_freq[i]``.

    Parameters
    ----------
    x : ndarray, shape (..., T, D)
        Queries or keys, e.g. (B, H, T, D); D even. float32 stays float32.
    positions : array_like of int, shape (T,) or broadcastable to x.shape[:-1]
        Position of each row, e.g. ``np.arange(T)``; for (B, H, T, D) with
        per-sequence positions pass (B, 1, T).
    theta : float, default 1_000_000.0
    layout : {"half", "interleaved"}, default "half"
        ``"half"`` pairs element ``i`` with ``i + D/2`` (Hugging Face,
        Qwen3); ``"interleaved"`` pairs ``(2i, 2i + 1)`` (RoFormer, Meta's Llama).
        In both layouts pair ``i`` turns at ``inv_freq[i]``.

    Returns
    -------
    ndarray, shape and dtype of ``x``

    Raises
    ------
    ValueError
        Non-float ``x``, an odd D, positions whose last axis is not T or that
        do not broadcast to ``x.shape[:-1]``, or an unknown layout.

    See Also
    --------
    apply_rotary_pos_emb : Hugging Face's form of the half layout.
    """
    x = _check_x("x", x)
    layout = _check_layout(layout)
    T, D = x.shape[-2:]
    pos = _as_positions("positions", positions)
    if pos.ndim == 0 or pos.shape[-1] != T:
        raise ValueError(
            f"positions has shape {pos.shape}, expected (T,) = ({T},) to match x of "
            f"shape {x.shape} (..., T, D)"
        )
    try:
        fits = np.broadcast_shapes(pos.shape, x.shape[:-1]) == x.shape[:-1]
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"positions has shape {pos.shape}, which does not broadcast to "
            f"x.shape[:-1] = {x.shape[:-1]}"
        )
    angles = pos[..., None] * rope_frequencies(D, theta)  # (..., T, 1) * (D/2,) -> (..., T, D/2)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    if layout == "half":
        a, b = _rotate_pairs(x[..., : D // 2], x[..., D // 2:], cos, sin)  # (..., T, D/2) each
        return np.concatenate([a, b], axis=-1)  # (..., T, D)
    out = np.empty(x.shape, dtype=x.dtype)
    out[..., 0::2], out[..., 1::2] = _rotate_pairs(x[..., 0::2], x[..., 1::2], cos, sin)
    return out


# ---------------------------------------------------------- converting between layouts
def interleaved_to_half_permutation(head_dim: int) -> np.ndarray:
    """Index array ``perm`` with ``x[..., perm]`` = an interleaved vector in half layout.

    Interleaved pair ``i`` sits at ``(2i, 2i + 1)``; in the half layout it must
    sit at ``(i, i + D/2)``. So ``perm = [0, 2, 4, ..., D-2, 1, 3, ..., D-1]``:
    the even elements first, then the odd ones.

    Parameters
    ----------
    head_dim : int
        D, even.

    Returns
    -------
    perm : ndarray of int, shape (D,)

    Raises
    ------
    ValueError
        If ``head_dim`` is not a positive even integer.

    See Also
    --------
    half_to_interleaved_permutation : the inverse.
    permute_qk_proj : the same permutation applied to projection rows, per head.
    """
    head_dim = _check_head_dim("head_dim", head_dim)
    return np.concatenate([np.arange(0, head_dim, 2), np.arange(1, head_dim, 2)])


def half_to_interleaved_permutation(head_dim: int) -> np.ndarray:
    """Index array ``inv`` with ``x[..., inv]`` = a half-layout vector in interleaved layout.

    The inverse of :func:`interleaved_to_half_permutation`:
    ``inv = [0, D/2, 1, D/2 + 1, ...]``.

    Parameters
    ----------
    head_dim : int
        D, even.

    Returns
    -------
    inv : ndarray of int, shape (D,)

    Raises
    ------
    ValueError
        If ``head_dim`` is not a positive even integer.
    """
    return np.argsort(interleaved_to_half_permutation(head_dim))


def permute_qk_proj(weight, num_heads: int, *, inverse: bool = False) -> np.ndarray:
    """Reorder the rows of a q/k projection, head by head, from interleaved to half layout.

    A query is ``q = W x`` with ``W`` in PyTorch ``Linear`` layout (out, in), so
    row ``r`` of ``W`` produces element ``r`` of ``q``. Reordering the rows of
    each head by ``perm = interleaved_to_half_permutation(D)`` makes ``W' x``
    equal ``(W x)[perm]`` per head: every pair that the interleaved model
    rotated together at ``(2i, 2i + 1)`` now comes out at ``(i, i + D/2)``,
    where the half layout rotates it, at the same frequency. Queries and keys
    go through the same reordering, and a dot product does not care about the
    order of its terms, so attention scores (hence the whole model) are
    unchanged. This is what the ``permute`` function of Hugging Face's Llama
    conversion script does to Meta's ``wq`` and ``wk``
    (``w.view(n_heads, D // 2, 2, dim).transpose(1, 2).reshape(...)``).
    Never permute ``v_proj`` or ``o_proj``: values are not rotated.

    Parameters
    ----------
    weight : ndarray, shape (num_heads * D, hidden) or (num_heads * D,)
        ``q_proj.weight`` (with ``num_attention_heads``) or ``k_proj.weight``
        (with ``num_key_value_heads``); a 1-D bias is permuted the same way.
    num_heads : int
        Heads stacked in the rows.
    inverse : bool, default False
        Go from half to interleaved layout instead.

    Returns
    -------
    ndarray, same shape and dtype as ``weight``

    Raises
    ------
    ValueError
        Non-float ``weight``, a shape other than 1-D or 2-D, rows not divisible
        into ``num_heads`` heads, or an odd head size.

    Notes
    -----
    Qwen3's per-head ``q_norm`` / ``k_norm`` (RMSNorm over D) commute with the
    permutation once their (D,) weight is permuted the same way:
    ``norm_weight[perm]``.

    See Also
    --------
    transformers/models/llama/convert_llama_weights_to_hf.py : ``permute``.
    """
    w = as_float_array("weight", weight)
    if w.ndim not in (1, 2):
        raise ValueError(
            f"weight has shape {w.shape}, expected (num_heads * head_dim, hidden) or "
            "(num_heads * head_dim,)"
        )
    num_heads = check_positive_int("num_heads", num_heads)
    rows = w.shape[0]
    if rows % num_heads:
        raise ValueError(
            f"weight has shape {w.shape}: its {rows} rows do not split into "
            f"num_heads = {num_heads} heads, expected (num_heads * head_dim, ...)"
        )
    head_dim = _check_head_dim("head_dim (weight rows / num_heads)", rows // num_heads)
    perm = (half_to_interleaved_permutation if inverse else interleaved_to_half_permutation)(head_dim)
    per_head = w.reshape(num_heads, head_dim, *w.shape[1:])  # (N*D, ...) -> (N, D, ...)
    return per_head[:, perm].reshape(w.shape)  # (N, D, ...) -> (N*D, ...)
