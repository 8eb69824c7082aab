"""Tests of px.model_view: every head a thumbnail, each opening a heatmap
explorer; head and mask linked client-side (jslink), the query row by CSS."""

import base64
import io
import json
import re

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from ipywidgets.widgets.widget import _instances  # noqa: E402
from ipywidgets.widgets.widget_link import Link  # noqa: E402

import pyxis_nb as px  # noqa: E402

TOKENS = ["Fair", "is", "foul", ","]
L, H, T = 2, 3, len(TOKENS)
RNG = np.random.default_rng(0)
OPEN = px.softmax(RNG.standard_normal((L, H, T, T)))
CAUSAL = px.softmax(np.where(np.tril(np.ones((T, T), bool)),
                             np.log(OPEN), -np.inf))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def view():
    return px.model_view(TOKENS, CAUSAL, open_weights=OPEN, title="a line")


def _parts(view):
    top, grid, toggle, query, shown = view.children[:5]  # then keep-keys
    return top, grid, toggle, query, shown


def _linked(source, target):
    return any(isinstance(w, Link) and w.source == (source, "index")
               and w.target == (target, "selected_index")
               for w in list(_instances.values()))


def test_structure_and_links(view):
    top, grid, toggle, query, shown = _parts(view)
    assert grid.options == tuple(f"L{i} H{h}" for i in range(L)
                                 for h in range(H))
    assert toggle.options == ("causal mask", "no mask")
    assert [label for label, _ in query.options] == [
        f"{i}: {t}" for i, t in enumerate(TOKENS)]
    assert query.index == T - 1
    assert _linked(toggle, shown)
    for stack in shown.children:               # one stack per view
        assert _linked(grid, stack) and len(stack.children) == L * H
    assert "pyxis-view-control" in toggle._dom_classes
    assert "pyxis-view-stack" in shown._dom_classes
    assert repr(view).startswith("ModelView(tokens=['Fair'")


def _frame(view, v, k):
    html = _parts(view)[4].children[v].children[k].value
    found = re.search(r'data-weights="([^"]+)"', html)
    return html, np.array(json.loads(found.group(1).replace("&quot;", '"')))


def test_frames_carry_the_heads_weights(view):
    for v, maps in enumerate((CAUSAL, OPEN)):
        for k in (0, L * H - 1):
            html, w = _frame(view, v, k)
            i, h = divmod(k, H)
            np.testing.assert_allclose(w, np.round(maps[i, h], 4))
            assert f'data-head="L{i} H{h}"' in html
            name = ("causal mask", "no mask")[v]
            assert f'data-view="{name} / L{i} H{h}"' in html
            # one row per token, a sentence per query row
            assert html.count("<tr class=\"r") == T
            for q, token in enumerate(TOKENS):
                assert (f"class=\"pyxis-describe s{q}\">'{token}' ({q}) "
                        "attends") in html.replace("&#x27;", "'")
    causal_html, _ = _frame(view, 0, 0)
    open_html, _ = _frame(view, 1, 0)
    assert causal_html.count('class=m>') == T * (T - 1) // 2  # hatched
    assert 'class=m>' not in open_html
    # a screen reader hears "masked", not a blank cell (issue #30, item 15)
    assert causal_html.count(
        '<td class=m><span class="pyxis-sr">masked</span></td>') == \
        T * (T - 1) // 2


def test_sentences_name_positions():
    """A line that says a word twice: each token with its position."""
    row = np.array([0.1, 0.2, 0.7])
    said = px.describe_attention(row, ["is", "foul", "is"], 2, positions=True)
    assert said == "'is' (2) attends 70 % to itself, 20 % to 'foul' (1) " \
        "and 10 % to 'is' (0)"
    with pytest.raises(TypeError, match="positions must be True or False"):
        px.describe_attention(row, ["a", "b", "c"], 0, positions=1)


def _contrast(a: str, b: str) -> float:
    from pyxis_nb.widgets import _luminance

    x, y = sorted([_luminance(a), _luminance(b)], reverse=True)
    return (x + 0.05) / (y + 0.05)


def test_cell_numbers_contrast_with_their_colour(view):
    """Every level's number reads at >= 4.5:1 (WCAG AA): dark text on
    viridis' light half, white on its dark half."""
    css = _parts(view)[0].value
    levels = re.findall(r"\.pyxis-mv \.c(\d)\{background:(#\w{6});"
                        r"color:(#\w{3,6})\}", css)
    assert len(levels) == 10
    for _, back, text in levels:
        text = "#" + "".join(c * 2 for c in text[1:]) if len(text) == 4 else text
        assert _contrast(back, text) >= 4.5, (back, text)


def test_css_follows_the_query_and_draws_thumbnails(view):
    css = _parts(view)[0].value
    for q in range(T):
        assert f"option:nth-child({q + 1}):checked) tr.r{q}>*" in css
        assert f"option:nth-child({q + 1}):checked) p.s{q}" in css
    thumbs = re.findall(r'button\[value="(\d+)"\]\{background-image:url\('
                        r"data:image/png;base64,([^)]+)\)", css)
    assert [int(k) for k, _ in thumbs] == list(range(L * H))
    assert all(base64.b64decode(b).startswith(PNG_MAGIC) for _, b in thumbs)


def test_fallback_picture(view):
    """Outside the site the view is one picture of its default state (the
    labelled grid and the first head opened, with its numbers), with alt
    text in the output's metadata, which nbconvert writes as the img alt."""
    from PIL import Image

    bundle, metadata = view._repr_mimebundle_()
    png = base64.b64decode(bundle["image/png"])
    assert png.startswith(PNG_MAGIC)
    assert "application/vnd.jupyter.widget-view+json" in bundle
    alt = metadata["image/png"]["alt"]
    assert alt.startswith("The model view as it opens") and "L0 H0" in alt
    width, height = Image.open(io.BytesIO(png)).size
    assert width >= 400 and height >= 150, (width, height)


def test_without_open_weights_one_view():
    v = px.model_view(TOKENS, CAUSAL, query_index=0)
    top, grid, query, shown = v.children[:4]  # no toggle: one view
    assert query.index == 0 and len(shown.children) == 1
    assert isinstance(v, widgets.VBox)


@pytest.mark.parametrize("kwargs, match", [
    (dict(weights=CAUSAL[:, :, :3, :3]),
     r"weights has shape \(2, 3, 3, 3\).*T = len\(tokens\) = 4"),
    (dict(weights=CAUSAL[0]), r"weights must have 4 dimensions"),
    (dict(open_weights=OPEN[:1]),
     r"open_weights has shape \(1, 3, 4, 4\).*\(2, 3, 4, 4\)"),
    (dict(query_index=4), r"query_index .*-4 <= query_index <= 3, got 4"),
])
def test_model_view_refuses(kwargs, match):
    kwargs = {"tokens": TOKENS, "weights": CAUSAL, **kwargs}
    with pytest.raises(ValueError, match=match):
        px.model_view(**kwargs)


def test_a_selection_of_layers_is_labelled_and_opens_on_the_named_head():
    """weights holding layers 17 and 23 of a model: the grid, the tooltips,
    the text and the stored picture's alt name those layers, and the view
    opens on open_head in the grid and in both stacks."""
    view = px.model_view(TOKENS, CAUSAL, open_weights=OPEN,
                         layers=[17, 23], open_head=(23, 1))
    top, grid, toggle, query, shown = _parts(view)
    assert grid.options == tuple(f"L{i} H{h}" for i in (17, 23)
                                 for h in range(H))
    assert grid.tooltips[H] == "layer 23, head 0"
    opened = H + 1  # row 1 (layer 23), head 1
    assert grid.index == opened
    assert [stack.selected_index for stack in shown.children] == [opened] * 2
    assert "rows: layers 17 and 23" in top.value
    assert "head L23 H1 opened" in view._alt


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(layers=[17]), r"layers must be 2 distinct layer numbers"),
    (dict(layers=[3, 3]), r"layers must be 2 distinct"),
    (dict(layers=[-1, 2]), r"layers\[0\]"),
    (dict(layers=[17, 18], open_head=(0, 0)),
     r"open_head must be \(layer, head\) with the layer in \[17, 18\], "
     r"got \(0, 0\)"),
    (dict(open_head=(1, H)), r"open_head\[1\]"),
])
def test_layers_and_open_head_refuse_what_does_not_fit(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        px.model_view(TOKENS, CAUSAL, **kwargs)


def test_one_view_has_no_toggle_and_labels_drop_the_bpe_space():
    """Without open_weights there is one view: no one-option toggle (a Tab
    stop that switches nothing); a BPE token's leading space is not shown."""
    v = px.model_view([" The", " cat", " "], CAUSAL[:, :, :3, :3])
    toggles = [c for c in v.children
               if isinstance(c, widgets.ToggleButtons)
               and "pyxis-view-control" in c._dom_classes]
    assert toggles == []
    query = [c for c in v.children if isinstance(c, widgets.Dropdown)][0]
    assert [label for label, _ in query.options] == ["0: The", "1: cat",
                                                     "2: \u2423"]
    alt = v._repr_mimebundle_()[1]["image/png"]["alt"]
    assert "(' The')" not in alt and "('\u2423')" in alt
    both = px.model_view(TOKENS, CAUSAL, open_weights=OPEN)
    assert sum("pyxis-view-control" in c._dom_classes
               for c in both.children) == 1
