"""Small Sphinx fixes for the Pyxis Notebooks website.

* sphinx-thebe 0.3.1 registers its inline configuration script twice, so every
  page throws ``Identifier 'THEBE_JS_URL' has already been declared``; keep one.
* pydata-sphinx-theme logs ``Got invalid theme mode`` when no default mode is
  set; Jupyter Book 1 sets none, so choose "auto" (follow the reader's system).
"""

from __future__ import annotations


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for js in context.get("script_files", []):
        # the copies differ only in filename None vs "" (both mean an inline script)
        key = (getattr(js, "filename", js) or "", getattr(js, "attributes", {}).get("body"))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    context["script_files"] = unique


def _default_mode(app, config):
    config.html_context.setdefault("default_mode", "auto")


def setup(app):
    app.connect("config-inited", _default_mode)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

