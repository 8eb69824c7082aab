"""Interactive views that work in a live kernel *and* on the static website.

Every state of a view (mask on or off, a head, a position) is drawn once,
in Python, into an ``ipywidgets.Stack``; the control is linked to it in the
browser with ``ipywidgets.jslink``, so the exported page switches views
with no kernel. Each image is wrapped in ``<figure class="pyxis-view">``
with its view name and data attributes, for the website test. The
explorer stores one picture a view; its frames, a query each, are CSS
rules that outline that query's row over the picture.

Shape legend:
    T   query tokens: the rows of a heatmap
    S   key tokens: its columns (S = T unless ``key_tokens`` is given)
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import re
from typing import Mapping, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle
import numpy as np

from ._checks import (as_float_array, check_bool, check_choice, check_int,
                      check_keys, check_needs, check_nonempty,
                      check_positive_int, check_shape)
from .masks import causal_mask
from .plotting import (CMAP, COLUMN_WIDTH, OUTLINE_COLOUR, plot_attention,
                       plot_rope_rotation, plot_tile_step)

__all__ = [
    "AttentionExplorer",
    "LinkedViews",
    "ModelView",
    "attention_explorer",
    "describe_attention",
    "figure_png",
    "model_view",
    "png_description",
    "png_figure_html",
    "rope_rotation_frames",
    "tile_step_frames",
    "view_grid",
    "view_switcher",
]

_CONTROLS = {
    "toggle": widgets.ToggleButtons,
    "dropdown": widgets.Dropdown,
    "slider": widgets.SelectionSlider,
}


def _style(control: str) -> dict:
    """Labels at their natural width; toggle buttons as wide as their text."""
    style = {"description_width": "initial"}
    if control == "toggle":
        style["button_width"] = "auto"
    return style


#: colours of a frame's palette PNG (figure_png)
PALETTE = 256
#: pixels an inch of a view's pictures, shown at 100 an inch (a figure
#: 6.5 in wide fills the column's 650 px): png_figure_html reads it from
#: the PNG. 200: sharp on a phone's and a laptop's dense screen, as the
#: figures are; a view stores every frame in its page, so the explorer
#: stores one picture a view and outlines its rows in the page (a picture
#: a query took trained heads' page to 1.90 MB gzipped, past its 1.5 MB)
VIEW_DPI = 200
#: pixels an inch that a picture is shown at one pixel a CSS pixel
CSS_DPI = 100


def figure_png(fig, dpi: int = VIEW_DPI, colors: int = PALETTE, *,
               close: bool = True) -> bytes:
    """A matplotlib figure as a palette PNG of ``colors`` colours.

    What ``savefig(bbox_inches="tight")`` gives, drawn once, not twice. A
    palette of 256 (Pillow's fast octree, no dithering) keeps every pixel
    within 16 levels of its colour in a quarter of the bytes; median cut left
    colour bars banded. No version metadata: the bytes depend only on what is
    drawn. ``fig.pyxis_alt`` becomes the PNG's ``Description``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    dpi : int, pixels an inch, stored in the PNG: shown at ``dpi / 100``
        pixels a CSS pixel (:func:`png_figure_html`)
    colors : int, palette size, at most 256; 0 for a full-colour PNG
    close : bool, close the figure (False: more frames are drawn on it)"""
    rgba, _ = _draw_tight(fig, dpi)
    alt = getattr(fig, "pyxis_alt", None)
    if close:
        plt.close(fig)
    return _png(rgba, dpi, colors, alt)


def rope_rotation_frames(key_positions: Sequence[int],
                         query_positions: Sequence[int], *,
                         pairs: Sequence[int] = (0, 8), start=(0.8, 0.6),
                         head_dim: int = 128,
                         rope_theta: float = 1_000_000.0,
                         dpi: int = VIEW_DPI) -> dict[str, dict[str, bytes]]:
    """:func:`pyxis_nb.plot_rope_rotation` for every key position ``n`` and
    query position ``m``, as PNGs for :func:`view_grid`:
    ``{"n = 0": {"m = 0": png, ...}, ...}``, drawn on one figure whose layout
    is found once.

    Parameters
    ----------
    key_positions, query_positions : sequence of int, ``n`` and ``m``
    pairs : sequence of int, the rotation pairs drawn
    start : (float, float), each pair before rotation
    head_dim : int
    rope_theta : float
    dpi : int"""
    check_nonempty("key_positions", key_positions, "key position")
    check_nonempty("query_positions", query_positions, "query position")
    fig = plot_rope_rotation(query_positions[0], key_positions[0],
                             pairs=pairs, start=start, head_dim=head_dim,
                             rope_theta=rope_theta)
    pngs = iter(_redrawn(fig, [(m, n) for n in key_positions
                               for m in query_positions], dpi))
    return {f"n = {n}": {f"m = {m}": next(pngs) for m in query_positions}
            for n in key_positions}


def tile_step_frames(stats, tokens: Sequence[str] | None = None, *,
                     dpi: int = VIEW_DPI) -> dict[str, bytes]:
    """Every step of :func:`pyxis_nb.plot_tile_step` as a PNG, for
    :func:`view_switcher`: ``{"step 1": png, ...}``, drawn on one figure
    whose layout is found once.

    Parameters
    ----------
    stats : TileStats, of ``tiled_attention(..., return_stats=True)``
    tokens : sequence of str, optional, labels of the positions
    dpi : int"""
    fig = plot_tile_step(stats, 0, tokens)
    steps = [(i,) for i in range(len(stats.steps))]
    return {f"step {i + 1}": png
            for (i,), png in zip(steps, _redrawn(fig, steps, dpi))}


def _redrawn(fig, steps, dpi: int) -> list[bytes]:
    """The PNGs of ``fig`` after ``fig.pyxis_show(*step)`` for each step:
    the layout of the first is kept (only the changed artists are new);
    the figure is closed after the last."""
    pngs, box = [], None
    for step in steps:
        fig.pyxis_show(*step)
        rgba, box = _draw_tight(fig, dpi, box)
        fig.set_layout_engine("none")  # keep the first frame's layout
        pngs.append(_png(rgba, dpi, PALETTE, fig.pyxis_alt))
    plt.close(fig)
    return pngs


def _png(rgba: np.ndarray, dpi: int, colors: int,
         description: str | None = None) -> bytes:
    """(height, width, 4) pixels as a PNG of ``colors`` colours (0: all)."""
    if not colors:
        buf = io.BytesIO()
        plt.imsave(buf, rgba, format="png", dpi=dpi,
                   metadata={"Software": None, "Description": description})
        return buf.getvalue()
    from PIL import Image, PngImagePlugin  # matplotlib depends on Pillow

    rgb = Image.fromarray(rgba[..., :3])
    pal = rgb.quantize(colors=colors, method=Image.Quantize.FASTOCTREE,
                       dither=Image.Dither.NONE)
    info = PngImagePlugin.PngInfo()
    if description:
        info.add_text("Description", description)
    out = io.BytesIO()  # zlib level 8: 0.5 % larger than 9, 3x faster
    pal.save(out, format="png", compress_level=8, pnginfo=info,
             dpi=(dpi, dpi))
    return out.getvalue()


def png_description(png: bytes) -> str | None:
    """The ``Description`` text of a PNG (see :func:`figure_png`), if any.

    Parameters
    ----------
    png : bytes"""
    from PIL import PngImagePlugin

    try:
        return PngImagePlugin.PngImageFile(io.BytesIO(png)).text.get(
            "Description") or None
    except (OSError, SyntaxError):  # not a PNG: no description
        return None


def _draw_tight(fig, dpi: int, box=None):
    """``fig`` drawn once at ``dpi`` on white, cut to its tight box.

    Returns the (height, width, 4) uint8 pixels that
    ``savefig(bbox_inches="tight", facecolor="white")`` would write (the cut's
    edges rounded to whole pixels, not the drawing shifted by a fraction of
    one), and the box with whether it lies inside the figure. Passing that
    back as ``box`` skips finding it again, for frames in which only an
    artist inside the axes moves.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas
    if not isinstance(canvas, FigureCanvasAgg):
        canvas = FigureCanvasAgg(fig)
    old_dpi, old_face = fig.dpi, fig.patch.get_facecolor()
    fig.dpi = dpi
    fig.patch.set_facecolor("white")
    try:
        if box is None:
            canvas.draw()
            tight = fig.get_tightbbox(canvas.get_renderer())  # inches
            pixel = 1 / dpi  # less than one out: a slanted label's edge
            inside = (tight.x0 > -pixel and tight.y0 > -pixel
                      and tight.x1 < fig.bbox_inches.width + pixel
                      and tight.y1 < fig.bbox_inches.height + pixel)
            box = (tight.padded(plt.rcParams["savefig.pad_inches"]), inside)
        elif box[1]:
            canvas.draw()
        tight, inside = box
        w, h = int(tight.width * dpi), int(tight.height * dpi)  # savefig's
        if not inside:  # something sticks out of the figure: savefig it
            buf = io.BytesIO()
            fig.savefig(buf, format="rgba", dpi=dpi, bbox_inches=tight,
                        facecolor="white")
            pixels = np.frombuffer(buf.getvalue(), np.uint8)
            return pixels.reshape(h, w, 4), box
        pixels = np.asarray(canvas.buffer_rgba())  # (H, W, 4), top row first
    finally:
        fig.dpi = old_dpi
        fig.patch.set_facecolor(old_face)
    H, W = pixels.shape[:2]
    left = round(tight.x0 * dpi)
    top = H - h - round(tight.y0 * dpi)  # row of the box's top edge
    out = np.full((h, w, 4), 255, dtype=np.uint8)  # savefig's white margin
    r0, r1 = max(top, 0), min(top + h, H)
    c0, c1 = max(left, 0), min(left + w, W)
    out[r0 - top:r1 - top, c0 - left:c1 - left] = pixels[r0:r1, c0:c1]
    return out, box


def png_figure_html(png: bytes, *, alt: str, view: str,
                    data: Mapping[str, object] | None = None,
                    overlay: str = "") -> str:
    """An HTML ``<figure>``: a PNG inline, the view name, data attributes.

    Parameters
    ----------
    png : bytes
    alt : str, the picture's alt text
    view : str, the view's name, shown under the picture
    data : mapping of str to object, optional, ``data-*`` attributes
    overlay : str, optional, HTML laid over the picture: its positions in
        % are of the picture's box (``span.pyxis-over``), at any width"""
    values = {k: v if isinstance(v, str) else json.dumps(v)
              for k, v in (data or {}).items()}
    attrs = "".join(f' data-{k}="{html.escape(v)}"' for k, v in values.items())
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    size, style = _css_size(png), "max-width:100%;height:auto"
    if size is not None:  # its size on the page, whatever its pixels
        attrs_img = f' width="{size[0]}" height="{size[1]}"'
        style = f"width:{size[0]}px;{style}"
    else:
        attrs_img = ""
    img = f'<img src="{src}" alt="{html.escape(alt)}"{attrs_img}'
    if overlay:  # a box as large as the picture, the overlay inside it
        img = ('<span class="pyxis-over" style="position:relative;'
               'display:block;width:fit-content;max-width:100%">'
               f'{img} style="display:block;{style}">{overlay}</span>')
    else:
        img += f' style="{style}">'
    return (
        f'<figure class="pyxis-view" data-view="{html.escape(view)}"{attrs}'
        f' style="margin:0">{img}</figure>'
    )


def _css_size(png: bytes) -> tuple[int, int] | None:
    """The (width, height) in CSS px at which a PNG is shown: its pixels
    over its pixels an inch (``pHYs``) / 100; None for bytes that are not a
    PNG with ``pHYs``."""
    from PIL import Image

    try:
        picture = Image.open(io.BytesIO(png))
        dpi = picture.info.get("dpi")
    except (OSError, SyntaxError):
        return None
    if not dpi or not dpi[0]:
        return None
    scale = round(dpi[0]) / CSS_DPI  # pHYs is in dots a metre: 199.9996
    return tuple(round(n / scale) for n in picture.size)


# JupyterLab's notebook takes ArrowUp and ArrowDown (and its other
# command-mode keys) from a focused <select> in an output: the keys move the
# active cell instead of changing the choice. Lumino's CommandRegistry skips
# its key bindings for an event from inside an element that carries the
# ``data-lm-suppress-shortcuts`` attribute (it checks no class); ipywidgets
# sets no attributes, so this script, run once by JupyterLab's JavaScript
# renderer, sets it on a pyxis view's <select> as it gets the focus. Where
# nothing runs the script (the website, Colab, VS Code) it does nothing, and
# nothing there takes those keys from a <select>.
_KEEP_KEYS_JS = """\
if (!window.pyxisKeepKeys) {
  window.pyxisKeepKeys = true;
  document.addEventListener("focusin", (event) => {
    const el = event.target;
    if (el instanceof HTMLSelectElement
        && el.closest(".pyxis-switcher, .pyxis-explorer")) {
      el.setAttribute("data-lm-suppress-shortcuts", "true");
    }
  }, true);
}"""


def _keep_keys() -> widgets.Output:
    """A hidden Output widget that runs ``_KEEP_KEYS_JS`` where it is drawn."""
    out = widgets.Output(layout=widgets.Layout(display="none"))
    out.outputs = ({"output_type": "display_data", "metadata": {},
                    "data": {"application/javascript": _KEEP_KEYS_JS,
                             "text/plain": ""}},)
    out.add_class("pyxis-keep-keys")
    return out


class LinkedViews(widgets.VBox):
    """A VBox of a control and the pre-rendered views it selects.

    Its text form is short and stable (nbval compares it). With a dropdown it
    also holds a hidden Output that keeps the dropdown's arrow keys inside it
    in JupyterLab (``_KEEP_KEYS_JS``).

    Parameters
    ----------
    children : sequence of widgets, the control first, then the views
    summary : str, the text form (``repr``)
    **kwargs : passed to ``ipywidgets.VBox``
    """

    def __init__(self, children, *, summary: str, **kwargs):
        children = list(children)
        if any(isinstance(c, widgets.Dropdown) for c in children):
            children.append(_keep_keys())
        super().__init__(children, **kwargs)
        self._summary = summary

    def __repr__(self) -> str:
        return self._summary

    def _repr_mimebundle_(self, **kwargs):
        """The widget, plus a PNG of its default view for viewers without one.

        For GitHub, nbviewer, Colab's preview and an untrusted JupyterLab."""
        bundle = super()._repr_mimebundle_(**kwargs)
        frame = _default_frame(self)
        if bundle is None or frame is None:
            return bundle
        png, alt = frame
        bundle["image/png"] = base64.b64encode(png).decode("ascii")
        # the picture's alt text and its width on a page (its pixels over
        # its dpi / 100), in the output's metadata, where viewers look
        size = _css_size(png)
        meta = ({} if alt is None else {"alt": alt}) | (
            {} if size is None else {"width": size[0]})
        return (bundle, {"image/png": meta}) if meta else bundle


def _default_frame(widget) -> tuple[bytes, str | None] | None:
    """The first picture the widget shows before any control is touched:
    its PNG and its alt text (None for an Image widget)."""
    if getattr(widget, "fallback", None) is not None:
        return widget.fallback
    if isinstance(widget, widgets.Stack):
        index = widget.selected_index
        return (None if index is None
                else _default_frame(widget.children[index]))
    if isinstance(widget, widgets.Box):
        for child in widget.children:
            frame = _default_frame(child)
            if frame is not None:
                return frame
        return None
    if isinstance(widget, widgets.Image) and widget.format == "png":
        return widget.value, None
    if isinstance(widget, widgets.HTML):
        found = re.search(r'src="data:image/png;base64,([^"]+)"', widget.value)
        if found is None:
            return None
        alt = re.search(r'<img [^>]*alt="([^"]*)"', widget.value)
        return (base64.b64decode(found.group(1)),
                html.unescape(alt.group(1)) if alt else None)
    return None


def _annotation_px(fig) -> float | None:
    """The size, in CSS px, of the smallest cell number (None: none)."""
    points = [t.get_fontsize() for ax in fig.axes for t in ax.texts]
    return _points_px(points) if points else None


def _points_px(points) -> float:
    """The smallest of these font sizes (pt) in CSS px, 100 an inch."""
    return round(min(points) * CSS_DPI / 72, 1)


def _as_view_widget(name: str, view, alt: str | None = None) -> widgets.Widget:
    if isinstance(view, widgets.Widget):
        return view
    data = {}
    if isinstance(view, plt.Figure):
        number_px = _annotation_px(view)
        if number_px:  # the website check keeps heatmap numbers >= 9 px
            data["annotation-px"] = number_px
        view = figure_png(view)
    if isinstance(view, bytes):
        alt = alt or png_description(view) or name
        return widgets.HTML(png_figure_html(view, alt=alt, view=name,
                                            data=data))
    if isinstance(view, str):
        return widgets.HTML(view)
    raise ValueError(f"view {name!r} needs to be a matplotlib Figure, PNG "
                     "bytes, an HTML string or a widget: got "
                     f"{type(view).__name__}")


def _alt_texts(name: str, alt, labels: list[str]) -> list[str | None]:
    """``alt`` (None, a mapping by label or a sequence) as one per label."""
    if alt is None:
        return [None] * len(labels)
    check_needs(not isinstance(alt, str), name, "a mapping or a sequence "
                "of one sentence per view", f"got a str: {str(alt)[:40]!r}")
    texts = ([alt.get(k) for k in labels] if isinstance(alt, Mapping)
             else list(alt))
    extra = sorted(set(alt) - set(labels)) if isinstance(alt, Mapping) else []
    check_needs(len(texts) == len(labels) and not extra, name,
                f"one sentence per view {labels}", f"got {len(texts)}"
                + (f" and unknown views {extra}" if extra else ""))
    return texts


def view_switcher(views: Mapping[str, object], *, control: str = "toggle",
                  description: str = "", alt=None) -> LinkedViews:
    """A control linked client-side to a stack of pre-rendered views.

    It works after the kernel is gone: the link lives in the browser. A
    picture's alt text defaults to its figure's own, else its label.

    Parameters
    ----------
    views : mapping of str to Figure, PNG bytes, HTML str or widget, in order
    control : {"toggle", "dropdown", "slider"}: few, many, or ordered states
    description : str, the label before the control
    alt : mapping of str to str, or sequence of str, optional, the alt texts"""
    check_choice("control", control, tuple(sorted(_CONTROLS)))
    check_nonempty("views", views, "view")
    names = list(views)
    alts = _alt_texts("alt", alt, names)
    ctrl = _CONTROLS[control](options=names, description=description,
                              style=_style(control))
    stack = widgets.Stack([_as_view_widget(n, v, a) for (n, v), a
                           in zip(views.items(), alts)], selected_index=0)
    widgets.jslink((ctrl, "index"), (stack, "selected_index"))
    # CSS classes let the website test find each control and its views
    ctrl.add_class("pyxis-view-control")
    stack.add_class("pyxis-view-stack")
    root = LinkedViews([ctrl, stack],
                       summary=f"view_switcher({control}: {names})")
    root.add_class("pyxis-switcher")
    return root


def view_grid(
    views: Mapping[str, Mapping[str, object]],
    *,
    controls: tuple[str, str] = ("toggle", "dropdown"),
    descriptions: tuple[str, str] = ("", ""),
    alt: Mapping[str, Mapping[str, str]] | None = None,
) -> LinkedViews:
    """Two linked controls over a grid of pre-rendered views, e.g. mask x head.

    The second control keeps its choice when the first changes; every link
    lives in the browser.

    Parameters
    ----------
    views : mapping of str to mapping of str to view, ``views[outer][inner]``
    controls : pair of {"toggle", "dropdown", "slider"}
    descriptions : pair of str, the labels before the controls
    alt : mapping of str to mapping of str to str, optional, per picture"""
    check_nonempty("views", views, "outer view")
    outer_names = list(views)
    inner_names = list(views[outer_names[0]])
    for name in outer_names:
        check_needs(list(views[name]) == inner_names and bool(inner_names),
                    f"views[{name!r}]", "the same non-empty keys in the same "
                    f"order as views[{outer_names[0]!r}]: {inner_names}",
                    f"got inner views {list(views[name])}")
    for control in controls:
        check_choice("controls", control, tuple(sorted(_CONTROLS)))
    first = _CONTROLS[controls[0]](options=outer_names,
                                   description=descriptions[0],
                                   style=_style(controls[0]))
    second = _CONTROLS[controls[1]](options=inner_names,
                                    description=descriptions[1],
                                    style=_style(controls[1]))
    alts = _alt_texts("alt", alt, outer_names)
    inner_stacks = []
    for name, outer_alt in zip(outer_names, alts):
        inner_alts = _alt_texts(f"alt[{name!r}]", outer_alt, inner_names)
        stack = widgets.Stack([_as_view_widget(f"{name} / {n}", v, a)
                               for (n, v), a in zip(views[name].items(),
                                                    inner_alts)],
                              selected_index=0)
        widgets.jslink((second, "index"), (stack, "selected_index"))
        inner_stacks.append(stack)
    outer = widgets.Stack(inner_stacks, selected_index=0)
    widgets.jslink((first, "index"), (outer, "selected_index"))
    first.add_class("pyxis-view-control")
    second.add_class("pyxis-inner-control")
    outer.add_class("pyxis-view-stack")
    summary = (f"view_grid({controls[0]}: {outer_names}, "
               f"{controls[1]}: {inner_names})")
    root = LinkedViews([first, second, outer], summary=summary)
    root.add_class("pyxis-switcher")
    return root


def _quote(token: str) -> str:
    return f"'{token}'"


def _query_index(query_index, n: int) -> int:
    """``query_index`` as a row in ``0 .. n-1`` (negative: from the end)."""
    return check_int("query_index", query_index, low=-n, high=n - 1) % n


def describe_attention(weights_row, tokens: Sequence[str], query_index: int,
                       *, key_tokens=None, top: int = 3,
                       min_share: float = 0.05,
                       positions: bool = False) -> str:
    """Say in words where one query token's attention goes.

    ``"'sat' attends 71 % to itself and 26 % to 'cat'"``; a row of zeros
    gives ``"'sat' attends to no key: every key is masked"``.

    Parameters
    ----------
    weights_row : ndarray, shape (S,), the query's attention weights
    tokens : sequence of str, query labels
    query_index : int, the query's row (negative: from the end)
    key_tokens : sequence of str, optional; none: the query's own key, "itself"
    top : int, at most this many keys are named, largest first
    min_share : float, keys below this weight are not named
    positions : bool, name each token with its position, ``'is' (7)``"""
    w = as_float_array("weights_row", weights_row)
    keys = list(tokens if key_tokens is None else key_tokens)
    check_shape("weights_row", w, w.shape == (len(keys),), f"({len(keys)},)")
    query_index = _query_index(query_index, len(tokens))
    top = check_positive_int("top", top)
    positions = check_bool("positions", positions)
    who = _quote(tokens[query_index])
    if positions:
        who = f"{who} ({query_index})"
    if not np.any(w > 0):  # a fully masked query row: SDPA gives it zeros
        return f"{who} attends to no key: every key is masked"
    same = key_tokens is None
    order = sorted(range(len(keys)), key=lambda j: (-w[j], j))
    parts = []
    for j in order[:top]:
        if w[j] < min_share and parts:
            break
        target = "itself" if same and j == query_index else _quote(keys[j])
        if positions and target != "itself":
            target = f"{target} ({j})"
        parts.append(f"{100 * w[j]:.0f} % to {target}")
    if len(parts) > 1:
        text = ", ".join(parts[:-1]) + " and " + parts[-1]
    else:
        text = parts[0]
    return f"{who} attends {text}"


class AttentionExplorer(LinkedViews):
    """The attention explorer: heatmaps per view, a sentence per query.

    Made by :func:`attention_explorer`.

    Parameters
    ----------
    children : sequence of widgets
    summary : str
    **kwargs : as :class:`LinkedViews`
    """

    #: (png, alt): its first view with the chosen query's row drawn on,
    #: for viewers without widgets (on a page the row is outlined in CSS)
    fallback: tuple[bytes, str] | None = None


def attention_explorer(
    tokens: Sequence[str],
    views: Mapping[str, np.ndarray],
    *,
    key_tokens: Sequence[str] | None = None,
    title: str | None = None,
    query_index: int | None = None,
    masks: Mapping[str, np.ndarray] | None = None,
) -> AttentionExplorer:
    """An attention heatmap with a view toggle and a query-token choice.

    A sentence under the heatmap says where the chosen token's attention
    goes; all switching is linked in the browser, with no kernel.

    Parameters
    ----------
    tokens : sequence of str, length T, the queries (and keys, by default)
    views : mapping of str to ndarray, shape (T, S), the weights of each view
    key_tokens : sequence of str, length S, optional
    title : str, optional, above each heatmap, with the view's name
    query_index : int, optional, the query chosen first; default the last
    masks : mapping of str to (T, S) bool, optional; masked cells hatched"""
    tokens = [str(t) for t in tokens]
    check_nonempty("tokens", tokens, "query token")
    check_nonempty("views", views, "(T, S) weights matrix")
    names = list(views)
    masks = dict(masks or {})
    check_keys("masks", masks, names)
    T = len(tokens)
    query_index = (T - 1 if query_index is None
                   else _query_index(query_index, T))

    heatmaps, sentences, fallback = [], [], None
    for name, w in views.items():
        w = as_float_array(f"views[{name!r}]", w)
        S = len(key_tokens) if key_tokens is not None else T
        check_shape(f"views[{name!r}]", w, w.shape == (T, S),
                    f"(T, S) = ({T}, {S})")
        ax = plot_attention(w, tokens, key_tokens=key_tokens,
                            mask=masks.get(name),
                            title=f"{title}: {name}" if title else name)
        # the cell numbers' size in image pixels: the website check keeps
        # them >= 9 CSS px on a phone
        points = [t.get_fontsize() for t in ax.texts] or [0]
        data = {"weights": np.round(w, 4).tolist(),
                "annotation-px": _points_px(points)}
        about = (f"Heatmap of attention weights, {name}: rows are the query "
                 f"tokens {', '.join(tokens)}; columns the keys")
        rgba, box = _draw_tight(ax.figure, VIEW_DPI)
        # the heatmap is drawn once; the query's row is outlined over it in
        # the page (a frame a query: a CSS rule that places the outline), so
        # a view stores one picture, not one a query
        rows = _row_boxes(ax, box[0], T, S)
        outline = f"pyxis-row-{next(_OUTLINES)}"
        picture = widgets.HTML(png_figure_html(
            _png(rgba, VIEW_DPI, PALETTE), view=name, data=data,
            alt=f"{about}; the row of the chosen query is outlined.",
            overlay=_OUTLINE_CSS + f'<span class="pyxis-row {outline}">'
            '</span>'))
        frames = [widgets.HTML(
            f'<style>.pyxis-row.{outline}{{display:block;{row}}}</style>'
            f'<span class="pyxis-row-frame" data-query="{i}"></span>')
            for i, row in enumerate(rows)]
        heatmaps.append(widgets.VBox([picture, widgets.Stack(
            frames, selected_index=query_index,
            layout=widgets.Layout(display="none"))]))
        if fallback is None:  # the first view, as it opens: its row drawn
            _outline_row(ax, query_index, S)
            rgba, _ = _draw_tight(ax.figure, VIEW_DPI, box)
            fallback = (_png(rgba, VIEW_DPI, PALETTE), f"{about}; the row of "
                        f"{tokens[query_index]!r} is outlined.")
        plt.close(ax.figure)
        said = (describe_attention(w[i], tokens, i, key_tokens=key_tokens)
                for i in range(T))
        lines = [widgets.HTML(
            f"<p class='pyxis-describe'>{html.escape(s)}</p>") for s in said]
        sentences.append(widgets.Stack(lines, selected_index=query_index))

    toggle = widgets.ToggleButtons(options=names, style=_style("toggle"))
    query = widgets.Dropdown(
        options=[(f"{i}: {t}", i) for i, t in enumerate(tokens)],
        index=query_index, description="query token:",
        style=_style("dropdown"))
    heat_stack = widgets.Stack(heatmaps, selected_index=0)
    text_stack = widgets.Stack(sentences, selected_index=0)
    widgets.jslink((toggle, "index"), (heat_stack, "selected_index"))
    widgets.jslink((toggle, "index"), (text_stack, "selected_index"))
    for inner in sentences + [pane.children[1] for pane in heatmaps]:
        widgets.jslink((query, "index"), (inner, "selected_index"))
    toggle.add_class("pyxis-view-control")
    query.add_class("pyxis-query-control")
    heat_stack.add_class("pyxis-view-stack")
    text_stack.add_class("pyxis-describe-stack")
    summary = f"AttentionExplorer(tokens={tokens}, views={names})"
    # the sentence under the heatmap, as in the model view: on a phone it
    # wraps to one line or two as the query changes, and above the picture
    # that moved the picture (28 px; issue #41, item 8)
    root = AttentionExplorer([toggle, query, heat_stack, text_stack],
                             summary=summary)
    root.add_class("pyxis-explorer")
    root.fallback = fallback
    return root


#: the width in points of the line around the chosen query's row (the
#: explorer's, the model view's), as matplotlib draws a Rectangle's edge
OUTLINE_PT = 2.5
_OUTLINE_PX = round(OUTLINE_PT * CSS_DPI / 72, 2)
# hidden until a frame's rule places it; the line centred on the row's edge
_OUTLINE_CSS = (
    "<style>.pyxis-row{position:absolute;display:none;pointer-events:none;"
    f"outline:{_OUTLINE_PX}px solid {OUTLINE_COLOUR};"
    f"outline-offset:-{_OUTLINE_PX / 2}px}}</style>")
# the outlines' class names, one a view, in the order a kernel draws them
_OUTLINES = itertools.count()


def _outline_row(ax, row: int, S: int) -> None:
    """Draw the outline around ``row`` of a heatmap of ``S`` key columns."""
    ax.add_patch(Rectangle((-0.5, row - 0.5), S, 1, fill=False,
                           edgecolor=OUTLINE_COLOUR, linewidth=OUTLINE_PT,
                           clip_on=False, zorder=10))


def _row_boxes(ax, tight, T: int, S: int) -> list[str]:
    """Each query row's box in the heatmap's tight picture (``tight``: the
    box in inches it was cut to), as CSS ``left/top/width/height`` in % of
    the picture: cells ``(i, -0.5 .. S - 0.5)``."""
    fig = ax.figure
    width, height = tight.width, tight.height
    rules = []
    for i in range(T):
        (x0, y0), (x1, y1) = ax.transData.transform(
            [(-0.5, i - 0.5), (S - 0.5, i + 0.5)]) / fig.dpi  # inches
        left, right = sorted((x0, x1))
        low, high = sorted((y0, y1))
        rules.append(
            f"left:{100 * (left - tight.x0) / width:.3f}%;"
            f"top:{100 * (tight.y1 - high) / height:.3f}%;"
            f"width:{100 * (right - left) / width:.3f}%;"
            f"height:{100 * (high - low) / height:.3f}%")
    return rules


# ------------------------------------------------------------ model view
_LEVELS = 10  # colour steps of the HTML heatmaps (viridis, as plots use)
# the model view's sizes in CSS px: (narrow screens, 700 px and wider).
# A cell of the opened head, a thumbnail button, the text; the reserved
# height (_reserve_heights) is summed from the same numbers.
_MV_CELL = ((28, 26), (34, 30))        # (width, height) of a heatmap cell
_MV_FONT = (12, 13)                    # its numbers and labels
_MV_ROW_LABEL = (52, 64)               # row labels' width
_MV_COL_LABEL = (40, 44)               # column labels' height (vertical)
_MV_THUMB = ((40, 54, 30), (56, 66, 40))  # button width, height, picture
_MV_LINE = 20                          # a line of text
_MV_PHONE_GRID = 336                   # px a phone gives the thumbnails
_MV_CONTROL = 36                       # a row of toggle buttons or a dropdown


def _palette() -> list[str]:
    from matplotlib.colors import to_hex

    cmap = plt.get_cmap(CMAP)
    return [to_hex(cmap(k / (_LEVELS - 1))) for k in range(_LEVELS)]


def _luminance(colour: str) -> float:
    """WCAG's relative luminance of ``#rrggbb``."""
    rgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
           for v in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _text_colour(background: str) -> str:
    """Black or white, whichever contrasts more with ``background``: black
    on viridis' light half, white on its dark half (each >= 4.5:1)."""
    lum = _luminance(background)
    return "#000" if (lum + 0.05) / 0.05 > 1.05 / (lum + 0.05) else "#fff"


def _model_view_css(thumbs: Sequence[bytes], T: int, H: int) -> str:
    """The view's stylesheet: cells, thumbnails, the chosen query row.

    The row and its sentence follow the query dropdown by CSS alone
    (``:has(option:checked)``): no frame per query. The view keeps its own
    colours in dark mode, every heatmap has the same box, and cells are 34 px
    with 13 px numbers at 700 px and wider, 28 px with 12 px on a phone.
    """
    picked = ".pyxis-mv:has(.pyxis-mv-query option:nth-child({}):checked)"
    rows = "".join(
        f"{picked.format(q + 1)} tr.r{q}>*{{box-shadow:inset 0 2px "
        f"{OUTLINE_COLOUR},inset 0 -2px {OUTLINE_COLOUR}}}"
        f"{picked.format(q + 1)} p.s{q}"
        "{display:block}" for q in range(T))
    cells = "".join(
        f".pyxis-mv .c{k}{{background:{c};color:{_text_colour(c)}}}"
        for k, c in enumerate(_palette()))
    icons = "".join(
        f'.pyxis-mv-grid button[value="{k}"]{{background-image:url('
        f'data:image/png;base64,{base64.b64encode(png).decode("ascii")})}}'
        for k, png in enumerate(thumbs))

    def sizes(n: int) -> str:
        (cw, ch), font = _MV_CELL[n], _MV_FONT[n]
        row_label, col_label = _MV_ROW_LABEL[n], _MV_COL_LABEL[n]
        bw, bh, pic = _MV_THUMB[n]
        label = f"font-size:{font - 1}px"
        if n == 0 and H * bw + 2 * (H - 1) > _MV_PHONE_GRID:  # 9 heads
            bw = (_MV_PHONE_GRID - 2 * (H - 1)) // H
            # "L17 H0" on two lines of 11 px under a smaller picture, not
            # one line of 9 px (issue 41, item 14)
            pic = bh - 6 - 25
            label = ("font-size:11px;line-height:11px;white-space:normal;"
                     "font-weight:normal!important")
        return (
            f".pyxis-mv table{{font:{font}px/1 sans-serif}}"
            f".pyxis-mv td,.pyxis-mv thead th+th{{width:{cw}px;"
            f"min-width:{cw}px;max-width:{cw}px}}"
            f".pyxis-mv td{{height:{ch}px}}"
            f".pyxis-mv th[scope=row],.pyxis-mv thead th:first-child"
            f"{{width:{row_label}px;min-width:{row_label}px;"
            f"max-width:{row_label}px}}"
            f".pyxis-mv thead th{{height:{col_label}px}}"
            f".pyxis-mv-grid .widget-toggle-button{{width:{bw}px;"
            f"height:{bh}px;padding:{pic + 6}px 0 0;{label};"
            f"background-size:{pic}px {pic}px}}"
            f".pyxis-mv-grid>div:last-child{{grid-template-columns:"
            f"repeat({H},{bw}px)}}")

    return (
        "<style>"
        ".pyxis-mv{color:#1a1a1a;background:#fff}"
        ".pyxis-mv .pyxis-mv-top p,.pyxis-mv .widget-label,"
        ".pyxis-mv .pyxis-mv-describe p{color:#1a1a1a;margin:0;"
        f"line-height:{_MV_LINE}px;font-size:14px}}"
        ".pyxis-mv figure.pyxis-view{margin:0;width:max-content;"
        "max-width:100%;overflow-x:auto;text-align:left}"
        ".pyxis-mv table{border-collapse:collapse;color:#1a1a1a;"
        "background:#fff;margin:0}"
        ".pyxis-mv td{padding:0;text-align:center;position:relative}"
        ".pyxis-mv td.m{background:repeating-linear-gradient(45deg,"
        "#d9d9d9 0 3px,#a8a8a8 3px 4px)}"
        ".pyxis-mv .pyxis-sr{position:absolute;width:1px;height:1px;"
        "overflow:hidden;clip:rect(0 0 0 0);clip-path:inset(50%);"
        "white-space:nowrap}"
        ".pyxis-mv th{font-weight:normal;padding:0 4px 0 0;text-align:right;"
        "white-space:nowrap;overflow:hidden;text-overflow:ellipsis;"
        "color:#1a1a1a;background:#fff}"
        ".pyxis-mv thead th{writing-mode:vertical-rl;transform:rotate(180deg);"
        "text-align:left;padding:4px 0;vertical-align:bottom}"
        ".pyxis-mv .pyxis-mv-describe p{display:none;font-style:italic}"
        ".pyxis-mv caption{caption-side:top;text-align:left;padding:0 0 4px;"
        f"color:#1a1a1a;background:#fff;font:14px/{_MV_LINE - 4}px sans-serif;"
        "white-space:nowrap}"
        ".pyxis-mv .pyxis-mv-grid{flex-direction:column;"
        "align-items:flex-start}"
        ".pyxis-mv-grid .widget-toggle-button{line-height:1;min-width:0;"
        "margin:0;background-repeat:no-repeat;background-position:center 3px;"
        "image-rendering:pixelated}"
        ".pyxis-mv-grid{margin-bottom:6px}"
        ".pyxis-mv-grid>div:last-child{display:grid;gap:2px}"
        f"{sizes(0)}@media (min-width:700px){{{sizes(1)}}}"
        f"{cells}{icons}{rows}</style>"
    )


def _reserve_heights(L: int, T: int, title: bool) -> tuple[int, int]:
    """The height in CSS px that the view takes once drawn, (narrow, wide):
    the page reserves it (``_ext/pyxis_book.py``), so nothing below moves
    when the widget manager draws the view. Text lines are counted as on a
    phone (two for the longer ones), so it is an upper bound there."""
    out = []
    for n in (0, 1):
        lines = (2 if n == 0 else 1) * (2 + title) + (2 if n == 0 else 1)
        (_, ch), bh = _MV_CELL[n], _MV_THUMB[n][1]
        col_label = _MV_COL_LABEL[n]
        out.append(lines * _MV_LINE + _MV_LINE            # the "head" label
                   + L * (bh + 2) + 6 + 2 * _MV_CONTROL   # grid, controls
                   + _MV_LINE + col_label + T * ch + 8)   # the table
    return out[0], out[1]


def _heatmap_table(w, tokens, mask, caption: str) -> str:
    """A (T, S) weights matrix as an HTML table, row ``i`` of class ``ri``;
    a masked cell says "masked" to a screen reader (visually hidden)."""
    level = np.clip((w * _LEVELS).astype(int), 0, _LEVELS - 1)  # (T, S)
    esc = [html.escape(t) for t in tokens]
    head = "".join(f'<th scope="col">{t}</th>' for t in esc)
    rows = []
    for i, t in enumerate(esc):
        cells = "".join(
            '<td class=m><span class="pyxis-sr">masked</span></td>'
            if mask is not None and not mask[i, j]
            else f"<td class=c{level[i, j]}>{round(100 * w[i, j])}</td>"
            for j in range(w.shape[1]))
        rows.append(f'<tr class="r{i}"><th scope="row">{t}</th>{cells}</tr>')
    return (f"<table><caption>{html.escape(caption)} (weights in %)"
            f"</caption><thead><tr><th></th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _thumbnail_png(w, mask, scale: int = 3) -> bytes:
    """A (T, T) map as a tiny palette PNG, ``scale`` pixels a cell."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(_thumbnail_rgb(w, mask, scale)).quantize(
        colors=_LEVELS + 1).save(buf, format="png", optimize=True)
    return buf.getvalue()


def _thumbnail_rgb(w, mask, scale: int = 3) -> np.ndarray:
    """(T * scale, S * scale, 3) pixels: a cell's level of the palette."""
    colours = np.array([[int(c[i:i + 2], 16) for i in (1, 3, 5)]
                        for c in _palette()], dtype=np.uint8)
    rgb = colours[np.clip((w * _LEVELS).astype(int), 0, _LEVELS - 1)]
    if mask is not None:
        rgb[~mask] = 217  # the hatched grey of a forbidden cell
    return rgb.repeat(scale, axis=0).repeat(scale, axis=1)


def _table_figure(table: str, view: str, data: Mapping[str, str]) -> str:
    """An HTML ``<figure>`` around a table: the view name, data attributes."""
    attrs = "".join(f' data-{k}="{html.escape(v)}"' for k, v in data.items())
    return (f'<figure class="pyxis-view" data-view="{html.escape(view)}"'
            f"{attrs}>{table}</figure>")


def _head_frame(w, tokens, mask, view: str, name: str) -> str:
    """One head in one view: the table, then a sentence per query row,
    which names each token with its position (a line may say a word twice)."""
    said = "".join(
        f'<p class="pyxis-describe s{q}">'
        f"{html.escape(describe_attention(w[q], tokens, q, positions=True))}"
        "</p>" for q in range(len(tokens)))
    rounded = np.round(w.astype(np.float64), 4)  # float32 reprs are long
    data = {"weights": json.dumps(rounded.tolist()), "head": name}
    table = _heatmap_table(w, tokens, mask, f"{name}, {view}")
    return (_table_figure(table, f"{view} / {name}", data)
            + '<div class="pyxis-mv-describe" aria-live="polite">'
            f"{said}</div>")


class ModelView(LinkedViews):
    """``model_view``'s widget; its picture for viewers without widgets,
    with its alt text in the output's metadata (nbconvert writes it).

    Parameters
    ----------
    children : sequence of widgets
    summary : str, as :class:`LinkedViews`
    png : bytes, the picture of the default view
    alt : str, its alt text
    **kwargs : passed to ``ipywidgets.VBox``
    """

    def __init__(self, children, *, summary: str, png: bytes, alt: str,
                 **kwargs):
        super().__init__(children, summary=summary, **kwargs)
        self._png, self._alt = png, alt

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        bundle["image/png"] = base64.b64encode(self._png).decode("ascii")
        return bundle, {"image/png": {"alt": self._alt}}


def _default_view_png(w, tokens, mask, heads, query: int,
                      title: str | None, layers, opened: int) -> bytes:
    """The view as it opens, as one picture for viewers without widgets:
    the grid of every head (layers by heads, labelled), and head
    ``heads[opened]`` opened below it with its numbers and the query's
    row outlined."""
    L, H = w.shape[:2]
    T = len(tokens)
    scale, gap = 3, 4
    tile = T * scale
    sheet = np.full((L * (tile + gap), H * (tile + gap), 3), 255, np.uint8)
    for i, h in heads:
        y, x = i * (tile + gap), h * (tile + gap)
        sheet[y:y + tile, x:x + tile] = _thumbnail_rgb(w[i, h], mask, scale)
    fig, (top, below) = plt.subplots(
        1, 2, figsize=(COLUMN_WIDTH, 0.3 * T + 1.6), facecolor="white",
        gridspec_kw={"width_ratios": [0.9, 1]}, layout="constrained")
    top.imshow(sheet, interpolation="nearest")
    top.set_xticks([h * (tile + gap) + tile / 2 for h in range(H)],
                   [f"H{h}" for h in range(H)], fontsize=8)
    top.set_yticks([i * (tile + gap) + tile / 2 for i in range(L)],
                   [f"L{layers[i]}" for i in range(L)], fontsize=8)
    top.tick_params(length=0)
    for side in top.spines.values():
        side.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=10)
    i, h = heads[opened]
    top.set_xlabel(f"each head's weights; L{layers[i]} H{h} opened",
                   fontsize=8)
    plot_attention(w[i, h], tokens, mask=mask, ax=below, colorbar=False,
                   title=f"L{layers[i]} H{h}, causal mask; query {query} "
                   f"('{tokens[query]}') outlined")
    below.title.set_fontsize(9)
    below.xaxis.label.set_fontsize(8)
    below.yaxis.label.set_fontsize(8)
    below.tick_params(labelsize=8)
    for t in below.texts:
        t.set_fontsize(7)
    _outline_row(below, query, T)
    return figure_png(fig)


def _layer_numbers(layers, L: int) -> list[int]:
    """model_view's ``layers``: L distinct layer numbers >= 0."""
    numbers = [check_int(f"layers[{j}]", x, low=0)
               for j, x in enumerate(layers)]
    if len(numbers) != L or len(set(numbers)) != L:
        raise ValueError(f"layers must be {L} distinct layer numbers, one "
                         f"per row of weights, got {list(layers)}")
    return numbers


def _opened(open_head, layers: list[int], H: int) -> int:
    """model_view's ``open_head`` (layer, head): its index in the grid."""
    if not (isinstance(open_head, tuple) and len(open_head) == 2
            and open_head[0] in layers):
        raise ValueError(f"open_head must be (layer, head) with the layer "
                         f"in {layers}, got {open_head!r}")
    head = check_int("open_head[1]", open_head[1], low=0, high=H - 1)
    return layers.index(open_head[0]) * H + head


def _layer_span(layers: list[int]) -> str:
    """'0 to 3' for consecutive layers, else '17, 18 and 23' (or '17')."""
    if len(layers) == 1:
        return str(layers[0])
    if layers == list(range(layers[0], layers[0] + len(layers))):
        return f"{layers[0]} to {layers[-1]}"
    return ", ".join(map(str, layers[:-1])) + f" and {layers[-1]}"


def model_view(tokens: Sequence[str], weights, *, open_weights=None,
               title: str | None = None, query_index: int | None = None,
               layers: Sequence[int] | None = None,
               open_head: tuple[int, int] | None = None) -> ModelView:
    """Every layer by every head as thumbnails, each opening an explorer.

    The chosen head opens below as an HTML table (with ``open_weights``, a
    toggle: causal mask / no mask), its query row outlined and described.
    Head and view switch by ``jslink``, the row by CSS alone; the arrow keys
    move by head and layer (``web/widgets-config.js``).

    Parameters
    ----------
    tokens : sequence of str, length T, shown stripped (``' x'`` as ``x``)
    weights : ndarray, shape (L, H, T, T), causal weights of every head
    open_weights : ndarray, shape (L, H, T, T), optional, the same, no mask
    title : str, optional, a line above the thumbnails
    query_index : int, optional, the row outlined first; default the last
    layers : sequence of int, optional, layer numbers of a selection (L17, ...)
    open_head : (int, int), optional, the (layer, head) opened first"""
    # labels as a reader reads them: a BPE token's leading space dropped
    # (' paints' shows as paints), a token of spaces alone as an open box
    tokens = [str(t).strip() or "\u2423" for t in tokens]
    w = as_float_array("weights", weights, ndim=4)
    L, H, T, S = w.shape
    check_shape("weights", w, T == len(tokens) == S,
                f"(L, H, T, T) with T = len(tokens) = {len(tokens)}")
    views = {"causal mask": (w, causal_mask(T))}
    if open_weights is not None:
        w_open = as_float_array("open_weights", open_weights, ndim=4)
        check_shape("open_weights", w_open, w_open.shape == w.shape,
                    f"that of weights, {w.shape}")
        views["no mask"] = (w_open, None)
    query_index = T - 1 if query_index is None else _query_index(
        query_index, T)
    layers = list(range(L)) if layers is None else _layer_numbers(layers, L)
    heads = [(i, h) for i in range(L) for h in range(H)]
    names = [f"L{layers[i]} H{h}" for i, h in heads]
    opened = 0 if open_head is None else _opened(open_head, layers, H)
    thumbs = [_thumbnail_png(w[i, h], views["causal mask"][1])
              for i, h in heads]
    grid = widgets.ToggleButtons(
        options=names, description="head (arrow keys: head, layer):",
        style=_style("toggle"),
        tooltips=[f"layer {layers[i]}, head {h}" for i, h in heads],
        index=opened)
    toggle = widgets.ToggleButtons(options=list(views), style=_style("toggle"))
    query = widgets.Dropdown(
        options=[(f"{i}: {t}", i) for i, t in enumerate(tokens)],
        index=query_index, description="query token:",
        style=_style("dropdown"))
    plain = widgets.Layout()  # one layout for the many HTML widgets
    stacks = []
    for view, (maps, mask) in views.items():
        frames = [widgets.HTML(_head_frame(maps[i, h], tokens, mask, view,
                                           name), layout=plain)
                  for (i, h), name in zip(heads, names)]
        stacks.append(widgets.Stack(frames, selected_index=opened))
        widgets.jslink((grid, "index"), (stacks[-1], "selected_index"))
    shown = widgets.Stack(stacks, selected_index=0)
    widgets.jslink((toggle, "index"), (shown, "selected_index"))
    toggle.add_class("pyxis-view-control")
    # a toggle with one option switches nothing: left out (no Tab stop)
    controls = [toggle] if len(views) > 1 else []
    query.add_class("pyxis-mv-query")
    shown.add_class("pyxis-view-stack")
    grid.add_class("pyxis-mv-grid")
    grid.add_class("pyxis-inner-control")  # the website test's view_grid
    top = widgets.HTML(_model_view_css(thumbs, T, H) + (
        f"<p><b>{html.escape(title)}</b></p>" if title else "") +
        "<p>Each thumbnail is one head (rows: layers "
        f"{_layer_span(layers)}); click one to open it below.</p>")
    top.add_class("pyxis-mv-top")
    summary = (f"ModelView(tokens={tokens}, layers={L}, heads={H}, "
               f"views={list(views)})")
    alt = (f"The model view as it opens: a grid of {L} layers by {H} heads, "
           "each a thumbnail of its causal attention pattern, and head "
           f"{names[opened]} opened below as a heatmap of weights, the row of "
           "query "
           f"{query_index} ('{tokens[query_index]}') outlined.")
    png = _default_view_png(w, tokens, views["causal mask"][1], heads,
                            query_index, title, layers, opened)
    root = ModelView([top, grid, *controls, query, shown], summary=summary,
                     png=png, alt=alt)
    root.add_class("pyxis-mv")
    root.add_class("pyxis-switcher")
    narrow, wide = _reserve_heights(L, T, bool(title))
    root.add_class(f"pyxis-reserve-{narrow}-{wide}")  # _ext/pyxis_book.py
    return root
