"""px.plotting.plot_rope_pairs: which coordinates RoPE pairs up (issue 49).

The RoPE chapter's picture of the two layouts: the half layout joins
coordinate i to i + d_head/2, the interleaved layout 2i to 2i + 1, and each
pair's angle per position is the package's own ``rope_frequencies``. Like
every figure of the package it fits the website's column, reads on a phone
and says what it shows in its alt text (tests/test_plotting.py).
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.text  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import pyxis_nb as px  # noqa: E402
from pyxis_nb import plotting  # noqa: E402
from test_plotting import _phone_text_px  # the measure of every figure

pytestmark = pytest.mark.usefixtures("close_figures")


def arcs(fig) -> dict[str, list[tuple[int, int, int]]]:
    """{layout: [(pair, a, b), ...]} read from the arcs' gids."""
    found = {}
    for line in fig.findobj(matplotlib.lines.Line2D):
        gid = line.get_gid()
        if gid:
            layout, i, ab = gid.split()
            a, b = map(int, ab.split("-"))
            found.setdefault(layout, []).append((int(i), a, b))
    return {k: sorted(v) for k, v in found.items()}


@pytest.mark.slow
@pytest.mark.parametrize("d", [2, 4, 8, 16])
def test_arcs_join_the_coordinates_each_layout_rotates(d):
    fig = plotting.plot_rope_pairs(d)
    half = d // 2
    assert arcs(fig) == {
        "half": [(i, i, i + half) for i in range(half)],
        "interleaved": [(i, 2 * i, 2 * i + 1) for i in range(half)],
    }
    # the arcs are those pairs: the package's permutation moves pair
    # (2i, 2i + 1) of the interleaved row to (i, i + d/2) of the half row
    perm = px.rope.interleaved_to_half_permutation(d)
    moved = sorted((i, int(np.flatnonzero(perm == a)[0]),
                    int(np.flatnonzero(perm == b)[0]))
                   for i, a, b in arcs(fig)["interleaved"])
    assert moved == arcs(fig)["half"]
    plt.close(fig)


def test_each_pair_has_one_colour_in_both_rows():
    fig = plotting.plot_rope_pairs(8)
    colour = {}
    for line in fig.findobj(matplotlib.lines.Line2D):
        if line.get_gid():
            layout, i, _ = line.get_gid().split()
            colour.setdefault(int(i), set()).add(line.get_color())
    assert sorted(colour) == [0, 1, 2, 3]
    assert all(len(c) == 1 for c in colour.values())  # same in both rows
    assert len({c.pop() for c in colour.values()}) == 4  # pairs differ


def test_legend_gives_each_pairs_angle_per_position():
    fig = plotting.plot_rope_pairs(8, rope_theta=10_000.0)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    inv_freq = px.rope_frequencies(8, 10_000.0)  # 1, 0.1, 0.01, 0.001
    assert labels == [f"pair {i}: {w:.3g} rad/position"
                      for i, w in enumerate(inv_freq)]
    assert labels[1] == "pair 1: 0.1 rad/position"


def test_alt_text_names_every_pair_and_its_speed():
    alt = plotting.plot_rope_pairs(8).pyxis_alt
    assert "x0-x4, x1-x5, x2-x6, x3-x7" in alt  # half layout
    assert "x0-x1, x2-x3, x4-x5, x6-x7" in alt  # interleaved layout
    assert "pair 0 1, pair 1 0.0316, pair 2 0.001, pair 3 3.16e-05" in alt




@pytest.mark.slow
@pytest.mark.parametrize("d", [8, 16])
def test_reads_on_a_phone_and_fits_the_column(d):
    fig = plotting.plot_rope_pairs(d)
    assert fig.get_figwidth() <= plotting.COLUMN_WIDTH + 1e-9
    assert _phone_text_px(fig) >= plotting.PHONE_TEXT_PX
    # no two texts overlap (labels, pair names, titles, legend)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    drawn = ([t for ax in fig.axes for t in [*ax.texts, ax._left_title]]
             + list(fig.legends[0].get_texts())
             + [fig.legends[0].get_title()])
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in drawn
             if t.get_text().strip()]
    overlaps = [(a, b) for k, (a, box) in enumerate(boxes)
                for b, other in boxes[k + 1:] if box.overlaps(other)]
    assert len(boxes) == 2 * d + d + 2 + d // 2 + 1  # x, pair names, ...
    assert not overlaps


@pytest.mark.parametrize("kwargs, match", [
    (dict(head_dim=7), r"head_dim must be even, got 7"),
    (dict(head_dim=18), r"head_dim .*<= 16, got 18"),
    (dict(head_dim=0), r"head_dim .*2 <= head_dim, got 0|head_dim .* 0"),
    (dict(head_dim=8, rope_theta=1.0), r"rope_theta must be .*> 1"),
])
def test_bad_input_names_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plotting.plot_rope_pairs(**kwargs)
