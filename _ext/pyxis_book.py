"""Small Sphinx fixes for the Pyxis Notebooks website.

* sphinx-thebe 0.3.1 registers its inline configuration script twice, so every
  page throws ``Identifier 'THEBE_JS_URL' has already been declared``; keep one.
* pydata-sphinx-theme logs ``Got invalid theme mode`` when no default mode is
  set; Jupyter Book 1 sets none, so choose "auto" (follow the reader's system).
* The theme ships files no reader's browser loads: source maps, translation
  catalogues, TrueType copies of fonts every browser takes as woff2. After the
  build they are removed (the site's weight is measured by the website check).
* The theme's icon script (Font Awesome's SVG replacer, 1.5 MB) draws the same
  icons that its stylesheet already draws with the Font Awesome web fonts; the
  script is replaced by a one-line stub, so the icons come from the fonts.
* Those fonts (and the widget manager's older copies, which its stylesheet puts
  on the theme's ``fas``/``fab`` icons) hold 2,000 icons; the site shows about
  20. They are cut to the icons that a built page or the theme's stylesheet
  names, as small WOFF files in ``_static/icons/`` that ``pyxis.css`` declares.
* A widget page's text paints before its widgets load: the widget state (up
  to 0.6 MB of JSON that myst-nb puts in ``<head>``) moves to the end of the
  body, and the widget manager's scripts are deferred (``_config.yml``), so
  neither holds up the first paint. The manager renders on the window's load
  event, when both are there.
* The model view's output keeps the height the view will take (its
  ``pyxis-reserve-N-W`` class) from the start, so the page does not jump
  when the widgets appear. Every other view (a view switcher, an explorer)
  keeps the height of its first picture, the one the chapter stores, shown
  at the column's width, and of its controls (``pyxis-reserve-picture``).
* ``_static/pyxis-figures.js`` (the "Full size" button of a figure scaled
  to its column), which Jupyter Book adds to every page, is deferred.
* Static figures (matplotlib PNGs in ``_images/``) are stored as 256-colour
  palette PNGs: the same look, a third to half of the bytes.
* Tables read on any screen (issue #41, item 3). A code expression in a
  cell (one with a space, such as ``q_norm(q_proj(x).view(...)).transpose(1,
  2)``) may break after a dot, a parenthesis or a comma (``<wbr>``), so a
  column of code no longer widens its table past the column at 1280 px; a
  name with no space stays whole. A table of three or more columns whose
  rows run long is marked ``pyxis-stack``, and each of its cells after the
  first carries its column's heading (``pyxis-cell-label``, shown only
  where the table's own heading row is not): on a phone (``pyxis.css``)
  each row is a short block, its cells one under the other, each named,
  instead of a table cut at the screen's edge. In a printed table
  (``px.Table``) a name may break after a dot or an underscore (``<wbr>``).
* A printed table keeps its columns on a phone. There a printout's long
  lines wrap (``pyxis.css``), which breaks a table's rows apart; a printout
  of aligned columns whose widest line has at most ``COLUMNS_ON_A_PHONE``
  characters is marked ``pyxis-columns``, and ``pyxis.css`` sets its text
  just small enough for that line to fit the box, at 9.5 px or more, so
  each row stays one line.
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

ICON_FONTS = ("fa-solid-900", "fa-regular-400", "fa-brands-400")

ICON_SCRIPT_STUB = (
    "/* Pyxis Notebooks: the theme's icons are drawn by its Font Awesome web"
    " fonts (see _ext/pyxis_book.py). */\n"
)


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for js in context.get("script_files", []):
        # the copies differ only in filename None vs "" (both mean an inline script)
        key = (getattr(js, "filename", js) or "", getattr(js, "attributes", {}).get("body"))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    context["script_files"] = unique
    for js in unique:
        if str(getattr(js, "filename", js) or "").endswith(DEFERRED):
            js.attributes["defer"] = "defer"


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
DEFERRED = ("pyxis-figures.js", "pyxis-controls.js")


def _widget_state_last(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files", [])
    state = [js for js in scripts
             if getattr(js, "attributes", {}).get("type") == WIDGET_STATE]
    if not state or "body" not in context:
        return
    context["script_files"] = [js for js in scripts if js not in state]
    # the body is already escaped for a script element by myst-nb
    context["body"] += "".join(
        f'<script type="{WIDGET_STATE}">{js.attributes["body"]}</script>'
        for js in state)


RESERVE = re.compile(r"pyxis-reserve-(\d+)-(\d+)")
VIEW_OUTPUT = re.compile(
    r'<div class="cell_output docutils container">(\s*<script type="'
    r'application/vnd\.jupyter\.widget-view\+json">\{"model_id": "(\w+)")')


def _reserve_heights(app, pagename, templatename, context, doctree):
    """A view that says its height (the model view's ``pyxis-reserve-N-W``
    class: N px on a phone, W px at 700 px and wider) gets that height
    reserved on its output before the widget manager draws it, so the text
    below it does not move when it appears (pyxis.css)."""
    import json

    heights, models = {}, {}
    for js in context.get("script_files", []):
        attributes = getattr(js, "attributes", {})
        if attributes.get("type") != WIDGET_STATE:
            continue
        state = json.loads(attributes["body"])  # its "<\\/" is JSON too
        models.update(state.get("state", {}))
        for model_id, model in state.get("state", {}).items():
            classes = " ".join(model.get("state", {}).get("_dom_classes", []))
            found = RESERVE.search(classes)
            if found:
                heights[model_id] = found.groups()
    if not models or "body" not in context:
        return

    def reserve(match):
        if match.group(2) not in heights:
            found = _picture_view(models, match.group(2))
            if found is None:
                return match.group(0)
            controls, (width, height) = found
            return ('<div class="cell_output docutils container '
                    'pyxis-reserve-picture" style="--pyxis-controls:'
                    f'{controls}px;--pyxis-picture-w:{width}px;'
                    f'--pyxis-picture-ratio:{height / width:.5f}">'
                    + match.group(1))
        narrow, wide = heights[match.group(2)]
        return ('<div class="cell_output docutils container pyxis-reserve" '
                f'style="--pyxis-narrow:{narrow}px;--pyxis-wide:{wide}px">'
                + match.group(1))
    context["body"] = VIEW_OUTPUT.sub(reserve, context["body"])


# The heights (CSS px) a view's parts take on the page, the least they take
# on any screen: a control's row (a toggle's buttons may wrap to more rows on
# a phone), a dropdown's with its margins, a stack of sentences (the
# explorer's, one line at 1280 px); a hidden Output takes none. The picture's
# own height depends on the column's width: pyxis.css works it out.
CONTROL_PX = 28
CONTROL_PX_BY_MODEL = {"DropdownModel": 32, "OutputModel": 0}
TEXT_STACK_PX = 40
IMG_SIZE = re.compile(r'<img [^>]*width="(\d+)" height="(\d+)"')
PNG_DATA = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/]{32})')


def _children(models: dict, model_id: str) -> list[str]:
    children = models.get(model_id, {}).get("state", {}).get("children", [])
    return [c.removeprefix("IPY_MODEL_") for c in children]


def _first_picture(models: dict, model_id: str) -> tuple[int, int] | None:
    """The width and height of the first picture a view shows, the one the
    chapter stores as its picture (pyxis_nb.widgets._default_frame)."""
    import base64
    import struct

    model = models.get(model_id, {})
    state = model.get("state", {})
    if model.get("model_name") == "StackModel":
        children, index = _children(models, model_id), state.get("selected_index")
        return (None if index is None or index >= len(children)
                else _first_picture(models, children[index]))
    if model.get("model_name") == "HTMLModel":
        value = str(state.get("value", ""))
        found = PNG_DATA.search(value)
        if found is None:
            return None
        size = IMG_SIZE.search(value)  # its size on the page, if it says
        return (tuple(map(int, size.groups())) if size else
                struct.unpack(">II", base64.b64decode(found.group(1))[16:24]))
    for child in _children(models, model_id):
        found = _first_picture(models, child)
        if found is not None:
            return found
    return None


def _picture_view(models: dict, model_id: str):
    """A view of controls over a picture (view_switcher, view_grid,
    attention_explorer): the least height of its controls in px, and its
    first picture's width and height; None for any other widget."""
    picture, controls = None, 0
    for child in _children(models, model_id):
        found = _first_picture(models, child)
        if found is not None and picture is None:
            picture = found
        elif models.get(child, {}).get("model_name") == "StackModel":
            controls += TEXT_STACK_PX
        else:
            name = models.get(child, {}).get("model_name")
            controls += CONTROL_PX_BY_MODEL.get(name, CONTROL_PX)
    return None if picture is None else (controls, picture)


TABLE = re.compile(r'<table class="table">.*?</table>', re.S)
HEAD_CELL = re.compile(r'<th class="head"[^>]*>(.*?)</th>', re.S)
BODY_ROW = re.compile(r'(<tbody>.*?</tbody>)', re.S)
ROW = re.compile(r'<tr[^>]*>(.*?)</tr>', re.S)
CELL = re.compile(r'<td([^>]*)>(\s*<p>)?', re.S)
CODE = re.compile(r'<code class="docutils literal[^"]*">(.*?)</code>', re.S)
TAG = re.compile(r'<[^>]+>')
# a row longer than this (its cells' text, in characters) does not fit one
# line of a phone's column (about 45 characters of body text at 390 px)
STACK_ROW_CHARS = 48


def _breakable(code: re.Match) -> str:
    """A code expression (its text has a space) with a break opportunity
    after each dot, opening parenthesis and comma; a name stays whole."""
    inner = code.group(1)
    if " " not in TAG.sub("", inner).strip():
        return code.group(0)
    parts = re.split(r"(<[^>]+>)", inner)
    parts = [part if part.startswith("<")
             else re.sub(r"([.(,])(?=\S)", r"\1<wbr>", part) for part in parts]
    return code.group(0).replace(inner, "".join(parts), 1)


# a cell of a printed table (px.Table's HTML: its text right in the <td>,
# where a book table's cell holds a <p>)
PLAIN_CELL = re.compile(r"(<td[^>]*>)([^<]+)(?=</td>)")


def _name_breaks(cell: re.Match) -> str:
    """A printed table's cell with a break opportunity after each dot and
    underscore inside a name (``llama.attention.head_count`` breaks as
    ``llama.attention.|head_count``, never inside a word); a number's
    decimal point is not one (after a letter only)."""
    return cell.group(1) + re.sub(r"(?<=[A-Za-z])([._])(?=\w)", r"\1<wbr>",
                                  cell.group(2))


def _table(match: re.Match) -> str:
    table = PLAIN_CELL.sub(_name_breaks,
                           CODE.sub(_breakable, match.group(0)))
    heads = HEAD_CELL.findall(table)
    body = BODY_ROW.search(table)
    if len(heads) < 3 or not body:
        return table
    rows = [" ".join(TAG.sub("", row).split()) for row in ROW.findall(body.group(1))]
    if len(heads) < 4 and max(map(len, rows), default=0) <= STACK_ROW_CHARS:
        return table
    labels = [re.sub(r"</?p>", "", h).strip() for h in heads]

    def cells(row: re.Match) -> str:
        column = iter(range(len(labels)))

        def label(cell: re.Match) -> str:
            k = next(column, None)
            if k is None or k == 0 or not TAG.sub("", labels[k]).strip():
                return cell.group(0)
            return (cell.group(0) + '<span class="pyxis-cell-label">'
                    f'{labels[k]}</span> ')
        return CELL.sub(label, row.group(0))

    table = table.replace(body.group(1), ROW.sub(cells, body.group(1)), 1)
    return table.replace('<table class="table">',
                         '<table class="table pyxis-stack">', 1)


def _tables(app, pagename, templatename, context, doctree):
    """Code in table cells that can break, and long tables that stack on a
    phone (see the module's docstring)."""
    if "body" in context and "<table" in context["body"]:
        context["body"] = TABLE.sub(_table, context["body"])


# A printed result: myst-nb's stream output, its text in one <pre>
PRINTOUT = re.compile(
    r'<div class="(output stream [^"]*)"><div class="highlight"><pre>(.*?)</pre>',
    re.S)
# the widest printout that still fits a phone's column on one line at 9.5 px
# (pyxis.css): 340 px inside the box, 0.6 em a monospaced character
COLUMNS_ON_A_PHONE = 58


def _printout(match) -> str:
    """Mark a printed table that fits a phone at a smaller size
    (``pyxis-columns``, its widest line in ``--pyxis-cols``)."""
    text = html.unescape(re.sub(r"<[^>]+>", "", match.group(2)))
    lines = text.splitlines()
    widest = max(map(len, lines), default=0)
    # columns: two or more lines with a gap of two spaces between words
    table = sum(bool(re.search(r"\S {2,}\S", line)) for line in lines) >= 2
    if not table or widest > COLUMNS_ON_A_PHONE:
        return match.group(0)
    return (f'<div class="{match.group(1)} pyxis-columns">'
            f'<div class="highlight"><pre style="--pyxis-cols: {widest}">'
            f'{match.group(2)}</pre>')


def _printouts(app, pagename, templatename, context, doctree):
    """Printed tables keep their columns on a phone (see the module's
    docstring)."""
    if "body" in context and "output stream" in context["body"]:
        context["body"] = PRINTOUT.sub(_printout, context["body"])


# Code, a cell's, a listing's or a page's (not a printout, whose block's
# class starts "output"): Pygments writes each line whole (a token
# over two lines is closed and opened again), "\n" between them
CODE_BLOCK = re.compile(
    r'(<div class="highlight-[\w-]+ notranslate">'
    r'<div class="highlight"><pre>)(.*?)(</pre>)', re.S)


def _line(line: str) -> str:
    text = html.unescape(re.sub(r"<[^>]+>", "", line))
    indent = len(text) - len(text.lstrip(" "))
    return (f'<span class="pyxis-line" style="--pyxis-indent: {indent}ch">'
            f'{line}\n</span>')


def _code(match) -> str:
    """Each line of a code block in a span of its own, which a phone wraps
    under the line's own indentation (``pyxis.css``)."""
    *lines, last = match.group(2).split("\n")
    return match.group(1) + "".join(map(_line, lines)) + last + match.group(3)


def _code_lines(app, pagename, templatename, context, doctree):
    """Code wraps on a phone instead of running off the screen (issue 55,
    item 1): every line in a span, so that a wrapped line continues under
    its own indentation, marked; the text is the same, and so is a copy."""
    if "body" in context and "<pre>" in context["body"]:
        context["body"] = CODE_BLOCK.sub(_code, context["body"])


def _default_mode(app, config):
    config.html_context.setdefault("default_mode", "auto")
    # one search, in the sidebar: the theme's top bar holds nothing but a
    # second search field (navbar_persistent), so it goes, bar and all
    config.html_theme_options["navbar_persistent"] = []


def _used_icons(outdir: Path, css: str) -> set[int]:
    """Code points of the Font Awesome icons the site can show."""
    names = set()
    for page in outdir.rglob("*.html"):
        names |= set(re.findall(r"\bfa-[a-z0-9-]+", page.read_text(errors="ignore")))
    points = set()
    for selectors, char in re.findall(r"([^{}]+)\{content:\"([^\"]+)\"\}", css):
        if set(re.findall(r"\.(fa-[a-z0-9-]+):+before", selectors)) & names:
            points.add(_char(char))
    for char in re.findall(r"--pst-icon-[a-z-]+:\"([^\"]+)\"", css):
        points.add(_char(char))
    return points


def _char(text: str) -> int:
    return int(text[1:], 16) if text.startswith("\\") else ord(text)


def _subset_icon_fonts(static: Path, theme_static: Path) -> None:
    from fontTools import subset

    css = (static / "styles" / "pydata-sphinx-theme.css").read_text()
    points = _used_icons(static.parent, css)
    (static / "icons").mkdir(exist_ok=True)
    for name in ICON_FONTS:
        ttf = theme_static / "vendor" / "fontawesome" / "webfonts" / f"{name}.ttf"
        options = subset.Options()
        options.flavor = "woff"
        font = subset.load_font(str(ttf), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=points)
        subsetter.subset(font)
        subset.save_font(font, str(static / "icons" / f"{name}.woff"), options)


def _palette_images(images: Path) -> None:
    from PIL import Image

    for png in images.glob("*.png"):
        image = Image.open(png)
        if image.mode == "P":
            continue
        palette = image.convert("RGB").quantize(
            colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        buf = io.BytesIO()
        palette.save(buf, format="png", optimize=True)
        if buf.tell() < png.stat().st_size:
            png.write_bytes(buf.getvalue())


def _prune(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    import pydata_sphinx_theme

    theme_static = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"
    _subset_icon_fonts(static, theme_static)
    _palette_images(Path(app.outdir) / "_images")
    unused = [*static.rglob("*.map"), *static.glob("vendor/fontawesome/webfonts/*")]
    for path in unused:
        path.unlink()
    for path in sorted(static.glob("locales/**/*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    if (static / "locales").is_dir():
        (static / "locales").rmdir()
    # html_extra_path only adds files: drop what an earlier vendoring left behind
    for extra in app.config.html_extra_path:
        vendored = Path(app.confdir) / extra / "_static"
        for top in vendored.iterdir() if vendored.is_dir() else []:
            built = static / top.name
            for path in sorted(built.rglob("*"), reverse=True) if top.is_dir() else []:
                if not (vendored / path.relative_to(static)).exists():
                    path.rmdir() if path.is_dir() else path.unlink()
    icons = static / "scripts" / "fontawesome.js"
    if icons.exists():
        icons.write_text(ICON_SCRIPT_STUB)


def setup(app):
    app.connect("config-inited", _default_mode)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("html-page-context", _reserve_heights, priority=905)
    app.connect("html-page-context", _widget_state_last, priority=910)
    app.connect("html-page-context", _tables, priority=915)
    app.connect("html-page-context", _printouts, priority=916)
    app.connect("html-page-context", _code_lines, priority=917)
    app.connect("build-finished", _prune)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
