"""The package's own conventions, checked: listing sizes, a numpy-only
import, one notation, 79 columns, no private imports, layered modules."""

import ast
import importlib
import inspect
import json
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb import _checks

PKG = pathlib.Path(px.__file__).parent
MODULES = sorted(p.stem for p in PKG.glob("*.py") if p.stem != "__init__")
PUBLIC = [m for m in MODULES if not m.startswith("_")]
BOOK = PKG.parent / "book"


# ------------------------------------------------- (a) chapter listings

# "module:qualname", the line budget: every object a chapter shows
SHOWN = {
    "softmax:softmax": 30, "softmax:softmax_core": 30,
    "masks:causal_mask": 30, "masks:sliding_window_mask": 30,
    "masks:padding_mask": 30,
    "attention:scaled_dot_product_attention": 45, "attention:sdpa_core": 30,
    "engine:engine_causal_attention": 30, "head:Head.forward": 30,
    "experiments:random_attention_weights": 30,
    "experiments:max_attention_weight": 30,
    "experiments:dot_product_std": 30, "experiments:softmax_jacobian": 30,
    "positions:sinusoidal_positions": 30, "positions:add_positions": 30,
    "batching:pad_sequences": 30, "batching:TinyLM.forward": 30,
    "batching:greedy_generate": 30, "norms:rms_norm": 30,
    "rope:rope_frequencies": 30, "rope:rotary_cos_sin": 30,
    "rope:rotate_half": 30, "rope:apply_rotary_pos_emb": 30,
    "rope:rotate_pairs": 30, "rope:apply_rope": 30,
    "rope:interleaved_to_half_permutation": 30,
    "tiled:online_softmax_update": 30, "tiled:tiled_attention": 45,
    "multihead:split_heads_core": 30, "multihead:merge_heads_core": 30,
    "multihead:kv_head_for": 30, "multihead:repeat_kv": 30,
    "multihead:MultiHeadAttention.project": 30,
    "multihead:MultiHeadAttention.forward": 45,
    "multihead:MultiHeadAttention.attend": 30,
    "multihead:attention_per_head": 30,
    "multihead:MultiHeadAttention": 150,
    "memory:kv_cache_bytes": 30, "memory:attention_parameter_count": 30,
    "generation:decode_step_flops": 30,
    "kv_cache:KVCache.update": 30, "generation:TinyDecoder.generate": 30,
    "attention_only:softmax_backward": 30,
    "attention_only:attention_layer_forward": 30,
    "attention_only:attention_layer_backward": 30,
    "attention_only:Adam.step": 30,
}


def resolve(spec: str):
    module, qualname = spec.split(":")
    obj = importlib.import_module(f"pyxis_nb.{module}")
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def n_lines(spec: str) -> int:
    return len(inspect.getsource(resolve(spec)).splitlines())


@pytest.mark.parametrize("spec, limit", list(SHOWN.items()), ids=list(SHOWN))
def test_shown_objects_fit_their_listing(spec, limit):
    assert n_lines(spec) <= limit, f"{spec}: {n_lines(spec)} > {limit}"


def chapter_listings() -> set[str]:
    """Every ``px.show_source(px.X)`` target in the chapters' code cells."""
    found = set()
    for nb in BOOK.glob("*.ipynb"):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                found |= set(re.findall(r"show_source\(([\w.]+)\)", source))
    return found


def shown_object(expr: str):
    """``px.rope.rotate_pairs`` or ``px.KVCache.update``: the object, or
    None for a name the package lacks (nbval fails that chapter)."""
    obj = px
    for part in expr.removeprefix("px.").split("."):
        obj = getattr(obj, part, None)
    return obj


def test_every_chapter_listing_has_a_budget():
    budgeted = {id(resolve(spec)) for spec in SHOWN}
    shown = {e: shown_object(e) for e in chapter_listings()}
    missing = [e for e, obj in shown.items()
               if obj is not None and id(obj) not in budgeted]
    assert not missing, f"add to SHOWN: {sorted(missing)}"


# ------------------------------------------------- (b) numpy-only import

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
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, env=None, cwd=PKG.parent)
    assert done.returncode == 0, done.stderr


def test_lazy_names_are_the_modules_all():
    for module in px._LAZY:
        mod = importlib.import_module(f"pyxis_nb.{module}")
        assert set(mod.__all__) <= set(px.__all__)
        for name in mod.__all__:
            assert getattr(px, name) is getattr(mod, name)


def test_every_module_is_listed():
    assert sorted(px._MODULES) == PUBLIC


# ------------------------------------------------------ (c) one notation

# the book's notation table, and the few extras the package needs
NOTATION = {"...", "B", "T", "S", "L", "V", "d_model", "d_head", "H", "H_kv",
            "n_rep", "block_q", "block_k"}


def legend_symbols(module: str) -> list[str]:
    """The symbols of the ``Shape legend:`` block of a module docstring."""
    doc = ast.get_docstring(ast.parse((PKG / f"{module}.py").read_text()))
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
    m for m in MODULES if m not in ("source", "_checks") or legend_symbols(m)])
def test_shape_legend_uses_the_notation(module):
    symbols = legend_symbols(module)
    assert symbols, f"{module} has no 'Shape legend:' block"
    assert set(symbols) <= NOTATION, set(symbols) - NOTATION


# ----------------------------------------------------- (d) 79 columns

def long_lines(module: str) -> list[str]:
    text = (PKG / f"{module}.py").read_text().splitlines()
    return [f"{module}.py:{i}: {len(line)}"
            for i, line in enumerate(text, 1) if len(line) > 79]


@pytest.mark.parametrize("module", MODULES + ["__init__"])
def test_lines_fit_79_columns(module):
    assert not long_lines(module)


# ------------------------------------------- (e) no private imports

def imports(module: str):
    """(imported module, names) for each ``from .x import ...``."""
    tree = ast.parse((PKG / f"{module}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            yield node.module, [a.name for a in node.names]


def private_imports(module: str) -> list[str]:
    return [f"{src}.{name}" for src, names in imports(module)
            for name in names if src != "_checks" and name.startswith("_")]


@pytest.mark.parametrize("module", MODULES)
def test_no_private_name_from_another_module(module):
    assert not private_imports(module)


# -------------------------------------------- (f) layers, no cycles

def test_modules_import_only_earlier_layers():
    order = {m: i for i, m in enumerate(["_checks"] + px._MODULES)}
    wrong = [f"{m} imports {src}" for m in MODULES
             for src, _ in imports(m) if order[src] >= order[m]]
    assert not wrong


def test_checks_imports_nothing_from_the_package():
    assert not list(imports("_checks"))


# ------------------------------- (g) lean core: each array checked once

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
    layer = px.random_attention(16, 4, 2, 8, qk_norm=True, theta=1e4)
    x = np.random.default_rng(0).standard_normal((2, 3, 16))
    mask = np.array([[0, 1, 1], [1, 1, 1]])
    cache = px.KVCache(1, 2, 2, 8, 8)
    checked.clear()  # the weights were checked once, when the layer was built
    layer(x, attention_mask=mask, past_key_value=cache)
    assert not twice(checked)
    inputs = [label for label, a in checked if a is x or a is mask]
    assert inputs == ["hidden_states", "attention_mask"]  # once each
    # the rest are the cache's own door: the new keys and values, once
    assert {label for label, _ in checked} - set(inputs) <= {
        "key_states", "value_states", "position_ids"}


def test_a_decoder_checks_its_mask_once_for_every_layer(checked):
    model = px.TinyDecoder(num_hidden_layers=3)
    ids = np.array([[0, 5, 7], [4, 5, 6]])
    mask = np.array([[0, 1, 1], [1, 1, 1]])
    cache = model.new_cache(4, 2)
    checked.clear()
    model(ids, attention_mask=mask, past_key_values=cache)
    assert not twice(checked)
    labels = [label for label, _ in checked]
    assert labels.count("attention_mask") == 1
    assert labels.count("position_ids") <= 1
    assert "hidden_states" not in labels  # no layer re-checks its input
