"""Tests of pyxis_nb.widgets: pre-rendered views linked client-side with jslink."""

import base64
import html
import io
import json
import re

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from ipywidgets.widgets.widget import _instances  # noqa: E402
from ipywidgets.widgets.widget_link import Link  # noqa: E402

import pyxis_nb as px  # noqa: E402

TOKENS = ["The", "cat", "sat"]
W_CAUSAL = np.array([[1.0, 0.0, 0.0], [0.4, 0.6, 0.0], [0.03, 0.26, 0.71]])
W_FULL = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6], [1 / 3, 1 / 3, 1 / 3]])
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


pytestmark = pytest.mark.usefixtures("close_figures")


def links(source, target):
    """The jslinks from ``source.index`` to ``target.selected_index``."""
    return [w for w in list(_instances.values())
            if isinstance(w, Link) and w.source[0] is source and w.target[0] is target
            and w.source[1] == "index" and w.target[1] == "selected_index"]


def walk(widget):
    """The widget and every widget inside it, depth first."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from walk(child)


def find(root, kind=widgets.Widget, css=None):
    """The one widget in ``root`` of this class (and CSS class): by role,
    not by its position among the children."""
    found = [w for w in walk(root) if isinstance(w, kind)
             and (css is None or css in w._dom_classes)]
    assert len(found) == 1, f"{len(found)} {kind.__name__} {css or ''}"
    return found[0]


def explorer_parts(ex):
    """toggle, query dropdown, sentence stack, heatmap stack, by role."""
    return (find(ex, widgets.ToggleButtons, "pyxis-view-control"),
            find(ex, widgets.Dropdown, "pyxis-query-control"),
            find(ex, widgets.Stack, "pyxis-describe-stack"),
            find(ex, widgets.Stack, "pyxis-view-stack"))


def attribute(html_text, name):
    found = re.search(rf'data-{name}="([^"]*)"', html_text)
    assert found, f"no data-{name} in {html_text[:120]}"
    return html.unescape(found.group(1))


def small_figure(label):
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title(label)
    return fig


# ---------------------------------------------------------------- describe_attention

@pytest.mark.parametrize("row, query, kwargs, expected", [
    ([0.03, 0.26, 0.71], 2, {}, "'sat' attends 71 % to itself and 26 % to 'cat'"),
    ([0.03, 0.26, 0.71], -1, {}, "'sat' attends 71 % to itself and 26 % to 'cat'"),
    ([1.0, 0.0, 0.0], 0, {}, "'The' attends 100 % to itself"),
    ([0.2, 0.3, 0.5], 1, {}, "'cat' attends 50 % to 'sat', 30 % to itself and 20 % to 'The'"),
    ([0.2, 0.3, 0.5], 1, {"top": 2}, "'cat' attends 50 % to 'sat' and 30 % to itself"),
    ([0.4, 0.4, 0.2], 2, {}, "'sat' attends 40 % to 'The', 40 % to 'cat' and 20 % to itself"),
    ([0.2, 0.3, 0.5], 1, {"min_share": 0.25}, "'cat' attends 50 % to 'sat' and 30 % to itself"),
    ([0.03, 0.02, 0.04], 0, {}, "'The' attends 4 % to 'sat'"),
    ([0.03, 0.26, 0.71], 2, {"key_tokens": ["a", "b", "sat"]},
     "'sat' attends 71 % to 'sat' and 26 % to 'b'"),
    ([0.0, 0.0, 0.0], 1, {}, "'cat' attends to no key: every key is masked"),
])
def test_describe_attention_sentences(row, query, kwargs, expected):
    assert px.describe_attention(np.array(row), TOKENS, query, **kwargs) == expected


def test_describe_attention_with_more_keys_than_queries():
    text = px.describe_attention(np.array([0.1, 0.9]), ["new"], 0, key_tokens=["old", "new"])
    assert text == "'new' attends 90 % to 'new' and 10 % to 'old'"


@pytest.mark.parametrize("row, query, kwargs, match", [
    (np.ones((1, 3)) / 3, 0, {}, r"weights_row has shape \(1, 3\), expected \(3,\)"),
    (np.ones(2) / 2, 0, {}, r"weights_row has shape \(2,\), expected \(3,\)"),
    (np.array([0, 1, 0]), 0, {}, r"weights_row must be a floating-point array"),
    (np.ones(3) / 3, 3, {}, r"query_index .*-3 <= query_index <= 2, got 3"),
    (np.ones(3) / 3, -4, {}, r"query_index .*-3 <= query_index <= 2, got -4"),
    (np.ones(3) / 3, 0, {"top": 0}, r"top must be an integer >= 1, got 0"),
])
def test_describe_attention_bad_input(row, query, kwargs, match):
    with pytest.raises(ValueError, match=match):
        px.describe_attention(row, TOKENS, query, **kwargs)


# ---------------------------------------------------------------- figure_png, png_figure_html

def test_figure_png_is_deterministic_and_closes_the_figure():
    fig = small_figure("a")
    png = px.widgets.figure_png(fig)
    assert png.startswith(PNG_MAGIC)
    assert not plt.fignum_exists(fig.number)
    assert px.widgets.figure_png(small_figure("a")) == png
    assert px.widgets.figure_png(small_figure("b")) != png


def _pixels(png):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def _savefig_tight(fig):
    """What figure_png drew before: savefig's own tight box (two draws)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=px.widgets.VIEW_DPI, bbox_inches="tight",
                facecolor="white")
    plt.close(fig)
    return buf.getvalue()


def _heatmap_with_outline(row, tokens=TOKENS):
    T = len(tokens)
    w = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    ax = px.plot_attention(w, tokens, mask=w > 0, title="t")
    ax.add_patch(Rectangle((-0.5, row - 0.5), T, 1, fill=False, lw=2.5,
                           edgecolor="#e8173a", clip_on=False))
    return ax.figure


def _best_shift(new, old, reach=2):
    """The (rows, columns) shift of ``new`` that best matches ``old``."""
    inner = (slice(reach, -reach),) * 2
    return min(((dy, dx) for dy in range(-reach, reach + 1)
                for dx in range(-reach, reach + 1)),
               key=lambda s: np.abs(np.roll(new, s, (0, 1))[inner]
                                    - old[inner]).mean())


# three kinds of figure a frame is drawn from, each made afresh per call
FIGURES = pytest.mark.parametrize("make", [
    lambda: _heatmap_with_outline(1, "The cat sat on the mat".split()),
    lambda: px.plot_attention_grid(np.stack([W_CAUSAL, W_FULL]), TOKENS,
                                   annotate=True, suptitle="grid"),
    lambda: px.plotting.plot_rope_rotation(3, 1),
], ids=["heatmap", "grid", "rope"])


@pytest.mark.slow
@FIGURES
def test_figure_png_draws_the_tight_picture_once(make):
    """One draw, cut to the tight box: savefig's picture, with its size and
    place, up to the sub-pixel offset of the cut (lines and images move by
    under half a pixel, a text by at most one)."""
    old, new = _pixels(_savefig_tight(make())), _pixels(
        px.widgets.figure_png(make(), colors=0))
    assert new.shape == old.shape
    assert _best_shift(new, old) == (0, 0)
    differ = np.abs(new - old).max(axis=-1) > 64
    assert differ.mean() < 0.05, f"{differ.mean():.1%} of pixels differ"


@pytest.mark.slow
@FIGURES
def test_figure_png_keeps_every_colour(make):
    """The palette PNG keeps every pixel within 16 of 255 levels of the
    full-colour picture, colour bar included, so a cell's colour still
    reads against its bar (median cut's 128 colours moved some by 108-128
    levels: a colour bar's greens off the map), in fewer bytes."""
    full = px.widgets.figure_png(make(), colors=0)
    png = px.widgets.figure_png(make())
    from PIL import Image
    assert Image.open(io.BytesIO(png)).mode == "P"
    off = np.abs(_pixels(png) - _pixels(full)).max()
    assert off <= 16, f"a pixel {off} levels off"
    assert len(png) < len(full) / 2


def test_figure_png_saves_a_figure_with_something_outside_as_savefig():
    """A legend beyond the figure's edge is not cut off: savefig's box."""
    def make():
        fig, ax = plt.subplots(figsize=(4, 3), facecolor="white")
        ax.plot([2, 4, 8], [0.5, 0.6, 0.7], label="a")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
        return fig
    assert np.array_equal(_pixels(px.widgets.figure_png(make(), colors=0)),
                          _pixels(_savefig_tight(make())))


def test_figure_png_keeps_an_open_figure_as_it_was():
    """close=False draws a frame and leaves the figure open, unchanged."""
    fig = _heatmap_with_outline(0)
    dpi, face = fig.dpi, fig.patch.get_facecolor()
    png = px.widgets.figure_png(fig, close=False, dpi=72)
    assert plt.fignum_exists(fig.number)
    assert (fig.dpi, fig.patch.get_facecolor()) == (dpi, face)
    assert px.widgets.figure_png(fig, dpi=72) == png  # drawn again: the same
    assert px.widgets.figure_png(_heatmap_with_outline(0), dpi=72) == png


SHOWN_PX = 330  # the figure below's tight box, 3.3 in


@pytest.mark.parametrize("dpi", [100, 200])
def test_a_view_picture_is_shown_at_100_pixels_an_inch(dpi):
    """Drawn at 200 dpi, a picture has twice the pixels it is shown at on
    the page (width, height and style) and in the output's metadata for
    viewers without widgets; at 100 dpi, one pixel a CSS px. The same
    figure takes the same CSS px at both."""
    from PIL import Image
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.set_axis_off()  # nothing but the figure: its tight box is all of it
    png = px.widgets.figure_png(fig, dpi=dpi)
    pixels = Image.open(io.BytesIO(png)).size
    text = px.widgets.png_figure_html(png, alt="a", view="v")
    shown = tuple(int(re.search(f'{k}="(\\d+)"', text).group(1))
                  for k in ("width", "height"))
    assert shown == tuple(round(n * 100 / dpi) for n in pixels)
    assert shown[0] == SHOWN_PX  # the same on the page at any dpi
    assert 'style="width:%dpx;max-width:100%%;height:auto"' % shown[0] in text
    assert px.widgets.png_figure_html(PNG_MAGIC, alt="a", view="v").count(
        "width") == 1  # bytes with no size: max-width alone
    switcher = px.view_switcher({"a": png, "b": png})
    _, meta = switcher._repr_mimebundle_()
    assert meta["image/png"]["width"] == shown[0]


def test_png_figure_html_carries_view_and_data():
    text = px.widgets.png_figure_html(PNG_MAGIC, alt='a "quoted" <alt>', view="no mask",
                              data={"weights": [[0.5, 0.5]], "note": "x<y"})
    assert text.startswith('<figure class="pyxis-view" data-view="no mask"')
    assert json.loads(attribute(text, "weights")) == [[0.5, 0.5]]
    assert attribute(text, "note") == "x<y"
    assert "<y" not in text.split("<img")[0].split('data-note="')[1]  # escaped
    assert 'alt="a &quot;quoted&quot; &lt;alt&gt;"' in text
    assert "data:image/png;base64,iVBORw0KGgo" in text


# ---------------------------------------------------------------- view_switcher

@pytest.mark.parametrize("control, cls", [
    ("toggle", widgets.ToggleButtons), ("dropdown", widgets.Dropdown),
    ("slider", widgets.SelectionSlider),
])
def test_view_switcher_links_control_to_stack(control, cls):
    views = {"first": small_figure("1"), "second": px.widgets.figure_png(small_figure("2")),
             "third": "<p class='mine'>three</p>"}
    box = px.view_switcher(views, control=control, description="pick:")
    ctrl = find(box, cls, "pyxis-view-control")
    stack = find(box, widgets.Stack, "pyxis-view-stack")
    assert isinstance(box, widgets.VBox)
    assert list(ctrl.options) == ["first", "second", "third"] and ctrl.description == "pick:"
    assert ctrl.index == 0 and stack.selected_index == 0
    assert len(links(ctrl, stack)) == 1
    assert len(stack.children) == 3
    assert [attribute(c.value, "view") for c in stack.children[:2]] == ["first", "second"]
    assert all(PNG_MAGIC not in c.value.encode() and "base64," in c.value for c in stack.children[:2])
    assert stack.children[2].value == "<p class='mine'>three</p>"
    assert repr(box) == f"view_switcher({control}: ['first', 'second', 'third'])"
    assert not plt.get_fignums()  # the figure was rendered and closed


def test_view_switcher_keeps_widgets():
    label = widgets.Label("hello")
    box = px.view_switcher({"only": label})
    assert find(box, widgets.Stack).children[0] is label


@pytest.mark.parametrize("views, kwargs, match", [
    ({}, {}, r"views is empty"),
    ({"a": "<p>a</p>"}, {"control": "radio"}, r"control must be one of .*'radio'"),
    ({"a": 42}, {}, r"view 'a' needs .*Figure, PNG bytes, an HTML string or a widget: got int"),
    ({"a": "<p>a</p>"}, {"alt": "one"}, r"alt needs a mapping or a sequence .* got a str"),
    ({"a": "<p>a</p>", "b": "<p>b</p>"}, {"alt": ["one"]}, r"alt needs one sentence per view \['a', 'b'\]: got 1"),
    ({"a": "<p>a</p>"}, {"alt": {"a": "x", "z": "y"}}, r"alt .*unknown views \['z'\]"),
])
def test_view_switcher_bad_input(views, kwargs, match):
    with pytest.raises(ValueError, match=match):
        px.view_switcher(views, **kwargs)


def test_view_switcher_alt_text_per_view():
    """alt= wins; otherwise a pyxis_nb figure's own sentence; else the label."""
    rows = np.array([[1.0, 0.0], [0.5, 0.5]])
    described = px.plot_attention(rows, ["a", "b"], title="x").figure
    box = px.view_switcher({"given": small_figure("1"), "own": described,
                            "bare": small_figure("2")},
                           alt={"given": "A sentence given by the chapter."})
    alts = [html.unescape(re.search(r'alt="([^"]*)"', c.value).group(1))
            for c in find(box, widgets.Stack).children]
    assert alts[0] == "A sentence given by the chapter."
    assert alts[1].startswith("Heatmap of attention weights: x: rows are")
    assert alts[2] == "bare"
    # the heatmap's numbers, for the website check: a map in its own figure
    # writes them at >= 10 pt, 13.9 px at 100 dpi
    assert attribute(find(box, widgets.Stack).children[1].value,
                     "annotation-px") == "13.9"


def test_figure_png_stores_the_figure_description():
    fig = px.plot_attention_grid(np.full((2, 3, 3), 1 / 3), list("abc"),
                                 titles=["p", r"$1/\sqrt{d}$"])
    text = px.widgets.png_description(px.widgets.figure_png(fig))
    assert text.startswith("2 heatmaps of attention weights, p, 1/sqrt(d):")
    assert text.endswith("the largest weight in each is 0.33, 0.33.")
    assert px.widgets.png_description(px.widgets.figure_png(small_figure("1"))) is None
    assert px.widgets.png_description(b"not a png") is None


def test_view_grid_alt_text():
    grid = px.view_grid({"x": {"1": b"\x89PNG one", "2": b"\x89PNG two"}},
                        alt={"x": {"2": "The second picture, described."}})
    inner = find(grid, widgets.Stack, "pyxis-view-stack").children[0]
    alts = [re.search(r'alt="([^"]*)"', c.value).group(1) for c in inner.children]
    assert alts == ["x / 1", "The second picture, described."]
    with pytest.raises(ValueError, match=r"alt\['x'\] needs one sentence per view \['1', '2'\]: got 3"):
        px.view_grid({"x": {"1": b"a", "2": b"b"}}, alt={"x": ["p", "q", "r"]})


# ---------------------------------------------------------------- attention_explorer

@pytest.fixture(scope="module")
def explorer():
    """Built once: rendering the heatmaps is the slow part of this file."""
    ex = px.attention_explorer(TOKENS, {"causal mask": W_CAUSAL, "no mask": W_FULL},
                               title="toy")
    assert not plt.get_fignums()  # every heatmap was rendered and closed
    return ex


def test_explorer_layout_and_repr(explorer):
    toggle, query, _, _ = explorer_parts(explorer)
    assert isinstance(explorer, px.widgets.AttentionExplorer) and isinstance(explorer, widgets.VBox)
    assert list(toggle.options) == ["causal mask", "no mask"]
    assert [label for label, _ in query.options] == ["0: The", "1: cat", "2: sat"]
    assert query.index == 2  # the last token by default
    assert repr(explorer) == "AttentionExplorer(tokens=['The', 'cat', 'sat'], views=['causal mask', 'no mask'])"


def test_explorer_sentence_under_the_heatmap(explorer):
    """The sentence comes after the heatmap, as in the model view: when it
    wraps to another number of lines the picture above stays put (issue
    #41, item 8: it moved 28 px on a phone)."""
    toggle, query, text_stack, heat_stack = explorer_parts(explorer)
    assert list(explorer.children)[:4] == [toggle, query, heat_stack, text_stack]


def _outline_frames(pane):
    """A view's picture (HTML) and its frames' rows: [(query, {left, top,
    width, height} in %)], the CSS rule each frame puts on the outline."""
    picture, frames = pane.children
    rows = []
    for frame in frames.children:
        rule = re.search(r"\{display:block;([^}]*)\}", frame.value).group(1)
        box = {k: float(v) for k, v in re.findall(r"(\w+):([\d.]+)%", rule)}
        rows.append((json.loads(attribute(frame.value, "query")), box))
    return picture, frames, rows


def test_explorer_one_picture_per_view_and_an_outline_per_query(explorer):
    """A view stores its heatmap once; each query's frame is a CSS rule that
    outlines that query's row over it (a frame a query was a whole picture:
    the explorers took 0.97 MB of the book's 2.7 MB of views)."""
    heat_stack = explorer_parts(explorer)[3]
    assert len(heat_stack.children) == 2
    classes = set()
    for pane, name, w in zip(heat_stack.children, ["causal mask", "no mask"],
                             [W_CAUSAL, W_FULL]):
        picture, frames, rows = _outline_frames(pane)
        assert isinstance(picture, widgets.HTML) and isinstance(frames, widgets.Stack)
        assert frames.layout.display == "none"  # rules only, nothing drawn
        assert frames.selected_index == 2 and len(frames.children) == len(TOKENS)
        assert attribute(picture.value, "view") == name
        assert json.loads(attribute(picture.value, "weights")) == np.round(w, 4).tolist()
        assert picture.value.count("data:image/png;base64,") == 1
        alt = re.search(r'alt="([^"]*)"', picture.value).group(1)
        assert name in alt and "the row of the chosen query is outlined" in alt
        outline = re.search(r'class="pyxis-row (pyxis-row-\d+)"', picture.value).group(1)
        classes.add(outline)
        assert all(f".pyxis-row.{outline}{{" in f.value for f in frames.children)
        assert [q for q, _ in rows] == list(range(len(TOKENS)))
        tops = [box["top"] for _, box in rows]
        assert tops == sorted(tops) and len(set(tops)) == len(tops)  # row 0 first
        for _, box in rows:  # the rows: one height, all the keys' width
            assert box["height"] == pytest.approx(rows[0][1]["height"], abs=0.01)
            assert (box["left"], box["width"]) == (rows[0][1]["left"], rows[0][1]["width"])
            assert box["top"] >= 0 and box["top"] + box["height"] <= 100
    assert len(classes) == 2, "each view outlines its own picture"


#: the outline's red in 0-255 levels (232, 23, 58)
OUTLINE_RGB = np.round(255 * np.array(
    matplotlib.colors.to_rgb(px.plotting.OUTLINE_COLOUR)))


@pytest.mark.slow
@pytest.mark.parametrize("tokens", [TOKENS, "The cat sat on the mat".split()],
                         ids=["3 tokens", "6 tokens"])
def test_explorer_outline_sits_where_matplotlib_draws_the_row(tokens):
    """Each frame's outline, in % of the picture, is the box of the red
    rectangle that matplotlib draws around that row (within 2 px of the
    line's middle). (With 3 tokens the labels stick out of the figure:
    savefig's path.)"""
    T = len(tokens)
    w = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    ex = px.attention_explorer(tokens, {"causal": w}, title="toy")
    picture, _, rows = _outline_frames(explorer_parts(ex)[3].children[0])
    png = base64.b64decode(re.search(r"base64,([^\"]*)", picture.value).group(1))
    for i, box in rows:
        ax = px.plot_attention(w, tokens, title="toy: causal")
        px.widgets._outline_row(ax, i, T)  # as the fallback picture's
        drawn = _pixels(px.widgets.figure_png(ax.figure))
        assert drawn.shape == _pixels(png).shape
        h, wd = drawn.shape[:2]
        red = np.argwhere((np.abs(drawn - OUTLINE_RGB) < 40).all(-1))
        (y0, x0), (y1, x1) = red.min(0), red.max(0)  # the line's outer edge
        line = px.widgets.OUTLINE_PT * px.widgets.VIEW_DPI / 72  # in px
        assert box["left"] * wd / 100 == pytest.approx(x0 + line / 2, abs=2)
        assert box["top"] * h / 100 == pytest.approx(y0 + line / 2, abs=2)
        assert (box["left"] + box["width"]) * wd / 100 == pytest.approx(x1 - line / 2, abs=2)
        assert (box["top"] + box["height"]) * h / 100 == pytest.approx(y1 - line / 2, abs=2)


def test_explorer_fallback_picture_outlines_the_first_query(explorer):
    """Viewers without widgets (GitHub, nbconvert) get the first view with
    the chosen query's row drawn on, and an alt text that names it."""
    data, meta = explorer._repr_mimebundle_()
    png, alt = explorer.fallback
    assert data["image/png"] == base64.b64encode(png).decode()
    assert meta["image/png"]["alt"] == alt
    assert "causal mask" in alt and "the row of 'sat' is outlined" in alt
    red = (np.abs(_pixels(png) - OUTLINE_RGB) < 40).all(-1)
    assert red.sum() > 100


def test_explorer_sentences_per_view_and_query(explorer):
    text_stack = explorer_parts(explorer)[2]
    assert len(text_stack.children) == 2
    for inner, w in zip(text_stack.children, [W_CAUSAL, W_FULL]):
        assert isinstance(inner, widgets.Stack) and inner.selected_index == 2
        assert len(inner.children) == 3
        for i, line in enumerate(inner.children):
            expected = html.escape(px.describe_attention(w[i], TOKENS, i))
            assert line.value == f"<p class='pyxis-describe'>{expected}</p>"
    assert "71 % to itself and 26 % to &#x27;cat&#x27;" in text_stack.children[0].children[2].value


def test_explorer_jslinks(explorer):
    toggle, query, text_stack, heat_stack = explorer_parts(explorer)
    assert len(links(toggle, heat_stack)) == 1
    assert len(links(toggle, text_stack)) == 1
    frames = [pane.children[1] for pane in heat_stack.children]
    for inner in text_stack.children + tuple(frames):
        assert len(links(query, inner)) == 1


def test_explorer_query_index_and_key_tokens():
    w = np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]])
    ex = px.attention_explorer(TOKENS, {"w": w}, key_tokens=["k0", "k1"], query_index=0)
    _, query, text_stack, _ = explorer_parts(ex)
    sentences = text_stack.children[0]  # the one view's stack, a row a query
    assert query.index == 0 and sentences.selected_index == 0
    assert "80 % to &#x27;k1&#x27;" in sentences.children[0].value
    neg = px.attention_explorer(["a"], {"w": np.array([[1.0]])}, query_index=-1)
    _, query, text_stack, _ = explorer_parts(neg)
    assert query.index == 0 and text_stack.children[0].selected_index == 0


@pytest.mark.parametrize("tokens, views, kwargs, match", [
    (TOKENS, {}, {}, r"views is empty"),
    (TOKENS, {"a": np.ones((2, 3)) / 3}, {}, r"views\['a'\] has shape \(2, 3\), expected \(T, S\) = \(3, 3\)"),
    (TOKENS, {"a": W_FULL}, {"key_tokens": ["x", "y"]},
     r"views\['a'\] has shape \(3, 3\), expected \(T, S\) = \(3, 2\)"),
    (TOKENS, {"a": np.eye(3, dtype=int)}, {}, r"views\['a'\] must be a floating-point array"),
    (TOKENS, {"a": W_FULL}, {"query_index": 3}, r"query_index .*-3 <= query_index <= 2, got 3"),
    ([], {"a": np.zeros((0, 0))}, {}, r"tokens is empty"),
])
def test_explorer_bad_input(tokens, views, kwargs, match):
    with pytest.raises(ValueError, match=match):
        px.attention_explorer(tokens, views, **kwargs)


def test_explorer_masks_hatch_only_their_view():
    ex = px.attention_explorer(TOKENS, {"causal mask": W_CAUSAL, "no mask": W_FULL},
                               masks={"causal mask": px.causal_mask(3)})
    assert isinstance(ex, px.widgets.AttentionExplorer)
    with pytest.raises(ValueError, match=r"masks has unknown keys \['window'\]"):
        px.attention_explorer(TOKENS, {"no mask": W_FULL}, masks={"window": px.causal_mask(3)})


def test_view_grid_links_both_controls():
    views = {m: {f"head {h}": small_figure(f"{m}{h}") for h in range(3)} for m in ("causal", "none")}
    grid = px.view_grid(views, controls=("toggle", "dropdown"))
    first = find(grid, widgets.ToggleButtons, "pyxis-view-control")
    second = find(grid, widgets.Dropdown, "pyxis-inner-control")
    outer = find(grid, widgets.Stack, "pyxis-view-stack")
    assert first.options == ("causal", "none")
    assert second.options == ("head 0", "head 1", "head 2")
    assert len(links(first, outer)) == 1
    assert len(outer.children) == 2
    for inner in outer.children:
        assert len(inner.children) == 3
        assert len(links(second, inner)) == 1
    assert repr(grid) == ("view_grid(toggle: ['causal', 'none'], "
                          "dropdown: ['head 0', 'head 1', 'head 2'])")


@pytest.mark.parametrize("views, kwargs, match", [
    ({}, {}, "views is empty"),
    ({"a": {"x": b"p"}, "b": {"y": b"p"}}, {}, r"views\['b'\] needs the same .*got inner views \['y'\]"),
    ({"a": {}}, {}, "non-empty"),
    ({"a": {"x": b"p"}}, {"controls": ("toggle", "knob")}, r"controls must be one of .*got 'knob'"),
])
def test_view_grid_bad_input(views, kwargs, match):
    with pytest.raises(ValueError, match=match):
        px.view_grid(views, **kwargs)


@pytest.mark.parametrize("control, cls", [
    ("toggle", widgets.ToggleButtons), ("dropdown", widgets.Dropdown),
    ("slider", widgets.SelectionSlider),
])
def test_control_labels_are_not_clipped(control, cls):
    """A label such as "tile:" keeps its natural width, sliders included."""
    box = px.view_switcher({"a": "<p>a</p>", "b": "<p>b</p>"},
                           control=control, description="query position:")
    assert find(box, cls).style.description_width == "initial"
    grid = px.view_grid({"x": {"a": "<p>a</p>"}}, controls=("slider", control),
                        descriptions=("tile:", "head:"))
    for ctrl in (find(grid, widgets.SelectionSlider, "pyxis-view-control"),
                 find(grid, cls, "pyxis-inner-control")):
        assert ctrl.style.description_width == "initial"


@pytest.mark.slow
def test_tile_step_frames_are_fresh_figures_frames():
    """tile_step_frames draws every step on one figure; each frame is the
    PNG of plot_tile_step drawn for that step alone, alt text included."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((8, 4)) for _ in range(3))
    tokens = ["The", "cat", "sat", "on", "the", "mat", "and", "slept"]
    _, stats = px.tiled_attention(q, k, v, is_causal=True, block_q=2,
                                  block_k=2, return_stats=True)
    frames = px.widgets.tile_step_frames(stats, tokens)
    assert list(frames) == [f"step {i + 1}" for i in range(len(stats.steps))]
    assert len(set(frames.values())) == len(frames)  # every step differs
    for i in (0, 3, 4, 15):  # first, skipped, computed after a skip, last
        png = frames[f"step {i + 1}"]
        assert png == px.widgets.figure_png(px.plotting.plot_tile_step(stats, i, tokens)), i
    assert px.widgets.png_description(frames["step 6"]).startswith(
        "Tile step 6 of 16: tile (1, 1) is computed")
    for i, step in enumerate(stats.steps):  # each step says what it did
        done = "computed" if step.computed else "skipped"
        said = px.widgets.png_description(frames[f"step {i + 1}"])
        assert said.startswith(f"Tile step {i + 1} of 16: tile "
                               f"({step.q_block}, {step.k_block}) is {done};")


@pytest.mark.slow
def test_rope_rotation_frames_are_fresh_figures_frames():
    """rope_rotation_frames draws every (n, m) on one figure; each frame is
    the picture of plot_rope_rotation(m, n) drawn alone, alt text included.
    A later frame keeps the first frame's layout, where the figure drawn
    alone lays itself out around its own titles: its arrows may land a
    fraction of a pixel apart (39 of 226,000 pixels), so the pictures are
    compared pixel by pixel, not byte by byte."""
    frames = px.widgets.rope_rotation_frames((0, 3), (1, 5))
    assert list(frames) == ["n = 0", "n = 3"]
    for n in (0, 3):
        assert list(frames[f"n = {n}"]) == ["m = 1", "m = 5"]
    for n, m in ((0, 1), (3, 5)):  # the first frame and a later one
        frame, alone = (_pixels(png) for png in (
            frames[f"n = {n}"][f"m = {m}"],
            px.widgets.figure_png(px.plotting.plot_rope_rotation(m, n))))
        assert frame.shape == alone.shape, (n, m)
        differ = np.abs(frame - alone).max(axis=-1) > 64
        assert differ.mean() < 0.001, (n, m, int(differ.sum()))
    assert "m - n = 2" in px.widgets.png_description(frames["n = 3"]["m = 5"])


# ---------------------------------------------------------------- head scores
def test_plot_head_scores_outlines_the_named_heads():
    """Each score a layers x heads heatmap with its values, the heads the
    text names outlined, and a sentence of alt text (issue #30, item 8)."""
    scores = {"previous token": np.linspace(0, 1, 8).reshape(2, 4),
              "copying": -np.linspace(-1, 1, 8).reshape(2, 4)}
    fig = px.plotting.plot_head_scores(scores, outline={"previous token": [(1, 2)]})
    shown = [ax for ax in fig.axes if ax.get_visible() and ax.images]  # not the bar
    assert [ax.get_title() for ax in shown] == list(scores)
    assert [len(ax.texts) for ax in shown] == [8, 8]
    boxes = [p for p in shown[0].patches if isinstance(p, Rectangle)]
    assert [(b.get_x(), b.get_y()) for b in boxes] == [(1.5, 0.5)]
    assert "previous token: L1 H2" in fig.pyxis_alt
    plt.close(fig)
    with pytest.raises(ValueError, match="outline"):
        px.plotting.plot_head_scores(scores, outline={"previous token": [(2, 0)]})
    with pytest.raises(ValueError, match="outline"):
        px.plotting.plot_head_scores(scores, outline={"induction": [(0, 0)]})
