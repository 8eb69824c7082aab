"""The package's own conventions that no tool states, each with its reason.

What a tool states is not here: 79 columns and unused imports are ruff's
(E501, F401: ``[tool.ruff]`` in pyproject.toml), the layers are
import-linter's (``lint-imports``, the contract in pyproject.toml, tested
below to be ``px.LAYERS``); ``make lint`` runs both, first in ``make test``.
Here: listing sizes, documented parameters, a numpy-only import, one
notation, no private names across modules, each array checked once, plain
raises of the bad-input kinds.
"""

import ast
import functools
import importlib
import inspect
import json
import pathlib
import re
import tomllib

import numpy as np
import pytest

import pyxis_nb as px
from conftest import fresh_python
from pyxis_nb import _checks, source

PKG = pathlib.Path(px.__file__).parent
# the modules, and the one subpackage (exercises: a module a chapter)
MODULES = sorted([p.stem for p in PKG.glob("*.py") if p.stem != "__init__"]
                 + [p.parent.name for p in PKG.glob("*/__init__.py")])
PUBLIC = [m for m in MODULES if not m.startswith("_")]


def module_path(module: str) -> pathlib.Path:
    """A module's file: ``masks.py``, or a subpackage's ``__init__.py``."""
    path = PKG / f"{module}.py"
    return path if path.exists() else PKG / module / "__init__.py"
BOOK = PKG.parent / "book"


# ------------------------------------------------- (a) chapter listings
# No tool: a budget of what a reader sees in a chapter's listing.
# A listing shows the maths. ``px.show_source`` keeps a docstring's summary
# line only (``help()`` has the rest: parameters, returns, examples) and,
# with ``checks=False``, folds the door checks into one comment line. The
# budget is measured on what a reader sees: the listing as the chapter's
# call displays it has at most MAX_CHECKS lines of input checks and at most
# one docstring line per def or class. The objects are the ones the stored
# chapters pass to px.show_source.

MAX_CHECKS = 6
CALL = re.compile(r"show_source\(([\w.]+)((?:,[^)]*)?)\)")


def chapter_listings() -> dict[str, str]:
    """Every ``px.show_source(X, ...)`` target in the chapters' code cells,
    with the keyword arguments of its call (as source text)."""
    found = {}
    for nb in BOOK.glob("*.ipynb"):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                for expr, args in CALL.findall(source):
                    found[expr] = args.strip(", ")
    return found


def shown_object(expr: str):
    """``px.rope.rotate_pairs``, ``px.KVCache.update`` or ``softmax_core``:
    the object, or None for a name the package lacks (nbval fails that
    chapter)."""
    obj = px
    for part in expr.removeprefix("px.").split("."):
        obj = getattr(obj, part, None)
    return obj


def seen_lines(listing: str) -> tuple[int, int, int]:
    """(lines, docstring lines, check lines) of a listing's text."""
    docs, checks = source.door_statements(ast.parse(listing))
    doc = {i for n in docs for i in range(n.lineno, n.end_lineno + 1)}
    check = {i for n in checks for i in range(n.lineno, n.end_lineno + 1)}
    return len(listing.splitlines()), len(doc), len(check - doc)


def displayed(expr: str, args: str) -> str:
    """The listing as the chapter's ``px.show_source(expr, args)`` shows it."""
    return eval(f"px.show_source({expr}{', ' + args if args else ''})",
                {"px": px}).source


def shown() -> dict:
    objs = {e: shown_object(e) for e in sorted(chapter_listings())}
    return {e: obj for e, obj in objs.items() if obj is not None}


def test_the_chapters_show_listings():
    assert len(shown()) >= 30  # the parser finds the chapters' listings


@pytest.mark.parametrize("expr", sorted(chapter_listings()))
def test_a_listing_is_mostly_maths(expr):
    if shown_object(expr) is None:
        pytest.skip(f"{expr}: not in the package (nbval fails the chapter)")
    listing = displayed(expr, chapter_listings()[expr])
    _, doc, checks = seen_lines(listing)
    defs = len(re.findall(r"^\s*(def|class) ", listing, re.M))
    # a summary line, and its closing quotes where they would not fit on it
    assert doc <= 2 * defs, f"{expr}: {doc} docstring lines for {defs} defs"
    assert checks <= MAX_CHECKS, (
        f"{expr}: a reader sees {checks} check lines > {MAX_CHECKS}: "
        "show it with checks=False, or move the checks into one helper")


def test_the_counter_counts_docstrings_and_checks():
    def f(x):
        """One.

        Two."""
        x = check_positive_int("x", x)
        if x > 3:
            raise ValueError(x)
        return x + 1

    from pyxis_nb._checks import check_positive_int  # noqa: F401
    full = px.show_source(f, docstring="full").source
    assert seen_lines(full) == (8, 3, 3)
    assert seen_lines(px.show_source(f).source) == (6, 1, 3)
    folded = px.show_source(f, checks=False).source
    assert seen_lines(folded) == (4, 1, 0)
    assert folded.splitlines()[2] == "    # ... input checks"


# ---------------------------------------- (a') help() shows the parameters
# No tool: ruff's D417 reads Google-style sections; on numpydoc (grouped
# names "a, b : int", a class's parameters in its own docstring) it finds
# 69 false misses in the package.

# widgets.py is being reworked elsewhere; its module-level names join the
# test when that lands (its top-level names are in it already).
HELP_NOT_YET = set()


def public_callables():
    """(name, object) of every public function, class and method: the
    top-level names, then the other names of each module's ``__all__``
    (``px.<module>.<name>``); class and static methods included."""
    seen = set()
    names = [(name, px, name) for name in px.__all__] + [
        (f"{m}.{name}", importlib.import_module(f"pyxis_nb.{m}"), name)
        for m in PUBLIC if m not in HELP_NOT_YET
        for name in importlib.import_module(f"pyxis_nb.{m}").__all__]
    for label, where, name in names:
        obj = getattr(where, name)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if inspect.isfunction(obj):
            yield label, obj
        elif inspect.isclass(obj) and obj.__module__.startswith("pyxis_nb"):
            yield label, obj
            for attr, member in vars(obj).items():
                member = getattr(member, "__func__", member)  # class/static
                if inspect.isfunction(member) and not attr.startswith("_"):
                    yield f"{label}.{attr}", member


def undocumented(obj) -> list[str]:
    """The parameters of ``obj`` its numpydoc ``Parameters`` do not name."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        names = [n for n in inspect.signature(target).parameters
                 if n not in ("self", "cls")]
    except (TypeError, ValueError):
        return []
    if inspect.isclass(obj) and hasattr(obj, "_fields"):  # a NamedTuple
        names = list(obj._fields)
    doc = inspect.getdoc(obj) or ""
    if inspect.isclass(obj) and "Parameters" not in doc:
        doc += inspect.getdoc(target) or ""
    if not names:
        return []
    if "Parameters\n----------" not in doc:
        return names
    section = doc.split("Parameters\n----------", 1)[1]
    section = re.split(r"\n\n[A-Z][a-z]+( [A-Z][a-z]+)?\n-+", section)[0]
    named = set(re.findall(r"^(\*{0,2}\w+(?:, \*{0,2}\w+)*)(?: ?:|$)",
                           section, re.M))
    named = {n.strip("*") for group in named for n in group.split(", ")}
    return [n for n in names if n not in named]


@pytest.mark.parametrize("name, obj", list(public_callables()),
                         ids=[n for n, _ in public_callables()])
def test_help_shows_every_parameter(name, obj):
    assert not undocumented(obj), (
        f"help(px.{name}) does not document {undocumented(obj)}")


def test_no_module_keeps_a_details_section():
    """Parameter docs live on their functions, where help() and an IDE
    find them, not in a module's Details section."""
    assert [m for m in MODULES
            if "\nDetails\n-------" in module_path(m).read_text()] == []


# ------------------------------------------------- (b) numpy-only import
# No tool: what ``import pyxis_nb`` loads at run time (PEP 562 lazy names).

def test_import_loads_numpy_only():
    code = (
        "import sys, pyxis_nb as px\n"
        "heavy = [m for m in ('matplotlib', 'ipywidgets', 'IPython')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert 'plot_attention' in px.__all__ and 'plot_attention' in dir(px)\n"
        "assert 'attention_explorer' in px.__all__\n"
        "assert callable(px.plot_attention)\n"
        "assert 'matplotlib' in sys.modules\n"
    )
    done = fresh_python(code, cwd=PKG.parent)
    assert done.returncode == 0, done.stderr


def test_lazy_names_are_their_modules_own():
    for name, module in px._LAZY_NAMES.items():
        mod = importlib.import_module(f"pyxis_nb.{module}")
        assert name in mod.__all__ and name in px.__all__
        assert getattr(px, name) is getattr(mod, name)


def test_every_module_is_listed_once_in_a_layer():
    assert sorted(px._MODULES) == PUBLIC


# -------------------------------------- (b') a namespace a newcomer can hold
# No tool: the size and the contents of the top-level namespace.

def test_the_top_level_has_at_most_60_names():
    assert len(px.__all__) <= 60, len(px.__all__)
    for name in px.__all__:  # each one is there, and is the module's own
        assert getattr(px, name) is not None


def test_every_module_name_is_reachable_from_its_module():
    """A name that is not at the top level is ``px.<module>.<name>``."""
    for module in PUBLIC:
        mod = importlib.import_module(f"pyxis_nb.{module}")
        assert getattr(px, module) is mod
        for name in mod.__all__:
            assert hasattr(mod, name), f"{module}.{name}"


def test_no_core_function_is_exported_at_the_top_level():
    assert [n for n in px.__all__ if n.endswith("_core")] == []


def test_the_layer_diagram_matches_the_layers():
    """CONTRIBUTING.md and the package docstring draw LAYERS as they are."""
    text = (PKG.parent / "CONTRIBUTING.md").read_text()
    for doc in (text, px.__doc__):
        for layer, modules in px.LAYERS.items():
            row = [line for line in doc.splitlines()
                   if line.strip().startswith(layer)]
            assert row, f"no row for {layer!r}"
            got = " ".join(row[0].split()[len(layer.split()):])
            wrapped = [line for line in doc.splitlines()[
                doc.splitlines().index(row[0]) + 1:][:1]
                if line.startswith(" " * 10) and line.strip()
                and "|" not in line]
            got = " ".join([got] + [w.strip() for w in wrapped]).split()
            assert [w for w in got if w in PUBLIC] == modules, layer


# ------------------------------------------------------ (c) one notation
# No tool: the book's own shape notation.

# the book's notation table, and the few extras the package needs
# (rows: a tile's rows, its queries times n_rep, in the tiled kernel)
NOTATION = {"...", "B", "T", "S", "L", "V", "d_model", "d_head", "H", "H_kv",
            "n_rep", "block_q", "block_k", "d_ff", "rows",
            # linear attention's: query/key heads and sizes, chunk length
            "H_k", "d_k", "d_v", "C",
            # multi-head latent attention's ranks and slices
            "r_q", "r", "d_nope", "d_rope", "d_qk"}


def legend_symbols(module: str) -> list[str]:
    """The symbols of the ``Shape legend:`` block of a module docstring."""
    doc = ast.get_docstring(ast.parse(module_path(module).read_text()))
    lines = (doc or "").splitlines()
    starts = [i for i, line in enumerate(lines)
              if line.strip().startswith("Shape legend")]
    symbols = []
    for line in lines[starts[0] + 1:] if starts else []:
        if not line.strip():
            break
        head = re.split(r"\s{2,}", line.strip())[0]
        if line.startswith(" " * 9):  # a continued meaning
            continue
        symbols += [s.strip() for s in head.split(",")]
    return symbols


@pytest.mark.parametrize("module", [
    # source and loading hold no arrays: no shapes to name; exercises'
    # arrays are the chapters' own, named there
    m for m in MODULES
    if m not in ("source", "_checks", "loading", "exercises")
    or legend_symbols(m)])
def test_shape_legend_uses_the_notation(module):
    symbols = legend_symbols(module)
    assert symbols, f"{module} has no 'Shape legend:' block"
    assert set(symbols) <= NOTATION, set(symbols) - NOTATION


# ------------------------------------------- (e) no private imports
# No tool: ruff's PLC2701 is a preview rule and skips imports within a
# package, which is where this one applies (_checks excepted).

def imports(module: str):
    """(imported module, names) for each ``from .x import ...``."""
    tree = ast.parse(module_path(module).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module is None:  # from . import x: the module x
                yield from ((a.name, []) for a in node.names)
            else:
                yield node.module, [a.name for a in node.names]


def private_imports(module: str) -> list[str]:
    return [f"{src}.{name}" for src, names in imports(module)
            for name in names if src != "_checks" and name.startswith("_")]


@pytest.mark.parametrize("module", MODULES)
def test_no_private_name_from_another_module(module):
    assert not private_imports(module)


# ------------------------------- (f) layers: import-linter's contract
# lint-imports holds the layers (pyproject.toml); this keeps its list and
# px.LAYERS one list, so that neither can move alone.

def test_the_import_contract_is_the_layers():
    config = tomllib.loads((PKG.parent / "pyproject.toml").read_text())
    [contract] = config["tool"]["importlinter"]["contracts"]
    assert contract["type"] == "layers" and contract["exhaustive"]
    assert contract["containers"] == ["pyxis_nb"]
    assert contract["layers"][::-1] == ["_checks"] + px._MODULES


# ------------------------------- (g) lean core: each array checked once
# No tool: what the door checks are given at run time.

ARRAY_CHECKS = ("as_float_array", "check_01_mask", "check_positions")


@pytest.fixture
def checked(monkeypatch):
    """The arrays the ``_checks`` helpers are given, in call order.

    Each module binds the helpers by name (``from ._checks import ...``),
    so the spy replaces them in ``_checks`` and in every module that bound
    them. The arrays themselves are kept, so no id is reused.
    """
    seen = []
    for name in ARRAY_CHECKS:
        real = getattr(_checks, name)

        def spy(label, x, *args, _real=real, **kwargs):
            seen.append((label, x))
            return _real(label, x, *args, **kwargs)

        monkeypatch.setattr(_checks, name, spy)
        for module in MODULES:
            mod = importlib.import_module(f"pyxis_nb.{module}")
            if getattr(mod, name, None) is real:
                monkeypatch.setattr(mod, name, spy)
    return seen


def twice(seen) -> list[str]:
    """The labels of arrays that were checked more than once."""
    out = []
    for i, (label, x) in enumerate(seen):
        if any(x is y for _, y in seen[:i]):
            out.append(label)
    return out


def test_a_layer_checks_each_array_once(checked):
    layer = px.random_attention(16, 4, 2, 8, qk_norm=True, rope_theta=1e4)
    x = np.random.default_rng(0).standard_normal((2, 3, 16))
    mask = np.array([[0, 1, 1], [1, 1, 1]])
    cache = px.KVCache(1, 2, 2, 8, 8)
    checked.clear()  # the weights were checked once, when the layer was built
    layer(x, attention_mask=mask, cache=cache)
    assert not twice(checked)
    inputs = [label for label, a in checked if a is x or a is mask]
    assert inputs == ["hidden_states", "attention_mask"]  # once each
    # the rest are the cache's own door: the new keys and values, once
    assert {label for label, _ in checked} - set(inputs) <= {
        "key_states", "value_states", "position_ids"}


def _full_model():
    from checkpoints import SIZES
    return px.Qwen3ForCausalLM.from_config(px.ModelConfig(
        **SIZES | dict(num_hidden_layers=3, vocab_size=32,
                       max_position_embeddings=16)))


@pytest.mark.parametrize("build", [
    lambda: px.TinyDecoder(num_hidden_layers=3), _full_model],
    ids=["attention only", "with MLPs"])
def test_a_decoder_checks_its_inputs_once_for_every_layer(checked, build):
    model = build()
    ids = np.array([[0, 5, 7], [4, 5, 6]])
    mask = np.array([[0, 1, 1], [1, 1, 1]])
    cache = model.new_cache(4, 2)
    checked.clear()
    model(ids, attention_mask=mask, cache=cache)
    assert not twice(checked)
    labels = [label for label, _ in checked]
    assert labels.count("attention_mask") == 1
    assert labels.count("position_ids") <= 1
    assert "hidden_states" not in labels  # no layer re-checks its input


# --------------------------------- (h) checks: at the door, said plainly
# No tool: which helpers and which exceptions (a lint rule could ban a
# raise; none states the project's list).
# A check that several modules use is a helper in _checks; a check used
# once lives beside its caller, as a plain ``raise`` (an earlier rule
# allowed five raises outside _checks, and raises were then dressed as
# ``check_needs(False, ...)`` calls to pass it: that hid the raise, so the
# rule changed). Every raise is one of the errors bad input gets.

# One stays, for a reason outside _checks: ``check_positions`` (RoPE's
# alone) is one of the ARRAY_CHECKS the spy below patches in _checks, to
# count that every array is checked once.
ONE_MODULE_CHECKS = 1
ERRORS = {"ValueError", "TypeError", "FileNotFoundError",
          "AttributeError", "ImportError",
          "OSError",  # a download that failed (loading.fetch_smollm2)
          "TemplateError"}  # a chat template's own raise, as transformers


def raised(module: str) -> list[tuple[int, str]]:
    """(line, exception name) of each ``raise`` in ``module``."""
    tree = ast.parse(module_path(module).read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            out.append((node.lineno, getattr(exc, "id", None)
                        or getattr(exc, "attr", "?")))
    return out


@pytest.mark.parametrize("module", MODULES + ["__init__"])
def test_raises_are_plain_and_of_the_bad_input_kinds(module):
    text = module_path(module).read_text()
    assert "check_needs(False" not in text  # a raise dressed as a call
    assert [r for r in raised(module) if r[1] not in ERRORS] == []


def test_a_check_in_checks_serves_more_than_one_module():
    """_checks holds the generic checks; one module's check lives there."""
    used = {}
    for module in MODULES + ["__init__"]:
        if module == "_checks":
            continue
        for src, names in imports(module):
            if src == "_checks":
                for name in names:
                    used.setdefault(name, set()).add(module)
    helpers = [n for n, f in vars(_checks).items()
               if inspect.isfunction(f) and f.__module__ == _checks.__name__
               and not n.startswith("_")]
    internal = set(re.findall(r"(?<!def )\b(check_\w+|as_float_array)\(",
                              inspect.getsource(_checks)))
    single = sorted(n for n in helpers
                    if len(used.get(n, ())) <= 1 and n not in internal)
    assert len(single) <= ONE_MODULE_CHECKS, single


def test_every_unchecked_core_is_in_its_modules_all():
    """Cores are what modules call across: public in their module (so no
    module imports a private name), never at the top level."""
    cores = [(m, name) for m in PUBLIC if m not in px._LAZY
             for name, obj in vars(importlib.import_module(
                 f"pyxis_nb.{m}")).items()
             if name.endswith("_core") and inspect.isfunction(obj)
             and obj.__module__ == f"pyxis_nb.{m}"]
    assert cores, "no *_core function found"
    assert [f"{m}.{n}" for m, n in cores
            if n not in importlib.import_module(f"pyxis_nb.{m}").__all__
            or n in px.__all__] == []



# ------------------------------------- (f) one kernel: one of each piece
# Issue #36: the package had five attention kernels, five softmaxes and six
# causal triangles. Each piece now exists once and every other place calls
# it; these greps fail when a second copy appears.

def _functions(predicate) -> set[str]:
    """``module.function`` of every package function whose source (as the
    AST gives it back) satisfies ``predicate``."""
    return {name for name, source in _function_sources() if predicate(source)}


@functools.cache
def _function_sources() -> tuple[tuple[str, str], ...]:
    """(``module.function``, its source as the AST gives it back) of every
    package function, nested ones too: parsed once for the greps below
    (0.5 s each time)."""
    return tuple((f"{path.stem}.{node.name}", ast.unparse(node))
                 for path in sorted(PKG.glob("**/*.py"))
                 for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.FunctionDef))


def test_one_softmax():
    """Exponentiate and normalise: the softmax, and the cross-entropy of
    the trained-heads model (a loss over logits, not attention)."""
    assert _functions(lambda s: "np.exp(" in s and ".sum(" in s
                      and "/" in s) == {"stable_softmax.softmax_core",
                                        "attention_only.cross_entropy"}


def test_one_online_softmax():
    """A running maximum and a rescale by its exponential: FlashAttention's
    update, which the model's kernel and the long-context chapter share."""
    assert _functions(lambda s: "np.exp(" in s and "np.maximum(" in s) == {
        "tiled.online_softmax_update"}


def test_one_causal_triangle():
    """masks.causal_mask_mod is the triangle; nothing builds another."""
    assert _functions(lambda s: re.search(r"np\.tri[lu]?\(", s)) == set()
    assert _functions(lambda s: "kv_idx <= q_idx" in s) == {
        "masks.causal_mask_mod"}


def _layer_loops(tree) -> list[tuple[ast.For, ast.FunctionDef | None]]:
    """Each loop over ``...layers`` that feeds a value back into itself
    (``h = layer(h)``, ``h = h + attn(norm(h))``, ``h += ...``): the
    model's loop, read from the AST, so no spelling passes it. With the
    function it is written in, if any."""
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, ast.FunctionDef) else function
            if isinstance(child, ast.For) and "layers" in ast.unparse(
                    child.iter) and _feeds_back(child):
                found.append((child, function))
            visit(child, inner)
    visit(tree, None)
    return found


def _feeds_back(loop: ast.For) -> bool:
    for stmt in ast.walk(loop):
        if isinstance(stmt, (ast.Assign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [
                stmt.target]
            names = {n.id for t in targets for n in ast.walk(t)
                     if isinstance(n, ast.Name)}
            used = {n.id for n in ast.walk(stmt.value)
                    if isinstance(n, ast.Name)}
            if names & used or (isinstance(stmt, ast.AugAssign) and names):
                return True
    return False


def _cell_tree(cell) -> ast.Module:
    lines = [line for line in "".join(cell["source"]).splitlines()
             if not line.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(lines))


def test_no_chapter_writes_the_layer_loop():
    """Chapters go through the model's forward and its hooks: no cell
    loops over layers feeding each one's output to the next. One kind is
    allowed, the reader's version of an idea (issue 49): the loop is in a
    function that its cell asserts equal to the package's model, and no
    later cell calls that function, so it is a lesson, not a second model.
    Looping over independent layers, each given the same input
    (modern_attention's per-layer cache), is not the model's loop."""
    bad = []
    for nb in sorted((PKG.parent / "book").glob("*.ipynb")):
        cells = [c for c in json.loads(nb.read_text())["cells"]
                 if c["cell_type"] == "code"]
        for i, cell in enumerate(cells):
            tree = _cell_tree(cell)
            asserts = any(isinstance(n, ast.Assert) for n in ast.walk(tree))
            for loop, function in _layer_loops(tree):
                later = "".join("".join(c["source"]) for c in cells[i + 1:])
                if (function is None or not asserts
                        or re.search(rf"\b{function.name}\(", later)):
                    bad.append(f"{nb.name} code cell {i}, line {loop.lineno}")
    assert bad == []
    # the check catches the loop it is about, however it is spelled
    for loop in ("for layer in model.layers:\n    h = layer(h)",
                 "for layer in m.layers:\n    h, _ = layer(h, mask)",
                 "for i, l in enumerate(model.layers):\n    x = x + l(x)",
                 "for l in model.layers:\n    x += l.mlp(x)"):
        assert _layer_loops(ast.parse(loop)), loop
    assert not _layer_loops(ast.parse(
        "for layer in model.layers:\n    out = layer(h)"))
