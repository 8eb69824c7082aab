"""Input checks shared by every public function: check at the door, once.

Shape legend:
    ...      leading batch/head dimensions
    T        query positions
    S        key/value positions
    d_head   size of one head's query, key and value vectors
    H        query heads
    H_kv     key/value heads

Each helper raises ``ValueError`` (``TypeError`` for a flag that is not a
bool) whose message names the argument, what it got and what it wanted.
Public functions call one or two of these at the top; internal calls between
modules use the unchecked cores, so no array is checked twice.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np


def as_float_array(name: str, x, *, min_ndim: int = 1,
                   ndim: int | None = None, finite: bool = False
                   ) -> np.ndarray:
    """``x`` as a floating ndarray of ``ndim`` (or >= ``min_ndim``) axes."""
    arr = np.asarray(x)
    if not np.issubdtype(arr.dtype, np.floating):
        raise ValueError(
            f"{name} must be a floating-point array (float32 or float64), "
            f"got dtype {arr.dtype} with shape {arr.shape}"
        )
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(
            f"{name} must have {ndim} dimensions, got shape {arr.shape}"
        )
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimensions, "
            f"got shape {arr.shape}"
        )
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr.tolist()}")
    return arr


def check_nonempty(name: str, arr: np.ndarray, axes: dict[int, str]) -> None:
    """Raise if any of the named axes of ``arr`` has length 0."""
    for axis, label in axes.items():
        if arr.shape[axis] == 0:
            raise ValueError(
                f"{name} has a 0-length {label} axis: got shape {arr.shape}, "
                f"expected {label} >= 1"
            )


def check_int(name: str, value, *, low: int | None = None,
              high: int | None = None) -> int:
    """``value`` as an int in ``low .. high`` (inclusive); bools refused."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if ((low is not None and value < low)
            or (high is not None and value > high)):
        lo = "" if low is None else f"{low} <= "
        hi = "" if high is None else f" <= {high}"
        raise ValueError(
            f"{name} must be an integer {lo}{name}{hi}, got {value}")
    return int(value)


def check_positive_int(name: str, value) -> int:
    """``value`` as an int >= 1."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value}")
    return int(value)


def check_bool(name: str, value) -> bool:
    """A flag must be a real bool: ``"False"`` or ``0`` would read as one."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be True or False, got {type(value).__name__} "
            f"{value!r}"
        )
    return bool(value)


def check_choice(name: str, value, choices: tuple) -> str:
    """``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_theta(name: str, value) -> float:
    """RoPE's base: a finite real number > 1 (Qwen3: 1_000_000.0)."""
    if (isinstance(value, bool) or not np.isscalar(value)
            or not np.isreal(value) or not np.isfinite(value) or value <= 1):
        raise ValueError(
            f"{name} must be a finite number > 1 (Qwen3: 1_000_000.0), "
            f"got {value!r}"
        )
    return float(value)


def check_even(name: str, value,
               why: str = "RoPE rotates pairs of coordinates") -> int:
    """An even integer >= 2 (RoPE rotates pairs of coordinates)."""
    value = check_positive_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even, got {value} ({why})")
    return value


def check_same_dtype(**arrays: np.ndarray) -> np.dtype:
    """The common float dtype of ``arrays``; raise naming both if they differ.

    torch raises on mixed dtypes rather than casting; so does this.
    """
    (first, a), *rest = arrays.items()
    for name, b in rest:
        if b.dtype != a.dtype:
            raise ValueError(
                f"{name} has dtype {b.dtype} but {first} has dtype {a.dtype}: "
                "cast one of them (mixed dtypes are not cast silently)"
            )
    return a.dtype


def broadcast_shapes(names_and_shapes: dict[str, tuple]) -> tuple:
    """``np.broadcast_shapes`` with an error message naming every argument."""
    try:
        return np.broadcast_shapes(*names_and_shapes.values())
    except ValueError:
        listed = ", ".join(f"{n} {s}" for n, s in names_and_shapes.items())
        raise ValueError(
            f"leading (batch/head) dimensions do not broadcast: {listed}"
        ) from None


def check_number(name: str, value, *, above=None, at_least=None) -> float:
    """A real number ``> above`` (or ``>= at_least``); bools refused."""
    ok = (not isinstance(value, bool) and np.isscalar(value)
          and np.isreal(value) and not np.isnan(value))
    bound = f"> {above}" if above is not None else f">= {at_least}"
    if ok and above is not None:
        ok = value > above
    if ok and at_least is not None:
        ok = value >= at_least
    if not ok:
        raise ValueError(f"{name} must be a number {bound}, got {value!r}")
    return float(value)


def check_float_dtype(name: str, dtype) -> np.dtype:
    """``dtype`` as a numpy floating dtype."""
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating):
        raise ValueError(
            f"{name} must be a floating dtype (float32 or float64), "
            f"got {dtype}"
        )
    return dtype


def check_int_array(name: str, x, *, ndim: int | None = None,
                    low: int | None = None, high: int | None = None,
                    want: str = "(..., T)") -> np.ndarray:
    """Non-empty integer array (token ids, lengths) in ``low .. high``."""
    arr = np.asarray(x)
    if (not np.issubdtype(arr.dtype, np.integer) or arr.ndim < 1
            or (ndim is not None and arr.ndim != ndim) or arr.shape[-1] == 0):
        raise ValueError(
            f"{name} must be a non-empty integer array of shape {want}, "
            f"got shape {arr.shape} and dtype {arr.dtype}"
        )
    if ((low is not None and arr.min() < low)
            or (high is not None and arr.max() > high)):
        raise ValueError(
            f"{name} must lie in {low} .. {high}, "
            f"got {arr.min()} .. {arr.max()}"
        )
    return arr


def check_last_axis(name: str, x: np.ndarray, size: int, want: str,
                    axis: str) -> None:
    """Raise unless the last axis of ``x`` (``axis`` in ``want``) is size."""
    if x.shape[-1] != size:
        raise ValueError(
            f"{name} has shape {x.shape}, expected {want} with "
            f"{axis} = {size}"
        )


def check_heads(num_attention_heads, num_key_value_heads) -> tuple[int, int]:
    """``(H, H_kv)`` as ints, ``H_kv`` dividing ``H``."""
    H = check_positive_int("num_attention_heads", num_attention_heads)
    H_kv = check_positive_int("num_key_value_heads", num_key_value_heads)
    if H % H_kv:
        raise ValueError(
            f"num_attention_heads = {H} is not a multiple of "
            f"num_key_value_heads = {H_kv}: each key/value head must serve "
            "the same number of query heads"
        )
    return H, H_kv


def check_qkv(query, key, value, enable_gqa: bool = False):
    """Query (..., T, d_head), key (..., S, d_head), value (..., S, d_head).

    Returns the three arrays and ``n_rep = H // H_kv`` (1 without GQA).
    """
    q = as_float_array("query", query, min_ndim=2)
    k = as_float_array("key", key, min_ndim=2)
    v = as_float_array("value", value, min_ndim=2)
    for name, arr in (("query", q), ("key", k), ("value", v)):
        check_nonempty(name, arr, {-2: "sequence", -1: "feature"})
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(
            f"query, key and value must share one dtype, got query {q.dtype}, "
            f"key {k.dtype}, value {v.dtype}"
        )
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"key has shape {k.shape}, expected (..., S, d_head) with "
            f"d_head = {q.shape[-1]} to match query {q.shape}"
        )
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(
            f"value has shape {v.shape}, expected (..., S, d_head) with "
            f"S = {k.shape[-2]} to match key {k.shape}"
        )
    n_rep = _check_gqa(q, k, v) if enable_gqa else 1
    _lead_shape(q, k, v, n_rep)
    return q, k, v, n_rep


def _lead_shape(q, k, v, n_rep: int) -> tuple:
    """The broadcast leading dims, key/value heads repeated ``n_rep`` times."""
    def lead(x):
        if n_rep == 1:
            return x.shape[:-2]
        return x.shape[:-3] + (x.shape[-3] * n_rep,)
    return broadcast_shapes({"query": q.shape[:-2], "key": lead(k),
                             "value": lead(v)})


def _check_gqa(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> int:
    """``n_rep = H // H_kv`` for query (..., H, T, d_head) and its key."""
    if q.ndim < 3 or k.ndim < 3 or v.ndim < 3:
        raise ValueError(
            "enable_gqa needs a head axis: query (..., H, T, d_head), key "
            "(..., H_kv, S, d_head), value (..., H_kv, S, d_head); got query "
            f"{q.shape}, key {k.shape}, value {v.shape}"
        )
    H, H_kv = q.shape[-3], k.shape[-3]
    if v.shape[-3] != H_kv:
        raise ValueError(
            f"value has {v.shape[-3]} heads (shape {v.shape}), expected "
            f"H_kv = {H_kv} heads to match key {k.shape}"
        )
    if H % H_kv:
        raise ValueError(
            "with enable_gqa, query heads must be a multiple of key/value "
            f"heads: query has H = {H} (shape {q.shape}), key has "
            f"H_kv = {H_kv} (shape {k.shape})"
        )
    return H // H_kv


def _broadcasts_to(shape: tuple, want: tuple) -> bool:
    """Whether ``shape`` broadcasts to ``want`` without enlarging it."""
    try:
        return np.broadcast_shapes(shape, want) == want
    except ValueError:
        return False


def check_attn_mask(attn_mask, is_causal, q: np.ndarray, k: np.ndarray,
                    v: np.ndarray, n_rep: int = 1):
    """A boolean or float mask broadcastable to the (..., T, S) scores."""
    if attn_mask is None:
        return None
    if is_causal:
        raise ValueError(
            "pass either attn_mask or is_causal=True, not both (as torch): "
            f"got attn_mask of shape {np.shape(attn_mask)} with is_causal=True"
        )
    m = np.asarray(attn_mask)
    if m.dtype != bool and not np.issubdtype(m.dtype, np.floating):
        raise ValueError(
            "attn_mask must be boolean (True = may attend) or floating (added "
            f"to the scores), got dtype {m.dtype} with shape {m.shape}"
        )
    want = _lead_shape(q, k, v, n_rep) + (q.shape[-2], k.shape[-2])
    if not _broadcasts_to(m.shape, want):
        raise ValueError(
            f"attn_mask has shape {m.shape}, expected a shape that broadcasts "
            f"to (..., T, S) = {want} without enlarging it"
        )
    return m


def check_fits(name: str, shape: tuple, other: str, other_shape: tuple
               ) -> None:
    """Raise unless ``other_shape`` broadcasts to ``shape`` as it is."""
    if not _broadcasts_to(other_shape, shape):
        raise ValueError(
            f"{other} has shape {other_shape}, which does not broadcast to "
            f"{name} of shape {shape}"
        )


def check_pairs(name: str, x, axis: str = "d_head",
                why: str = "RoPE rotates pairs of coordinates") -> np.ndarray:
    """A float array (..., T, ``axis``), T >= 1, the last axis even >= 2."""
    x = as_float_array(name, x, min_ndim=2)
    if x.shape[-2] == 0 or x.shape[-1] == 0 or x.shape[-1] % 2:
        raise ValueError(
            f"{name} has shape {x.shape}, expected (..., T, {axis}) with "
            f"T >= 1 and an even {axis} >= 2 ({why})"
        )
    return x


def check_positions(name: str, positions, x: np.ndarray | None = None
                    ) -> np.ndarray:
    """Positions as float64 (integers or reals; not bool, not complex).

    With ``x`` of shape (..., T, d_head): positions (T,) or broadcastable
    to ``x.shape[:-1]``; without: (B, T) or (T,).
    """
    pos = np.asarray(positions)
    if pos.dtype == bool or not (np.issubdtype(pos.dtype, np.integer)
                                 or np.issubdtype(pos.dtype, np.floating)):
        raise ValueError(
            f"{name} must hold integer (or real) positions, got dtype "
            f"{pos.dtype} with shape {pos.shape}"
        )
    if x is None and pos.ndim not in (1, 2):
        raise ValueError(
            f"{name} has shape {pos.shape}, expected (B, T) or (T,)"
        )
    if x is not None and (pos.ndim == 0 or pos.shape[-1] != x.shape[-2]):
        raise ValueError(
            f"{name} has shape {pos.shape}, expected (T,) = "
            f"({x.shape[-2]},) to match x of shape {x.shape} (..., T, d_head)"
        )
    if x is not None:
        check_fits("x.shape[:-1]", x.shape[:-1], name, pos.shape)
    return pos.astype(np.float64)


def check_even_last(name: str, x) -> np.ndarray:
    """A float array (..., d_head) with an even last axis."""
    x = as_float_array(name, x)
    if x.shape[-1] % 2:
        raise ValueError(
            f"{name} has shape {x.shape}, expected (..., d_head) with d_head "
            "even"
        )
    return x


def check_rotary(q, k, cos, sin, unsqueeze_dim: int):
    """q, k float; cos, sin of one shape, unsqueezed, fitting q and k."""
    q, k = as_float_array("q", q), as_float_array("k", k)
    tables = []
    for name, t in (("cos", cos), ("sin", sin)):
        t = as_float_array(name, t)
        if not -t.ndim - 1 <= unsqueeze_dim <= t.ndim:
            raise ValueError(
                f"unsqueeze_dim = {unsqueeze_dim} is out of range for {name} "
                f"of shape {t.shape}"
            )
        tables.append(np.expand_dims(t, unsqueeze_dim))
    cos, sin = tables
    if cos.shape != sin.shape:
        raise ValueError(
            f"cos and sin must have one shape, got cos {cos.shape}, "
            f"sin {sin.shape}"
        )
    for name, x in (("q", q), ("k", k)):
        check_fits(name, x.shape, "cos (after unsqueeze)", cos.shape)
    return q, k, cos, sin


def check_proj_rows(weight, head_dim) -> tuple[np.ndarray, int]:
    """A q/k projection (heads * d_head, d_model) or bias; its d_head."""
    w = as_float_array("weight", weight)
    d_head = check_even("head_dim", head_dim)
    if w.ndim not in (1, 2) or w.shape[0] % d_head:
        raise ValueError(
            f"weight has shape {w.shape}, expected (heads * head_dim, "
            f"d_model) or (heads * head_dim,) with head_dim = {d_head}")
    return w, d_head


def check_sizes(T, S=None) -> tuple[int, int]:
    """Query and key position counts ``(T, S)``, ``S`` defaulting to ``T``."""
    T = check_positive_int("T", T)
    return T, check_positive_int("S", T if S is None else S)


def check_causal_qkv(query, key, value):
    """:func:`check_qkv` and ``T <= S``; also returns the leading shape."""
    q, k, v, _ = check_qkv(query, key, value)
    T, S = q.shape[-2], k.shape[-2]
    if T > S:
        raise ValueError(
            f"query has T = {T} positions (shape {q.shape}) but key only "
            f"S = {S} (shape {k.shape}): expected T <= S, the queries being "
            "the last T positions"
        )
    return q, k, v, _lead_shape(q, k, v, 1)


def check_tokens(name: str, x, d_model: int) -> np.ndarray:
    """Token vectors: a float array (..., T, d_model) with T >= 1."""
    x = as_float_array(name, x, min_ndim=2)
    check_nonempty(name, x, {-2: "token"})
    check_last_axis(name, x, d_model, "(..., T, d_model)", "d_model")
    return x


def check_attention(query, key, value, attn_mask=None, is_causal=False,
                    enable_gqa=False, mask_mod=None):
    """:func:`check_qkv`, :func:`check_attn_mask` (and
    :func:`check_mask_mod`) in one call.

    Returns ``q, k, v, attn_mask, n_rep``.
    """
    check_mask_mod(mask_mod, attn_mask, is_causal)
    q, k, v, n_rep = check_qkv(query, key, value, enable_gqa)
    return q, k, v, check_attn_mask(attn_mask, is_causal, q, k, v,
                                    n_rep), n_rep


def check_positive_ints(**values) -> tuple[int, ...]:
    """Several :func:`check_positive_int` at once, by keyword."""
    return tuple(check_positive_int(n, v) for n, v in values.items())


def check_sequences(name: str, sequences) -> list[np.ndarray]:
    """A non-empty list of non-empty 1-D integer token-id lists."""
    seqs = [np.asarray(s) for s in sequences]
    if not seqs:
        raise ValueError(f"{name} is empty: expected at least one token list")
    for b, s in enumerate(seqs):
        check_int_array(f"{name}[{b}]", s, ndim=1, want="(T,)")
    return seqs


def check_rope_args(x, positions, layout, layouts: tuple):
    """:func:`check_pairs` for ``x``, its positions and the layout name."""
    x = check_pairs("x", x)
    pos = check_positions("positions", positions, x)
    check_choice("layout", layout, layouts)
    return x, pos


def check_frequencies(name: str, size, base, base_name: str = "rope_theta",
                      why: str = "RoPE rotates pairs of coordinates"):
    """An even size and a base > 1: a sin/cos frequency table."""
    return check_even(name, size, why), check_theta(base_name, base)


# --- layer checks
# ------------------------------------------ shapes, keys, lengths, needs
# The general doors: one message per kind of mistake, for the conditions
# the helpers above do not cover. Each names the argument, what it got and
# what it wanted, as every helper here does.

def check_shape(name: str, x, ok: bool, want: str):
    """``x`` if ``ok``; else ``name has shape (...), expected want``."""
    if not ok:
        raise ValueError(f"{name} has shape {np.shape(x)}, expected {want}")
    return x


def check_not_empty(name: str, items, want: str):
    """``items`` unless it is empty (``want``: what one item is)."""
    if len(items) == 0:
        raise ValueError(f"{name} is empty: expected at least one {want}")
    return items


def check_keys(name: str, keys, known, required=()) -> None:
    """Raise if ``keys`` has one not in ``known`` or lacks a ``required``."""
    keys = list(keys)
    unknown = sorted(str(k) for k in keys if k not in known)
    missing = [str(k) for k in required if k not in keys]
    if unknown or missing:
        raise ValueError(
            f"{name} has unknown keys {unknown}, missing keys {missing}")


def check_all_or_none(**given) -> None:
    """Arrays that come together (q_norm and k_norm): all of them or none."""
    have = [n for n, v in given.items() if v is not None]
    if 0 < len(have) < len(given):
        raise ValueError(
            f"give all of {tuple(given)} or none, got only {have}")


def check_divisible(name: str, value: int, by_name: str, by: int) -> int:
    """``value`` if ``by`` divides it (hidden_size by num_attention_heads)."""
    if value % by:
        raise ValueError(f"{name} = {value} must be divisible by "
                         f"{by_name} = {by}, got remainder {value % by}")
    return value


def check_room(name: str, held: int, new: int, limit_name: str,
               limit: int, where: str) -> None:
    """Raise if ``held + new`` positions exceed ``limit`` (a cache, a model).

    The one overflow check: a cache's ``max_cache_len``, a model's
    ``max_position_embeddings``; ``where``: what holds the ``held`` ones.
    """
    if held + new > limit:
        raise ValueError(
            f"{name}: cannot append {new} positions to {where}: it holds "
            f"{held} and {limit_name} is {limit} ({held} + {new} = "
            f"{held + new} > {limit})")


def check_needs(ok: bool, name: str, needs: str, why: str) -> None:
    """Raise unless ``ok``: argument ``name`` needs ``needs`` (``why``)."""
    if not ok:
        raise ValueError(f"{name} needs {needs}: {why}")


def check_scale(name: str, value) -> float | None:
    """None, or a finite number > 0 (an attention scale, as torch's)."""
    if value is None:
        return None
    real = (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, bool))
    if not real or not np.isfinite(value) or value <= 0:
        raise ValueError(
            f"{name} must be a finite number > 0 or None, got {value!r}")
    return float(value)


def check_token_ids(name: str, ids, vocab_size: int, *,
                    ndim: int | None = None, want: str = "(B, T)",
                    ignore_index: int | None = None) -> np.ndarray:
    """Token ids: a non-empty integer array with values in 0 .. V-1.

    The one convention for token ids (``input_ids``, ``labels``, prompts);
    ``ignore_index`` (torch's -100 for labels) is allowed besides.
    """
    arr = check_int_array(name, ids, ndim=ndim, want=want)
    real = arr if ignore_index is None else arr[arr != ignore_index]
    if real.size and (real.min() < 0 or real.max() >= vocab_size):
        extra = "" if ignore_index is None else f" (or {ignore_index})"
        raise ValueError(
            f"{name} must lie in 0 .. {vocab_size - 1}{extra}, got "
            f"{real.min()} .. {real.max()} (vocab_size = {vocab_size})")
    return arr


def check_01_mask(name: str, mask) -> np.ndarray:
    """A mask as a bool array: booleans, or numbers that are all 0 or 1."""
    m = np.asarray(mask)
    if m.dtype == bool:
        return m
    numeric = (np.issubdtype(m.dtype, np.integer)
               or np.issubdtype(m.dtype, np.floating))
    if not numeric or not np.isin(m, (0, 1)).all():
        seen = np.unique(m)[:6].tolist() if numeric else m.dtype
        raise ValueError(
            f"{name} must be boolean or hold only 0 and 1 (1 = real token), "
            f"got dtype {m.dtype} with values {seen}"
        )
    return m.astype(bool)


# --- model and checkpoint checks (pyxis_nb.model)
def check_input_ids(name: str, ids, vocab_size: int) -> np.ndarray:
    """A model's input ids (B, T) or (T,), as (B, T): ``check_token_ids``."""
    check_int_array(name, ids, want="(B, T) or (T,)")  # ints, T >= 1
    arr = np.asarray(ids)
    arr = arr[None] if arr.ndim == 1 else arr  # (T,) -> (1, T)
    check_shape(name, ids, arr.ndim == 2 and arr.shape[0] > 0,
                "(B, T) or (T,) with B, T >= 1")
    return check_token_ids(name, arr, vocab_size, ndim=2,
                           want="(B, T) or (T,)")


def check_found(ok: bool, message: str) -> None:
    """Raise ``FileNotFoundError(message)`` unless ``ok`` (a file found)."""
    if not ok:
        raise FileNotFoundError(message)


def check_json_file(file):
    """The parsed JSON of ``file`` (a config or an index), or a ValueError."""
    try:
        return json.loads(pathlib.Path(file).read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{pathlib.Path(file).name} is not a readable JSON "
                         f"file: {err}") from None


def check_context(name_a: str, a: int, name_b: str, b: int,
                  max_position_embeddings: int) -> None:
    """Raise if ``a + b`` positions pass ``max_position_embeddings``."""
    if a + b > max_position_embeddings:
        raise ValueError(
            f"{name_a} ({a}) + {name_b} ({b}) = {a + b} exceeds "
            f"max_position_embeddings = {max_position_embeddings}")


def check_token_list(name: str, value, vocab_size: int) -> tuple[int, ...]:
    """None, an id or a list of ids in 0 .. vocab_size - 1, as a tuple."""
    values = [] if value is None else (
        list(value) if isinstance(value, (list, tuple)) else [value])
    return tuple(check_int(name, v, low=0, high=vocab_size - 1)
                 for v in values)


def check_sampling(do_sample, temperature, top_k, top_p, seed) -> dict:
    """``generate``'s sampling arguments, checked (HF's names and ranges)."""
    check_bool("do_sample", do_sample)
    check_number("temperature", temperature, above=0)
    if top_k is not None:
        check_positive_int("top_k", top_k)
    if top_p is not None and not 0 < check_number("top_p", top_p,
                                                  above=0) <= 1:
        raise ValueError(f"top_p must be a number in (0, 1], got {top_p!r}")
    if seed is not None:
        check_int("seed", seed, low=0)
    return dict(temperature=float(temperature), top_k=top_k, top_p=top_p,
                seed=seed)


def check_config_value(file: str, key: str, value, allowed: tuple,
                       why: str) -> None:
    """A config key this code implements only with ``allowed`` values."""
    if value not in allowed:
        raise ValueError(
            f"{file}: {key} is {value!r}, expected "
            f"{' or '.join(map(repr, allowed))} ({why})")


def check_state_shapes(source: str, got: dict, want: dict,
                       optional: tuple = (), *,
                       against: str = "config.json") -> None:
    """Every key of ``want`` in ``got`` with its shape, and no other key.

    ``got`` and ``want`` map tensor names to shapes; ``optional`` names
    keys that may be absent (a tied ``lm_head.weight``); ``against``: where
    ``want`` comes from.
    """
    missing = sorted(k for k in want if k not in got and k not in optional)
    unexpected = sorted(k for k in got if k not in want)
    if missing or unexpected:
        raise ValueError(
            f"{source} does not fit {against}: missing keys "
            f"{_few(missing)}, unexpected keys {_few(unexpected)}")
    for key, shape in got.items():
        if tuple(shape) != tuple(want[key]):
            raise ValueError(
                f"{key} has shape {tuple(shape)} in {source}, expected "
                f"{tuple(want[key])} from {against}")


def _few(keys: list, n: int = 6) -> str:
    """A list of names, cut after ``n`` with the count of the rest."""
    more = f" and {len(keys) - n} more" if len(keys) > n else ""
    return f"{keys[:n]}{more}"


def check_position_ids(name: str, position_ids, B: int, T: int,
                       max_position_embeddings: int | None = None
                       ) -> np.ndarray:
    """Integer positions >= 0 of shape (T,), (1, T) or (B, T), as (B, T).

    Only what is a property of the input: HF accepts any such positions
    (packed sequences, tree decoding), so their values are the caller's.
    """
    pos = np.asarray(position_ids)
    high = np.inf if max_position_embeddings is None else \
        max_position_embeddings
    if (not np.issubdtype(pos.dtype, np.integer)
            or pos.shape not in ((T,), (1, T), (B, T))
            or np.any(pos < 0) or np.any(pos >= high)):
        limit = "" if max_position_embeddings is None else \
            f" and < max_position_embeddings = {max_position_embeddings}"
        seen = (f", values {pos.min()} .. {pos.max()}"
                if pos.size and np.issubdtype(pos.dtype, np.number) else "")
        raise ValueError(
            f"{name} has shape {pos.shape} and dtype {pos.dtype}{seen}, "
            f"expected integers >= 0{limit} of shape (T,) or (B, T) = "
            f"({B}, {T})")
    return np.broadcast_to(pos, (B, T))


def check_split_heads(x, head_dim) -> tuple[np.ndarray, int]:
    """x (B, T, H*d_head) whose last axis splits into heads of head_dim."""
    x = as_float_array("x", x)
    d_head = check_positive_int("head_dim", head_dim)
    if x.ndim != 3 or x.shape[-1] % d_head:
        raise ValueError(
            f"x has shape {x.shape}, expected (B, T, H*d_head) with a last "
            f"axis divisible by head_dim = {d_head}")
    return x, d_head


def check_model_config(config) -> None:
    """A ModelConfig's values (``intermediate_size`` 0: no MLP)."""
    for name in ("vocab_size", "hidden_size", "num_hidden_layers", "head_dim",
                 "max_position_embeddings"):
        check_positive_int(name, getattr(config, name))
    check_heads(config.num_attention_heads, config.num_key_value_heads)
    check_int("intermediate_size", config.intermediate_size, low=0)
    check_theta("rope_theta", config.rope_theta)
    check_number("rms_norm_eps", config.rms_norm_eps, at_least=0)


# --- tiled attention's mask_mod (FlexAttention)
def check_mask_mod(mask_mod, attn_mask=None, is_causal=False):
    """``mask_mod(b, h, q_idx, kv_idx)``: a callable, alone as the mask."""
    if mask_mod is None:
        return None
    if not callable(mask_mod):
        raise ValueError(
            "mask_mod must be a function mask_mod(b, h, q_idx, kv_idx) -> "
            f"bool array, got {type(mask_mod).__name__} {mask_mod!r}"
        )
    if attn_mask is not None or is_causal:
        given = (f"attn_mask of shape {np.shape(attn_mask)}"
                 if attn_mask is not None else "is_causal=True")
        raise ValueError(
            f"pass mask_mod alone, got it with {given}: write that rule "
            "into mask_mod (causal: q_idx >= kv_idx)"
        )
    return mask_mod


def check_mask_mod_tile(keep, want: tuple) -> np.ndarray:
    """What ``mask_mod`` returned for one tile: bool, broadcasting to
    ``want`` = (B, H, block_q, block_k) without enlarging it."""
    keep = np.asarray(keep)
    if keep.dtype != bool:
        raise ValueError(
            "mask_mod must return a boolean array (True = may attend), got "
            f"dtype {keep.dtype} with shape {keep.shape}"
        )
    if not _broadcasts_to(keep.shape, want):
        raise ValueError(
            f"mask_mod returned shape {keep.shape} for a tile of (B, H, "
            f"block_q, block_k) = {want}, expected a shape that broadcasts "
            "to it without enlarging it"
        )
    return keep


# --- files fetched and read (pyxis_nb.gguf_file)
def check_fetched(ok: bool, message: str) -> None:
    """Raise ``OSError(message)`` unless ``ok`` (a download that failed)."""
    if not ok:
        raise OSError(message)


def check_sha256(name: str, got: str, want: str, fix: str) -> None:
    """A file's sha256 as published; else ValueError saying what to run."""
    if got != want:
        raise ValueError(
            f"{name} has sha256 {got}, expected {want}: {fix}")


def check_file_error(name: str, error, want: str) -> None:
    """Raise if a library could not read ``name`` (``error``, or None)."""
    if error is not None:
        raise ValueError(f"{name} is not a valid {want} (truncated or "
                         f"corrupt?): {type(error).__name__}: {error}")
