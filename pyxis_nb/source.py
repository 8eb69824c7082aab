"""Show the package's own code in a chapter, read from the installed package.

``px.show_source(px.causal_mask)`` displays one listing in three forms:
HTML (``<pre><code>``, with Pygments' classes where it is installed: what
JupyterLab, Colab, VS Code, nbconvert and GitHub show), Markdown (a fenced
``python`` block: what the website renders, ``nb_mime_priority_overrides``
in _config.yml) and plain text. As cell output the listing cannot drift
from the code that runs, and nbval compares it like any other output.
"""

from __future__ import annotations

import ast
import html
import inspect
import textwrap

__all__ = ["SourceListing", "show_source", "door_statements"]


class SourceListing:
    """The source of one object, displayed as a highlighted Python listing.

    Parameters
    ----------
    source : str, the listing's text, as :func:`show_source` cut it
    name : str, the object's qualified name
    """

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


def show_source(obj, *, docstring: str = "summary",
                checks: bool = True) -> SourceListing:
    """The source code of a function, class or method of ``pyxis_nb``.

    Parameters
    ----------
    obj : function, class or method, e.g. ``px.KVCache.update``
    docstring : "summary" (each docstring's first line), "full" or "none"
    checks : bool; False folds each run of door checks into one comment line
    """
    if docstring not in DOCSTRING_CHOICES:
        raise ValueError(f"docstring must be one of {DOCSTRING_CHOICES}, "
                         f"got {docstring!r}")
    try:
        source = inspect.getsource(obj)
    except TypeError:
        raise ValueError(
            f"obj must be a function, class or method, got "
            f"{type(obj).__name__} {obj!r:.60}"
        ) from None
    name = getattr(obj, "__qualname__", getattr(obj, "__name__", "?"))
    source = textwrap.dedent(source).rstrip()
    return SourceListing(_shown(source, docstring, checks), name)


DOCSTRING_CHOICES = ("summary", "full", "none")


def door_statements(tree: ast.AST) -> tuple[list, list]:
    """The docstring nodes and the door-check statements under ``tree``.

    A door check is a statement of a function body that raises, or calls a
    ``_checks`` helper or a module's own ``_check...`` function or method.

    Parameters
    ----------
    tree : ast.AST, a parsed listing (``ast.parse`` of its source)
    """
    from . import _checks
    helpers = {n for n in dir(_checks) if not n.startswith("__")}
    docs, checks = [], []

    def is_check(statement) -> bool:
        for node in ast.walk(statement):
            if isinstance(node, ast.Raise):
                return True
            if isinstance(node, ast.Call):
                f = node.func
                called = f.id if isinstance(f, ast.Name) else getattr(
                    f, "attr", "")
                if called in helpers or called.startswith("_check"):
                    return True
        return False

    def walk(node):
        body = getattr(node, "body", [])
        if (body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            docs.append(body[0])
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
                walk(statement)
            elif statement not in docs and is_check(statement):
                checks.append(statement)

    for node in getattr(tree, "body", []):
        walk(node)
    return docs, checks


def _shown(source: str, docstring: str, checks: bool) -> str:
    """``source`` with its docstrings cut as asked and, if asked, each run
    of door checks folded into one comment line."""
    if docstring == "full" and checks:
        return source
    lines = source.splitlines()
    docs, doors = door_statements(ast.parse(source))
    replace, drop = {}, set()  # line index -> new lines; lines to leave out

    def indent(i: int) -> str:
        return lines[i][:len(lines[i]) - len(lines[i].lstrip())]

    for node in docs if docstring != "full" else []:
        first, last = node.lineno - 1, node.end_lineno - 1
        drop.update(range(first, last + 1))
        if docstring == "summary":
            summary = node.value.value.strip().splitlines()[0].strip()
            line = f'{indent(first)}"""{summary}"""'
            # as written when the quotes would pass 79 columns
            replace[first] = [line] if len(line) <= 79 else [
                f'{indent(first)}"""{summary}', f'{indent(first)}"""']
    previous_end = None
    for node in [] if checks else sorted(doors, key=lambda n: n.lineno):
        first, last = node.lineno - 1, node.end_lineno - 1
        drop.update(range(first, last + 1))
        if previous_end != first - 1:  # a new run of checks
            replace[first] = [f"{indent(first)}# ... input checks"]
        previous_end = last
    out = []
    for i, line in enumerate(lines):
        out += replace.get(i, [] if i in drop else [line])
    return "\n".join(out)
