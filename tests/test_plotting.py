"""Tests of pyxis_nb.plotting: labelled heatmaps with colour bars (Agg backend)."""

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.text  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import pyxis_nb as px  # noqa: E402
from pyxis_nb import plotting  # noqa: E402
from pyxis_nb.paged import BlockPool  # noqa: E402

TOKENS = ["The", "cat", "sat"]
W = np.array([[1.0, 0.0, 0.0], [0.4, 0.6, 0.0], [0.03, 0.26, 0.71]])


pytestmark = pytest.mark.usefixtures("close_figures")


def ticks(labels):
    return [t.get_text() for t in labels]


def luminance(colour) -> float:
    """Relative luminance (0 black, 1 white) of a matplotlib colour."""
    r, g, b = matplotlib.colors.to_rgb(colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_token_labels_on_both_axes():
    ax = px.plot_attention(W, TOKENS, title="causal")
    assert ticks(ax.get_xticklabels()) == TOKENS
    assert ticks(ax.get_yticklabels()) == TOKENS
    assert ax.get_title() == "causal"
    assert "query" in ax.get_ylabel() and "key" in ax.get_xlabel()


def test_colour_bar_exists_and_scale_is_0_to_1():
    ax = px.plot_attention(W, TOKENS)
    image = ax.images[0]
    assert image.colorbar is not None
    assert image.colorbar.ax.get_ylim() == (0.0, 1.0)  # the bar reads 0 .. 1
    assert image.get_clim() == (0.0, 1.0)
    assert np.array_equal(image.get_array(), W)  # the weights are drawn


def test_no_colour_bar_on_request():
    ax = px.plot_attention(W, TOKENS, colorbar=False)
    assert ax.images[0].colorbar is None


def test_cell_texts_are_the_rounded_weights():
    ax = px.plot_attention(W, TOKENS)
    assert [t.get_text() for t in ax.texts] == [f"{x:.2f}" for x in W.ravel()]
    assert [t.get_text() for t in ax.texts][6:] == ["0.03", "0.26", "0.71"]
    # each text sits in its cell: x = key column, y = query row
    assert [t.get_position() for t in ax.texts[:3]] == [(0, 0), (1, 0), (2, 0)]
    # every number is readable: its colour contrasts with its cell's
    image = ax.images[0]
    for text in ax.texts:
        col, row = text.get_position()
        cell = image.cmap(image.norm(W[row, col]))
        assert abs(luminance(cell) - luminance(text.get_color())) > 0.4, text


def test_no_cell_texts_without_annotate():
    assert len(px.plot_attention(W, TOKENS, annotate=False).texts) == 0


def test_default_labels_are_positions():
    ax = px.plot_attention(W)
    assert ticks(ax.get_xticklabels()) == ["0", "1", "2"]
    assert ticks(ax.get_yticklabels()) == ["0", "1", "2"]


def test_key_tokens_when_L_differs_from_S():
    w = np.full((2, 4), 0.25)
    ax = px.plot_attention(w, ["c", "d"], key_tokens=["a", "b", "c", "d"])
    assert ticks(ax.get_yticklabels()) == ["c", "d"]
    assert ticks(ax.get_xticklabels()) == ["a", "b", "c", "d"]


def test_draws_into_a_given_axes():
    fig, axes = plt.subplots(1, 2)
    ax = px.plot_attention(W, TOKENS, ax=axes[1], colorbar=False)
    assert ax is axes[1] and len(axes[0].images) == 0


@pytest.mark.slow
def test_grid_one_panel_per_head_with_shared_colour_bar():
    w = np.stack([W, W.T, np.full((3, 3), 1 / 3), np.eye(3), W, W])  # 6 heads
    fig = px.plot_attention_grid(w, TOKENS, ncols=4, suptitle="six heads")
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == [f"head {h}" for h in range(6)]
    assert all(ticks(ax.get_xticklabels()) == TOKENS for ax in panels)
    # row labels on the first column only
    assert ticks(panels[0].get_yticklabels()) == TOKENS
    assert ticks(panels[4].get_yticklabels()) == TOKENS
    assert ticks(panels[1].get_yticklabels()) == [""] * 3 and panels[1].get_ylabel() == ""
    assert "query" in panels[4].get_ylabel()
    # x labels only where no panel sits below: row 0 keeps it in columns 2, 3
    assert [bool(ax.get_xlabel()) for ax in panels] == [False, False, True, True, True, True]
    colourbars = [ax.images[0].colorbar for ax in panels if ax.images[0].colorbar is not None]
    assert len(colourbars) == 1
    # what is drawn: six heatmaps and the colour bar; the two spare cells blank
    drawn = [ax for ax in fig.axes if ax.axison]
    assert len(drawn) == len(panels) + 1 == 7
    assert fig.get_suptitle() == "six heads"
    assert all(len(ax.texts) == 0 for ax in panels)  # no annotation by default


@pytest.mark.slow
def test_grid_custom_titles_and_annotation():
    fig = px.plot_attention_grid(np.stack([W, W]), TOKENS, titles=["a", "b"], annotate=True)
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == ["a", "b"]
    assert [t.get_text() for t in panels[1].texts] == [f"{x:.2f}" for x in W.ravel()]


@pytest.mark.parametrize("H, H_kv, variant", [(16, 16, "MHA"), (16, 8, "GQA"), (16, 1, "MQA")])
def test_gqa_mapping_joins_each_query_head_to_its_kv_head(H, H_kv, variant):
    ax = px.plotting.plot_gqa_mapping(H, H_kv)
    assert ax.get_title().startswith(f"{variant}: {H} query heads, {H_kv} K/V head")
    lines = ax.get_lines()
    assert len(lines) == H  # one line per query head
    n_rep = H // H_kv
    for h, line in enumerate(lines):
        x, y = line.get_data()
        g = px.multihead.kv_head_for(h, H, H_kv)
        # from the query head (h, 1) down to the centre of its group's K/V head
        assert (x[0], y[0]) == (h, 1) and y[1] == 0
        assert x[1] == g * n_rep + (n_rep - 1) / 2
    # lines of one group share a colour, different groups differ
    colours = [tuple(line.get_color()) for line in lines]
    assert len(set(colours)) == H_kv  # distinct, also beyond 10 groups
    kv_markers = ax.collections[-1].get_offsets()
    assert len(kv_markers) == H_kv


def test_gqa_mapping_qwen3_hand_values():
    ax = px.plotting.plot_gqa_mapping(16, 8)
    ends = [line.get_data()[0][1] for line in ax.get_lines()]
    assert ends[:4] == [0.5, 0.5, 2.5, 2.5] and ends[-1] == 14.5
    assert [t.get_text() for t in ax.texts] == [str(g) for g in range(8)]


def test_gqa_mapping_draws_into_given_axes():
    fig, axes = plt.subplots(2, 1)
    assert px.plotting.plot_gqa_mapping(4, 2, ax=axes[1]) is axes[1]
    assert not axes[0].get_lines()


def test_gqa_mapping_mha_colours_are_all_distinct():
    ax = px.plotting.plot_gqa_mapping(16, 16)
    colours = {tuple(np.round(line.get_color(), 4)) for line in ax.get_lines()}
    assert len(colours) == 16  # tab10 alone would repeat: heads 0 and 10


def test_decode_step_outlines_the_new_row():
    words = list("abcdef")
    rows = np.full((6, 6), np.nan)
    rows[:4, :4] = np.tril(np.full((4, 4), 0.25))
    per_head = np.full((2, 5), 0.2)
    rows[4, :5] = per_head.mean(axis=0)
    fig = px.plotting.plot_decode_step(rows, per_head, words, 4)
    top, bottom = fig.axes[0], fig.axes[1]
    assert top.get_title() == "cache holds 5 of 6 positions"
    outline = [p for p in top.patches if p.get_edgecolor()[:3] == (1, 0, 0)]
    assert outline[0].get_xy() == (-0.5, 3.5) and outline[0].get_width() == 5
    assert [t.get_text() for t in bottom.get_yticklabels()] == ["head 0",
                                                                 "head 1"]


@pytest.mark.slow
def test_tile_step_shows_tiles_and_state():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((8, 4)) for _ in range(3))
    tokens = ["The", "cat", "sat", "on", "the", "mat", "and", "slept"]
    _, stats = px.tiled_attention(q, k, v, is_causal=True, block_q=2,
                                  block_k=2, return_stats=True)
    # first, skipped, computed after a skip, last; every step's own words
    # (computed or skipped) are test_widgets.py's, in the frames' alt texts
    for i in (0, 3, 4, 15):
        step = stats.steps[i]
        fig = px.plotting.plot_tile_step(stats, i, tokens)
        ax, bx = fig.axes[:2]
        done = "computed" if step.computed else "skipped"
        assert ax.get_title().endswith(done)
        assert ticks(ax.get_yticklabels())[0] == "The,cat"
        texts = ax.get_xticklabels() + bx.get_xticklabels() + [ax.title]
        assert min(t.get_fontsize() for t in texts) >= 10
        plt.close(fig)


@pytest.mark.slow
def test_stepper_figures_fit_the_website_column():
    """Drawn no wider than the column at 100 dpi (shown at their own size,
    text at its point size), the same size at every step, and described."""
    words = list("abcdefghijkl")
    rows = np.full((12, 12), np.nan)
    sizes = set()
    for t in (4, 11):
        rows[t, :t + 1] = 1 / (t + 1)
        fig = px.plotting.plot_decode_step(rows, np.full((4, t + 1), 1 / (t + 1)), words, t)
        sizes.add(tuple(fig.get_size_inches()))
        assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
        assert f"position {t}" in fig.pyxis_alt
        # every step writes each head's weights in its cells, and at twelve
        # keys the numbers still stand apart (".08", not "0.08")
        assert len(fig.axes[1].texts) == 4 * (t + 1)
        fig.canvas.draw()
        boxes = [x.get_window_extent() for x in fig.axes[1].texts]
        assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
        plt.close(fig)
    assert len(sizes) == 1
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((8, 4)) for _ in range(3))
    _, stats = px.tiled_attention(q, k, v, is_causal=True, block_q=2,
                                  block_k=2, return_stats=True)
    fig = px.plotting.plot_tile_step(stats, 5, list("abcdefgh"))
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    assert fig.pyxis_alt.startswith("Tile step 6 of 16: tile (1, 1) is computed")
    plt.close(fig)
    wide = px.plot_attention_grid(np.full((2, 6, 6), 1 / 6), titles=["a", "b"],
                                  annotate=True)
    assert wide.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    plt.close(wide)


@pytest.mark.slow
def test_rope_rotation_scores_depend_on_m_minus_n():
    a = px.plotting.plot_rope_rotation(5, 3)
    b = px.plotting.plot_rope_rotation(7, 5)
    titles = [[ax.get_title() for ax in f.axes] for f in (a, b)]
    assert titles[0] == titles[1]
    assert "pair score = " in titles[0][0]
    inv_freq = px.rope_frequencies(128)
    assert f"{np.cos(2 * inv_freq[8]):+.3f}" in titles[0][1]


# --- inference chapters


def test_kv_cache_memory_lines_follow_the_heads():
    kv = {"MHA": 16, "GQA": 8}
    fig = px.plotting.plot_kv_cache_memory(px.QWEN3_1_7B, kv)
    ax = fig.axes[0]
    mha, gqa, scores = ax.lines
    np.testing.assert_allclose(mha.get_ydata(), 2 * gqa.get_ydata())
    T = scores.get_xdata()
    np.testing.assert_allclose(scores.get_ydata(), 2 * T.astype(float) ** 2)
    plt.close(fig)


@pytest.mark.slow
def test_online_softmax_figure_marks_the_final_state():
    scores = np.arange(8.0)
    fig = px.plotting.plot_online_softmax(scores, 4, [3.0, 7.0], [1.5, 1.9])
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("one row of scores, blocks of 4")
    assert len(fig.axes[0].patches) == 8
    assert fig.axes[1].lines[-1].get_ydata()[0] == 7.0
    plt.close(fig)


def test_max_weight_one_curve_per_column_and_the_uniform_line():
    ds = [8, 32, 64]
    ax = px.plotting.plot_max_weight(ds, {"a": [0.3, 0.5, 0.9], "b": [0.2, 0.2, 0.3]},
                            styles={"a": "o"}, title="t")
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:3] == ["a", "b", "uniform row, 1/6"]
    assert ax.get_lines()[0].get_linestyle() == "None"  # "o": points only
    assert ticks(ax.get_xticklabels()) == ["8", "32", "64"]


def test_std_growth_and_position_encodings_draw():
    ax = px.plotting.plot_std_growth([1, 4, 16], [1.0, 2.0, 4.0], [1.0, 1.0, 1.0])
    assert ax.get_xscale() == "log" and len(ax.get_lines()) == 3
    pe = px.positions.sinusoidal_positions(8, 4)
    ax = px.plotting.plot_position_encodings(pe, title="pe")
    assert ax.images[0].get_array().shape == (4, 8)  # dimensions down


# --- heads chapters


def test_rope_decay_draws_the_decade_means():
    y = np.linspace(1.0, 0.0, 1000)
    decades = [(10, 100), (100, 1000)]
    fig = px.plotting.plot_rope_decay({"a": y}, {"a": 2 * y}, decades, context=1000)
    top, bottom = fig.axes[:2]
    labels = [t.get_text() for t in top.texts]
    assert labels == [f"{y[a - 1:b - 1].mean():.3f}" for a, b in decades]
    assert [t.get_text() for t in bottom.texts] == [
        f"{2 * y[a - 1:b - 1].mean():.3f}" for a, b in decades]
    plt.close(fig)


@pytest.mark.slow
def test_rope_layout_bug_difference_is_diverging_and_own_scale():
    rng = np.random.default_rng(0)
    w = px.softmax(rng.standard_normal((3, 4, 4)), axis=-1)
    fig = px.plotting.plot_rope_layout_bug(w[0], w[1], w[2], list("abcd"))
    im = fig.axes[3].images[0]
    np.testing.assert_allclose(im.get_array(), w[1] - w[0])  # the difference
    lo, hi = im.get_clim()
    assert np.isclose(-lo, hi) and np.isclose(hi, np.abs(w[1] - w[0]).max())
    # diverging: no change is neutral, a gain and a loss are opposite hues
    r, g, b, _ = im.cmap(im.norm(0.0))
    assert min(r, g, b) > 0.9  # near white
    up, down = im.cmap(im.norm(hi)), im.cmap(im.norm(lo))
    assert up[0] > up[2] and down[2] > down[0]  # red up, blue down
    # its own colour bar, apart from the weights' 0 .. 1 scale
    assert im.colorbar is not None and im.colorbar.ax.get_ylim() == (lo, hi)
    assert fig.axes[0].images[0].get_clim() == (0.0, 1.0)
    plt.close(fig)


# ------------------------------------------------ numbers readable on colour
def contrast(a, b) -> float:
    """WCAG contrast ratio of two matplotlib colours (1 to 21)."""
    def lum(colour):
        c = np.array(matplotlib.colors.to_rgb(colour))
        c = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        return float(c @ [0.2126, 0.7152, 0.0722])
    hi, lo = sorted([lum(a), lum(b)], reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def cell_text_contrasts(ax) -> list[float]:
    """Each number's contrast against the colour of the cell it is written on."""
    im = ax.images[0]
    data = im.get_array()
    return [contrast(t.get_color(), im.cmap(im.norm(data[round(t._y), round(t._x)])))
            for t in ax.texts]


def test_ink_reads_on_every_colour_of_the_map():
    """Black or white, whichever reads better, gives at least 4.5:1 on every
    colour of viridis (issue #41, item 7: a cut at 0.6 of the range left
    white on teal at 3.0:1; a cut at 0.45, white at 4.4:1)."""
    cmap = matplotlib.colormaps[plotting.CMAP]
    ratios = [contrast(plotting.ink(cmap(k)), cmap(k)) for k in range(cmap.N)]
    assert min(ratios) >= 4.5, min(ratios)


def test_heatmap_numbers_read_on_their_cells():
    """Every number written in plot_attention's and plot_head_scores' cells
    reads at 4.5:1 or more on its cell's colour."""
    w = np.tril(np.linspace(0.01, 1, 36).reshape(6, 6))
    w = w / w.sum(axis=1, keepdims=True)
    ratios = cell_text_contrasts(px.plot_attention(w))
    # one panel of 4 heads: room for every value, written in its cell
    fig = plotting.plot_head_scores({"a": np.linspace(-0.9, 1, 16).reshape(4, 4)})
    for ax in fig.axes:
        if ax.images:
            ratios += cell_text_contrasts(ax)
    assert len(ratios) == 36 + 16 and min(ratios) >= 4.5, min(ratios)


@pytest.mark.slow
def test_head_scores_share_one_scale_readable_and_fit_a_window():
    """SmolLM2's maps (30 layers x 9 heads, two panels): one colour scale for
    both panels with one colour bar, the column's width, no taller than a
    900 px window (issue #41, item 4: each panel had its own range, 9 px
    numbers, 1,234 px tall), and every text at 9 px or more on a phone
    (item 2): too many heads for their values at that size, so the outlined
    head's value is written under its panel."""
    rng = np.random.default_rng(0)
    scores = {"prefix matching": rng.random((30, 9)),
              "OV copying": rng.random((30, 9)) * 1.8 - 0.8}
    fig = plotting.plot_head_scores(scores, outline={"prefix matching": [(17, 4)]},
                                    ncols=2)
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == list(scores)
    assert {ax.images[0].get_clim() for ax in panels} == {
        (min(0.0, scores["OV copying"].min()), scores["OV copying"].max())}
    bars = [ax for ax in fig.axes if not ax.images]
    assert len(bars) == 1, "one colour bar for every panel"
    assert [t.get_text() for ax in panels for t in ax.texts] == []
    value = plotting._short(scores["prefix matching"][17, 4])
    assert panels[0].get_xlabel() == f"head\nL17 H4 {value}"
    assert _phone_text_px(fig) >= plotting.PHONE_TEXT_PX
    width, height = fig.get_size_inches() * 100
    assert width == plotting.COLUMN_WIDTH * 100 and height <= 900, (width, height)
    assert "one colour scale" in fig.pyxis_alt


@pytest.mark.slow
def test_head_scores_choose_columns_that_fit_the_numbers():
    """By default as many panels a row as the column holds with each head
    27 px wide: real_model's five 4 x 8 maps come two a row."""
    fig = plotting.plot_head_scores({n: np.zeros((4, 8)) for n in "abcde"})
    panels = [ax for ax in fig.axes if ax.images]
    assert len({round(ax.get_position().x0, 2) for ax in panels}) == 2


def _phone_text_px(fig, dpi=100):
    """The smallest text of ``fig`` in CSS px as a 390-px phone shows it:
    the picture (its tight box) scaled to the 356-px column."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pad = 2 * matplotlib.rcParams["savefig.pad_inches"]
    width = (fig.get_tightbbox(renderer).width + pad) * dpi
    points = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
              if t.get_visible() and t.get_text().strip()
              and t.get_window_extent(renderer).width > 0]
    return min(points) * dpi / 72 * min(1.0, plotting.PHONE_COLUMN_PX / width)


@pytest.mark.slow
@pytest.mark.parametrize("S", [2, 4, 6, 8, 10, 12, 16])
def test_heatmap_text_is_legible_on_a_phone(S):
    """Issue #41, item 2: a heatmap in its own figure keeps every word and
    number at >= 9 px on a phone, and within the column; the weights are
    written in the cells up to 10 keys, where they fit."""
    w = np.random.default_rng(S).dirichlet(np.ones(S), size=S)
    ax = px.plot_attention(w, [f"tok{i}" for i in range(S)], title="t")
    assert _phone_text_px(ax.figure) >= plotting.PHONE_TEXT_PX
    assert ax.figure.get_figwidth() <= plotting.COLUMN_WIDTH + 1e-9
    assert len(ax.texts) == (S * S if S <= 10 else 0)


def test_phone_pt_is_the_size_a_phone_shows_at_9_px():
    assert plotting.phone_pt(3.0) == pytest.approx(9 * 72 / 100)  # fits: 1:1
    # 650 px shown at 356: 11.8 pt = 16.4 px in the picture, 9 px shown
    assert plotting.phone_pt(6.5) * 100 / 72 * 356 / 650 == pytest.approx(9)


def _pool():
    """A pool of 24 blocks of 4: two requests sharing two blocks, a third
    alone, a finished one whose full block stays keyed."""
    pool = BlockPool(24, 4, enable_prefix_caching=True)
    pool.allocate(["req_0"], 10)
    pool.allocate(["req_1"], 7)
    pool.allocate(["req_12"], 16)
    pool.share("req_3", pool.block_tables["req_0"][:2])
    pool.allocate(["req_3"], 9)
    pool.cache_blocks("req_1", list(range(7)))
    pool.free("req_1")
    return pool


def _tile_stats():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((8, 4)) for _ in range(3))
    return px.tiled_attention(q, k, v, is_causal=True, block_q=2, block_k=2,
                              return_stats=True)[1]


WORDS = ["The", "cat", "sat", "on", "the", "mat", "and", "slept"]
RNG = np.random.default_rng(0)
# every figure the package draws, as the chapters call it
FIGURES = {
    "plot_attention_grid": lambda: px.plot_attention_grid(
        RNG.dirichlet(np.ones(6), size=(8, 6)), WORDS[:6], ncols=4),
    "plot_attention_grid annotated": lambda: px.plot_attention_grid(
        np.stack([W, W]), TOKENS, annotate=True, suptitle="two"),
    "plot_gqa_mapping": lambda: plotting.plot_gqa_mapping(16, 8).figure,
    "plot_decode_step": lambda: plotting.plot_decode_step(
        np.tril(np.full((8, 8), 0.2)), np.full((4, 5), 0.2), WORDS, 4),
    "plot_tile_step": lambda: plotting.plot_tile_step(_tile_stats(), 5, WORDS),
    "plot_rope_rotation": lambda: plotting.plot_rope_rotation(5, 3),
    "plot_rope_pairs": lambda: plotting.plot_rope_pairs(8),
    "plot_attention_layer": lambda: plotting.plot_attention_layer(),
    "plot_head_split": lambda: plotting.plot_head_split(),
    "plot_block_pool": lambda: plotting.plot_block_pool(
        _pool(), {"req_0": 10, "req_3": 9, "req_12": 15}, title="step 5"),
    "plot_decode_times": lambda: plotting.plot_decode_times(
        [64, 256, 1024], [1e-3, 1.1e-3, 1.3e-3], [2e-3, 8e-3, 3e-2]),
    "plot_kv_cache_memory": lambda: plotting.plot_kv_cache_memory(
        px.QWEN3_1_7B, {"GQA (8 K/V)": 8, "MHA (16 K/V)": 16}),
    "plot_online_softmax": lambda: plotting.plot_online_softmax(
        RNG.standard_normal(8), 4, [3.0, 7.0], [1.5, 1.9]),
    "plot_tiled_cost": lambda: plotting.plot_tiled_cost(
        [512, 1024], [4.0, 16.0], [1.0, 1.2], [0.1, 0.4], [0.05, 0.2]),
    "plot_max_weight": lambda: plotting.plot_max_weight(
        [8, 16, 32], {"a": [0.3, 0.5, 0.9], "b": [0.2, 0.2, 0.3]},
        title="how peaked is each row?").figure,
    "plot_std_growth": lambda: plotting.plot_std_growth(
        [1, 4, 16], [1.0, 2.0, 4.0], [1.0, 1.0, 1.0]).figure,
    "plot_position_encodings": lambda: plotting.plot_position_encodings(
        RNG.standard_normal((32, 16)), title="pe").figure,
    "plot_rope_decay": lambda: plotting.plot_rope_decay(
        {"a": np.linspace(1, 0, 1000)}, {"a": np.linspace(2, 0, 1000)},
        [(10, 100), (100, 1000)], context=1000),
    "plot_rope_layout_bug": lambda: plotting.plot_rope_layout_bug(
        *RNG.dirichlet(np.ones(4), size=(3, 4)), list("abcd")),
    "plot_head_scores": lambda: plotting.plot_head_scores(
        {"prefix matching": RNG.random((30, 9)), "OV copying": RNG.random((30, 9))},
        outline={"prefix matching": [(17, 4), (18, 6)]}, ncols=2),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", FIGURES)
def test_every_figure_reads_on_a_phone(name):
    """Issue #41, item 2: on a 390-px phone a figure is scaled to the
    356-px column (650-px figures to 55 %); each of the package's figures
    keeps every text at 9 px or more there, and fits the column at 1280 px
    (at most COLUMN_WIDTH wide)."""
    fig = FIGURES[name]()
    assert fig.get_figwidth() <= plotting.COLUMN_WIDTH + 1e-9
    assert _phone_text_px(fig) >= plotting.PHONE_TEXT_PX, name


def test_block_pool_labels_each_block_by_what_holds_it():
    """Held blocks carry their request's number, shared ones the count of
    their holders, free keyed ones "c"; the alt text counts each kind."""
    pool = _pool()
    fig = plotting.plot_block_pool(pool, {"req_0": 10, "req_3": 9,
                                          "req_12": 15}, columns=8)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert len(labels) == 24
    shared = pool.block_tables["req_0"][:2]
    assert [labels[b] for b in shared] == ["x2", "x2"]
    assert labels[pool.block_tables["req_0"][2]] == "0"
    assert labels[pool.block_tables["req_3"][2]] == "3"
    assert [labels[b] for b in pool.block_tables["req_12"]] == ["12"] * 4
    assert labels.count("c") == 1 and labels.count("") == 24 - 9
    assert fig.pyxis_alt.startswith(
        "The 24 blocks of a paged cache's pool, 4 tokens each: 8 held by 3 "
        "requests (2 shared), 1 free with their tokens still keyed, 15 free.")
    plt.close(fig)


def test_block_pool_refuses_a_bad_column_count():
    with pytest.raises(ValueError, match="columns"):
        plotting.plot_block_pool(_pool(), columns=0)
