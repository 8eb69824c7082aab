"""Heatmaps of attention weights: one helper that every chapter uses.

Convention: rows are the token that looks (the query), columns the token looked
at (the key). Figures have an opaque white background so that they stay
readable when the website is in dark mode.

Shape legend:
    H       query heads (num_attention_heads)
    H_kv    key/value heads (num_key_value_heads)
    L, S    query positions, key positions
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle
import numpy as np

from ._checks import as_float_array, check_heads

__all__ = ["plot_attention", "plot_attention_grid", "plot_gqa_mapping"]

CMAP = "viridis"


def _labels(name: str, labels, n: int) -> list[str]:
    if labels is None:
        return [str(i) for i in range(n)]
    labels = [str(t) for t in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels, expected {n} to match the weights")
    return labels


def plot_attention(
    weights,
    tokens: Sequence[str] | None = None,
    *,
    key_tokens: Sequence[str] | None = None,
    ax=None,
    title: str | None = None,
    annotate: bool = True,
    colorbar: bool = True,
    vmax: float = 1.0,
    mask=None,
):
    """Draw one (L, S) matrix of attention weights as a labelled heatmap.

    Parameters
    ----------
    weights : ndarray, shape (L, S)
        Row ``i`` is where query ``i`` puts its attention; values in [0, vmax].
    tokens : sequence of str, length L, optional
        Query labels (rows); also used for the columns when ``key_tokens`` is
        not given and ``L == S``.
    key_tokens : sequence of str, length S, optional
        Key labels (columns).
    ax : matplotlib Axes, optional
        Where to draw; a new figure is made if omitted.
    title : str, optional
    annotate : bool, default True
        Write each weight (two decimals) in its cell.
    colorbar : bool, default True
    vmax : float, default 1.0
        Top of the colour scale; weights lie in [0, 1].
    mask : ndarray of bool, shape (L, S), optional
        True = may attend. Forbidden cells are drawn hatched grey with no
        number, so a key the mask hides cannot be mistaken for one that merely
        got a tiny weight.

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        If ``weights`` is not a 2-D float array, or the labels or the mask do
        not match it.
    """
    w = as_float_array("weights", weights)
    if w.ndim != 2:
        raise ValueError(f"weights has shape {w.shape}, expected (L, S)")
    L, S = w.shape
    rows = _labels("tokens", tokens, L)
    if key_tokens is None and tokens is not None and L != S:
        raise ValueError(f"weights has shape {w.shape}: pass key_tokens (length {S}) for the columns")
    cols = _labels("key_tokens", key_tokens if key_tokens is not None else tokens, S)
    allowed = np.ones((L, S), dtype=bool) if mask is None else np.asarray(mask)
    if allowed.dtype != bool or allowed.shape != (L, S):
        raise ValueError(
            f"mask has shape {allowed.shape} and dtype {allowed.dtype}, expected a boolean "
            f"(L, S) = ({L}, {S}) array (True = may attend)"
        )
    if ax is None:
        fig, ax = plt.subplots(figsize=(0.55 * S + 2.4, 0.5 * L + 1.6), facecolor="white")
    im = ax.imshow(w, cmap=CMAP, vmin=0.0, vmax=vmax)
    ax.set_xticks(range(S), cols, rotation=45 if max(map(len, cols)) > 3 else 0, ha="right"
                  if max(map(len, cols)) > 3 else "center")
    ax.set_yticks(range(L), rows)
    ax.set_xlabel("key: the token looked at")
    ax.set_ylabel("query: the token that looks")
    if title:
        ax.set_title(title)
    for i, j in zip(*np.nonzero(~allowed)):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="#d9d9d9",
                               edgecolor="#9a9a9a", hatch="///", linewidth=0))
    if annotate:
        for i, j in zip(*np.nonzero(allowed)):
            # dark text on the light (high) end of viridis, white on the dark end
            colour = "black" if w[i, j] > 0.6 * vmax else "white"
            ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", color=colour, fontsize=8)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
    return ax


def plot_attention_grid(
    weights,
    tokens: Sequence[str] | None = None,
    *,
    key_tokens: Sequence[str] | None = None,
    titles: Sequence[str] | None = None,
    ncols: int = 4,
    annotate: bool = False,
    suptitle: str | None = None,
):
    """Draw several (L, S) weight matrices, for example one per head, side by side.

    Parameters
    ----------
    weights : ndarray, shape (H, L, S)
    tokens, key_tokens : sequence of str, optional
        As in :func:`plot_attention`.
    titles : sequence of str, length H, optional
        Defaults to ``"head 0"``, ``"head 1"``, ...
    ncols : int, default 4
    annotate : bool, default False
    suptitle : str, optional

    Returns
    -------
    matplotlib Figure
        One shared colour bar on the right.
    """
    w = as_float_array("weights", weights)
    if w.ndim != 3:
        raise ValueError(f"weights has shape {w.shape}, expected (H, L, S)")
    H, L, S = w.shape
    titles = _labels("titles", titles, H) if titles is not None else [f"head {h}" for h in range(H)]
    ncols = max(1, min(ncols, H))
    nrows = -(-H // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(ncols * (0.45 * S + 1.6) + 1.0, nrows * (0.45 * L + 1.4)),
        facecolor="white", squeeze=False, layout="constrained",
    )
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.axis("off")
            continue
        plot_attention(w[h], tokens, key_tokens=key_tokens, ax=ax, title=titles[h],
                       annotate=annotate, colorbar=False)
        if h % ncols:  # keep row labels on the first column only
            ax.set_ylabel("")
            ax.set_yticklabels([])
        if h < H - ncols:
            ax.set_xlabel("")
    mappable = axes.flat[0].images[0]
    fig.colorbar(mappable, ax=axes, shrink=0.8, label="attention weight")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def plot_gqa_mapping(num_attention_heads: int, num_key_value_heads: int, ax=None):
    """Draw which key/value head each query head reads (MHA, GQA or MQA).

    Query heads are circles on the top row, key/value heads squares on the
    bottom row, each centred under the group of query heads it serves; a line
    joins every query head to its key/value head, one colour per group.

    Parameters
    ----------
    num_attention_heads : int
        ``H``, the number of query heads.
    num_key_value_heads : int
        ``H_kv``, the number of key/value heads; must divide ``H``.
        ``H_kv == H`` is MHA, ``H_kv == 1`` is MQA, anything between is GQA.
    ax : matplotlib Axes, optional
        Where to draw; a new (7, 2) inch figure is made if omitted.

    Returns
    -------
    matplotlib Axes
        Titled with the variant and both head counts.

    Raises
    ------
    ValueError
        If a head count is not a positive integer or ``H_kv`` does not divide ``H``.

    See Also
    --------
    pyxis_nb.kv_head_for : the mapping drawn, ``h * H_kv // H``.
    transformers.models.qwen3.modeling_qwen3.repeat_kv : lays the key/value
        heads out in the same order.
    """
    H, H_kv = check_heads(num_attention_heads, num_key_value_heads)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 2), facecolor="white", layout="constrained")
    n_rep = H // H_kv
    colours = plt.cm.tab10(np.arange(H_kv) % 10)
    centres = np.arange(H_kv) * n_rep + (n_rep - 1) / 2  # each K/V head under its group
    for h in range(H):
        g = h * H_kv // H  # kv_head_for(h, H, H_kv)
        ax.plot([h, centres[g]], [1, 0], color=colours[g], lw=1.5, zorder=1)
        ax.scatter(h, 1, s=90, color=colours[g], edgecolor="black", zorder=3)
    ax.scatter(centres, np.zeros(H_kv), s=160, marker="s", c=colours, edgecolor="black", zorder=3)
    if H_kv <= 8:  # number the K/V heads while the labels still fit
        for g, x in enumerate(centres):
            ax.annotate(str(g), (x, -0.32), ha="center", va="top", fontsize=10)
    variant = "MHA" if H_kv == H else "MQA" if H_kv == 1 else "GQA"
    ax.set_title(f"{variant}: {H} query heads, {H_kv} K/V head{'s' if H_kv > 1 else ''}",
                 fontsize=11)
    ax.set_yticks([0, 1], ["K/V head", "query head"], fontsize=10)
    ax.set_xticks(range(H), [str(h) for h in range(H)], fontsize=9)
    ax.set_xlim(-0.7, H - 0.3)
    ax.set_ylim(-0.75, 1.3)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    return ax
