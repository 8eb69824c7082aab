"""Show the package's own code in a chapter, read from the installed package.

``px.show_source(px.causal_mask)`` returns a display object with three
forms of the same listing:

* HTML, a ``<pre><code>`` block (Pygments' classes where Pygments is
  installed, as it is with every IPython kernel): what JupyterLab, Colab,
  VS Code, nbconvert and GitHub's viewer prefer, so each shows it in a
  monospaced font;
* Markdown, a fenced ``python`` block: what the website renders (it ranks
  Markdown above HTML, ``nb_mime_priority_overrides`` in _config.yml), so
  the listing looks like every other code block of the book;
* plain text, the bare source.

The listing is cell output, so it can never drift from the code that runs,
and nbval compares it like any other output.
"""

from __future__ import annotations

import html
import inspect
import textwrap

__all__ = ["SourceListing", "show_source"]


class SourceListing:
    """The source of one object, displayed as a highlighted Python listing."""

    def __init__(self, source: str, name: str):
        self.source = source
        self.name = name

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.source}\n```"

    def _repr_html_(self) -> str:
        """A ``<pre><code>`` block; highlighted with Pygments' CSS classes
        (``<div class="highlight">``, the classes JupyterLab and nbconvert
        style) when Pygments is importable, plain otherwise."""
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import PythonLexer
        except ImportError:
            code = html.escape(self.source)
            return ('<pre class="pyxis-listing">'
                    f'<code class="language-python">{code}</code></pre>')
        formatter = HtmlFormatter(cssclass="highlight pyxis-listing",
                                  wrapcode=True)
        return highlight(self.source, PythonLexer(), formatter).rstrip("\n")

    def __repr__(self) -> str:
        return self.source

    def __len__(self) -> int:
        """Number of lines, docstring included."""
        return len(self.source.splitlines())


def show_source(obj) -> SourceListing:
    """The source code of a function, class or method of ``pyxis_nb``.

    Parameters
    ----------
    obj : function, class or method
        For example ``px.causal_mask`` or ``px.KVCache.update``.

    Returns
    -------
    SourceListing
        Displays as a highlighted listing; ``len()`` counts its lines.
    """
    try:
        source = inspect.getsource(obj)
    except TypeError:
        raise ValueError(  # reason: inspect's TypeError, re-raised naming obj
            f"obj must be a function, class or method, got "
            f"{type(obj).__name__} {obj!r:.60}"
        ) from None
    name = getattr(obj, "__qualname__", getattr(obj, "__name__", "?"))
    return SourceListing(textwrap.dedent(source).rstrip(), name)
