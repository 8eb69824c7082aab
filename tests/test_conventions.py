"""The package's own conventions that no tool states, each with its reason.

What a tool states is not here: 79 columns and unused imports are ruff's
(E501, F401: ``[tool.ruff]`` in pyproject.toml), the layers are
import-linter's (``lint-imports``, the contract in pyproject.toml, tested
below to be ``px.LAYERS``); ``make lint`` runs both, first in ``make test``.
Here: listing sizes, documented parameters, a numpy-only import, one
notation, no private names across modules, each array checked once, plain
raises of the bad-input kinds, and one of each piece of the kernels (read
from the AST).
"""

import ast
import functools
import importlib
import inspect
import json
import pathlib
import re
import textwrap
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
    # a short docstring may name a parameter in its prose, ``like this``:
    # one line per parameter is enough, and a one-line function needs no
    # numpydoc section around it (issue 50: no docstring longer than three
    # times its code)
    names = [n for n in names if f"``{n}``" not in doc]
    if names and "Parameters\n----------" not in doc:
        return names
    if not names:
        return []
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
    # source, table and loading hold no arrays: no shapes to name;
    # exercises' arrays are the chapters' own, named there
    m for m in MODULES
    if m not in ("source", "table", "_checks", "loading", "exercises")
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
# causal triangles; issue 50: checks that matched spellings let copies
# through (``p @ ones`` for a sum, ``np.divide`` for ``/``, ``h, _ =
# layer(h)``). Each piece is now found by what it does, read from the AST
# of every package function (methods and nested ones too), so that no
# renaming passes: a softmax is an exponential divided by its sum, an
# online softmax a running sum rescaled by the exponential of a running
# maximum, a causal triangle an ordering of query against key positions,
# a layer loop a loop over layers that feeds a layer's output back into
# the next. Each place where one is allowed is listed with its reason;
# every detector is shown to find a planted copy.

EXP = {"exp"}  # np.exp, math.exp, a bare exp
SUMS = {"sum", "nansum", "fsum", "matmul", "dot", "vdot", "inner",
        "einsum", "tensordot"}  # a sum, or a product that sums (p @ 1)
MAXES = {"max", "maximum", "fmax", "amax", "nanmax"}
DIVIDES = {"divide", "true_divide"}
ORDERINGS = {"less", "less_equal", "greater", "greater_equal"}
TRIANGLES = {"tri", "tril", "triu", "tril_indices", "triu_indices",
             "tril_indices_from", "triu_indices_from"}


def _name(call: ast.AST) -> str | None:
    """The called function's last name (``np.exp`` -> ``exp``), or None
    for what is not a call."""
    if not isinstance(call, ast.Call):
        return None
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)


def _key(node: ast.AST) -> str | None:
    """What an assignment writes: a name or an attribute (``p``,
    ``state.row_sum``), the array itself for a subscript."""
    while isinstance(node, (ast.Subscript, ast.Starred)):
        node = node.value
    return ast.unparse(node) if isinstance(
        node, (ast.Name, ast.Attribute)) else None


def _keys(target: ast.AST) -> set[str]:
    """The keys a target writes, tuples unpacked."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_keys(t) for t in target.elts))
    return {_key(target)} - {None}


def _own_nodes(scope) -> list[ast.AST]:
    """The nodes of a function's (or a loop's) body, without the bodies
    of the functions and classes defined in it (each is read on its own)."""
    found, stack = [], list(scope.body)
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(
            c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
    return found


def _assignments(nodes) -> list[tuple[set[str], ast.AST]]:
    """(keys written, the expression written) of every assignment, loop
    and comprehension variable, and ``out=`` argument among ``nodes``."""
    out = []
    for n in nodes:
        if isinstance(n, ast.Assign):
            out.append((set().union(*(_keys(t) for t in n.targets)), n.value))
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) \
                and n.value is not None:
            out.append((_keys(n.target), n.value))
        elif isinstance(n, (ast.For, ast.comprehension)):
            out.append((_keys(n.target), n.iter))
        elif isinstance(n, ast.Call):  # np.exp(x, out=e) writes e
            out += [(_keys(kw.value), n) for kw in n.keywords
                    if kw.arg == "out"]
    return out


class _Flow:
    """Where one function's exponentials, sums and maxima go: the keys
    each reaches through assignments (flow-insensitive, to a fixpoint)."""

    def __init__(self, function):
        self.nodes = _own_nodes(function)
        self.exp, self.sums, self.maxes = set(), set(), set()
        self.logs = set()
        assignments = _assignments(self.nodes)
        changed = True
        while changed:
            changed = False
            for keys, value in assignments:
                for found, reaches in ((self.exp, self.from_exp),
                                       (self.sums, self.summed),
                                       (self.maxes, self.from_max),
                                       (self.logs, self.log_of_sum)):
                    if not keys <= found and reaches(value):
                        found |= keys
                        changed = True

    def _reaches(self, expr, calls: set[str], keys: set[str]) -> bool:
        return expr is not None and any(
            _name(n) in calls or _key(n) in keys for n in ast.walk(expr)
            if isinstance(n, (ast.Call, ast.Name, ast.Attribute)))

    def from_exp(self, expr) -> bool:
        """An exponential's result reaches ``expr``."""
        return self._reaches(expr, EXP, self.exp)

    def from_max(self, expr) -> bool:
        """A maximum reaches ``expr``."""
        return self._reaches(expr, MAXES, self.maxes)

    def is_sum(self, node) -> bool:
        """``node`` sums exponentials: ``e.sum()``, ``np.sum(e)``,
        ``e @ ones``, ``np.einsum(.., e)``."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return self.from_exp(node.left) or self.from_exp(node.right)
        if _name(node) in SUMS or (_name(node) == "reduce"
                                   and ast.unparse(node.func).endswith(
                                       "add.reduce")):
            parts = node.args + [kw.value for kw in node.keywords]
            if isinstance(node.func, ast.Attribute):  # e.sum(): e
                parts.append(node.func.value)
            return any(self.from_exp(p) for p in parts)
        return False

    def summed(self, expr) -> bool:
        """A sum of exponentials reaches ``expr``."""
        return expr is not None and any(
            self.is_sum(n) or (_key(n) in self.sums if isinstance(
                n, (ast.Name, ast.Attribute)) else False)
            for n in ast.walk(expr))

    def log_of_sum(self, expr) -> bool:
        """The log of a sum of exponentials reaches ``expr``."""
        return expr is not None and any(
            (_name(n) == "log" and any(self.summed(a) for a in n.args))
            or (isinstance(n, (ast.Name, ast.Attribute))
                and _key(n) in self.logs) for n in ast.walk(expr))

    def softmaxes(self) -> list[ast.AST]:
        """Exponentials divided by their sum: ``e / s``, ``e /= s``,
        ``np.divide(e, s)``, ``1 / s``, or in logs ``x - log(s)``."""
        found = []
        for n in self.nodes:
            pair = None
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
                pair = n.left, n.right
            elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Div):
                pair = n.target, n.value
            elif _name(n) in DIVIDES and len(n.args) >= 2:
                pair = n.args[0], n.args[1]
            elif _name(n) == "reciprocal" and n.args:
                pair = ast.Constant(1), n.args[0]
            if pair and (isinstance(pair[0], ast.Constant)
                         or self.from_exp(pair[0])) and self.summed(pair[1]):
                found.append(n)
            if isinstance(n, ast.BinOp) and isinstance(
                    n.op, ast.Sub) and self.log_of_sum(n.right):
                found.append(n)  # a log-softmax
        return found

    def online_updates(self) -> set[str]:
        """Keys that are both rescaled by the exponential of a maximum
        (``l = alpha * l``, ``acc *= alpha``) and added a sum of
        exponentials (``l = .. + p.sum()``, ``acc += p @ v``): the
        running sums of an online softmax."""
        def rescale(expr):  # exp of something a maximum reaches
            return any(_name(c) in EXP and any(self.from_max(a)
                                               for a in c.args)
                       for c in ast.walk(expr)) or any(
                _key(n) in self.exp and _key(n) in rescales
                for n in ast.walk(expr)
                if isinstance(n, (ast.Name, ast.Attribute)))

        rescales = set()  # keys holding such an exponential
        for keys, value in _assignments(self.nodes):
            if _name(value) in EXP and any(self.from_max(a)
                                           for a in value.args):
                rescales |= keys
        rescaled, added = set(), set()
        for n in self.nodes:
            if isinstance(n, ast.AugAssign):
                key = _key(n.target)
                if isinstance(n.op, ast.Mult) and rescale(n.value):
                    rescaled.add(key)
                if isinstance(n.op, ast.Add) and self.summed(n.value):
                    added.add(key)
            elif isinstance(n, ast.Assign):
                for key in set().union(*(_keys(t) for t in n.targets)):
                    for b in ast.walk(n.value):
                        if not isinstance(b, ast.BinOp):
                            continue
                        sides = (b.left, b.right)
                        has_key = [any(_key(x) == key for x in ast.walk(s)
                                       if isinstance(x, (ast.Name,
                                                         ast.Attribute)))
                                   for s in sides]
                        if isinstance(b.op, ast.Mult) and any(
                                rescale(s) and has_key[1 - i]
                                for i, s in enumerate(sides)):
                            rescaled.add(key)
                        if isinstance(b.op, ast.Add) and any(has_key) and any(
                                self.summed(s) for s in sides):
                            added.add(key)
        return rescaled & added


def _index_sources(function) -> tuple[dict, dict]:
    """Which position indices reach each key of a function: every
    ``np.arange`` or ``range`` call is one, wherever its values go; and
    the query and key index of a ``mask_mod(b, h, q_idx, kv_idx)`` (the
    third and fourth of four parameters, whatever their names) are two,
    as long as no call is made of them."""
    args = [a.arg for a in function.args.posonlyargs + function.args.args
            if a.arg not in ("self", "cls")]
    params = {args[2]: {args[2]}, args[3]: {args[3]}} if len(args) == 4 else {}
    positions, assignments = {}, _assignments(_own_nodes(function))
    changed = True
    while changed:
        changed = False
        for keys, value in assignments:
            for sources, calls in ((positions, True), (params, False)):
                got = _sources(value, sources, calls)
                for key in keys:
                    if not got <= sources.get(key, set()):
                        sources[key] = sources.get(key, set()) | got
                        changed = True
    return positions, params


def _sources(expr, sources: dict, through_calls: bool = True) -> set:
    """The position indices that reach ``expr``; ``through_calls=False``:
    not through a call's arguments (``rng.integers(..)`` is no index)."""
    got, stack = set(), [expr]
    while stack:
        n = stack.pop()
        if _name(n) in ("arange", "range"):
            got.add(id(n))
        elif isinstance(n, (ast.Name, ast.Attribute)):
            got |= sources.get(_key(n), set())
        if through_calls or not isinstance(n, ast.Call):
            stack.extend(ast.iter_child_nodes(n))
    return got


def _triangles(function) -> list[ast.AST]:
    """Causal triangles built in ``function``: ``np.tril`` and its kin,
    or an ordering (``<=``, ``np.less_equal``, ``.outer``) of one
    position index against another (``kv_idx <= q_idx``,
    ``arange(T)[:, None] >= arange(S)``, ``j <= i`` over two ranges). A
    mask_mod's parameters count in a value it builds, not in a branch's
    test (``if j0 >= j1``: two scalars)."""
    positions, params = _index_sources(function)
    nodes = _own_nodes(function)
    tests = {id(t) for n in nodes if isinstance(n, (ast.If, ast.While,
                                                    ast.IfExp, ast.Assert))
             for t in ast.walk(n.test)}
    found = []
    for n in nodes:
        sides = ()
        if isinstance(n, ast.Compare) and any(
                isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE))
                for op in n.ops):
            sides = [n.left] + n.comparators
        elif _name(n) in ORDERINGS or (
                _name(n) == "outer" and isinstance(n.func, ast.Attribute)
                and getattr(n.func.value, "attr", None) in ORDERINGS):
            sides = n.args[:2]
        if _name(n) in TRIANGLES:
            found.append(n)
        got = [_sources(s, positions) | (
            set() if id(n) in tests else _sources(s, params, False))
            for s in sides]
        if sum(map(bool, got)) >= 2:
            found.append(n)
    return found


def _calls_feeding(loop: ast.For) -> list[tuple[set[str], ast.Call]]:
    """(keys, call) for each call in a loop's body whose result reaches
    one of the keys that are passed into that call: the loop feeds the
    call's output back into its next round (``h = layer(h)``, ``h, _ =
    layer(h, mask)``, ``x = x + attn(norm(x))``, ``out, c = f(x); x = x
    + out``)."""
    calls_of = {}  # key -> the calls whose results reach it
    assignments = _assignments(_own_nodes(loop))
    changed = True
    while changed:
        changed = False
        for keys, value in assignments:
            got = {n for n in ast.walk(value) if isinstance(n, ast.Call)}
            got |= set().union(*(calls_of.get(_key(n), set())
                                 for n in ast.walk(value)
                                 if isinstance(n, (ast.Name, ast.Attribute))))
            for key in keys:
                if not got <= calls_of.get(key, set()):
                    calls_of[key] = calls_of.get(key, set()) | got
                    changed = True
    fed = []
    for key, calls in calls_of.items():
        for call in calls:
            passed = {_key(n) for a in call.args + [
                kw.value for kw in call.keywords] for n in ast.walk(a)
                if isinstance(n, (ast.Name, ast.Attribute))}
            if key in passed:
                fed.append(({key}, call))
    return fed


def _is_layer_loop(node) -> bool:
    """A loop over layers (``model.layers``, ``range(L)`` with ``L`` the
    config's ``num_hidden_layers``) that feeds a value back into its layer
    (:func:`_calls_feeding`)."""
    return (isinstance(node, ast.For) and "layers" in ast.unparse(node.iter)
            and bool(_calls_feeding(node)))


def _layer_loops(tree) -> list[tuple[ast.For, ast.FunctionDef | None]]:
    """Each layer loop in ``tree``, with the function it is written in,
    if any."""
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if _is_layer_loop(child):
                found.append((child, function))
            visit(child, inner)
    visit(tree, None)
    return found


@functools.cache
def _package_functions() -> tuple[tuple[str, ast.FunctionDef], ...]:
    """(``module.qualified.name``, node) of every package function,
    methods and nested functions too: parsed once for the tests below."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                  ast.ClassDef)):
                name = f"{prefix}.{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found.append((name, child))
                visit(child, name)
            else:
                visit(child, prefix)
    for path in sorted(PKG.glob("**/*.py")):
        module = path.relative_to(PKG).with_suffix("").as_posix()
        visit(ast.parse(path.read_text()), module.replace("/", "."))
    return tuple(found)


def _found(detect) -> set[str]:
    """The package functions in which ``detect(function)`` finds one."""
    return {name for name, node in _package_functions() if detect(node)}


def _planted(detect, source: str) -> bool:
    """Whether ``detect`` finds one in the function of ``source``."""
    [function] = ast.parse(textwrap.dedent(source)).body
    return bool(detect(function))


# the softmaxes the package may compute, and why
SOFTMAXES = {
    "stable_softmax.softmax_core": "the softmax: the eager kernel's "
                                   "(attention.sdpa_core) and every caller's",
    "attention_only._log_softmax": "the trained-heads model's cross-entropy, "
                                   "a loss over logits, not attention",
}


def test_one_softmax():
    assert _found(lambda f: _Flow(f).softmaxes()) == set(SOFTMAXES)


@pytest.mark.parametrize("source", [
    """def f(s, v):  # a decode shortcut's, spelled to pass a grep
        p = np.exp(np.subtract(s, s.max(axis=-1, keepdims=True), out=s), out=s)
        row_sum = p @ np.ones(p.shape[-1:] + (1,), dtype=p.dtype)
        return np.divide(p @ v, row_sum)""",
    """def f(x):
        w = np.empty_like(x)
        np.exp(x - x.max(-1, keepdims=True), out=w)
        w /= np.sum(w, axis=-1, keepdims=True)
        return w""",
    """def f(xs):
        es = [math.exp(x) for x in xs]
        total = math.fsum(es)
        return [e * (1 / total) for e in es]""",
    """def f(z):
        return z - np.log(np.einsum("...s->...", np.exp(z)))[..., None]""",
    """def f(x):
        top = x.max(-1, keepdims=True)
        lse = top + np.log(np.exp(x - top).sum(-1, keepdims=True))
        return np.exp(x - lse)""",
])
def test_the_softmax_detector_finds_a_planted_one(source):
    assert _planted(lambda f: _Flow(f).softmaxes(), source)


@pytest.mark.parametrize("source", [
    "def f(x):\n    return x / (1 + np.exp(-x))",  # silu: no sum
    "def f(x):\n    return x / x.sum(-1, keepdims=True)",  # no exp
    "def f(g, s):\n    return np.exp(g) * s.sum()",  # no division
])
def test_the_softmax_detector_passes_what_is_not_one(source):
    assert not _planted(lambda f: _Flow(f).softmaxes(), source)


ONLINE_SOFTMAXES = {
    "tiled.online_softmax_update": "FlashAttention's update, the tiled "
                                   "loop's and the long-context chapter's",
}


def test_one_online_softmax():
    assert _found(lambda f: _Flow(f).online_updates()) == set(
        ONLINE_SOFTMAXES)


@pytest.mark.parametrize("source", [
    """def f(m, l, acc, s, v):
        big = np.maximum(m, s.max(-1, keepdims=True))
        shrink = np.exp(m - big)
        e = np.exp(s - big)
        l = shrink * l + e.sum(-1, keepdims=True)
        acc *= shrink
        acc += e @ v
        return big, l, acc""",
    """def f(state, s):
        top = max(state.top, max(s))
        state.total = state.total * math.exp(state.top - top) + sum(
            math.exp(x - top) for x in s)
        state.top = top""",
])
def test_the_online_softmax_detector_finds_a_planted_one(source):
    assert _planted(lambda f: _Flow(f).online_updates(), source)


def test_the_online_softmax_detector_passes_a_decay():
    """Linear attention's state decays by an exponential too, but of a
    gate, not of a running maximum."""
    assert not _planted(lambda f: _Flow(f).online_updates(), """
        def f(state, g, k, v):
            state = state * np.exp(g) + (k * np.exp(g)).T @ v
            return state""")


TRIANGLES_ALLOWED = {
    "masks.causal_mask_mod": "the causal triangle; every mask calls it",
    "circuits.head_pair_distance": "np.triu_indices over pairs of heads, "
                                   "not positions",
}


def test_one_causal_triangle():
    assert _found(_triangles) == set(TRIANGLES_ALLOWED)


@pytest.mark.parametrize("source", [
    "def f(T):\n    return np.tril(np.ones((T, T), bool))",
    "def f(T, S):\n    return np.arange(T)[:, None] + S - T >= np.arange(S)",
    """def f(T):
        rows = np.arange(T)
        cols = rows[None, :]
        return np.less_equal(cols, rows[:, None])""",
    "def f(T):\n    return np.greater_equal.outer(np.arange(T), np.arange(T))",
    """def f(s):
        for i in range(len(s)):
            for j in range(len(s)):
                if j > i:
                    s[i, j] = -np.inf""",
    "def my_mod(batch, head, q, k):\n    return k <= q",
])
def test_the_triangle_detector_finds_a_planted_one(source):
    assert _planted(_triangles, source)


@pytest.mark.parametrize("source", [
    "def f(T, w):\n    p = np.arange(T)\n    return abs(p[:, None] - p) < w",
    "def f(S, lengths):\n    return np.arange(S) < lengths[:, None]",
    "def mask_mod(b, h, q_idx, kv_idx):\n    return q_idx - kv_idx < 4",
])
def test_the_triangle_detector_passes_bands_and_padding(source):
    assert not _planted(_triangles, source)


# the layer loops the package may run, and why
LAYER_LOOPS = {
    "model.Qwen3ForCausalLM.forward": "the model's (transformers' "
                                      "Qwen3Model.forward)",
    "attention_only.AttentionOnlyTransformer._forward":
        "the trained-heads chapter's model, a teaching form with its own "
        "backward pass",
    "attention_only.AttentionOnlyTransformer._loss_and_grads":
        "that backward pass: the layers in reverse",
    "attention_only._patched_forward": "path patching: that forward with "
                                       "one head's output taken out of "
                                       "later layers' inputs",
}


def test_one_layer_loop():
    assert _found(lambda f: any(map(_is_layer_loop, _own_nodes(f)))) == set(
        LAYER_LOOPS)


@pytest.mark.parametrize("source", [
    "for layer in model.layers:\n    h = layer(h)",
    "for layer in m.layers:\n    h, _ = layer(h, mask)",
    "for i, l in enumerate(model.layers):\n    x = x + l(x)",
    "for l in model.layers:\n    x += l.mlp(x)",
    "for i in range(config.num_hidden_layers):\n    h = blocks[i](h)",
    "for i in range(self.num_hidden_layers):\n"
    "    out, cache = forward(x, self.w[i])\n    x = x + out",
])
def test_the_layer_loop_detector_finds_a_planted_one(source):
    assert _layer_loops(ast.parse(source)), source


@pytest.mark.parametrize("source", [
    "for layer in model.layers:\n    out = layer(h)",  # each its own input
    "for layer in model.layers:\n    n = n + layer.nbytes",  # no call fed
    "for i in range(num_hidden_layers):\n    s = q @ k[i]\n    w = f(s)",
])
def test_the_layer_loop_detector_passes_independent_layers(source):
    assert not _layer_loops(ast.parse(source)), source


# Attention computed other than by the two kernels (attention.sdpa_core,
# eager, with the weights; tiled.tiled_attention_loop, whose one-tile case
# is a decode step) is a chapter's teaching form: named so in its
# docstring, and kept only while its chapter calls it.
TEACHING_FORMS = {
    "engine.engine_causal_attention": "causal_mask",
    "attention_only.attention_layer_forward": "trained_heads",
}


@pytest.mark.parametrize("name", sorted(TEACHING_FORMS))
def test_a_teaching_form_says_so_and_its_chapter_uses_it(name):
    module, function = name.split(".")
    doc = " ".join(inspect.getdoc(getattr(importlib.import_module(
        f"pyxis_nb.{module}"), function)).split())
    chapter = BOOK / f"{TEACHING_FORMS[name]}.ipynb"
    assert "teaching form" in doc and chapter.stem.replace("_", "-") in doc
    assert f"{module}.{function}" in chapter.read_text()


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


# ------------------------------------------------- (i) a lean package
# No tool: ruff counts neither. Docstrings say what the code does not: at
# most 30 % of the package's lines, and none longer than three times its
# function's code, or than naming its parameters takes (a summary, a blank
# line, a numpydoc header and one line each; module and class overviews
# aside). model.py keeps HF's order and stays a model file: building and
# reading checkpoints live in loading.py.

def _docstring_node(node):
    body = getattr(node, "body", None)
    if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return body[0]
    return None


def package_files():
    return sorted(PKG.rglob("*.py"))


def test_docstrings_are_at_most_30_percent_of_the_package():
    lines = doc = 0
    for file in package_files():
        text = file.read_text()
        lines += len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            d = _docstring_node(node)
            if d is not None:
                doc += d.end_lineno - d.lineno + 1
    assert doc <= 0.30 * lines, f"{doc} of {lines} lines are docstrings"


def test_no_docstring_is_longer_than_three_times_its_code():
    long = []
    for file in package_files():
        for node in ast.walk(ast.parse(file.read_text())):
            d = (_docstring_node(node) if isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None)
            if d is None:
                continue
            doc = d.end_lineno - d.lineno + 1
            code = (node.body[-1].end_lineno - node.body[1].lineno + 1
                    if len(node.body) > 1 else 1)
            params = len([a for a in node.args.args + node.args.kwonlyargs
                          if a.arg not in ("self", "cls")])
            if doc > max(3 * code, 5 + params):
                long.append(f"{file.name}:{node.lineno} {node.name}: "
                            f"{doc} docstring lines for {code} of code")
    assert not long, "\n".join(long)


def test_model_py_is_a_model_file():
    assert len((PKG / "model.py").read_text().splitlines()) <= 900
