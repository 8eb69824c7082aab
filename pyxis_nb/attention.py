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

``ATTENTION_FUNCTIONS``: the kernels a layer picks by ``attn_implementation``
(transformers' ``ALL_ATTENTION_FUNCTIONS``). Both take ``score_mod``,
``mask_mod`` and ``sinks``: a variant of attention is a hook, not a kernel.
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
    query, key, value : (..., T, d_head), (..., S, d_head), (..., S, d_head)
    attn_mask : (..., T, S), bool (True = may attend) or float (added)
    is_causal : bool, torch's top-left mask: query ``i`` sees keys ``0..i``
    scale : float, default ``1 / sqrt(d_head)``
    enable_gqa : bool, the ``H`` query heads (axis -3) share ``H_kv`` heads
    output_attentions : bool, also the (..., T, S) weights; a masked row is 0

    See Also
    --------
    torch.nn.functional.scaled_dot_product_attention"""
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

    Parameters
    ----------
    query, key, value, attn_mask, is_causal, scale : as in the checked one
    enable_gqa : bool, query head ``h`` (axis -3) reads kv head ``h // n_rep``
    head_mask : (H,), multiplies each head's weights, returned so (0: off)
    score_mod : FlexAttention's, on the scaled scores, before the mask
    sinks : (H,), a logit per head in each row's softmax, then dropped"""
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
                            sinks=None, head_mask=None, is_causal=False):
    """The eager kernel, by name ``"eager"``: weights computed and returned.

    Unchecked (transformers: ``eager_attention_forward`` in each model file).

    Parameters
    ----------
    query, key, value : (B, H, T, d_head) and (B, H_kv, S, d_head) twice
    attn_mask : bool, broadcastable to (B, H, T, S), True = may attend
    scaling : float, on the scores; default ``1 / sqrt(d_head)``
    score_mod, mask_mod : FlexAttention's hooks, on the whole (B, H, T, S) grid
    sinks, head_mask : (H,), as in :func:`sdpa_core`
    is_causal : bool, bottom-right: the T queries are the last T of S keys"""
    if is_causal:  # the new queries are the last T of the S positions
        mask_mod = _causal_after(mask_mod, key.shape[-2] - query.shape[-2])
    if mask_mod is not None:  # evaluated on every (b, h, q, kv) at once
        keep = mask_mod(*_indices(query.shape[:-1] + (key.shape[-2],)))
        attn_mask = keep if attn_mask is None else attn_mask & keep
    return sdpa_core(query, key, value, attn_mask=attn_mask, scale=scaling,
                     enable_gqa=True, head_mask=head_mask,
                     score_mod=score_mod, sinks=sinks)


def flex_attention_forward(query, key, value, attn_mask=None, *,
                           scaling=None, score_mod=None, mask_mod=None,
                           sinks=None, head_mask=None, is_causal=False):
    """The tiled kernel, by name ``"flex_attention"``: no weights.

    :func:`pyxis_nb.tiled.tiled_attention_loop`: eager's output, to rounding.

    Parameters
    ----------
    query, key, value, attn_mask, scaling, sinks : as in the eager kernel
    score_mod, mask_mod : called per tile; hidden tiles are skipped
    head_mask : (H,), multiplies each head's output
    is_causal : bool, as in the eager kernel, and no tile past the diagonal"""
    if mask_mod is not None and attn_mask is not None:  # both must allow
        mask_mod = _and_mask(mask_mod, attn_mask)
        attn_mask = None
    out = tiled_attention_core(query, key, value, attn_mask=attn_mask,
                               mask_mod=mask_mod, score_mod=score_mod,
                               scale=scaling, sinks=sinks,
                               is_causal=is_causal, causal_offset=(
                                   key.shape[-2] - query.shape[-2]))
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


def _causal_after(mask_mod, past: int):
    """The causal triangle for queries that follow ``past`` keys (query
    ``i`` is key ``past + i``), and ``mask_mod`` if given."""
    def causal(b, h, q_idx, kv_idx):
        keep = causal_mask_mod(b, h, q_idx + past, kv_idx)
        return keep if mask_mod is None else keep & mask_mod(b, h, q_idx,
                                                             kv_idx)
    return causal


#: the kernels a layer can run, by ``attn_implementation``
ATTENTION_FUNCTIONS = {"eager": eager_attention_forward,
                       "flex_attention": flex_attention_forward}


def attention_function(attn_implementation: str):
    """The kernel of that name, from ``ATTENTION_FUNCTIONS``.

    Parameters
    ----------
    attn_implementation : {"eager", "flex_attention"}"""
    check_choice("attn_implementation", attn_implementation,
                 tuple(ATTENTION_FUNCTIONS))
    return ATTENTION_FUNCTIONS[attn_implementation]
