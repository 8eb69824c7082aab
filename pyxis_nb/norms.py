"""RMSNorm, which Qwen3 applies to every query and key head before RoPE.

Shape legend:
    ... any leading dimensions (batch, heads, positions)
    D   the normalised axis (head_dim for ``q_norm`` / ``k_norm``, hidden_size
        for the layer norms around attention and MLP)
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_same_dtype

__all__ = ["rms_norm"]


def rms_norm(x, weight, eps: float = 1e-6):
    r"""Divide ``x`` by its root mean square (last axis), scale by ``weight``.

    .. math:: y = w \odot x / \sqrt{\operatorname{mean}(x^2) + \varepsilon}

    Unlike LayerNorm there is no mean subtraction and no bias. Qwen3 uses it as
    ``q_norm`` and ``k_norm`` with D = head_dim = 128: every head's query and
    key vector is normalised on its own, before the rotary embedding.

    Parameters
    ----------
    x : ndarray, shape (..., D)
        Float input; float32 stays float32. float16 is computed in float32
        and cast back, as Hugging Face does.
    weight : ndarray, shape (D,)
        The learned gain (``q_norm.weight``), of ``x``'s dtype (torch
        raises on mixed dtypes; so does this).
    eps : float, default 1e-6
        Added to the mean square (Qwen3's ``rms_norm_eps``).

    Returns
    -------
    ndarray, shape and dtype of ``x``

    Raises
    ------
    ValueError
        Non-float input, ``weight`` not of shape (D,) or not of ``x``'s
        dtype, or ``eps`` < 0.

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3RMSNorm
    torch.nn.RMSNorm
    """
    x = as_float_array("x", x)
    w = as_float_array("weight", weight)
    if w.shape != (x.shape[-1],):
        raise ValueError(
            f"weight has shape {w.shape}, expected (D,) = ({x.shape[-1]},) "
            f"to match x of shape {x.shape}"
        )
    check_same_dtype(x=x, weight=w)
    if not np.isscalar(eps) or not eps >= 0:
        raise ValueError(f"eps must be a number >= 0, got {eps!r}")
    # float16 is computed in float32
    work = np.dtype(np.float32) if x.dtype.itemsize < 4 else x.dtype
    h = x.astype(work, copy=False)
    variance = np.mean(h * h, axis=-1, keepdims=True)  # (..., D) -> (..., 1)
    h = h / np.sqrt(variance + work.type(eps))  # (..., D) / (..., 1)
    return w * h.astype(x.dtype)
