"""Measurements behind the book's claims about the 1 / sqrt(d_head) scale.

Shape legend:
    T        tokens (also the length of one softmax row)
    d_head   size of each token, query and key vector (d_model = d_head)
"""

from __future__ import annotations

import functools

import time
from typing import Callable, Iterable

import numpy as np

from ._checks import as_float_array, check_nonempty, check_number
from ._checks import check_int, check_positive_int, check_positive_ints
from .head import Head
from .stable_softmax import softmax_core

__all__ = [
    "random_attention_weights",
    "max_attention_weight",
    "dot_product_std",
    "softmax_jacobian",
    "best_time",
]


@functools.lru_cache(maxsize=512)
def _draws(d_head: int, T: int, seed: int):
    """``Head(d_head, d_head, seed)``'s Wq, Wk and T seeded tokens, read-only.

    Cached: the scaling chapter redraws the same heads at many scales."""
    head = Head(d_head, d_head, seed=seed)
    x = np.random.default_rng([seed, 1]).standard_normal((T, d_head))
    for a in (head.Wq, head.Wk, x):
        a.flags.writeable = False
    return head.Wq, head.Wk, x


def random_attention_weights(head_dim: int, *, T: int = 6, seed: int = 0,
                             scaled: bool = True,
                             weight_std: float | None = None) -> np.ndarray:
    """Weights of an untrained ``Head(d_head, d_head, seed)`` on random tokens.

    Parameters
    ----------
    head_dim : int, ``d_head``, the token and head size
    T : int, tokens; a uniform row has weights ``1 / T``
    seed : int, seeds the head and the tokens
    scaled : bool, divide the scores by ``sqrt(d_head)``
    weight_std : float, optional, projection std, not ``d_head**-0.5``"""
    d_head, T = check_positive_ints(head_dim=head_dim, T=T)
    Wq, Wk, x = _draws(d_head, T, seed)  # the head's and the tokens' draws
    if weight_std is not None:  # rescale the same draws to std weight_std
        factor = check_number("weight_std", weight_std, above=0) * d_head**0.5
        Wq, Wk = Wq * factor, Wk * factor
    q, k = x @ Wq, x @ Wk  # (T, d_head) @ (d_head, d_head)
    scores = q @ k.T  # (T, d_head) @ (d_head, T) -> (T, T)
    return softmax_core(scores / np.sqrt(d_head) if scaled else scores)


def max_attention_weight(head_dim: int, *, scaled: bool = True, T: int = 6,
                         seeds: Iterable[int] = range(20),
                         weight_std: float | None = None) -> float:
    """The largest weight of a row, averaged over rows and seeds.

    Parameters
    ----------
    head_dim, scaled, T, weight_std : as in :func:`random_attention_weights`
    seeds : iterable of int, one random head and sentence each; not empty"""
    seeds = list(seeds)
    check_positive_int("len(seeds)", len(seeds))
    w = np.stack([random_attention_weights(head_dim, T=T, seed=s,
                                           scaled=scaled,
                                           weight_std=weight_std)
                  for s in seeds])  # (len(seeds), T, T)
    return float(w.max(axis=-1).mean())


def dot_product_std(head_dim: int, *, n: int = 20_000, seed: int = 0,
                    scaled: bool = False) -> float:
    """Sample std of ``q . k`` over ``n`` pairs of standard normal vectors.

    Parameters
    ----------
    head_dim : int, ``d_head``
    n : int, pairs, >= 2
    seed : int
    scaled : bool, divide each dot product by ``sqrt(d_head)``"""
    d_head = check_positive_int("head_dim", head_dim)
    n = check_int("n", n, low=2)
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d_head))  # (n, d_head)
    k = rng.standard_normal((n, d_head))  # (n, d_head)
    dots = np.einsum("nd,nd->n", q, k)  # one dot product per pair: (n,)
    return float(np.std(dots / np.sqrt(d_head) if scaled else dots, ddof=1))


def softmax_jacobian(x) -> np.ndarray:
    """Jacobian ``J = diag(p) - p p^T`` of ``p = softmax(x)`` for one row.

    What ``torch.autograd.functional.jacobian`` gives for the softmax.

    Parameters
    ----------
    x : ndarray of float, shape (T,), finite scores"""
    x = as_float_array("x", x, ndim=1, finite=True)
    check_nonempty("x", x, {0: "key"})
    p = softmax_core(x)  # (T,)
    return np.diag(p) - np.outer(p, p)  # (T, T) - (T, 1) @ (1, T)


def best_time(fn: Callable[[], object], repeats: int = 3) -> float:
    """The fastest of ``repeats`` wall-clock runs of ``fn()``, in seconds.

    Parameters
    ----------
    fn : callable, called with no arguments
    repeats : int, >= 1"""
    times = []
    for _ in range(check_positive_int("repeats", repeats)):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
