"""Draw the first page's picture, book/images/first_page.png: one head of
the first chapter on "The cat sat on the mat", its weights without a mask and
under the causal mask, side by side (what the chapters' toggles switch
between). The data are the qkv chapter's (seed 3).

    .venv/bin/python tools/first_page_figure.py          # write the file
    .venv/bin/python tools/first_page_figure.py --check  # exit 1 if it differs

tests/test_first_page.py runs the check: the picture is drawn by the
package, so a change to plot_attention shows up as a stale picture.
"""

from __future__ import annotations

import io
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import pyxis_nb as px  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = ROOT / "book" / "images" / "first_page.png"


def draw() -> bytes:
    """The picture's PNG bytes (no timestamp: the same bytes every run)."""
    tokens = "The cat sat on the mat".split()
    rng = np.random.default_rng(3)
    X = rng.standard_normal((len(tokens), 16))  # the qkv chapter's tokens
    head = px.Head(16, 8, seed=3)
    # narrow enough that a phone shows its words at 9 px or more
    fig, axes = plt.subplots(1, 2, figsize=(4.6, 2.6))
    px.plot_attention(head.weights(X), tokens, ax=axes[0], colorbar=False,
                      annotate=False, title="no mask")
    px.plot_attention(head.weights(X, is_causal=True), tokens, ax=axes[1],
                      colorbar=False, annotate=False,
                      mask=px.causal_mask(len(tokens)), title="causal mask")
    for ax in axes:
        ax.set_xlabel("key", fontsize=9)
        ax.set_ylabel("query", fontsize=9)
        ax.tick_params(labelsize=9)
        ax.tick_params(axis="x", labelrotation=45)
        ax.set_title(ax.get_title(), fontsize=10)
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return out.getvalue()


def main(argv: list[str]) -> int:
    png = draw()
    if "--check" in argv:
        same = TARGET.exists() and TARGET.read_bytes() == png
        print(f"{TARGET.relative_to(ROOT)}: {'up to date' if same else 'differs'}")
        return 0 if same else 1
    TARGET.write_bytes(png)
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(png):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
