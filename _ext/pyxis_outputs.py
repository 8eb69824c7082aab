"""The words inside the chapters' outputs, in the edition's language.

Both editions show the same stored outputs (the English notebooks'), and
outputs stay English: printouts, code and numbers. But a figure's alt text,
a widget's labels and the sentence a view writes under its picture are
words for the reader, not output to compare: this extension translates
them while the Japanese edition reads a chapter (``source-read``), from
``locale/ja/outputs.po``.

A message is a whole string: an alt text, a label, a sentence. Most are
written by code from numbers and tokens, so a msgid may hold named slots:
``{name}`` matches any text, ``{name:n}`` a number. The msgstr places the
same slots; what a slot matched is translated in turn when it is itself a
message (``"causal mask"`` inside an alt text), and kept as it is when it
is a number or a token. A string that is words for the reader and matches
no message fails the build (a warning, and the build runs with ``-W``), so
a re-run that writes a new sentence cannot leave it in English:
``python tools/output_messages.py`` lists those strings.
"""

from __future__ import annotations

import functools
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

CATALOG = Path(__file__).resolve().parent.parent / "locale" / "{lang}" / "outputs.po"
STATE = "application/vnd.jupyter.widget-state+json"

# a slot in a msgid: {name} or {name:n}
SLOT = re.compile(r"\{(\w+)(?::(n))?\}")
NUMBER = r"[-+−]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:e[-+]?\d+)?"
# the widget attributes that are labels
LABELS = ("description", "tooltip")
LABEL_LISTS = ("_options_labels", "tooltips")
# inside a widget's HTML: attributes a reader meets, and the text of elements
HTML_ATTRIBUTE = re.compile(r'(\b(?:alt|aria-label|title)=")([^"]*)(")')
# a view's name, which its control's label shows ("causal mask / head 0");
# a grid's names join the two controls' labels with " / "
VIEW_NAME = re.compile(r'(\bdata-view=")([^"]*)(")')
HTML_TEXT = re.compile(r"(>)([^<>]+)(<)")
STYLE = re.compile(r"<style\b.*?</style>", re.S)


def is_words(text: str) -> bool:
    """Whether ``text`` is words for a reader (so it needs a translation):
    two or more English words of two or more letters, quoted tokens
    (``'cat'``) left out; a lone word, a name like ``L17 H4`` or ``d = 8``
    is not."""
    bare = re.sub(r"'[^']*'", "", text)
    return len(re.findall(r"\b[A-Za-z]{2,}\b", bare)) >= 2


@dataclass
class Message:
    msgid: str
    msgstr: str
    pattern: re.Pattern
    literal: int  # characters outside the slots: the more, the surer


@dataclass
class OutputCatalog:
    """The catalog's messages: exact ones by text, templates by regex."""

    exact: dict[str, str] = field(default_factory=dict)
    templates: list[Message] = field(default_factory=list)
    used: set[str] = field(default_factory=set)  # the msgids translate() matched

    @classmethod
    def read(cls, path: Path) -> OutputCatalog:
        from babel.messages.pofile import read_po

        with open(path, "rb") as f:
            po = read_po(f)
        catalog = cls()
        for m in po:
            if not m.id or not m.string:
                continue
            catalog.add(m.id, m.string)
        return catalog

    def add(self, msgid: str, msgstr: str) -> None:
        slots = SLOT.findall(msgid)
        if not slots:
            self.exact[msgid] = msgstr
            return
        names = sorted(name for name, _ in slots)
        placed = sorted(name for name, _ in SLOT.findall(msgstr))
        if names != placed:
            raise ValueError(f"outputs catalog: msgstr of {msgid!r} places "
                             f"the slots {placed}, not {names}")
        parts, pos = [], 0
        for found in SLOT.finditer(msgid):
            parts.append(re.escape(msgid[pos:found.start()]))
            kind = NUMBER if found.group(2) == "n" else ".+?"
            parts.append(f"(?P<{found.group(1)}>{kind})")
            pos = found.end()
        parts.append(re.escape(msgid[pos:]))
        literal = len(SLOT.sub("", msgid))
        self.templates.append(Message(msgid, SLOT.sub(r"{\1}", msgstr),
                                      re.compile("".join(parts) + r"\Z", re.S),
                                      literal))
        self.templates.sort(key=lambda m: -m.literal)

    def translate(self, text: str) -> str | None:
        """``text`` in the catalog's language, or None if no message
        matches it."""
        if text in self.exact:
            self.used.add(text)
            return self.exact[text]
        for message in self.templates:
            found = message.pattern.match(text)
            if found:
                self.used.add(message.msgid)
                values = {name: self.translate(value) or value
                          for name, value in found.groupdict().items()}
                return message.msgstr.format(**values)
        return None


def _strings(nb: dict):
    """Every string of a notebook's outputs that is words for a reader, as
    (where, text, setter): ``setter(translation)`` puts the translation in
    its place in ``nb``."""
    for cell in nb.get("cells", []):
        # myst-nb takes a picture's alt text from the cell's metadata
        image = cell.get("metadata", {}).get("mystnb", {}).get("image", {})
        if isinstance(image, dict) and image.get("alt"):
            yield "alt text", image["alt"], (
                lambda t, a=image: a.__setitem__("alt", t))
        for out in cell.get("outputs", []):
            alt = out.get("metadata", {}).get("image/png", {})
            if isinstance(alt, dict) and alt.get("alt"):
                yield "alt text", alt["alt"], (
                    lambda t, a=alt: a.__setitem__("alt", t))
    models = nb.get("metadata", {}).get("widgets", {}).get(STATE, {})
    for model in models.get("state", {}).values():
        state = model.get("state", {})
        for key in LABELS:
            if isinstance(state.get(key), str) and state[key].strip():
                yield "widget label", state[key], (
                    lambda t, s=state, k=key: s.__setitem__(k, t))
        for key in LABEL_LISTS:
            for i, label in enumerate(state.get(key) or []):
                if isinstance(label, str) and label.strip():
                    yield "widget label", label, (
                        lambda t, s=state, k=key, i=i: s[k].__setitem__(i, t))
        if model.get("model_name") == "HTMLModel" and state.get("value"):
            yield from _html_strings(state)


def _html_strings(state: dict):
    """The attributes and element texts of an HTML widget's value."""
    value = state["value"]
    styles = STYLE.findall(value)
    body = STYLE.sub("\x00", value)
    found = []
    for regex, kind in ((HTML_ATTRIBUTE, "widget alt text"),
                        (VIEW_NAME, "view name"), (HTML_TEXT, "widget text")):
        for m in regex.finditer(body):
            text = html.unescape(m.group(2))
            if text.strip():
                found.append((kind, m.start(2), m.end(2), text))
    found.sort(key=lambda f: f[1])
    translations: dict[int, str] = {}

    def put(i: int, t: str) -> None:
        translations[i] = t
        out, pos = [], 0
        for j, (_, start, end, _text) in enumerate(found):
            out.append(body[pos:start])
            out.append(html.escape(translations[j], quote=True)
                       if j in translations else body[start:end])
            pos = end
        out.append(body[pos:])
        rebuilt = "".join(out)
        for style in styles:
            rebuilt = rebuilt.replace("\x00", style, 1)
        state["value"] = rebuilt

    for i, (kind, _start, _end, text) in enumerate(found):
        yield kind, text.strip(), (lambda t, i=i, text=text: put(
            i, text.replace(text.strip(), t)))


def translate_notebook(nb: dict, catalog: OutputCatalog) -> list[tuple[str, str]]:
    """Translate ``nb``'s output words in place; returns (kind, text) for
    each string of words that no message matches."""
    missing = []
    for kind, text, setter in list(_strings(nb)):
        if kind == "view name":  # each control's label, as the control shows it
            parts = [catalog.translate(part) for part in text.split(" / ")]
            setter(" / ".join(new or old for new, old in
                              zip(parts, text.split(" / "))))
            missing += [(kind, old) for new, old in zip(parts, text.split(" / "))
                        if new is None and is_words(old)]
            continue
        translated = catalog.translate(text)
        if translated is not None:
            setter(translated)
        elif is_words(text):
            missing.append((kind, text))
    return missing


# said once in each chapter, under its first output (issue 54, item 2): the
# outputs are the English notebooks' own
OUTPUTS_NOTE = {
    "ja": ("*この出力のように、コードの出力はコードが出力したとおり英語のまま示します"
           "（この章のほかの出力も同じです）。図の説明文とウィジェットの操作部分は"
           "日本語です。*"),
}


def note_outputs(nb: dict, note: str) -> bool:
    """Put ``note`` in a Markdown cell after the first code cell that shows
    an output; returns whether there was one."""
    cells = nb.get("cells", [])
    for i, cell in enumerate(cells):
        tags = cell.get("metadata", {}).get("tags", [])
        if (cell.get("cell_type") == "code" and cell.get("outputs")
                and not {"remove-output", "remove-cell", "hide-output"} & set(tags)):
            cells.insert(i + 1, {"cell_type": "markdown", "metadata": {},
                                 "id": "pyxis-outputs-note", "source": note})
            return True
    return False


@functools.lru_cache(maxsize=1)
def _catalog(path: Path, mtime_ns: int) -> OutputCatalog:
    """The catalog, read once a build (every chapter's read asks for it)."""
    return OutputCatalog.read(path)


def _source_read(app, docname, source):
    from sphinx.util import logging

    if not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
    language = app.config.language or "en"
    path = Path(str(CATALOG).format(lang=language))
    if not path.is_file():
        return
    nb = json.loads(source[0])
    missing = translate_notebook(nb, _catalog(path, path.stat().st_mtime_ns))
    log = logging.getLogger(__name__)
    for kind, text in missing:
        log.warning(f"{docname}: {kind} not in {path.name}: {text!r}",
                    location=docname)
    if language in OUTPUTS_NOTE:
        note_outputs(nb, OUTPUTS_NOTE[language])
    source[0] = json.dumps(nb, ensure_ascii=False, indent=1)


def _fingerprint(language: str) -> str:
    import hashlib

    digest = hashlib.sha256(Path(__file__).read_bytes())
    path = Path(str(CATALOG).format(lang=language))
    if path.is_file():
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _outdated(app, env, added, changed, removed):
    """Every chapter again when the catalog or this file changed since the
    last build: Sphinx would otherwise keep the pages it read before."""
    now = _fingerprint(app.config.language or "en")
    before = getattr(env, "pyxis_outputs_fingerprint", None)
    env.pyxis_outputs_fingerprint = now
    if before is None or before == now:
        return []
    return [doc for doc in env.found_docs
            if str(env.doc2path(doc)).endswith(".ipynb")]


def setup(app):
    # after pyxis_widget_views has put the widget views back (priority 500)
    app.connect("source-read", _source_read, priority=600)
    app.connect("env-get-outdated", _outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
