"""One attention head: three projection matrices and the attention they feed.

Shape legend: ``T`` tokens, ``d_model`` embedding size, ``d_head`` head size.
Tokens are rows, so projections are ``x @ W`` with ``W`` of shape
(d_model, d_head). (PyTorch's ``Linear`` stores the transpose, (out, in); the
multi-head layer uses that layout, as the real checkpoints do.)
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_nonempty, check_positive_int
from .attention import scaled_dot_product_attention


__all__ = ["Head"]

class Head:
    """A single attention head with projections ``Wq``, ``Wk``, ``Wv``.

    Parameters
    ----------
    d_model : int
        Size of each input token vector.
    d_head : int
        Size of each query/key/value vector.
    seed : int, default 0
        Seed of the generator that fills the weights. The entries are drawn
        from a normal distribution with standard deviation ``1 / sqrt(d_model)``,
        so that a projected vector has entries of about unit variance when the
        inputs do.
    dtype : numpy dtype, default float64

    Attributes
    ----------
    Wq, Wk, Wv : ndarray, shape (d_model, d_head)

    See Also
    --------
    Head.identity : a head whose projections are identity matrices.
    """

    def __init__(self, d_model: int, d_head: int, seed: int = 0, dtype=np.float64):
        d_model = check_positive_int("d_model", d_model)
        d_head = check_positive_int("d_head", d_head)
        rng = np.random.default_rng(seed)
        std = 1.0 / np.sqrt(d_model)
        self.Wq, self.Wk, self.Wv = (
            (rng.standard_normal((d_model, d_head)) * std).astype(dtype) for _ in range(3)
        )

    @classmethod
    def identity(cls, d: int, dtype=np.float64) -> "Head":
        """A head with ``Wq = Wk = Wv = I`` (d, d): Q, K and V are the inputs themselves."""
        head = cls(d, d, dtype=dtype)
        head.Wq, head.Wk, head.Wv = (np.eye(d, dtype=dtype) for _ in range(3))
        return head

    @property
    def d_model(self) -> int:
        return self.Wq.shape[0]

    @property
    def d_head(self) -> int:
        return self.Wq.shape[1]

    def _check_x(self, x) -> np.ndarray:
        x = as_float_array("x", x, min_ndim=2)
        check_nonempty("x", x, {-2: "token"})
        if x.shape[-1] != self.d_model:
            raise ValueError(
                f"x has shape {x.shape}, expected (..., T, d_model) with "
                f"d_model = {self.d_model}"
            )
        return x

    def qkv(self, x):
        """Project tokens: returns ``(Q, K, V)``, each of shape (..., T, d_head)."""
        x = self._check_x(x)
        W = (w.astype(x.dtype, copy=False) for w in (self.Wq, self.Wk, self.Wv))
        return tuple(x @ w for w in W)  # (..., T, d_model) x (d_model, d_head) -> (..., T, d_head)

    def scores(self, x, scaled: bool = True) -> np.ndarray:
        """Scores before the softmax, ``Q K^T`` (divided by ``sqrt(d_head)`` if ``scaled``).

        Returns
        -------
        ndarray, shape (..., T, T)
            Row ``i`` holds how strongly token ``i`` matches every token.
        """
        q, k, _ = self.qkv(x)
        s = q @ np.swapaxes(k, -1, -2)  # (..., T, d_head) x (..., d_head, T) -> (..., T, T)
        # np.sqrt gives a float64 scalar, which would promote float32 scores: cast it
        return s / s.dtype.type(np.sqrt(self.d_head)) if scaled else s

    def weights(self, x, causal: bool = False, scaled: bool = True) -> np.ndarray:
        """Attention weights, shape (..., T, T); each row sums to 1."""
        return self.forward(x, causal=causal, scaled=scaled, return_weights=True)[1]

    def forward(self, x, causal: bool = False, scaled: bool = True, return_weights: bool = False):
        """Attend: ``softmax(Q K^T / sqrt(d_head) + mask) V``.

        Parameters
        ----------
        x : ndarray, shape (..., T, d_model)
        causal : bool
            If True, token ``i`` sees only tokens ``0..i``.
        scaled : bool
            If False, skip the ``1 / sqrt(d_head)`` factor (for the scaling chapter).
        return_weights : bool
            Also return the (..., T, T) weights.

        Returns
        -------
        out : ndarray, shape (..., T, d_head)
        weights : ndarray, shape (..., T, T), only with ``return_weights=True``
        """
        q, k, v = self.qkv(x)
        return scaled_dot_product_attention(
            q, k, v, is_causal=causal, scale=None if scaled else 1.0,
            return_weights=return_weights,
        )

    __call__ = forward

    def __repr__(self) -> str:
        return f"Head(d_model={self.d_model}, d_head={self.d_head})"
