"""Execute notebooks in place so that re-running them changes no text output.

    python tools/execute_notebooks.py book/qkv.ipynb [more.ipynb ...]

* each notebook runs top to bottom in a fresh kernel, in its own folder;
* no per-cell timing metadata is recorded (nbclient ``record_timing=False``);
* widget model ids, random uuids in the kernel, are renamed to ids derived
  from the notebook name and creation order, so re-execution is byte-stable;
* consecutive stream outputs of a cell are merged (``coalesce_streams``: a busy
  machine can split one print into two stream messages);
* the widget state is stored in the notebook metadata, where myst-nb finds it
  and embeds it in the web page;
* a widget's output is stored as its picture: the bundle keeps its PNG and
  its text, and its widget-view reference moves to the output's metadata
  (``pyxis_widget_view``). nbconvert, GitHub, nbviewer, VS Code and Colab's
  preview would otherwise pick the widget-view, whose model is in the
  notebook's widget state, and draw nothing without the widget JavaScript;
  now they show the picture. The website puts the reference back before
  myst-nb renders the page (_ext/pyxis_widget_views.py), so it shows the
  widget as before; a live kernel makes a fresh bundle with the widget;
* a figure's alt text (the cell's ``mystnb.image.alt``) is also stored in
  its PNG output's metadata, where nbconvert's classic template reads it;
* figures are drawn at twice their size in pixels, shown at their size
  (matplotlib-inline's ``retina`` format: sharp on a phone's and a laptop's
  screen, issue 55, item 5), and stored as palette PNGs of 256 colours
  that keep every flat colour exactly and dither only the rest
  (``palette_picture``: a colour bar shows no bands, a flat area no
  specks); the book's figures take 1.3 MB (1.9 MB when every pixel was
  dithered); then every stored picture, views' frames too, is
  recompressed losslessly by oxipng (``small_pngs``). The width alone is
  kept in the output's metadata, so that a narrow screen scales the height
  with it. (A view's pictures are drawn by pyxis_nb.widgets itself, at its
  VIEW_DPI.)
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# the output-metadata key that keeps a stored widget output's view reference;
# _ext/pyxis_widget_views.py reads it back
VIEW_KEY = "pyxis_widget_view"


def stable_widget_ids(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """Rename every widget model id to one derived from ``name`` and its order."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    if not state:
        return nb
    mapping = {
        old: hashlib.md5(f"{name}:{i}".encode()).hexdigest() for i, old in enumerate(state)
    }
    text = nbformat.writes(nb)
    pattern = re.compile("|".join(map(re.escape, mapping)))
    return nbformat.reads(pattern.sub(lambda m: mapping[m.group(0)], text), as_version=4)


def store_widget_pictures(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Store each widget output that carries a PNG as that picture.

    The widget-view reference moves from the output's data to its metadata,
    under ``VIEW_KEY``; an output without a PNG is left as it is.
    """
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data and "image/png" in data:
                out.setdefault("metadata", {})[VIEW_KEY] = data.pop(WIDGET_VIEW)
    return nb


def store_figure_alt(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Copy a figure cell's alt text (``mystnb.image.alt``, which the website
    reads) into each of its PNG outputs' metadata (``image/png: {alt}``),
    where nbconvert's classic template and nbviewer read it. nbconvert's
    default (lab) template and JupyterLab read no alt text at all."""
    for cell in nb.cells:
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
        if not isinstance(alt, str):
            continue
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}):
                meta = out.setdefault("metadata", {}).setdefault("image/png", {})
                meta.setdefault("alt", alt)
    return nb


def palette_picture(rgb, colors: int = 256):
    """``rgb`` (a PIL RGB image) as a palette image of ``colors`` colours that
    keeps the figure's flat colours exactly and dithers the rest.

    The palette: every colour that covers 1/2000 of the picture or more (a
    heatmap's cells, a mask's two colours, the background, the lines; at most
    half the palette), then Pillow's octree colours for the rest. A pixel of
    a colour in the palette keeps it; the others (anti-aliased edges, a colour
    bar's gradient) are Floyd-Steinberg dithered, so a colour bar shows no
    bands. Dithering every pixel (Pillow's quantize alone) put specks in flat
    areas whose colour the octree had moved, changed 92-95 % of a figure's
    pixels and made the file larger than the full-colour one."""
    import numpy as np
    from PIL import Image

    def packed(a):  # (n, 3) levels -> (n,) one uint32 a colour
        a = a.astype(np.uint32)
        return (a[:, 0] << 16) | (a[:, 1] << 8) | a[:, 2]

    rgb = rgb.convert("RGB")
    key = packed(np.asarray(rgb).reshape(-1, 3))
    colours, counts = np.unique(key, return_counts=True)
    if len(colours) > colors:  # the frequent colours, then the octree's
        order = np.argsort(-counts, kind="stable")[: colors // 2]
        frequent = colours[order][counts[order] * 2000 >= len(key)]
        octree = rgb.quantize(colors=colors - len(frequent),
                              method=Image.Quantize.FASTOCTREE)
        rest = np.array(octree.getpalette()[: 3 * (colors - len(frequent))])
        colours = np.concatenate([frequent, packed(rest.reshape(-1, 3))])
    palette = (np.stack([colours >> 16, colours >> 8, colours], 1) & 255
               ).astype(np.uint8).ravel().tolist()
    holder = Image.new("P", (1, 1))
    holder.putpalette(palette)
    # Pillow's dithered mapping, then the exact index wherever there is one
    # (Pillow looks colours up at reduced precision, so an exact colour can
    # map to a neighbour)
    index = np.asarray(rgb.quantize(palette=holder,
                                    dither=Image.Dither.FLOYDSTEINBERG)).ravel().copy()
    sorter = np.argsort(colours)
    at = np.minimum(np.searchsorted(colours, key, sorter=sorter), len(colours) - 1)
    exact = colours[sorter[at]] == key
    index[exact] = sorter[at][exact]
    picture = Image.frombytes("P", rgb.size, index.astype(np.uint8).tobytes())
    picture.putpalette(palette)
    return picture


def palette_figures(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Store each figure (a PNG output that is not a widget's picture) as
    a palette PNG of 256 colours (:func:`palette_picture`), its metadata
    keeping its width only."""
    import base64
    import io

    from PIL import Image

    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data, meta = out.get("data", {}), out.get("metadata", {})
            if "image/png" not in data or VIEW_KEY in meta:
                continue
            picture = Image.open(io.BytesIO(base64.b64decode(data["image/png"])))
            if picture.mode != "P":
                buf = io.BytesIO()
                palette_picture(picture).save(buf, format="png", compress_level=8)
                data["image/png"] = base64.b64encode(buf.getvalue()).decode()
            meta.get("image/png", {}).pop("height", None)
    return nb


PNG_DATA = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")


def small_pngs(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Every stored picture (figures, widgets' pictures and their frames in
    the widget state) losslessly recompressed by oxipng (the same pixels,
    dpi and text; 9 % fewer bytes for the views' frames at its level 2,
    which takes about 0.4 s a picture)."""
    import base64

    import oxipng

    def smaller(b64: str) -> str:
        png = base64.b64decode(b64)
        out = oxipng.optimize_from_memory(png, level=2)
        return base64.b64encode(out).decode() if len(out) < len(png) else b64

    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "image/png" in data:
                data["image/png"] = smaller(data["image/png"])
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for model in state.values():
        value = model.get("state", {}).get("value")
        if isinstance(value, str) and "data:image/png;base64," in value:
            model["state"]["value"] = PNG_DATA.sub(
                lambda m: "data:image/png;base64," + smaller(m.group(1)), value)
    return nb


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=900, kernel_name="python3", record_timing=False, coalesce_streams=True,
        resources={"metadata": {"path": str(path.parent)}},
        extra_arguments=["--InlineBackend.figure_formats=retina"],
    )
    client.execute()
    nb = store_figure_alt(store_widget_pictures(stable_widget_ids(nb, path.stem)))
    nb = small_pngs(palette_figures(nb))
    nbformat.write(nb, path)
    print(f"executed {path}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for arg in sys.argv[1:]:
        execute(Path(arg))
