"""Small measurements behind the book's claims about the ``1 / sqrt(d)`` scale.

Shape legend: ``T`` tokens (also the length of one softmax row), ``d`` the
size of each token, query and key vector: the book's ``d_head`` (the
experiments use one square head, ``d_model = d_head = d``), ``n`` the number
of random (q, k) pairs.

Every function is deterministic: the randomness comes from
``np.random.default_rng(seed)``, so the book prints the same numbers on every
machine (rounded).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ._checks import as_float_array, check_positive_int
from .head import Head
from .softmax import softmax

__all__ = [
    "random_attention_weights",
    "max_attention_weight",
    "dot_product_std",
    "softmax_jacobian",
]


def random_attention_weights(
    d: int, *, T: int = 6, seed: int = 0, scaled: bool = True, weight_std: float | None = None
) -> np.ndarray:
    """Attention weights of an untrained head on ``T`` random tokens of size ``d``.

    The tokens are standard normal, shape (T, d). The head is ``Head(d, d, seed)``,
    whose projections have entries of standard deviation ``1 / sqrt(d)``, so each
    entry of a query or key has variance about 1 whatever ``d`` is.

    Parameters
    ----------
    d : int
        Token and head size (``d_model = d_head = d``), >= 1.
    T : int, default 6
        Number of tokens, >= 1. A uniform row has weights ``1 / T``.
    seed : int, default 0
        Seeds both the tokens and the head.
    scaled : bool, default True
        Divide the scores by ``sqrt(d)`` (True) or not (False).
    weight_std : float, optional
        If given, the projections get entries of this fixed standard deviation
        instead of ``1 / sqrt(d)``. A fixed value makes each query/key entry
        grow with ``d`` (variance ``d * weight_std**2``), as an init that is not
        normalised by fan-in does.

    Returns
    -------
    ndarray, shape (T, T), float64
        Row ``i`` holds token ``i``'s weights over all ``T`` tokens (no mask).

    Raises
    ------
    ValueError
        If ``d`` or ``T`` is not an integer >= 1, or ``weight_std`` is not > 0.

    See Also
    --------
    pyxis_nb.head.Head.weights : the call made here.
    torch.nn.init.normal_ : drawing a fixed-std init in torch.
    """
    d = check_positive_int("d", d)
    T = check_positive_int("T", T)
    head = Head(d, d, seed=seed)
    if weight_std is not None:
        if not weight_std > 0:
            raise ValueError(f"weight_std must be > 0, got {weight_std!r}")
        # Head draws std 1/sqrt(d); rescale those same draws to std weight_std
        factor = weight_std * np.sqrt(d)
        head.Wq, head.Wk, head.Wv = (w * factor for w in (head.Wq, head.Wk, head.Wv))
    # a different stream from the head's, so tokens and weights are independent
    x = np.random.default_rng([seed, 1]).standard_normal((T, d))  # (T, d)
    return head.weights(x, scaled=scaled)  # (T, T)


def max_attention_weight(
    d: int,
    *,
    scaled: bool = True,
    T: int = 6,
    seeds: Iterable[int] = range(20),
    weight_std: float | None = None,
) -> float:
    """The largest weight in a row, averaged over rows and seeds.

    A uniform row gives ``1 / T``; a row that has collapsed onto one token
    gives 1. See :func:`random_attention_weights` for the setup.

    Parameters
    ----------
    d : int
        Token and head size, >= 1.
    scaled : bool, default True
        Divide the scores by ``sqrt(d)``.
    T : int, default 6
        Number of tokens.
    seeds : iterable of int, default range(20)
        One random head and one random sentence per seed; must not be empty.
    weight_std : float, optional
        Fixed projection std (see :func:`random_attention_weights`).

    Returns
    -------
    float
        Mean over seeds and rows of ``weights.max(axis=-1)``, in ``[1/T, 1]``.

    Raises
    ------
    ValueError
        If ``seeds`` is empty, or as :func:`random_attention_weights`.
    """
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds is empty: expected at least one seed")
    w = np.stack([
        random_attention_weights(d, T=T, seed=s, scaled=scaled, weight_std=weight_std)
        for s in seeds
    ])  # (len(seeds), T, T)
    return float(w.max(axis=-1).mean())


def dot_product_std(d: int, *, n: int = 20_000, seed: int = 0, scaled: bool = False) -> float:
    """Empirical standard deviation of ``q . k`` for random unit-variance vectors.

    ``q`` and ``k`` have ``d`` independent standard normal entries, so
    ``q . k`` is a sum of ``d`` independent terms of variance 1: its variance
    is ``d`` and its standard deviation ``sqrt(d)``. Divided by ``sqrt(d)`` it
    has standard deviation 1.

    Parameters
    ----------
    d : int
        Vector size, >= 1.
    n : int, default 20000
        Number of random (q, k) pairs, >= 2.
    seed : int, default 0
    scaled : bool, default False
        Divide each dot product by ``sqrt(d)`` before measuring.

    Returns
    -------
    float
        The sample standard deviation of the ``n`` dot products.

    Raises
    ------
    ValueError
        If ``d`` is not an integer >= 1 or ``n`` not an integer >= 2.
    """
    d = check_positive_int("d", d)
    n = check_positive_int("n", n)
    if n < 2:
        raise ValueError(f"n must be >= 2 to measure a standard deviation, got {n}")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d))  # (n, d)
    k = rng.standard_normal((n, d))  # (n, d)
    dots = np.einsum("nd,nd->n", q, k)  # (n, d) . (n, d) -> (n,)
    if scaled:
        dots = dots / np.sqrt(d)
    return float(np.std(dots, ddof=1))


def softmax_jacobian(x) -> np.ndarray:
    """Jacobian of the softmax of one score row: ``J[i, j] = d p_i / d x_j``.

    ``J = diag(p) - p p^T`` with ``p = softmax(x)``. When the row saturates
    (one ``p_i`` near 1, the rest near 0) every entry goes to 0, so almost no
    gradient flows back to the scores.

    Parameters
    ----------
    x : ndarray, shape (T,), floating
        One row of finite scores, one per key.

    Returns
    -------
    ndarray, shape (T, T), same dtype as ``x``
        Symmetric; each row and column sums to 0.

    Raises
    ------
    ValueError
        If ``x`` is not a non-empty 1-D floating array of finite values.

    See Also
    --------
    torch.autograd.functional.jacobian : the same matrix, by autograd.
    """
    x = as_float_array("x", x)
    if x.ndim != 1 or x.shape[0] == 0:
        raise ValueError(f"x has shape {x.shape}, expected one non-empty row (T,)")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"x must be finite, got {x.tolist()}")
    p = softmax(x)  # (T,)
    return np.diag(p) - np.outer(p, p)  # (T, T) - (T, 1) x (1, T) -> (T, T)
