"""Give the website its widgets back from the pictures stored in the chapters.

A chapter stores each widget's output as its default picture (a PNG and the
widget's short text), with the widget-view reference kept aside in the
output's metadata under ``pyxis_widget_view`` (tools/execute_notebooks.py).
So nbconvert, GitHub's viewer and every other static viewer show the
picture, instead of an empty widget view. Before myst-nb reads a chapter,
this extension moves the reference back into the output's data: myst-nb then
finds the same bundle as a live kernel makes (widget view, PNG, text) and
renders the widget exactly as it did before the pictures were stored.
"""

from __future__ import annotations

import json

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
VIEW_KEY = "pyxis_widget_view"


def restore_widget_views(nb: dict) -> int:
    """Move every stored widget-view reference back into its output's data,
    in place; returns how many outputs changed."""
    restored = 0
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            view = out.get("metadata", {}).pop(VIEW_KEY, None)
            if view is not None:
                out.setdefault("data", {})[WIDGET_VIEW] = view
                restored += 1
    return restored


def _source_read(app, docname, source):
    if not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
    nb = json.loads(source[0])
    if restore_widget_views(nb):
        source[0] = json.dumps(nb, ensure_ascii=False, indent=1)


def setup(app):
    app.connect("source-read", _source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
