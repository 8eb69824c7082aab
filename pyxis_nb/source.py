"""Show the package's own code in a chapter, read from the installed package.

``px.show_source(px.causal_mask)`` returns a display object. Its Markdown
form is a fenced, syntax-highlighted listing, which JupyterLab, Colab,
VS Code, GitHub's viewer and the website all render; its plain-text form is
the bare source. The listing is cell output, so it can never drift from the
code that runs, and nbval compares it like any other output.
"""

from __future__ import annotations

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
        raise ValueError(
            f"obj must be a function, class or method, got "
            f"{type(obj).__name__} {obj!r:.60}"
        ) from None
    name = getattr(obj, "__qualname__", getattr(obj, "__name__", "?"))
    return SourceListing(textwrap.dedent(source).rstrip(), name)
