"""Scaled dot-product attention with the semantics of PyTorch's SDPA.

Shape legend:
    ...      leading batch/head dimensions, broadcast between the inputs
    T        query positions
    S        key/value positions
    d_head   size of one head's query, key and value vectors
    H        query heads (axis -3), only with ``enable_gqa``
    H_kv     key/value heads (axis -3), only with ``enable_gqa``
    n_rep    query heads per key/value head, ``H // H_kv``
    B        batch (axis -4 of 4-D inputs)

The kernels a layer picks by name (``attn_implementation``, as in
transformers' ``ALL_ATTENTION_FUNCTIONS``) are in ``ATTENTION_FUNCTIONS``:
``"eager"`` computes and returns the (B, H, T, S) weights;
``"flex_attention"`` runs the tiled kernel of ``px.tiled`` and never holds
them. Both take FlexAttention's ``score_mod`` and ``mask_mod`` and gpt-oss's
learned ``sinks``: a variant of attention is one of those, not a kernel.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_attention, check_choice
from .masks import causal_mask_mod, mask_to_bias
from .stable_softmax import softmax_core
from .tiled import tiled_attention_core

__all__ = ["scaled_dot_product_attention", "sdpa_core",
           "eager_attention_forward", "flex_attention_forward",
           "ATTENTION_FUNCTIONS", "attention_function"]


def scaled_dot_product_attention(query, key, value, *, attn_mask=None,
                                 is_causal: bool = False,
                                 scale: float | None = None,
                                 enable_gqa: bool = False,
                                 output_attentions: bool = False):
    """``softmax(Q K^T * scale + mask) V``, as torch's SDPA computes it.

    Parameters
    ----------
    query : ndarray, shape (..., T, d_head)
    key : ndarray, shape (..., S, d_head)
    value : ndarray, shape (..., S, d_head)
        Floats of one dtype; the leading dims broadcast.
    attn_mask : ndarray, shape broadcastable to (..., T, S), optional
        Boolean, True = may attend; or floating, added to the scores.
    is_causal : bool, default False
        Torch's top-left causal mask (query ``i`` sees keys ``0..i``).
    scale : float, optional
        Defaults to ``1 / sqrt(d_head)``.
    enable_gqa : bool, default False
        Query heads ``H`` on axis -3 share ``H_kv`` key/value heads.
    output_attentions : bool, default False
        Also return the weights.

    Returns
    -------
    output : ndarray, shape (..., T, d_head)
    weights : ndarray, shape (..., T, S), only with ``output_attentions``
        A row with no allowed key is all zeros (as torch >= 2.5), never NaN.

    See Also
    --------
    torch.nn.functional.scaled_dot_product_attention
    """
    q, k, v, attn_mask, _ = check_attention(query, key, value, attn_mask,
                                            is_causal, enable_gqa)
    out, weights = sdpa_core(q, k, v, attn_mask=attn_mask,
                             is_causal=is_causal, scale=scale,
                             enable_gqa=enable_gqa)
    return (out, weights) if output_attentions else out


def sdpa_core(query, key, value, attn_mask=None, is_causal=False,
              scale=None, enable_gqa=False, head_mask=None, score_mod=None,
              sinks=None):
    """Unchecked core of :func:`scaled_dot_product_attention`: out, weights.

    For callers that checked their inputs already (a layer, a model).

    Parameters
    ----------
    query : ndarray, shape (..., T, d_head)
    key, value : ndarray, shape (..., S, d_head)
        Of the dtype of ``query``; with ``enable_gqa``, (..., H_kv, S,
        d_head).
    attn_mask : ndarray, broadcastable to (..., T, S), optional
        Boolean (True = may attend) or floating (added to the scores).
    is_causal : bool, default False
        Torch's top-left triangle, used instead of ``attn_mask``.
    scale : float, optional
        Defaults to ``1 / sqrt(d_head)``.
    enable_gqa : bool, default False
        Query head ``h`` (axis -3) reads key/value head ``h // n_rep``.
    head_mask : ndarray, shape (H,), optional
        Multiplies each head's weights before they mix the values (0
        switches a head off), as the ``head_mask`` of older transformers
        models did; the weights returned are the multiplied ones.
    score_mod : callable, optional
        ``score_mod(score, b, h, q_idx, kv_idx)`` on the scaled scores,
        before the mask (FlexAttention's), with b and h over axes -4, -3.
    sinks : ndarray, shape (H,), optional
        One logit per head in every row's softmax, then dropped: the row's
        weights sum to less than 1 (gpt-oss).

    Returns
    -------
    output : ndarray, shape (..., T, d_head)
    weights : ndarray, shape (..., T, S)
    """
    T, S, d_head = query.shape[-2], key.shape[-2], query.shape[-1]
    if enable_gqa:  # query head h reads key/value head h // n_rep
        n_rep = query.shape[-3] // key.shape[-3]
        key, value = (np.repeat(x, n_rep, axis=-3) for x in (key, value))
    scale = query.dtype.type(1 / np.sqrt(d_head) if scale is None else scale)
    # (..., T, d_head) @ (..., d_head, S) -> (..., T, S)
    scores = query @ np.swapaxes(key, -1, -2) * scale
    if score_mod is not None:  # a soft-cap, a bias: FlexAttention's hook
        scores = score_mod(scores, *_indices(scores.shape))
    if is_causal:  # torch's top-left triangle: query i sees keys 0..i
        attn_mask = causal_mask_mod(0, 0, np.arange(T)[:, None],
                                    np.arange(S))
    if attn_mask is not None:
        scores = scores + mask_to_bias(attn_mask, scores.dtype)
    if sinks is None:
        weights = softmax_core(scores)  # (..., T, S); masked rows are zeros
    else:  # one more column per head, in the denominator only
        sink = np.broadcast_to(sinks[:, None, None], scores.shape[:-1] + (1,))
        weights = softmax_core(np.concatenate([scores, sink], -1))[..., :-1]
    if head_mask is not None:  # (H,) -> (H, 1, 1): one factor per head
        weights = weights * head_mask[:, None, None]
    batch = np.broadcast_shapes(weights.shape[:-2], value.shape[:-2])
    if weights.shape[:-2] != batch:  # value alone had extra leading dims
        weights = np.broadcast_to(weights, batch + (T, S)).copy()
    out = weights @ value  # (..., T, S) @ (..., S, d_head) -> (..., T, d_head)
    return out, weights


def _indices(shape: tuple) -> tuple:
    """b, h, q_idx, kv_idx over scores of ``shape`` (..., T, S), as
    FlexAttention's hooks see them (b: axis -4, h: axis -3)."""
    B, H, T, S = ((1, 1) + shape)[-4:]
    return (np.arange(B)[:, None, None, None], np.arange(H)[:, None, None],
            np.arange(T)[:, None], np.arange(S))


def eager_attention_forward(query, key, value, attn_mask=None, *,
                            scaling=None, score_mod=None, mask_mod=None,
                            sinks=None, head_mask=None):
    """The eager kernel, by name ``"eager"``: weights computed and returned.

    Unchecked: a layer calls it with what it built (transformers:
    ``eager_attention_forward`` in each model file).

    Parameters
    ----------
    query : ndarray, shape (B, H, T, d_head)
    key, value : ndarray, shape (B, H_kv, S, d_head)
        Query head ``h`` reads key/value head ``h // (H // H_kv)``.
    attn_mask : ndarray of bool, broadcastable to (B, H, T, S), optional
        True = may attend.
    scaling : float, optional
        Multiplies the scores; ``1 / sqrt(d_head)`` by default.
    score_mod, mask_mod : callable, optional
        FlexAttention's hooks, ``score_mod(score, b, h, q_idx, kv_idx)``
        and ``mask_mod(b, h, q_idx, kv_idx)`` (True = may attend), here on
        the whole (B, H, T, S) grid.
    sinks : ndarray, shape (H,), optional
        gpt-oss's learned sinks: one logit per head in each row's softmax.
    head_mask : ndarray, shape (H,), optional
        Multiplies each head's weights (0 switches the head off).

    Returns
    -------
    output : ndarray, shape (B, H, T, d_head)
    weights : ndarray, shape (B, H, T, S)
    """
    if mask_mod is not None:  # evaluated on every (b, h, q, kv) at once
        keep = mask_mod(*_indices(query.shape[:-1] + (key.shape[-2],)))
        attn_mask = keep if attn_mask is None else attn_mask & keep
    return sdpa_core(query, key, value, attn_mask=attn_mask, scale=scaling,
                     enable_gqa=True, head_mask=head_mask,
                     score_mod=score_mod, sinks=sinks)


def flex_attention_forward(query, key, value, attn_mask=None, *,
                           scaling=None, score_mod=None, mask_mod=None,
                           sinks=None, head_mask=None):
    """The tiled kernel, by name ``"flex_attention"``: no weights.

    FlashAttention's loop (:func:`pyxis_nb.tiled.tiled_attention_loop`,
    shown in the long-context chapter) with FlexAttention's hooks: hidden
    tiles are skipped, and the (B, H, T, S) weights never exist. Equal to
    :func:`eager_attention_forward`'s output to rounding.

    Parameters
    ----------
    query : ndarray, shape (B, H, T, d_head)
    key, value : ndarray, shape (B, H_kv, S, d_head)
    attn_mask : ndarray of bool, broadcastable to (B, H, T, S), optional
        True = may attend.
    scaling : float, optional
        Multiplies the scores; ``1 / sqrt(d_head)`` by default.
    score_mod, mask_mod : callable, optional
        FlexAttention's hooks, called per tile. ``mask_mod`` and
        ``attn_mask`` together: a key must pass both.
    sinks : ndarray, shape (H,), optional
        gpt-oss's learned sinks, as in :func:`eager_attention_forward`.
    head_mask : ndarray, shape (H,), optional
        Multiplies each head's output: the same as its weights.

    Returns
    -------
    output : ndarray, shape (B, H, T, d_head)
    weights : None
    """
    if mask_mod is not None and attn_mask is not None:  # both must allow
        mask_mod = _and_mask(mask_mod, attn_mask)
        attn_mask = None
    out = tiled_attention_core(query, key, value, attn_mask=attn_mask,
                               mask_mod=mask_mod, score_mod=score_mod,
                               scale=scaling, sinks=sinks)
    if head_mask is not None:  # a head's weights scaled: its output too
        out = out * head_mask[:, None, None]
    return out, None


def _and_mask(mask_mod, attn_mask):
    """``mask_mod`` and a (B|1, H|1, T|1, S|1) boolean mask, as one."""
    m = attn_mask.reshape((1,) * (4 - attn_mask.ndim) + attn_mask.shape)

    def both(b, h, q_idx, kv_idx):
        at = tuple(i * (n > 1) for i, n in zip((b, h, q_idx, kv_idx),
                                               m.shape))
        return mask_mod(b, h, q_idx, kv_idx) & m[at]
    return both


#: the kernels a layer can run, by ``attn_implementation``
ATTENTION_FUNCTIONS = {"eager": eager_attention_forward,
                       "flex_attention": flex_attention_forward}


def attention_function(attn_implementation: str):
    """The kernel of that name, from ``ATTENTION_FUNCTIONS``.

    Parameters
    ----------
    attn_implementation : {"eager", "flex_attention"}

    Returns
    -------
    callable
        ``(query, key, value, attn_mask, *, scaling, score_mod, mask_mod,
        sinks, head_mask) -> (output, weights or None)``.
    """
    check_choice("attn_implementation", attn_implementation,
                 tuple(ATTENTION_FUNCTIONS))
    return ATTENTION_FUNCTIONS[attn_implementation]
