"""The generic input checks that several modules share: check at the door.

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
modules use the unchecked cores, so no array is checked twice. A check that
one module needs lives in that module, beside its caller.
"""

from __future__ import annotations

import numpy as np


def as_float_array(name: str, x, *, min_ndim: int = 1,
                   ndim: int | None = None, finite: bool = False
                   ) -> np.ndarray:
    """``x`` as a floating ndarray of ``ndim`` (or >= ``min_ndim``) axes."""
    arr = np.asarray(x)
    if arr.dtype.kind != "f":  # np.issubdtype(.., np.floating), in 1/20
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


def check_nonempty(name: str, x, what: dict[int, str] | str):
    """``x`` unless it is empty: an array's named axes, or a collection.

    ``what``: ``{axis: label}`` for an array (each named axis needs length
    >= 1), or a str saying what one item of the collection ``x`` is.
    """
    if isinstance(what, str):
        if len(x) == 0:
            raise ValueError(f"{name} is empty: expected at least one {what}")
        return x
    for axis, label in what.items():
        if x.shape[axis] == 0:
            raise ValueError(
                f"{name} has a 0-length {label} axis: got shape {x.shape}, "
                f"expected {label} >= 1"
            )
    return x


def is_index(value, n: int) -> bool:
    """Whether ``value`` is a Python int (not a bool) in ``0 .. n - 1``: a
    layer index into a per-layer list of a config."""
    return (not isinstance(value, bool) and isinstance(value, int)
            and 0 <= value < n)


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


def _broadcast_shapes(names_and_shapes: dict[str, tuple]) -> tuple:
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
    return _broadcast_shapes({"query": q.shape[:-2], "key": lead(k),
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


def check_frequencies(name: str, size, base, base_name: str = "rope_theta",
                      why: str = "RoPE rotates pairs of coordinates"):
    """An even size and a base > 1: a sin/cos frequency table."""
    return check_even(name, size, why), check_theta(base_name, base)


# ------------------------------------------ shapes, keys, lengths, needs
# The general doors: one message per kind of mistake, for the conditions
# the helpers above do not cover. Each names the argument, what it got and
# what it wanted, as every helper here does.

def check_shape(name: str, x, ok: bool, want: str):
    """``x`` if ``ok``; else ``name has shape (...), expected want``."""
    if not ok:
        raise ValueError(f"{name} has shape {np.shape(x)}, expected {want}")
    return x


def check_keys(name: str, keys, known, required=()) -> None:
    """Raise if ``keys`` has one not in ``known`` or lacks a ``required``."""
    keys = list(keys)
    unknown = sorted(str(k) for k in keys if k not in known)
    missing = [str(k) for k in required if k not in keys]
    if unknown or missing:
        raise ValueError(
            f"{name} has unknown keys {unknown}, missing keys {missing}")


def check_needs(ok: bool, name: str, needs: str, why: str) -> None:
    """Raise unless ``ok``: argument ``name`` needs ``needs`` (``why``)."""
    if not ok:
        raise ValueError(f"{name} needs {needs}: {why}")


def check_token_ids(name: str, ids, vocab_size: int, *,
                    ndim: int | None = None, want: str = "(B, T)",
                    ignore_index: int | None = None,
                    batch: bool = False) -> np.ndarray:
    """Token ids: a non-empty integer array with values in 0 .. V-1.

    The one check for token ids (``input_ids``, ``labels``, prompts);
    ``ignore_index`` (torch's -100 for labels) is allowed besides. With
    ``batch``: a model's input, (B, T) or (T,), returned as (B, T).
    """
    if batch:
        want = "(B, T) or (T,)"
        arr = check_int_array(name, ids, want=want)  # ints, T >= 1
        arr = arr[None] if arr.ndim == 1 else arr  # (T,) -> (1, T)
        check_shape(name, ids, arr.ndim == 2 and arr.shape[0] > 0,
                    "(B, T) or (T,) with B, T >= 1")
    else:
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


# --- model and checkpoint checks (pyxis_nb.model, pyxis_nb.gguf_file)
def check_found(ok: bool, message: str) -> None:
    """Raise ``FileNotFoundError(message)`` unless ``ok`` (a file found)."""
    if not ok:
        raise FileNotFoundError(message)


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


def check_model_config(config) -> None:
    """A ModelConfig's values (``intermediate_size`` 0: no MLP)."""
    for name in ("vocab_size", "hidden_size", "num_hidden_layers", "head_dim",
                 "max_position_embeddings"):
        check_positive_int(name, getattr(config, name))
    check_heads(config.num_attention_heads, config.num_key_value_heads)
    check_int("intermediate_size", config.intermediate_size, low=0)
    check_theta("rope_theta", config.rope_theta)
    check_number("rms_norm_eps", config.rms_norm_eps, at_least=0)


# --- FlexAttention's mask_mod (check_attention, for tiled attention)
def as_config_dict(config, required: tuple = ()) -> dict:
    """A transformers config (anything with ``to_dict()``) or a dict, as a
    dict, with every key of ``required``: the one way the package reads a
    config."""
    if hasattr(config, "to_dict"):
        config = config.to_dict()
    if not isinstance(config, dict):
        raise ValueError(
            "config must be a dict or a transformers config (its to_dict()), "
            f"got {type(config).__name__}")
    check_keys("config", [k for k in required if k in config], required,
               required)
    return config


def check_callable(name: str, fn, want: str):
    """``fn`` if it is None or callable; ``want`` says its signature."""
    if fn is not None and not callable(fn):
        raise ValueError(
            f"{name} must be a function {want}, got {type(fn).__name__} "
            f"{fn!r}")
    return fn


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
