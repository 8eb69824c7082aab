"""Rotary position embeddings (RoPE), in both pairing layouts.

RoPE treats a query or key as ``d_head / 2`` pairs of coordinates and
rotates pair ``i`` of the vector at position ``m`` by ``m * inv_freq[i]``.
Two layouts decide which coordinates pair up:

* ``"half"`` (Hugging Face ``rotate_half``, Qwen3): ``i`` with
  ``i + d_head/2``;
* ``"interleaved"`` (RoFormer, Meta's Llama code): ``(2i, 2i + 1)``.

Weights trained for one layout need the rows of ``q_proj`` and ``k_proj``
permuted per head to run in the other (:func:`permute_qk_proj`).

Shape legend:
    ...      any leading batch/head dimensions
    B        batch
    H        query heads
    H_kv     key/value heads
    T        positions
    d_head   size of one head's vectors, even: ``d_head / 2`` pairs
"""

from __future__ import annotations

import numpy as np

from ._checks import (as_float_array, check_choice, check_even, check_fits,
                      check_float_dtype, check_frequencies, check_pairs,
                      check_positions)

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


def rope_frequencies(head_dim: int,
                     rope_theta: float = 1_000_000.0) -> np.ndarray:
    """Radians per position of each pair: ``rope_theta ** (-2i / d_head)``.

    Parameters
    ----------
    head_dim : int
        ``d_head``, even (Qwen3: 128).
    rope_theta : float, default 1_000_000.0
        The base, ``rope_theta`` in the config (Qwen3: 1e6; Llama 2: 1e4).

    Returns
    -------
    inv_freq : ndarray of float64, shape (d_head/2,)

    See Also
    --------
    transformers.modeling_rope_utils._compute_default_rope_parameters
    """
    d_head, rope_theta = check_frequencies("head_dim", head_dim, rope_theta)
    return rope_theta ** (-np.arange(0, d_head, 2) / d_head)  # (d_head/2,)


def rotary_cos_sin(position_ids, head_dim: int, *,
                   rope_theta: float = 1_000_000.0,
                   dtype=np.float32):
    """The ``cos`` and ``sin`` tables of Hugging Face's rotary embedding.

    Both halves of the last axis repeat the same ``d_head / 2`` angles, as
    :func:`apply_rotary_pos_emb` expects. The angles are computed in
    float64 (Hugging Face: float32) and rounded once to ``dtype``.

    Parameters
    ----------
    position_ids : array_like of int, shape (B, T) or (T,)
        The position of each token (real positions are allowed too).
    head_dim : int
        ``d_head``, even.
    rope_theta : float, default 1_000_000.0
        The base of the frequencies, as in :func:`rope_frequencies`.
    dtype : numpy float dtype, default float32
        The dtype of the returned tables.

    Returns
    -------
    cos, sin : ndarray, shape (B, T, d_head)
        (1, T, d_head) for (T,) positions.

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3RotaryEmbedding.forward
    """
    pos = check_positions("position_ids", position_ids)
    dtype = check_float_dtype("dtype", dtype)
    pos = pos[None, :] if pos.ndim == 1 else pos  # (T,) -> (1, T)
    # (B, T, 1) * (d_head/2,) -> (B, T, d_head/2)
    freqs = pos[:, :, None] * rope_frequencies(head_dim, rope_theta)
    emb = np.concatenate([freqs, freqs], axis=-1)  # (B, T, d_head)
    return np.cos(emb).astype(dtype), np.sin(emb).astype(dtype)


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

    Returns
    -------
    ndarray, shape and dtype of ``x``

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.rotate_half
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
    q : ndarray, shape (B, H, T, d_head)
    k : ndarray, shape (B, H_kv, T, d_head)
    cos, sin : ndarray, shape (B, T, d_head)
        From :func:`rotary_cos_sin`; cast to the dtype of ``q`` and ``k``.
    unsqueeze_dim : int, default 1
        The heads axis inserted into ``cos`` and ``sin`` (2 for
        (B, T, H, d_head) inputs).

    Returns
    -------
    q_embed, k_embed : ndarray, shapes and dtypes of ``q`` and ``k``

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.apply_rotary_pos_emb
    """
    q, k, cos, sin = _check_rotary(q, k, cos, sin, unsqueeze_dim)
    return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)


def apply_rotary(x, cos, sin, layout="half"):
    """Unchecked core: rotate ``x`` by the angles of ``cos`` and ``sin``.

    ``cos`` and ``sin`` are Hugging Face's tables (both halves of the last
    axis hold the same ``d_head / 2`` angles). ``layout`` says which
    elements form a pair: "half" (``i``, ``i + d_head/2``), as
    ``x * cos + rotate_half(x) * sin``; "interleaved" (``2i``, ``2i + 1``).
    """
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
    x : ndarray of float, shape (..., T, d_head), d_head even
        Queries or keys, T >= 1.
    positions : array_like of int, shape (T,) or e.g. (B, 1, T)
        The position of each row; any shape that broadcasts to
        ``x.shape[:-1]`` with a last axis of T.
    rope_theta : float, default 1_000_000.0
        The base of the frequencies (Qwen3: 1e6), > 1.
    layout : {"half", "interleaved"}, default "half"
        Which coordinates pair up: ``(i, i + d_head/2)`` (Hugging Face,
        Qwen3) or ``(2i, 2i + 1)`` (RoFormer, Meta's Llama code).

    Returns
    -------
    ndarray, shape and dtype of ``x``

    See Also
    --------
    apply_rotary_pos_emb : Hugging Face's form of the half layout.
    """
    x, pos = _check_rope_args(x, positions, layout, ROPE_LAYOUTS)
    # (..., T, 1) * (d_head/2,) -> (..., T, d_head/2), both halves alike
    angles = pos[..., None] * rope_frequencies(x.shape[-1], rope_theta)
    angles = np.concatenate([angles, angles], axis=-1)  # (..., T, d_head)
    return apply_rotary(x, np.cos(angles), np.sin(angles), layout)


def interleaved_to_half_permutation(head_dim: int) -> np.ndarray:
    """``perm`` with ``x[..., perm]`` = an interleaved ``x`` in half layout.

    Pair ``(2i, 2i + 1)`` moves to ``(i, i + d_head/2)``: the even
    elements first, then the odd ones.

    Parameters
    ----------
    head_dim : int
        ``d_head``, even.

    Returns
    -------
    perm : ndarray of int, shape (d_head,)
    """
    d_head = check_even("head_dim", head_dim)
    return np.concatenate([np.arange(0, d_head, 2), np.arange(1, d_head, 2)])


def half_to_interleaved_permutation(head_dim: int) -> np.ndarray:
    """The inverse of :func:`interleaved_to_half_permutation`.

    Parameters
    ----------
    head_dim : int
        ``d_head``, even.

    Returns
    -------
    inv : ndarray of int, shape (d_head,)
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

    Row ``r`` of ``W`` (torch ``Linear`` layout) makes element ``r`` of the
    query, so permuting each head's rows by
    :func:`interleaved_to_half_permutation` moves every rotated pair to where
    the half layout rotates it. Queries and keys move alike, so scores are
    unchanged. Never permute ``v_proj`` or ``o_proj``; permute a per-head
    ``q_norm`` / ``k_norm`` weight the same way.

    Parameters
    ----------
    weight : ndarray, shape (heads * d_head, ...)
        A projection (H*d_head or H_kv*d_head, d_model) or its 1-D bias.
    head_dim : int
        ``d_head``, even: the rows are cut into heads of this many.
    inverse : bool, default False
        Half -> interleaved instead.

    Returns
    -------
    ndarray, shape and dtype of ``weight``

    See Also
    --------
    transformers/models/llama/convert_llama_weights_to_hf.py : ``permute``.
    """
    w, d_head = _check_proj_rows(weight, head_dim)
    perm = (half_to_interleaved_permutation if inverse
            else interleaved_to_half_permutation)(d_head)
    per_head = w.reshape(-1, d_head, *w.shape[1:])  # (H, d_head, ...)
    return per_head[:, perm].reshape(w.shape)  # (H * d_head, ...)
