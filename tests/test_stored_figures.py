"""A chapter's figures are stored as palette PNGs that keep their flat
colours (tools/execute_notebooks.py, ``palette_picture``).

Quantizing with Pillow alone dithered every pixel to an octree palette: a
flat area whose colour the octree had moved came out as a pattern, with
specks up to 199 levels off (the 2024-26 chapter's masks), and the file
was larger than the full-colour one.
"""

from __future__ import annotations

import base64
import io
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import execute_notebooks as ex  # noqa: E402

FLAT = (128, 85, 127)  # a colour the octree palette moves


def _picture() -> Image.Image:
    """A flat block beside a gradient of 600 colours (a colour bar)."""
    rgb = np.empty((120, 800, 3), np.uint8)
    rgb[:, :200] = FLAT
    ramp = np.linspace(0, 1, 600)
    rgb[:, 200:, 0] = np.round(255 * ramp)
    rgb[:, 200:, 1] = np.round(40 + 180 * ramp ** 2)
    rgb[:, 200:, 2] = np.round(255 * (1 - ramp))
    return Image.fromarray(rgb)


def _rgb(picture: Image.Image) -> np.ndarray:
    return np.asarray(picture.convert("RGB")).astype(int)


def test_a_flat_colour_is_kept_exactly_and_a_gradient_shows_no_bands():
    picture = _picture()
    stored = ex.palette_picture(picture)
    assert stored.mode == "P" and len(stored.getcolors()) <= 256
    before, after = _rgb(picture), _rgb(stored)
    assert (after[:, :200] == FLAT).all(), "the flat block changed"
    assert _band(after, before) < 3


def _band(after, before) -> float:
    """How far the gradient's 8 x 8 block means are from the picture's: a
    dithered gradient follows it, a banded one is off by up to half the
    palette's spacing (6.5 levels here). The last two blocks are left out:
    the palette ends before the gradient does."""
    def blocks(a):
        return a[:, 200:].reshape(15, 8, 75, 8, 3).mean(axis=(1, 3))[:, :-2]
    return float(np.abs(blocks(after) - blocks(before)).max())


def test_pillows_quantize_alone_fails_both():
    """What the check above would catch: Pillow's own dithered quantize
    moves the flat block's pixels and bands the gradient (it looks colours
    up at reduced precision)."""
    picture = _picture()
    palette = picture.quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    plain = _rgb(picture.quantize(palette=palette,
                                  dither=Image.Dither.FLOYDSTEINBERG))
    assert not (plain[:, :200] == FLAT).all()
    assert _band(plain, _rgb(picture)) > 3


def test_a_few_colours_are_all_kept():
    rgb = np.zeros((40, 40, 3), np.uint8)
    rgb[:, 20:] = (250, 10, 200)
    rgb[10:15] = (1, 2, 3)
    picture = Image.fromarray(rgb)
    assert np.array_equal(_rgb(ex.palette_picture(picture)), rgb)


def _masks_figure() -> bytes:
    """The 2024-26 chapter's masks of twelve layers, at 2x."""
    import pyxis_nb as px

    T, window = 16, 4
    q, kv = np.arange(T)[:, None], np.arange(T)[None, :]
    fig, axes = plt.subplots(2, 6, figsize=(6.5, 2.8), layout="constrained")
    for i, ax in enumerate(axes.flat):
        mod = (px.masks.causal_mask_mod if i % 6 == 5
               else px.masks.sliding_window_mask_mod(window))
        ax.imshow(mod(0, 0, q, kv), cmap="Greens", vmin=-0.3, vmax=1.2)
        ax.set(title=str(i), xticks=[], yticks=[])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=200)
    plt.close(fig)
    return buf.getvalue()


@pytest.mark.slow
def test_a_stored_figure_keeps_its_flat_areas_in_fewer_bytes():
    import nbformat

    full = _masks_figure()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "", outputs=[nbformat.v4.new_output(
            "display_data", data={"image/png": base64.b64encode(full).decode()},
            metadata={"image/png": {"width": 650, "height": 280}})])])
    out = ex.palette_figures(nb).cells[0].outputs[0]
    stored = base64.b64decode(out.data["image/png"])
    assert out.metadata["image/png"] == {"width": 650}  # the width alone
    before = _rgb(Image.open(io.BytesIO(full)))
    after = _rgb(Image.open(io.BytesIO(stored)))
    # a flat pixel: its eight neighbours share its colour
    flat = np.ones(before.shape[:2], bool)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            flat &= (np.roll(before, (dy, dx), (0, 1)) == before).all(-1)
    assert flat.mean() > 0.5
    assert (after[flat] == before[flat]).all(), (
        f"{(after[flat] != before[flat]).any(-1).sum()} flat pixels changed")
    assert len(stored) < len(full) / 2
