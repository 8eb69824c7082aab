"""One attention head: three projection matrices and the attention they feed.

Shape legend:
    ...       leading batch dimensions
    T         tokens (query and key positions are the same tokens)
    d_model   size of one token's vector
    d_head    size of one head's query, key and value vectors

Tokens are rows: a projection is ``x @ W``, ``W`` (d_model, d_head), the
transpose of torch's ``Linear.weight`` (the multi-head layer's layout).
"""

from __future__ import annotations

import numpy as np

from ._checks import (as_float_array, check_last_axis, check_nonempty,
                      check_positive_int, check_same_dtype)
from .attention import sdpa_core

__all__ = ["Head"]


def check_tokens(name: str, x, d_model: int) -> np.ndarray:
    """Token vectors: a float array (..., T, d_model) with T >= 1."""
    x = as_float_array(name, x, min_ndim=2)
    check_nonempty(name, x, {-2: "token"})
    check_last_axis(name, x, d_model, "(..., T, d_model)", "d_model")
    return x


class Head:
    """A single attention head with projections ``Wq``, ``Wk``, ``Wv``.

    Normal, std ``1 / sqrt(d_model)``: unit-variance inputs project to
    about unit variance.

    Parameters
    ----------
    hidden_size, head_dim : int, ``d_model`` and ``d_head``
    seed : int, the seed of the weights
    dtype : numpy dtype of the weights
    """

    def __init__(self, hidden_size: int, head_dim: int, seed: int = 0,
                 dtype=np.float64):
        d_model = check_positive_int("hidden_size", hidden_size)
        d_head = check_positive_int("head_dim", head_dim)
        rng = np.random.default_rng(seed)
        std = 1.0 / np.sqrt(d_model)
        self.Wq, self.Wk, self.Wv = (
            (rng.standard_normal((d_model, d_head)) * std).astype(dtype)
            for _ in range(3))

    @classmethod
    def identity(cls, hidden_size: int, dtype=np.float64) -> "Head":
        """A head with ``Wq = Wk = Wv = I``: Q, K and V are the inputs.

        Parameters
        ----------
        hidden_size : int, ``d_model``, which is also ``d_head`` here
        dtype : numpy dtype of the weights
        """
        head = cls(hidden_size, hidden_size, dtype=dtype)
        head.Wq, head.Wk, head.Wv = (np.eye(hidden_size, dtype=dtype)
                                     for _ in range(3))
        return head

    @property
    def hidden_size(self) -> int:
        return self.Wq.shape[0]

    @property
    def head_dim(self) -> int:
        return self.Wq.shape[1]

    def qkv(self, x):
        """Tokens (..., T, d_model) to Q, K, V: each (..., T, d_head).

        Parameters
        ----------
        x : ndarray of float, shape (..., T, d_model), T >= 1
        """
        x = check_tokens("x", x, self.hidden_size)
        check_same_dtype(Wq=self.Wq, x=x)  # as torch: no silent cast
        # (..., T, d_model) @ (d_model, d_head) -> (..., T, d_head)
        return tuple(x @ W for W in (self.Wq, self.Wk, self.Wv))

    def scores(self, x, scaled: bool = True) -> np.ndarray:
        """``Q K^T``, over ``sqrt(d_head)`` if ``scaled``: (..., T, T).

        Parameters
        ----------
        x : ndarray of float, shape (..., T, d_model)
        scaled : bool, False shows the raw dot products
        """
        q, k, _ = self.qkv(x)
        s = q @ np.swapaxes(k, -1, -2)  # (..., T, d_head) @ (..., d_head, T)
        # np.sqrt gives a float64 scalar, which would promote float32 scores
        return s / s.dtype.type(np.sqrt(self.head_dim)) if scaled else s

    def weights(self, x, is_causal: bool = False,
                scaled: bool = True) -> np.ndarray:
        """Attention weights, shape (..., T, T); each row sums to 1.

        Parameters
        ----------
        x, is_causal, scaled : as :meth:`forward` takes them
        """
        return self.forward(x, is_causal=is_causal, scaled=scaled,
                            output_attentions=True)[1]

    def forward(self, x, is_causal: bool = False, scaled: bool = True,
                output_attentions: bool = False):
        """Attend: ``softmax(Q K^T / sqrt(d_head) + mask) V``.

        Parameters
        ----------
        x : ndarray of float, shape (..., T, d_model)
        is_causal : bool, token ``i`` sees only tokens ``0..i``
        scaled : bool, False skips ``1 / sqrt(d_head)`` (the scaling chapter)
        output_attentions : bool, also return the weights
        """
        q, k, v = self.qkv(x)
        out, weights = sdpa_core(q, k, v, is_causal=is_causal,
                                 scale=None if scaled else 1.0)
        return (out, weights) if output_attentions else out

    __call__ = forward

    def __repr__(self) -> str:
        return (f"Head(hidden_size={self.hidden_size}, "
                f"head_dim={self.head_dim})")
