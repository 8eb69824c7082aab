"""The multi-head chapter's two pictures (issue 49, item 5): one attention
layer's data flow with its shapes, and the head split. Each says what it
draws (alt text), and reads on a phone as the package's other figures do
(tests/test_plotting.py)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.text  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import pyxis_nb as px  # noqa: E402
from pyxis_nb import plotting  # noqa: E402
from test_plotting import _phone_text_px  # the measure of every figure

pytestmark = pytest.mark.usefixtures("close_figures")
QWEN = dict(B=1, T=5, S=5, d_model=2048, H=16, H_kv=8, d_head=128)




def _texts(fig):
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text)]


FIGURES = {
    "layer": lambda: px.plotting.plot_attention_layer(),
    "layer with sizes": lambda: px.plotting.plot_attention_layer(QWEN),
    "head split": lambda: px.plotting.plot_head_split(),
    "head split 4 x 3": lambda: px.plotting.plot_head_split(4, 4, 3),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", FIGURES)
def test_reads_on_a_phone_and_fits_the_column(name):
    fig = FIGURES[name]()
    assert fig.get_figwidth() <= plotting.COLUMN_WIDTH + 1e-9
    assert _phone_text_px(fig) >= plotting.PHONE_TEXT_PX, name
    assert len(fig.pyxis_alt.split()) >= 20


@pytest.mark.slow
def test_layer_names_every_step_and_shape():
    text = "\n".join(_texts(plotting.plot_attention_layer()))
    for step in ("q_proj", "k_proj", "v_proj", "softmax", "merge_heads",
                 "o_proj", "scores", "weights", "heads", "concat"):
        assert step in text, step
    for shape in ("(B, H, T, S)", "(B, T, $d_{model}$)",
                  "(B, $H_{kv}$, S, $d_{head}$)", r"(B, T, $H{\cdot}d_{head}$)"):
        assert shape in text, shape
    alt = plotting.plot_attention_layer().pyxis_alt
    assert "(B, H_kv, S, d_head)" in alt and "o_proj" in alt


@pytest.mark.slow
def test_layer_writes_the_numbers_of_its_sizes():
    fig = plotting.plot_attention_layer(QWEN)
    text = "\n".join(_texts(fig))
    # concat is H * d_head = 16 * 128 wide; K and V have H_kv = 8 heads
    assert "= (1, 5, 2,048)" in text and "= (1, 8, 5, 128)" in text
    assert "= (1, 16, 5, 5)" in text
    assert "H_kv = 8" in fig.pyxis_alt


@pytest.mark.parametrize("sizes, match", [
    ({"B": 1}, "sizes needs exactly the keys"),
    ({**QWEN, "H": 0}, r"sizes\['H'\] must be an integer >= 1"),
])
def test_layer_refuses_incomplete_sizes(sizes, match):
    with pytest.raises(ValueError, match=match):
        plotting.plot_attention_layer(sizes)


def test_head_split_puts_each_block_of_columns_in_its_head():
    """Head h's grid holds columns h*d_head .. (h+1)*d_head - 1 of every
    token: the numbers drawn are split_heads of the numbers on top."""
    T, H, d = 3, 2, 4
    fig = plotting.plot_head_split(T, H, d)
    ax = fig.axes[0]
    cells = [(p.get_x(), p.get_y(), p.get_facecolor()) for p in ax.patches]
    numbers = [int(t.get_text()) for t in ax.texts if t.get_text().isdigit()]
    top, below = numbers[:T * H * d], numbers[T * H * d:]
    flat = np.arange(T * H * d, dtype=float).reshape(1, T, H * d)
    heads = px.split_heads(flat, head_dim=d)[0]  # (H, T, d_head)
    assert top == list(range(T * H * d))
    assert below == [int(x) for x in heads.ravel()]
    # one colour a head, the same above and below
    colour = {n: c for n, (_, _, c) in zip(numbers, cells)}
    for n, (_, _, c) in zip(below, cells[T * H * d:]):
        assert c == colour[n]
    assert len({c for _, _, c in cells}) == H
    assert "head 1" in _texts(fig) and "split_heads" in _texts(fig)


def test_head_split_refuses_what_cannot_be_read():
    with pytest.raises(ValueError, match="at most 256 cells"):
        plotting.plot_head_split(16, 16, 16)
    with pytest.raises(ValueError, match="head_dim must be an integer"):
        plotting.plot_head_split(3, 2, 0)
