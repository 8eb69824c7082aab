"""Heatmaps of attention weights, and the chapters' figures.

Rows are the query (the token that looks), columns the key (the token
looked at). Figures have an opaque white background (readable in the
website's dark mode); the interactive views' figures are at most
``COLUMN_WIDTH`` inches wide (the column at 1280 px, at 100 dpi). Each
figure carries a sentence saying what it shows, ``fig.pyxis_alt``:
``figure_png`` stores it in the PNG, ``view_switcher`` makes it alt text.

Shape legend:
    H        query heads
    H_kv     key/value heads
    T        query positions
    S        key positions
"""

from __future__ import annotations

import re
import textwrap
from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
import numpy as np

from ._checks import (as_float_array, check_heads, check_int, check_needs,
                      check_positive_int, check_shape)
from .memory import kv_cache_bytes, score_matrix_bytes
from .rope import rope_frequencies

__all__ = ["plot_attention", "plot_attention_grid", "plot_gqa_mapping",
           "plot_decode_step", "plot_tile_step", "plot_rope_rotation",
           # inference chapters
           "plot_decode_times", "plot_kv_cache_memory",
           "plot_online_softmax", "plot_tiled_cost", "plot_block_pool",
           # foundations chapters
           "plot_max_weight", "plot_std_growth", "plot_position_encodings",
           # heads chapters
           "plot_rope_decay", "plot_rope_layout_bug", "plot_head_scores",
           "plot_rope_pairs", "plot_attention_layer", "plot_head_split",
           # every figure above, read on a phone
           "ink", "legible", "phone_pt", "show"]

CMAP = "viridis"
#: the red that outlines what the text names (a head, a query's row)
OUTLINE_COLOUR = "#e8173a"
COLUMN_WIDTH = 6.5  # inches: 650 px at 100 dpi, the website's column at 1280
# A phone shows a figure scaled to its column, 356 px of a 390-px screen: a
# 650-px figure at 55 %. Text should still be 9 px there (issue #41, item 2).
PHONE_COLUMN_PX = 356
PHONE_TEXT_PX = 9


def phone_pt(width_in: float, dpi: int = 100) -> float:
    """The least font size, in points, that a figure ``width_in`` inches wide
    (drawn at ``dpi``) shows at 9 px or more on a phone: 11.8 pt at 6.5 in.

    Parameters
    ----------
    width_in, dpi : the figure's width in inches, and its dots per inch"""
    shown = min(1.0, PHONE_COLUMN_PX / (width_in * dpi))  # scale on a phone
    return PHONE_TEXT_PX * 72 / (dpi * shown)


def _legible_pt(width_in: float) -> float:
    """The text size :func:`legible` gives a figure ``width_in`` wide:
    :func:`phone_pt` of its picture, no wider than the column, up to 0.4 in
    wider than the figure (savefig's pad, a colour bar's labels)."""
    return phone_pt(min(width_in, COLUMN_WIDTH) + 0.4)


def legible(fig):
    """Make ``fig`` read on a phone: no wider than ``COLUMN_WIDTH``, and no
    text smaller than :func:`phone_pt` of its picture (12.5 pt at 6.5 in).

    Every figure here goes through it last; larger text keeps its size.
    Returns ``fig``, changed in place.

    Parameters
    ----------
    fig : matplotlib.figure.Figure"""
    width, height = fig.get_size_inches()
    if width > COLUMN_WIDTH:
        fig.set_size_inches(COLUMN_WIDTH, height)
    least = _legible_pt(width)
    for ax in fig.axes:  # tick labels, those there and those drawn later
        for axis in (ax.xaxis, ax.yaxis):
            for label in axis.get_ticklabels(which="both"):
                if label.get_fontsize() < least:
                    ax.tick_params(axis=axis.axis_name, which="both",
                                   labelsize=least)
                    break
    for text in fig.findobj(Text):
        if text.get_fontsize() < least:
            text.set_fontsize(least)
    # lay the figure out with its new text until nothing moves by a tenth
    # of a pixel (two passes: the second moves things by some 0.01-0.05 px,
    # and constrained layout's rounding never makes a pass repeat the last
    # exactly), so that a widget frame's single draw places everything
    # where savefig's two would, and a frame drawn on a reused figure as on
    # a new
    if fig.get_layout_engine() is not None:
        still = 0.1 / (max(fig.get_size_inches()) * fig.dpi)  # 0.1 px
        for _ in range(5):
            placed = np.array([ax.get_position().bounds for ax in fig.axes])
            fig.draw_without_rendering()
            moved = np.array([ax.get_position().bounds for ax in fig.axes])
            if np.abs(moved - placed).max(initial=0) < still:
                break
    return fig


def show(fig) -> None:
    """Show ``fig`` as the book's figures are shown: :func:`legible` (no
    text under 9 px on a phone), then ``plt.show()``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure"""
    legible(fig)
    plt.show()


def _luminance(rgb) -> float:
    """WCAG relative luminance of an sRGB colour (components in [0, 1])."""
    c = np.asarray(rgb, dtype=float)[:3]
    c = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(c @ [0.2126, 0.7152, 0.0722])


def ink(background) -> str:
    """"black" or "white", whichever reads better on ``background``, an RGB
    or RGBA colour (at least 4.5:1; white at 0.6 of viridis: 3.0:1)."""
    # black and white read alike where (L + 0.05)^2 = 0.05 * 1.05
    return "black" if _luminance(background) > 0.179 else "white"


def _describe(fig, text: str):
    """Attach the sentence that says what ``fig`` shows (its alt text)."""
    fig.pyxis_alt = text
    return fig


def _token_list(labels, most: int = 8) -> str:
    """``'a', 'b', 'c'``, or the first few and how many in all."""
    quoted = [f"'{t}'" for t in labels]
    if len(quoted) <= most:
        return ", ".join(quoted)
    return ", ".join(quoted[:most - 2]) + f", ... ({len(quoted)} in all)"


def _plain(text: str) -> str:
    """A title as plain words: ``$1/\\sqrt{d}$`` becomes ``1/sqrt(d)``."""
    text = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", text)
    return re.sub(r"[$\\{}]", "", text)


def _labels(name: str, labels, n: int) -> list[str]:
    if labels is None:
        return [str(i) for i in range(n)]
    labels = [str(t) for t in labels]
    check_needs(len(labels) == n, name, f"{n} labels to match the weights",
                f"got {len(labels)} labels")
    return labels


def plot_attention(weights, tokens: Sequence[str] | None = None, *,
                   key_tokens: Sequence[str] | None = None, ax=None,
                   title: str | None = None, annotate: bool = True,
                   colorbar: bool = True, vmax: float = 1.0, mask=None):
    """Draw one (T, S) matrix of attention weights as a labelled heatmap.

    Returns the Axes. Masked cells are hatched grey, with no number. In a
    figure of its own (no ``ax``) the weights are written in their cells
    only where they fit at a phone's text size.

    Parameters
    ----------
    weights : ndarray, shape (T, S), values in [0, vmax]
    tokens : sequence of str, optional, query labels (the keys' too if T == S)
    key_tokens : sequence of str, optional, key labels
    ax : matplotlib Axes, optional, where to draw; default a new figure
    title : str, optional
    annotate : bool, write each weight (two decimals) in its cell
    colorbar : bool
    vmax : float, top of the colour scale
    mask : ndarray of bool, shape (T, S), optional, True = may attend"""
    w = as_float_array("weights", weights, ndim=2)
    T, S = w.shape
    rows = _labels("tokens", tokens, T)
    check_needs(key_tokens is not None or tokens is None or T == S,
                "key_tokens", f"(length {S}) for the columns",
                f"weights has shape {w.shape}")
    cols = _labels("key_tokens",
                   key_tokens if key_tokens is not None else tokens, S)
    allowed = np.ones((T, S), dtype=bool) if mask is None else np.asarray(mask)
    check_shape("mask", allowed, allowed.dtype == bool
                and allowed.shape == (T, S), f"a boolean (T, S) = ({T}, {S}) "
                f"array (True = may attend), got dtype {allowed.dtype}")
    own = ax is None  # a figure of its own: sized here, for a phone too
    if own:
        # cells of 0.55 in, or smaller once the map would pass the column
        cell = min(0.55, (COLUMN_WIDTH - 2.4) / S)
        _, ax = plt.subplots(figsize=(cell * S + 2.4, cell / 1.1 * T + 1.6),
                             facecolor="white")
        same = key_tokens is None
        _describe(ax.figure, (
            f"Heatmap of attention weights"
            f"{': ' + _plain(title) if title else ''}: rows are the query "
            f"tokens {_token_list(rows)}, columns "
            + ("the same tokens as keys" if same
               else f"the keys {_token_list(cols)}")
            + ("; masked cells are hatched" if mask is not None else "")
            + "."))
    # in its own figure every word and number is legible on a phone, and
    # never below 10 pt; in a caller's axes, matplotlib's sizes
    size = max(10.0, np.ceil(2 * phone_pt(ax.figure.get_figwidth())) / 2)
    text = {"fontsize": size} if own else {}
    im = ax.imshow(w, cmap=CMAP, vmin=0.0, vmax=vmax)
    slanted = max(map(len, cols)) > 3
    ax.set_xticks(range(S), cols, rotation=45 if slanted else 0,
                  ha="right" if slanted else "center", **text)
    ax.set_yticks(range(T), rows, **text)
    ax.set_xlabel("key: the token looked at", **text)
    ax.set_ylabel("query: the token that looks", **text)
    if title:
        ax.set_title(title, **({"fontsize": size + 1} if own else {}))
    for i, j in zip(*np.nonzero(~allowed)):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="#d9d9d9",
                               edgecolor="#9a9a9a", hatch="///",
                               linewidth=0))
    if annotate and (not own or _numbers_fit(ax, S, size)):
        for i, j in zip(*np.nonzero(allowed)):
            # black or white, whichever reads better on the cell's colour
            ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center",
                    color=ink(im.cmap(im.norm(w[i, j]))),
                    fontsize=size if own else 8)
    if colorbar:
        bar = ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        bar.set_label("attention weight", **text)
        if own:
            bar.ax.tick_params(labelsize=size)
    return ax


def _numbers_fit(ax, S: int, size: float) -> bool:
    """Whether a weight such as ``0.25``, ``size`` points high, fits the
    width of one of ``S`` cells across ``ax``."""
    width_pt = ax.get_position().width * ax.figure.get_figwidth() * 72
    return 2.4 * size <= width_pt / S  # four characters, about 0.6 em each


def plot_attention_grid(weights, tokens: Sequence[str] | None = None, *,
                        key_tokens: Sequence[str] | None = None,
                        titles: Sequence[str] | None = None, ncols: int = 4,
                        annotate: bool = False, suptitle: str | None = None):
    """Draw several (T, S) weight matrices, e.g. one per head, side by side.

    Returns the Figure, with one shared colour bar.

    Parameters
    ----------
    weights : ndarray, shape (H, T, S)
    tokens, key_tokens : sequence of str, optional, as :func:`plot_attention`'s
    titles : sequence of str, length H, optional; default "head 0", ...
    ncols : int
    annotate : bool
    suptitle : str, optional"""
    w = as_float_array("weights", weights, ndim=3)
    H, T, S = w.shape
    titles = (_labels("titles", titles, H) if titles is not None
              else [f"head {h}" for h in range(H)])
    ncols = max(1, min(ncols, H))
    nrows = -(-H // ncols)
    width = ncols * (0.45 * S + 1.6) + 1.0
    # no wider than the website's column; the panels shrink, the text not
    # (labels, titles: 1.4 inches a row)
    cell = 0.45 * min(1.0, (COLUMN_WIDTH - 1.0 - 1.1 * ncols)
                      / (ncols * 0.45 * S))
    height = nrows * (cell * T + 1.4)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(min(width, COLUMN_WIDTH), height),
        facecolor="white", squeeze=False, layout="constrained",
    )
    _describe(fig, (
        f"{H} heatmaps of attention weights"
        f"{' (' + _plain(suptitle) + ')' if suptitle else ''}, "
        f"{', '.join(_plain(t) for t in titles)}: rows are the query tokens "
        f"{_token_list(_labels('tokens', tokens, T))}, columns the keys; "
        f"the largest weight in each is "
        f"{', '.join(f'{x:.2f}' for x in w.max(axis=(1, 2)))}."))
    # the numbers in the cells only where they fit at a phone's text size
    annotate = annotate and _numbers_fit(
        axes.flat[0], S, _legible_pt(width))
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.axis("off")
            continue
        plot_attention(w[h], tokens, key_tokens=key_tokens, ax=ax,
                       title=titles[h], annotate=annotate, colorbar=False)
        if h % ncols:  # keep row labels on the first column only
            ax.set_ylabel("")
            ax.set_yticklabels([])
        if h < H - ncols:
            ax.set_xlabel("")
    mappable = axes.flat[0].images[0]
    fig.colorbar(mappable, ax=axes, shrink=0.8, label="attention weight")
    if suptitle:
        fig.suptitle(suptitle)
    return legible(fig)


def plot_gqa_mapping(num_attention_heads: int, num_key_value_heads: int,
                     ax=None):
    """Draw which key/value head each query head reads (MHA, GQA or MQA).

    Query heads are circles on top, key/value heads squares below, each
    centred under its group; one colour a group. Returns the Axes.

    Parameters
    ----------
    num_attention_heads : int, ``H``
    num_key_value_heads : int, ``H_kv``, dividing ``H`` (``H``: MHA; 1: MQA)
    ax : matplotlib Axes, optional; default a new (7, 2) inch figure

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.repeat_kv : the same order."""
    H, H_kv = check_heads(num_attention_heads, num_key_value_heads)
    own = ax is None
    if own:
        _, ax = plt.subplots(figsize=(7, 2), facecolor="white",
                             layout="constrained")
    n_rep = H // H_kv
    # one distinct colour per group: tab10 repeats after 10 groups
    colours = (plt.cm.tab10(np.arange(H_kv)) if H_kv <= 10
               else plt.cm.turbo(np.linspace(0.05, 0.95, H_kv)))
    # each K/V head centred under its group of query heads
    centres = np.arange(H_kv) * n_rep + (n_rep - 1) / 2
    for h in range(H):
        g = h * H_kv // H  # kv_head_for(h, H, H_kv)
        ax.plot([h, centres[g]], [1, 0], color=colours[g], lw=1.5, zorder=1)
        ax.scatter(h, 1, s=90, color=colours[g], edgecolor="black",
                   zorder=3)
    ax.scatter(centres, np.zeros(H_kv), s=160, marker="s", c=colours,
               edgecolor="black", zorder=3)
    if H_kv <= 8:  # number the K/V heads while the labels still fit
        for g, x in enumerate(centres):
            ax.annotate(str(g), (x, -0.32), ha="center", va="top", fontsize=10)
    variant = "MHA" if H_kv == H else "MQA" if H_kv == 1 else "GQA"
    plural = "s" if H_kv > 1 else ""
    ax.set_title(f"{variant}: {H} query heads, {H_kv} K/V head{plural}",
                 fontsize=11)
    ax.set_yticks([0, 1], ["K/V head", "query head"], fontsize=10)
    ax.set_xticks(range(H), [str(h) for h in range(H)], fontsize=9)
    ax.set_xlim(-0.7, H - 0.3)
    ax.set_ylim(-0.75, 1.3)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    if own:
        legible(ax.figure)
    return ax


def plot_decode_step(weights, head_weights, tokens: Sequence[str], t: int):
    """One decode step with a KV cache: the rows so far, then query ``t``.

    Two panels, ``COLUMN_WIDTH`` wide: the rows so far, step ``t``'s row
    outlined in red; below, query ``t``'s weights head by head.

    Parameters
    ----------
    weights : ndarray, shape (S, S), mean over heads; NaN: not yet (grey)
    head_weights : ndarray, shape (H, t + 1), query ``t``'s weights per head
    tokens : sequence of str, length S
    t : int, the position decoded in this step"""
    w = as_float_array("weights", weights, ndim=2)
    S = len(_labels("tokens", tokens, w.shape[1]))
    t = check_int("t", t, low=0, high=S - 1)
    per_head = as_float_array("head_weights", head_weights, ndim=2)
    H = len(per_head)
    fig, (ax_l, ax_r) = plt.subplots(
        2, 1, figsize=(COLUMN_WIDTH, 0.26 * S + 0.38 * H + 2.9),
        facecolor="white", layout="constrained",
        gridspec_kw={"height_ratios": [0.26 * S + 1.4, 0.38 * H + 1.5]})
    # NaN: no query yet, or no such key yet
    cmap = plt.get_cmap(CMAP).with_extremes(bad="lightgrey")
    im = ax_l.imshow(np.ma.masked_invalid(w), cmap=cmap, vmin=0, vmax=1)
    ax_l.add_patch(Rectangle((-0.5, t - 0.5), t + 1, 1, fill=False,
                             edgecolor="red", lw=2))  # this step's row
    ax_l.set_xticks(range(S), tokens, rotation=60)
    ax_l.set_yticks(range(S), tokens)
    ax_l.set(xlabel="key (cached position)", ylabel="query",
             title=f"cache holds {t + 1} of {S} positions")
    fig.colorbar(im, ax=ax_l, fraction=0.046,
                 label="weight (mean over heads)")
    plot_attention(per_head, [f"head {h}" for h in range(H)],
                   key_tokens=list(tokens)[:t + 1], ax=ax_r, colorbar=False,
                   annotate=False,
                   title=f"query '{tokens[t]}' (position {t}), per head")
    # the panel keeps the figure's width at every step: cells widen instead
    ax_r.set(xlabel="key (cached position)", ylabel="query head",
             aspect="auto")
    # every weight in its cell, at the size legible gives the figure's
    # text: ".47", not "0.47", so that twelve keys' numbers stay apart
    shade = ax_r.images[0]
    for h, j in np.ndindex(per_head.shape):
        ax_r.text(j, h, _short(per_head[h, j]), ha="center", va="center",
                  color=ink(shade.cmap(shade.norm(per_head[h, j]))))
    h, j = np.unravel_index(np.argmax(per_head), per_head.shape)
    return legible(_describe(fig, (
        f"Decode step for '{tokens[t]}' at position {t}: the cache holds "
        f"{t + 1} of {S} positions. Top, the mean weights of every query so "
        f"far, the new row outlined in red; below, the new query's weights "
        f"over the {t + 1} cached keys for each of {H} heads, the largest "
        f"{per_head[h, j]:.2f} (head {h} on '{tokens[j]}').")))


def plot_tile_step(stats, i: int, tokens: Sequence[str] | None = None, *,
                   ylim: tuple | None = None):
    """Step ``i`` of :func:`pyxis_nb.tiled_attention`: tiles and state.

    Left, the tile grid (computed green, skipped grey, current outlined);
    right, the query tile's running max ``m`` and sum ``l``.

    Parameters
    ----------
    stats : TileStats, of ``tiled_attention(..., return_stats=True)``, 2-D
    i : int, the step, ``0 .. len(stats.steps) - 1``
    tokens : sequence of str, optional, a label per position
    ylim : (float, float), optional, the bars' range; default: every step's"""
    i = check_int("i", i, low=0, high=len(stats.steps) - 1)
    fig = _tile_step_figure(stats, tokens)
    # fig.pyxis_show(j) redraws it for step j (px.tile_step_frames)
    fig.pyxis_show = lambda j: _show_tile_step(fig, stats, j, tokens, ylim)
    return _show_tile_step(fig, stats, i, tokens, ylim)


def _tile_step_figure(stats, tokens):
    """The parts of :func:`plot_tile_step` that no step changes: the two
    axes, the tile grid's ticks, labels and image, the outline."""
    n_qb, n_kb = stats.computed.shape
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH, 3.4),
                                 facecolor="white", layout="constrained",
                                 gridspec_kw={"width_ratios": [1, 1.1]})
    # room below the slanted tick labels, so the figure holds all it shows
    # (figure_png then draws it once: nothing sticks out)
    fig.get_layout_engine().set(h_pad=0.08)
    ax.imshow(np.zeros((n_qb, n_kb)), cmap="Greens", vmin=0, vmax=2.4)
    ax.add_patch(Rectangle((-0.5, -0.5), 1, 1, fill=False, ec="C3", lw=3,
                           zorder=3, gid="current"))
    rows = _tile_labels(tokens, stats.block_q, n_qb)
    ax.set_xticks(range(n_kb), _tile_labels(tokens, stats.block_k, n_kb),
                  rotation=40, ha="right", rotation_mode="anchor",
                  fontsize=10)
    ax.set_yticks(range(n_qb), rows, fontsize=10)
    ax.set_xlabel("key tile", fontsize=11)
    ax.set_ylabel("query tile", fontsize=11)
    return fig


def _show_tile_step(fig, stats, i: int, tokens, ylim):
    """Draw step ``i`` on a figure of :func:`_tile_step_figure`: the tiles
    visited so far, the outline on the current one, the state's bars."""
    ax, bx = fig.axes[:2]
    step, (n_qb, n_kb) = stats.steps[i], stats.computed.shape
    status = np.zeros((n_qb, n_kb))  # 0 = not visited yet
    for s in stats.steps[:i + 1]:
        status[s.q_block, s.k_block] = 2.0 if s.computed else 1.0
    ax.images[0].set_data(status)
    for patch in list(ax.patches):
        if patch.get_gid() == "current":
            patch.set_xy((step.k_block - 0.5, step.q_block - 0.5))
        else:
            patch.remove()  # the grey of the last step drawn
    for s in stats.steps[:i + 1]:
        if not s.computed:
            ax.add_patch(Rectangle((s.k_block - 0.5, s.q_block - 0.5), 1, 1,
                                   color="0.75"))
    done = "computed" if step.computed else "skipped"
    ax.set_title(f"tile ({step.q_block}, {step.k_block}): {done}",
                 fontsize=12)
    bx.clear()
    _state_bars(bx, stats, step, tokens, ylim)
    seen = stats.steps[:i + 1]
    n_done = sum(s.computed for s in seen)
    first = step.q_block * stats.block_q
    names = ("rows" if tokens is None else "rows " + _token_list(
        tokens[first:first + len(step.row_max)]))
    return legible(_describe(fig, (
        f"Tile step {i + 1} of {len(stats.steps)}: tile ({step.q_block}, "
        f"{step.k_block}) is {done}; so far {n_done} computed and "
        f"{len(seen) - n_done} skipped. Right, the running max m "
        f"({', '.join(f'{x:.2f}' for x in step.row_max)}) and sum l "
        f"({', '.join(f'{x:.2f}' for x in step.row_sum)}) of query tile "
        f"{step.q_block}'s {names}.")))


def _tile_labels(tokens, block: int, n: int) -> list[str]:
    """``"The,cat"`` per tile of ``block`` tokens (tile numbers without)."""
    if tokens is None:
        return [str(b) for b in range(n)]
    return [",".join(tokens[b * block:(b + 1) * block]) for b in range(n)]


def _state_bars(bx, stats, step, tokens, ylim) -> None:
    """Bars of the running max and sum of the current query tile."""
    if ylim is None:  # one range for every step, room for the legend
        values = np.concatenate([np.r_[s.row_max, s.row_sum]
                                 for s in stats.steps])
        finite = values[np.isfinite(values)]
        ylim = (min(0.0, finite.min()) - 0.5, finite.max() + 1.5)
    first = step.q_block * stats.block_q
    x = np.arange(len(step.row_max))
    names = (x + first if tokens is None
             else [f"'{tokens[first + r]}'" for r in x])
    bx.bar(x - 0.2, step.row_max, 0.4, label="running max m")
    bx.bar(x + 0.2, step.row_sum, 0.4, label="running sum l")
    bx.set_xticks(x, [f"query {n}" for n in names], fontsize=10)
    bx.tick_params(axis="y", labelsize=10)
    bx.set_ylim(*ylim)
    bx.axhline(0, c="k", lw=0.5)
    bx.legend(loc="upper left", fontsize=10)
    bx.set_ylabel("value", fontsize=11)
    bx.set_title("state of this query tile", fontsize=12)


def plot_rope_rotation(m: int, n: int, *, pairs: Sequence[int] = (0, 8),
                       start=(0.8, 0.6), head_dim: int = 128,
                       rope_theta: float = 1_000_000.0):
    """A query at position ``m`` and a key at ``n``, rotated pair by pair.

    Each panel rotates ``start`` by ``m * inv_freq[i]`` and ``n *
    inv_freq[i]``; the pair's score, in its title, depends only on ``m - n``.

    Parameters
    ----------
    m, n : int, query and key positions
    pairs : sequence of int, the pairs drawn, a panel each
    start : (float, float), the pair before rotation
    head_dim : int
    rope_theta : float"""
    fig = _rope_rotation_figure(pairs, start, head_dim)
    # fig.pyxis_show(m, n) redraws it for other positions
    fig.pyxis_show = lambda m, n: _show_rope_rotation(
        fig, m, n, pairs, start, head_dim, rope_theta)
    return fig.pyxis_show(m, n)


def _rope_rotation_figure(pairs, start, head_dim: int):
    """What no position changes in :func:`plot_rope_rotation`: the circles,
    the starting point, the axes; the arrows wait at the start."""
    p = np.asarray(start, dtype=float)
    fig, axes = plt.subplots(1, len(pairs), figsize=(3.5 * len(pairs), 3.6),
                             facecolor="white", layout="constrained",
                             squeeze=False)
    circle = np.linspace(0, 2 * np.pi, 200)
    for ax, i in zip(axes[0], pairs):
        ax.plot(np.cos(circle), np.sin(circle), color="0.8", lw=1)
        ax.annotate("", xy=p, xytext=(0, 0), arrowprops=dict(
            arrowstyle="->", color="0.5", alpha=0.4, lw=2))
        for colour in ("tab:blue", "tab:orange"):  # query, key
            ax.annotate("", xy=p, xytext=(0, 0), arrowprops=dict(
                arrowstyle="->", color=colour, lw=2))
        ax.set(xlim=(-1.2, 1.2), ylim=(-1.2, 1.2), aspect="equal",
               xlabel=f"element {i}",
               ylabel=f"element {i + head_dim // 2} (= {i} + d_head/2)")
    # one legend for both panels, below them: clear of the circles
    blue, = axes[0, 0].plot([], [], color="tab:blue")
    orange, = axes[0, 0].plot([], [], color="tab:orange")
    fig.legend([blue, orange], ["query", "key"], loc="outside lower center",
               ncols=2)
    fig.pyxis_suptitle = fig.suptitle(" ", fontsize=11)  # text set per frame
    return fig


def _show_rope_rotation(fig, m: int, n: int, pairs, start, head_dim: int,
                        rope_theta: float):
    """Point the arrows of a :func:`_rope_rotation_figure` at query ``m``
    and key ``n``; write the scores in the titles."""
    inv_freq = rope_frequencies(head_dim, rope_theta)  # (d_head/2,)
    p = np.asarray(start, dtype=float)
    for ax, i in zip(fig.axes, pairs):
        qm, kn = _rotate(p, m * inv_freq[i]), _rotate(p, n * inv_freq[i])
        ax.texts[1].xy, ax.texts[2].xy = qm, kn  # after the grey start
        ax.set_title(f"pair {i}: {np.degrees(inv_freq[i]):.0f}° per "
                     f"position\npair score = {qm @ kn:+.3f}", fontsize=10)
    query, key = fig.legends[0].get_texts()
    query.set_text(f"query, m = {m}")
    key.set_text(f"key, n = {n}")
    fig.pyxis_suptitle.set_text(f"m - n = {m - n}")  # where the layout put it
    scores = ", ".join(f"pair {i} {_rotate(p, m * f) @ _rotate(p, n * f):+.3f}"
                       for i, f in zip(pairs, inv_freq[list(pairs)]))
    return legible(_describe(fig, (
        f"RoPE rotation of a query at position m = {m} (blue) and a key at "
        f"n = {n} (orange), one unit circle per pair: the pair scores "
        f"({scores}) depend only on m - n = {m - n}.")))


def _rotate(p: np.ndarray, angle: float) -> np.ndarray:
    """The 2-D point ``p`` rotated by ``angle`` radians."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]]) @ p


# --- inference chapters (kv_cache, long_context)


def _plain_log_ticks(ax, ticks) -> None:
    """Label a log x axis at ``ticks`` with plain numbers, no minor labels."""
    ax.set_xticks(list(ticks), [f"{t:,}" for t in ticks])
    ax.set_xticks([], minor=True)


def plot_decode_times(contexts: Sequence[int], cached_s, full_s):
    """Time per generated token against the context, with and without cache.

    Parameters
    ----------
    contexts : sequence of int, context lengths ``S``
    cached_s, full_s : sequence of float, seconds a step, cached and not"""
    cached = as_float_array("cached_s", cached_s, ndim=1)
    full = as_float_array("full_s", full_s, ndim=1)
    fig, ax = plt.subplots(figsize=(7, 4), facecolor="white",
                           layout="constrained")
    ax.loglog(contexts, full * 1e3, "o-", color="tab:red",
              label="no cache: recompute all S tokens")
    ax.loglog(contexts, cached * 1e3, "o-", color="tab:blue",
              label="KV cache: 1 new token")
    _plain_log_ticks(ax, contexts)
    # times at 1, 2 and 5 of each decade, as plain numbers: a range under a
    # decade would otherwise be labelled at every minor tick, 2x10^0 ...
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="context length S (tokens)",
           ylabel="time per generated token (ms, log scale)",
           title="One decode step, measured on the machine that built "
                 "this page")
    ax.legend()
    return legible(fig)


def _request_number(request_id, order: dict) -> int:
    """A request's number for its colour and label: the digits its id
    ends in ("req_7": 7), else its place among the ids seen."""
    digits = re.search(r"(\d+)$", str(request_id))
    return int(digits[1]) if digits else order.setdefault(request_id,
                                                          len(order))


def plot_block_pool(pool, lengths=None, *, title: str = "",
                    columns: int = 10):
    """Every block of a paged cache's pool: whose, how full, shared, free.

    A held block has its request's colour and number, its tokens filled in
    from below; a block that several requests hold has a thick black edge
    and their count ("x3"); a free block that keeps the key of its tokens (a
    prefix cache can still hand it out) is grey, marked "c"; a free one is
    white.

    Parameters
    ----------
    pool : a ``BlockPool`` (``px.paged``)
    lengths : dict of request id to tokens held, optional; default full
    title : str
    columns : int, blocks a row"""
    columns = check_positive_int("columns", columns)
    N, size = pool.num_blocks, pool.block_size
    rows = -(-N // columns)
    height = 0.5 + 0.55 * rows
    fig = plt.figure(figsize=(COLUMN_WIDTH, height), facecolor="white")
    # a fixed grid of squares: placed by hand, no layout engine to run
    ax = fig.add_axes((0.01, 0.02, 0.98, 1 - 0.5 / height))
    ax.set(xlim=(-0.05, columns + 0.05), ylim=(rows + 0.05, -0.05),
           aspect="equal", anchor="NW")
    ax.axis("off")
    owners, fill, order = {}, np.zeros(N), {}
    for request, table in pool.block_tables.items():
        held = len(table) * size if lengths is None else lengths.get(
            request, 0)
        for i, block in enumerate(table):
            owners.setdefault(block, []).append(request)
            fill[block] = max(fill[block], np.clip(held - i * size, 0, size)
                              / size)
    # tab20 without its greys, which mark the free keyed blocks
    palette = [c for i, c in enumerate(plt.get_cmap("tab20").colors)
               if i not in (14, 15)]
    for block in range(N):
        x, y = block % columns, block // columns
        edge, lw, text = "0.6", 1, ""
        if block in owners and len(owners[block]) > 1:
            edge, lw, text = "black", 3, f"x{len(owners[block])}"
        elif block in owners:
            number = _request_number(owners[block][0], order)
            colour = palette[(2 * number) % 18 + (number // 9) % 2]
            ax.add_patch(Rectangle((x + 0.05, y + 0.05), 0.9, 0.9,
                                   color=colour, alpha=0.3, lw=0))
            ax.add_patch(Rectangle((x + 0.05, y + 0.95 - 0.9 * fill[block]),
                                   0.9, 0.9 * fill[block], color=colour,
                                   lw=0))
            text = str(number)
        elif block in pool.block_hashes:
            ax.add_patch(Rectangle((x + 0.05, y + 0.05), 0.9, 0.9,
                                   color="0.85", lw=0))
            text = "c"
        ax.add_patch(Rectangle((x + 0.05, y + 0.05), 0.9, 0.9, fill=False,
                               ec=edge, lw=lw))
        box = dict(boxstyle="round,pad=0.15", fc="white", ec="none")
        ax.text(x + 0.5, y + 0.5, text, ha="center", va="center",
                fontsize=10, bbox=box if block in owners else None)
    if title:
        fig.text(0.02, 1 - 0.1 / height, title, fontsize=11, va="top")
    shared = sum(len(o) > 1 for o in owners.values())
    cached = len(set(pool.block_hashes) - set(owners))
    return _describe(legible(fig), (
        f"The {N} blocks of a paged cache's pool, {size} tokens each: "
        f"{len(owners)} held by {len(pool.block_tables)} requests "
        f"({shared} shared), {cached} free with their tokens still keyed, "
        f"{N - len(owners) - cached} free." + (f" {title}" if title else "")))


def plot_kv_cache_memory(config, kv_heads, *, dtype_bytes: int = 2):
    """KV-cache bytes per sequence for several ``H_kv``, and one score matrix.

    Parameters
    ----------
    config : ModelConfig, for the layers, ``d_head`` and the longest context
    kv_heads : mapping of str to int, a label per ``H_kv``: ``{"GQA": 8}``
    dtype_bytes : int"""
    T = np.unique(np.geomspace(128, config.max_position_embeddings,
                               60).astype(int))
    fig, ax = plt.subplots(figsize=(7, 4.2), facecolor="white",
                           layout="constrained")
    for (name, h_kv), colour in zip(kv_heads.items(), plt.cm.tab10.colors):
        ax.loglog(T, [kv_cache_bytes(config.num_hidden_layers, h_kv,
                                     config.head_dim, int(t), dtype_bytes)
                      for t in T], color=colour, label=f"KV cache, {name}")
    ax.loglog(T, [score_matrix_bytes(int(t), dtype_bytes) for t in T], "--",
              color="grey", label="one head's (T, T) score matrix")
    ax.set(xlabel="context length T (tokens, log scale)",
           ylabel=f"bytes at {dtype_bytes} bytes/value (log scale)",
           title="The cache grows like T, a stored score matrix like T²")
    ax.legend(fontsize=8)
    return legible(fig)


def plot_online_softmax(scores, block: int, maxima, sums):
    """One row of scores in blocks, and the running max and sum per block.

    Parameters
    ----------
    scores : ndarray, shape (S,)
    block : int, block size (alternating colours)
    maxima, sums : sequence of float, ``m`` and ``l`` after each block"""
    s = as_float_array("scores", scores, ndim=1)
    block = check_int("block", block, low=1)
    fig, axes = plt.subplot_mosaic(
        [["row", "row"], ["max", "sum"]], figsize=(7, 5.6),
        facecolor="white", height_ratios=[1, 1.1], layout="constrained")
    axes["row"].bar(np.arange(s.size), s,
                    color=[f"C{(j // block) % 2}" for j in range(s.size)])
    axes["row"].set(title=f"one row of scores, blocks of {block} "
                          "(alternating colours)",
                    xlabel="key position j", ylabel="score $s_j$")
    seen = np.arange(1, len(maxima) + 1)
    for key, ys, name, sym in (("max", maxima, "max", "m"),
                               ("sum", sums, "sum", r"\ell")):
        ax = axes[key]
        if key == "max":
            ax.step(seen, ys, where="post", marker="o")
        else:
            ax.plot(seen, ys, marker="o", c="C2")
        ax.axhline(ys[-1], ls="--", c="gray", label=f"true {name}")
        against = " (against current $m$)" if key == "sum" else ""
        ax.set(title=f"running {name} ${sym}${against}",
               xlabel="blocks seen", ylabel=f"${sym}$")
        ax.legend(loc="lower right" if key == "max" else "upper right")
    return legible(fig)


def plot_tiled_cost(Ts: Sequence[int], naive_peak, tiled_peak, naive_flops,
                    tiled_flops):
    """Peak memory and FLOPs of one call, naive against tiled, against T.

    Parameters
    ----------
    Ts : sequence of int, sequence lengths
    naive_peak, tiled_peak : sequence of float, peak bytes (``tracemalloc``)
    naive_flops, tiled_flops : sequence of float, FLOPs of the two matmuls"""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(8, 3.6), facecolor="white",
                                 layout="constrained")
    mb = [np.round(np.asarray(p, float) / 1e6, 1)  # 0.1 MB: Python objects
          for p in (naive_peak, tiled_peak)]
    ax.loglog(Ts, mb[0], "o-", label="naive SDPA")
    ax.loglog(Ts, mb[1], "s-", label="tiled")
    ax.set(title="peak memory of one call", xlabel="sequence length T",
           ylabel="MB (tracemalloc)")
    bx.loglog(Ts, np.asarray(naive_flops) / 1e9, "o-", label="naive SDPA")
    bx.loglog(Ts, np.asarray(tiled_flops) / 1e9, "s-", label="tiled, causal")
    ref = np.asarray(Ts, float) ** 2 / Ts[-1] ** 2 * tiled_flops[-1] / 1e9
    bx.loglog(Ts, ref, "k:", label="∝ T² (for the slope)")
    bx.set(title="work of one call", xlabel="sequence length T",
           ylabel="GFLOP (matmuls)")
    for a in (ax, bx):
        _plain_log_ticks(a, Ts)
        a.tick_params(axis="x", labelrotation=45)
        a.legend(fontsize=8)
    return legible(fig)
# --- foundations chapters (qkv, scaling, causal_mask, permutation)


def plot_max_weight(ds: Sequence[int], columns, *, T: int = 6,
                    styles=None, title: str | None = None):
    """The largest weight of a row against the head size ``d``.

    Returns the Axes.

    Parameters
    ----------
    ds : sequence of int, head sizes (a log2 axis)
    columns : mapping of str to sequence of float, a curve per label
    T : int, tokens a row; a grey line marks the uniform row, ``1 / T``
    styles : mapping of str to str, optional, a matplotlib format per label
    title : str, optional"""
    ds = [check_positive_int("ds", d) for d in ds]
    log_d = np.log2(ds)
    styles = dict(styles or {})
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 5), facecolor="white",
                           layout="constrained")
    cycle = ["o-", "s-", "^--", "D-."]
    for n, (label, values) in enumerate(columns.items()):
        values = as_float_array(f"columns[{label!r}]", values, ndim=1)
        check_shape(f"columns[{label!r}]", values, len(values) == len(log_d),
                    f"({len(log_d)},): one value per d")
        ax.plot(log_d, values, styles.get(label, cycle[n % 4]), label=label)
    ax.axhline(1 / T, color="grey", linestyle=":", label=f"uniform row, 1/{T}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(log_d, [str(d) for d in ds])
    ax.set(ylim=(0, 1.05), xlabel=r"head size $d$ (log$_2$ scale)",
           ylabel="largest weight in a row (mean)", title=title)
    fig.legend(loc="outside lower center", ncols=2)  # below: a phone's width
    legible(fig)
    return ax


def plot_std_growth(ds: Sequence[int], raw, after):
    """Measured std of ``q . k`` and of ``q . k / sqrt(d)`` against ``d``.

    Returns the Axes.

    Parameters
    ----------
    ds : sequence of int, vector sizes (log2 axes)
    raw, after : sequence of float, the std without and with ``1 / sqrt(d)``"""
    ds = np.array([check_positive_int("ds", d) for d in ds])
    fig, ax = plt.subplots(figsize=(7, 4.2), facecolor="white")
    d_line = np.logspace(0, np.log2(ds.max()), 50, base=2)
    ax.plot(d_line, np.sqrt(d_line), color="grey", linestyle=":",
            label=r"$\sqrt{d}$")
    ax.plot(ds, as_float_array("raw", raw, ndim=1), "o",
            label=r"measured std of $q \cdot k$")
    ax.plot(ds, as_float_array("after", after, ndim=1), "s",
            label=r"measured std of $q \cdot k / \sqrt{d}$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set(xlabel=r"vector size $d$", ylabel="standard deviation",
           title=r"A dot product of $d$ unit-variance terms spreads "
                 r"like $\sqrt{d}$")
    ax.legend()
    legible(fig)
    return ax


def plot_position_encodings(pe, *, title: str | None = None):
    """A table of position encodings: positions across, dimensions down.

    Returns the Axes.

    Parameters
    ----------
    pe : ndarray, shape (T, d_model), values in [-1, 1]
    title : str, optional"""
    pe = as_float_array("pe", pe, ndim=2)
    fig, ax = plt.subplots(figsize=(7, 3.5), facecolor="white")
    im = ax.imshow(pe.T, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set(xlabel="position", ylabel="dimension (even: sin, odd: cos)",
           title=title)
    fig.colorbar(im, ax=ax, label="value")
    legible(fig)
    return ax


# --- heads chapters


def plot_rope_decay(similarity, bound, decades, *, context: int):
    """Self-similarity and RoFormer's bound against distance, log-x.

    Each curve has a segment at its mean over each range of ``decades``,
    labelled with it: the numbers the chapter prints.

    Parameters
    ----------
    similarity, bound : dict of str to (context,) arrays; [d - 1] at distance d
    decades : sequence of (int, int), ranges ``[a, b)`` of distances
    context : int, the longest distance (dashed)"""
    context = check_int("context", context, low=2)
    d = np.unique(np.geomspace(1, context, 400).astype(int))  # log grid
    fig, axes = plt.subplots(2, 1, figsize=(7, 7), sharex=True,
                             facecolor="white", layout="constrained")
    colours = ("tab:orange", "tab:blue", "tab:green", "tab:red")
    for ax, curves in zip(axes, (similarity, bound)):
        for k, (label, y) in enumerate(curves.items()):
            colour = colours[k % len(colours)]
            below = k == 0 and len(curves) > 1  # first curve: label under
            y = as_float_array(label, y, ndim=1)
            ax.semilogx(d, y[d - 1], color=colour, lw=1, alpha=0.6,
                        label=label)
            for a, b in decades:  # the decade mean, drawn and labelled
                mean = y[a - 1:b - 1].mean()
                ax.hlines(mean, a, b, color=colour, lw=3)
                ax.annotate(f"{mean:.3f}", (np.sqrt(a * b), mean),
                            textcoords="offset points",
                            xytext=(0, -6 if below else 5),
                            va="top" if below else "bottom",
                            ha="center", fontsize=9, color=colour,
                            fontweight="bold", zorder=4,
                            bbox=dict(fc="white", ec="none", alpha=0.8,
                                      pad=0.5))
        ax.axvline(context, color="black", ls="--", lw=1)
        ax.grid(alpha=0.3)
    axes[0].set(ylabel="mean over pairs of cos(d ω_i)",
                title="Self-similarity of a rotated vector "
                      "(thick: mean over each decade)")
    axes[0].legend(loc="lower left")
    axes[1].set(ylabel="relative upper bound",
                title="RoFormer's long-term decay bound",
                xlabel="distance d between query and key "
                       "(positions, log scale)")
    return legible(fig)


def plot_rope_layout_bug(right, wrong, fixed, tokens: Sequence[str], *,
                         mask=None):
    """Attention weights under two RoPE layouts, the fix, and the change.

    Three panels share one colour scale; the fourth, ``wrong - right``, has
    its own diverging one, so a small change never looks like a large weight.

    Parameters
    ----------
    right, wrong, fixed : ndarray (T, T): own layout, other, permuted rows
    tokens : sequence of str, length T
    mask : ndarray of bool, shape (T, T), optional, True = may attend"""
    panels = [as_float_array(n, w, ndim=2) for n, w in
              (("right", right), ("wrong", wrong), ("fixed", fixed))]
    diff = panels[1] - panels[0]
    fig, axes = plt.subplots(2, 2, figsize=(8, 7.4), facecolor="white",
                             layout="constrained")
    titles = ("right: interleaved\nweights and RoPE",
              "bug: same weights,\nhalf RoPE",
              "fix: permuted rows,\nhalf RoPE")
    for ax, w, title in zip(axes.flat, panels, titles):
        plot_attention(w, tokens, ax=ax, title=title, annotate=False,
                       colorbar=False, mask=mask)
    fig.colorbar(axes[0, 0].images[0], ax=axes[0, :], shrink=0.8,
                 label="weight (three panels)")
    ax = axes[1, 1]
    lim = float(np.abs(diff).max()) or 1.0
    shown = diff if mask is None else np.where(mask, diff, np.nan)
    im = ax.imshow(shown, cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax.set_xticks(range(len(tokens)), tokens, rotation=90)
    ax.set_yticks(range(len(tokens)), tokens)
    ax.set(title="bug - right:\nwhat the bug changes",
           xlabel="key: the token looked at")
    fig.colorbar(im, ax=ax, shrink=0.8,
                 label=f"difference, {-lim:.2f} to {lim:+.2f}")
    for a in axes[0]:
        a.set_xlabel("")
    for a in axes[:, 1]:
        a.set_ylabel("")
    return legible(fig)


def _short(x: float) -> str:
    """A score in four characters at most: ``.80``, ``-.05``, ``1.00``."""
    return re.sub(r"^(-?)0\.", r"\1.", f"{x:.2f}")


HEAD_SCORE_ROW = 0.22   # inches a layer: 22 px, a row of labels and a gap
HEAD_SCORE_COLUMN = 0.27  # inches a head at the least, 27 px


def plot_head_scores(scores, *, outline=None, ncols: int | None = None):
    """Each head score as a layers x heads heatmap, the named heads outlined.

    One colour scale for every panel. Each head's value is written in its
    cell where the values fit at a phone's text size, else the outlined
    heads' values are listed under their panel.

    Parameters
    ----------
    scores : mapping of str to ndarray, shape (L, H), a score per head
    outline : mapping of str to sequence of (layer, head), optional, boxed red
    ncols : int, optional, panels a row; default as many as the column holds"""
    names = list(scores)
    maps = [as_float_array(f"scores[{n!r}]", scores[n], ndim=2) for n in names]
    outline = dict(outline or {})
    check_needs(set(outline) <= set(names), "outline", f"keys among {names}",
                f"got {sorted(set(outline) - set(names))}")
    L, H = maps[0].shape
    for n, m in zip(names, maps):
        check_shape(f"scores[{n!r}]", m, m.shape == (L, H), f"({L}, {H})")
        for i, h in outline.get(n, ()):
            check_needs(0 <= i < L and 0 <= h < H, f"outline[{n!r}]",
                        f"(layer, head) within ({L}, {H})", f"got {(i, h)}")
    if ncols is None:
        # the column less the colour bar, over a panel: its heads and labels
        fit = int((COLUMN_WIDTH - 1.0) // (H * HEAD_SCORE_COLUMN + 0.45))
        ncols = max(1, min(len(names), fit))
    ncols = check_positive_int("ncols", ncols)
    nrows = -(-len(names) // ncols)
    height = nrows * (L * HEAD_SCORE_ROW + 0.55) + 0.1  # + title and ticks
    # a line under a panel for every two outlined heads, where the values
    # cannot be written in the cells (the panel's heads narrower than them)
    size = _legible_pt(COLUMN_WIDTH)  # every text legible on a phone
    if ((COLUMN_WIDTH - 1.0) / ncols - 0.45) * 72 / H < 2.4 * size:
        height += nrows * 0.2 * max((len(v) + 1) // 2 for v in
                                    outline.values()) if outline else 0
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, facecolor="white",
                             figsize=(COLUMN_WIDTH, height),
                             layout="constrained")
    # one scale for every panel: from 0 (or the lowest score) to the highest
    low = min(0.0, min(float(m.min()) for m in maps))
    high = max(max(float(m.max()) for m in maps), low + 1e-9)
    for ax, name, m in zip(axes.flat, names, maps):
        im = ax.imshow(m, cmap=CMAP, vmin=low, vmax=high, aspect="auto")
        # every head's value in its cell where the values fit at that size;
        # else the outlined heads' values (the ones the text names) below
        fits = _numbers_fit(ax, H, size)
        for i, h in np.ndindex(L, H) if fits else ():
            # inside its cell: the layout need not measure 270 of them
            ax.text(h, i, _short(m[i, h]), ha="center", va="center",
                    fontsize=size, in_layout=False,
                    color=ink(im.cmap(im.norm(m[i, h]))))
        named = [f"L{i} H{h} {_short(m[i, h])}"
                 for i, h in outline.get(name, ())]
        ax.set_xlabel("\n".join(["head"] + (["   ".join(named[k:k + 2])
                                 for k in range(0, len(named), 2)]
                                if named and not fits else [])))
        for i, h in outline.get(name, ()):
            ax.add_patch(Rectangle((h - 0.5, i - 0.5), 1, 1, fill=False,
                                   edgecolor=OUTLINE_COLOUR, linewidth=2))
        ax.set_xticks(range(H), [str(h) for h in range(H)])
        # the layers named once a row, on its first panel
        first = not np.flatnonzero(axes == ax)[0] % ncols
        ax.set_yticks(range(L), [f"L{i}" for i in range(L)] if first else [])
        ax.tick_params(length=0)
        ax.set_title(textwrap.fill(name, 18, break_on_hyphens=False))
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    bar = fig.colorbar(im, ax=axes[:, -1].tolist(), fraction=0.05, pad=0.02,
                       aspect=30 * nrows)
    bar.set_label("score (one scale, every panel)")
    named = "; ".join(f"{n}: " + ", ".join(f"L{i} H{h}" for i, h in heads)
                      for n, heads in outline.items() if heads)
    return legible(_describe(fig, (
        f"Heatmaps of {len(names)} head scores ({', '.join(names)}), each "
        f"layers 0 to {L - 1} by heads 0 to {H - 1}, "
        f"on one colour scale from {low:.2f} to {high:.2f}"
        + (f"; outlined, with their values, the heads the text names "
           f"({named})" if named else "")
        + ".")))


# --- which coordinates RoPE pairs up


def plot_rope_pairs(head_dim: int = 8, *, rope_theta: float = 1_000_000.0):
    """Which coordinates form RoPE's pairs, in both layouts, and their speed.

    On top the half layout (HF's ``rotate_half``, Qwen3): ``i`` pairs with
    ``i + head_dim/2``; below the interleaved one (RoFormer, Meta's Llama):
    ``2i`` with ``2i + 1``. The legend gives each pair's angle a position;
    each arc's ``gid`` is ``"half i a-b"`` or ``"interleaved i a-b"``.

    Parameters
    ----------
    head_dim : int, ``d_head``, even, 2 to 16
    rope_theta : float, the base of the frequencies, > 1"""
    d = check_int("head_dim", head_dim, low=2, high=16)
    inv_freq = rope_frequencies(d, rope_theta)  # (d/2,): checks both
    half = d // 2
    layouts = {
        "half": ("half layout (Hugging Face, Qwen3): "
                 f"x[i] with x[i + {half}]",
                 [(i, i + half) for i in range(half)]),
        "interleaved": ("interleaved (RoFormer, Meta's Llama): "
                        "x[2i] with x[2i + 1]",
                        [(2 * i, 2 * i + 1) for i in range(half)]),
    }
    colours = plt.get_cmap("tab10" if half <= 10 else "tab20").colors
    size = _legible_pt(COLUMN_WIDTH)
    # y in units of a box's height, 0.55 in; arcs of the half layout rise
    # by 0.36 (0.2 in, a line of text) a pair, so their labels stay apart
    step = 0.36
    tops = {"half": 0.5 + step * (half + 1), "interleaved": 0.5 + step * 2}
    rows = -(-half // 2)  # the legend's rows, two pairs a row
    fig, axes = plt.subplots(
        2, 1, figsize=(COLUMN_WIDTH, 0.55 * sum(t + 0.75 for t in
                                                tops.values())
                       + 1.3 + 0.27 * rows),
        facecolor="white", layout="constrained",
        gridspec_kw={"height_ratios": [t + 0.75 for t in tops.values()]})
    for ax, (name, (title, pairs)) in zip(axes, layouts.items()):
        for i, (a, b) in enumerate(pairs):
            colour = colours[i % len(colours)]
            for j in (a, b):  # the two coordinates of pair i
                ax.add_patch(Rectangle((j - 0.42, -0.5), 0.84, 1.0,
                                       facecolor=colour, alpha=0.35,
                                       edgecolor=colour, lw=2))
                ax.text(j, 0, f"x{j}", ha="center", va="center",
                        fontsize=size)
            # an arc from a to b; in the half layout each a little higher
            height = 0.5 + step * (i + 1 if name == "half" else 1)
            t = np.linspace(0, np.pi, 40)
            ax.plot((a + b) / 2 - (b - a) / 2 * np.cos(t),
                    0.5 + (height - 0.5) * np.sin(t), color=colour, lw=2.5,
                    gid=f"{name} {i} {a}-{b}",
                    label=f"pair {i}: {inv_freq[i]:.3g} rad/position")
            ax.text((a + b) / 2, height, f"pair {i}", ha="center",
                    va="center", fontsize=size, color=colour,
                    bbox=dict(fc="white", ec="none", pad=0.5))
        ax.set_xlim(-0.6, d - 0.4)
        ax.set_ylim(-0.6, tops[name] + 0.15)
        ax.set_title(title, loc="left")
        ax.axis("off")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center",
               ncols=2 if half > 1 else 1, frameon=False,
               title=f"pair i turns by ω_i = {rope_theta:,.0f}^(-2i/{d}) "
                     "radians per position")
    speeds = ", ".join(f"pair {i} {w:.3g}" for i, w in enumerate(inv_freq))
    return legible(_describe(fig, (
        f"Two rows of the {d} coordinates x0 to x{d - 1} of one head. In "
        f"the half layout (Hugging Face, Qwen3) arcs join coordinate i to "
        f"i + {half}: " + ", ".join(f"x{a}-x{b}" for a, b in
                                   layouts["half"][1])
        + "; in the interleaved layout (RoFormer, Meta's Llama) they join "
        "neighbours 2i and 2i + 1: " + ", ".join(
            f"x{a}-x{b}" for a, b in layouts["interleaved"][1])
        + f". Pair i has one colour in both rows and turns by the same "
        f"angle per position in both, radians: {speeds}.")))


# ------------------------------------------------ the multi-head chapter
# Two pictures of one attention layer (issue 49, item 5): the data flow with
# every shape, and which columns of a projection become which head.
LAYER_SIZES = ("B", "T", "S", "d_model", "H", "H_kv", "d_head")


def _shape(symbols: str, sizes) -> str:
    """``"(B, H, T, d_head)"`` as mathtext, with its numbers when given."""
    names = [s.strip() for s in symbols.split(",")]
    math = ", ".join({"H_kv": "$H_{kv}$", "d_head": "$d_{head}$",
                      "d_model": "$d_{model}$",
                      "H*d_head": r"$H{\cdot}d_{head}$"}.get(n, n)
                     for n in names)
    text = f"({math})"
    if sizes:
        vals = [sizes["H"] * sizes["d_head"] if n == "H*d_head"
                else sizes[n] for n in names]
        text += "\n= (" + ", ".join(f"{v:,}" for v in vals) + ")"
    return text


def plot_attention_layer(sizes=None):
    """Draw the data flow of one attention layer, every array with its shape.

    X to Q, K and V, the scores, the weights, each head's output, the heads
    concatenated and mixed back by ``o_proj``; shapes in the book's symbols.

    Parameters
    ----------
    sizes : mapping of str to int, optional, a number per ``LAYER_SIZES``

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3Attention"""
    if sizes is not None:
        sizes = dict(sizes)
        check_needs(set(sizes) == set(LAYER_SIZES), "sizes",
                    f"exactly the keys {list(LAYER_SIZES)}",
                    f"got {sorted(sizes)}")
        sizes = {k: check_positive_int(f"sizes[{k!r}]", v)
                 for k, v in sizes.items()}
    step = 1.25 if sizes else 1.0  # a box of three lines needs more room
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 7.2 * step + 0.6),
                           facecolor="white")
    ax.set_position((0, 0, 1, 0.96))
    ax.set(xlim=(0, 10), ylim=(-0.55 * step, 6.55 * step))
    ax.axis("off")
    size = _legible_pt(COLUMN_WIDTH)
    colour = {"in": "#dbe9f6", "k": "#fde0c5", "w": "#e5f5e0",
              "h": "#efe1f5"}

    def box(x, row, name, shape, kind):
        return ax.text(x, (6 - row) * step, f"{name}\n{_shape(shape, sizes)}",
                       ha="center", va="center", fontsize=size,
                       linespacing=1.3, bbox=dict(
                           boxstyle="round,pad=0.35", facecolor=colour[kind],
                           edgecolor="#555555"))

    def arrow(a, b, label="", side=0.0, at=(0.5, 0.0), to=(0.5, 1.0)):
        ax.annotate("", xy=to, xycoords=b, xytext=at, textcoords=a,
                    arrowprops=dict(arrowstyle="-|>", color="#333333",
                                    lw=1.4, shrinkA=2, shrinkB=2))
        if label:
            fig.canvas.draw()  # where the boxes are, to place the label
            inv = ax.transData.inverted()
            pa = inv.transform(a.get_window_extent().get_points())
            pb = inv.transform(b.get_window_extent().get_points())
            x0 = pa[0, 0] + at[0] * (pa[1, 0] - pa[0, 0])
            x1 = pb[0, 0] + to[0] * (pb[1, 0] - pb[0, 0])
            y0, y1 = pa[0, 1], pb[1, 1]
            ax.text((x0 + x1) / 2 + side, (y0 + y1) / 2, label,
                    ha="left" if side >= 0 else "right", va="center",
                    fontsize=size, color="#333333", style="italic")

    x = box(5, 0, "X: the tokens", "B, T, d_model", "in")
    q = box(1.7, 1.3, "Q", "B, H, T, d_head", "in")
    k = box(5, 1.3, "K", "B, H_kv, S, d_head", "k")
    v = box(8.3, 1.3, "V", "B, H_kv, S, d_head", "k")
    scores = box(3.35, 2.6, r"scores $QK^{\top}/\sqrt{d_{head}}$ + mask",
                 "B, H, T, S", "w")
    weights = box(3.35, 3.7, "weights", "B, H, T, S", "w")
    heads = box(5, 4.8, "heads: weights @ V", "B, H, T, d_head", "h")
    concat = box(5, 5.9, "concat: heads side by side", "B, T, H*d_head", "h")
    out = box(5, 7.0, "out", "B, T, d_model", "in")
    arrow(x, q, "q_proj", side=-0.35)
    arrow(x, k, "k_proj", side=0.15)
    arrow(x, v, "v_proj", side=0.35)
    arrow(q, scores)
    arrow(k, scores, "each K/V head\nread by n_rep\nquery heads", side=0.55)
    arrow(scores, weights, "softmax over S", side=0.15)
    arrow(weights, heads, at=(0.5, 0.0), to=(0.25, 1.0))
    arrow(v, heads, at=(0.5, 0.0), to=(0.85, 1.0))
    arrow(heads, concat, "merge_heads", side=0.15)
    arrow(concat, out, "o_proj mixes the heads", side=0.15)
    fig.suptitle("One attention layer, with the shape of every array",
                 fontsize=size + 1)
    shape = {"X": "(B, T, d_model)", "Q": "(B, H, T, d_head)",
             "KV": "(B, H_kv, S, d_head)", "W": "(B, H, T, S)",
             "C": "(B, T, H*d_head)"}
    numbers = "" if not sizes else " The numbers: " + ", ".join(
        f"{k} = {v:,}" for k, v in sizes.items()) + "."
    return legible(_describe(fig, (
        f"Flow diagram of one attention layer: X {shape['X']} is projected "
        f"by q_proj, k_proj and v_proj to Q {shape['Q']} and K and V "
        f"{shape['KV']}; Q and K give the scores {shape['W']}, the softmax "
        f"over the S keys the weights {shape['W']}, the weights times V each "
        f"head's output {shape['Q']}; the heads are concatenated to "
        f"{shape['C']} and o_proj mixes them back to {shape['X']}."
        + numbers)))


def plot_head_split(T: int = 3, num_heads: int = 2, head_dim: int = 4):
    """Draw which columns of a projection become which head.

    Top, one sequence's projection (T, H*d_head) holding 0, 1, 2, ...; below,
    the same numbers after ``split_heads``, (H, T, d_head), a colour a head.

    Parameters
    ----------
    T : int, tokens (rows)
    num_heads : int, ``H``
    head_dim : int, ``d_head``"""
    T, H, d = (check_positive_int(n, v) for n, v in
               (("T", T), ("num_heads", num_heads), ("head_dim", head_dim)))
    check_needs(T * H * d <= 256, "T * num_heads * head_dim",
                "at most 256 cells, to stay legible", f"got {T * H * d}")
    values = np.arange(T * H * d).reshape(T, H * d)
    gap = 1.0  # between the heads below
    width = H * d + (H - 1) * gap + 2.8  # + the row labels, a margin
    height = 2 * T + 4.4
    unit = min(0.55, COLUMN_WIDTH / width)
    fig, ax = plt.subplots(figsize=(unit * width, unit * height),
                           facecolor="white")
    ax.set_position((0, 0, 1, 1))
    ax.set(xlim=(-2.6, width - 2.6), ylim=(height - 1.2, -1.2))
    ax.set_aspect("equal")
    ax.axis("off")
    size = _legible_pt(unit * width)
    colours = plt.cm.Pastel1(np.arange(H) % 9)
    low = T + 2.6  # where the heads' grids start

    def cell(x, y, value, h):
        ax.add_patch(Rectangle((x, y), 1, 1, facecolor=colours[h],
                               edgecolor="#555555", linewidth=1))
        ax.text(x + 0.5, y + 0.5, str(value), ha="center", va="center",
                fontsize=size)

    for t, c in np.ndindex(T, H * d):  # the projection: (T, H*d_head)
        cell(c, t, values[t, c], c // d)
    for h, t, j in np.ndindex(H, T, d):  # head h: (T, d_head)
        cell(h * (d + gap) + j, low + t, values[t, h * d + j], h)
    for t in range(T):
        for y in (t, low + t):
            ax.text(-0.2, y + 0.5, f"token {t}", ha="right", va="center",
                    fontsize=size)
    ax.text(-2.6, -0.35, r"one sequence $(T, H{\cdot}d_{head})$ = "
            f"({T}, {H * d})", ha="left", va="bottom", fontsize=size)
    for h in range(H):
        x0 = h * (d + gap)
        ax.annotate("", xy=(x0 + d / 2, low - 0.55),
                    xytext=(h * d + d / 2, T + 0.1),
                    arrowprops=dict(arrowstyle="-|>", color=colours[h] * 0.6,
                                    lw=2))
        ax.text(x0 + d / 2, low - 0.1, f"head {h}", ha="center",
                va="bottom", fontsize=size)
    ax.text(H * d / 2, (T + low) / 2 - 0.3, "split_heads", ha="center",
            va="center", fontsize=size, style="italic")
    ax.text(-2.6, low + T + 0.25, r"heads $(H, T, d_{head})$ = "
            f"({H}, {T}, {d})", ha="left", va="top", fontsize=size)
    return legible(_describe(fig, (
        f"Two grids of the numbers 0 to {T * H * d - 1}: on top one "
        f"sequence's projection, {T} tokens by {H * d} columns; below it "
        f"{H} heads of {T} tokens by {d} columns, head h holding columns "
        f"h*{d} to h*{d}+{d - 1} of every token, in the same colour.")))


# the multi-head chapter's pictures are public in this module (px.plotting.*)
