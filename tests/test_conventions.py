"""The package's own conventions, checked: listing sizes, a numpy-only
import, one notation, 79 columns, no private imports, layered modules."""

import ast
import importlib
import inspect
import pathlib
import re
import subprocess
import sys

import pytest

import pyxis_nb as px

PKG = pathlib.Path(px.__file__).parent
MODULES = sorted(p.stem for p in PKG.glob("*.py") if p.stem != "__init__")
PUBLIC = [m for m in MODULES if not m.startswith("_")]

# modules another helper owns this round: their failures are expected
OWNERS = {"multihead": "layer helper", "memory": "layer helper",
          "kv_cache": "kv_cache helper", "generation": "generation helper",
          "widgets": "widgets helper", "source": "source helper"}


def owned(module: str, ok: bool):
    """xfail (not strict) for another helper's module that fails today."""
    if ok or module not in OWNERS:
        return ()
    return (pytest.mark.xfail(strict=False, reason=OWNERS[module]),)


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
    "multihead:split_heads": 30, "multihead:merge_heads": 30,
    "multihead:kv_head_for": 30, "multihead:repeat_kv": 30,
    "multihead:MultiHeadAttention.project": 30,
    "multihead:MultiHeadAttention.forward": 45,
    "multihead:MultiHeadAttention.forward_per_head": 30,
    "multihead:MultiHeadAttention": 150,
    "memory:kv_cache_bytes": 30, "memory:attention_parameter_count": 30,
    "generation:decode_step_flops": 30,
    "kv_cache:KVCache.update": 30, "generation:TinyDecoder.generate": 30,
}


def resolve(spec: str):
    module, qualname = spec.split(":")
    obj = importlib.import_module(f"pyxis_nb.{module}")
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def n_lines(spec: str) -> int:
    return len(inspect.getsource(resolve(spec)).splitlines())


def _listing_params():
    for spec, limit in SHOWN.items():
        module = spec.split(":")[0]
        try:
            ok = n_lines(spec) <= limit
        except AttributeError:
            ok = False
        yield pytest.param(spec, limit, id=spec, marks=owned(module, ok))


@pytest.mark.parametrize("spec, limit", list(_listing_params()))
def test_shown_objects_fit_their_listing(spec, limit):
    assert n_lines(spec) <= limit, f"{spec}: {n_lines(spec)} > {limit}"


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


def _legend_params():
    for module in MODULES:
        symbols = legend_symbols(module)
        ok = bool(symbols) and set(symbols) <= NOTATION
        needs = module not in ("source", "_checks")
        if needs or symbols:
            yield pytest.param(module, id=module, marks=owned(module, ok))


@pytest.mark.parametrize("module", list(_legend_params()))
def test_shape_legend_uses_the_notation(module):
    symbols = legend_symbols(module)
    assert symbols, f"{module} has no 'Shape legend:' block"
    assert set(symbols) <= NOTATION, set(symbols) - NOTATION


# ----------------------------------------------------- (d) 79 columns

def long_lines(module: str) -> list[str]:
    text = (PKG / f"{module}.py").read_text().splitlines()
    return [f"{module}.py:{i}: {len(line)}"
            for i, line in enumerate(text, 1) if len(line) > 79]


@pytest.mark.parametrize("module", [
    pytest.param(m, id=m, marks=owned(m, not long_lines(m)))
    for m in MODULES + ["__init__"]])
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


@pytest.mark.parametrize("module", [
    pytest.param(m, id=m, marks=owned(m, not private_imports(m)))
    for m in MODULES])
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
