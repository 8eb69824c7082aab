"""pyxis_nb's scaled_dot_product_attention against torch's, where torch is importable.

torch.nn.functional.scaled_dot_product_attention (dropout_p=0) is the reference:
the same random inputs go through both, in float32 and float64, with
broadcasting leading dims, boolean and float masks, is_causal with L != S,
explicit scales, enable_gqa and fully masked query rows. Without torch (or
with torch < 2.5, which lacks enable_gqa and gives NaN for masked rows) the
whole file is skipped and pytest prints why.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the PyTorch reference comparison is skipped")
if tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 5):
    pytest.skip(f"torch {torch.__version__} < 2.5: SDPA semantics differ (enable_gqa, "
                "fully masked rows)", allow_module_level=True)

F = torch.nn.functional

# float32 is compared loosely (torch may use another summation order or a fused kernel)
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-11, atol=1e-13)}


def torch_sdpa(q, k, v, attn_mask=None, **kwargs):
    t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v)]
    m = None if attn_mask is None else torch.from_numpy(np.ascontiguousarray(attn_mask))
    with torch.no_grad():
        out = F.scaled_dot_product_attention(*t, attn_mask=m, dropout_p=0.0, **kwargs)
    return out.numpy()


def compare(q, k, v, **kwargs):
    ours = px.scaled_dot_product_attention(q, k, v, **kwargs)
    theirs = torch_sdpa(q, k, v, **kwargs)
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype == q.dtype
    assert not np.isnan(theirs).any(), "torch gave NaN"
    np.testing.assert_allclose(ours, theirs, **TOL[q.dtype.type])
    return ours


def randn(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64])


@DTYPES
def test_plain(rng, dtype):
    compare(randn(rng, (2, 3, 4, 8), dtype), randn(rng, (2, 3, 6, 8), dtype),
            randn(rng, (2, 3, 6, 5), dtype))


@DTYPES
def test_broadcast_leading_dims_and_scale(rng, dtype):
    compare(randn(rng, (2, 1, 3, 4), dtype), randn(rng, (1, 3, 5, 4), dtype),
            randn(rng, (3, 5, 2), dtype), scale=0.3)


@DTYPES
@pytest.mark.parametrize("L, S", [(3, 7), (7, 3), (5, 5), (1, 4)])
def test_is_causal_when_L_differs_from_S(rng, dtype, L, S):
    compare(randn(rng, (2, L, 4), dtype), randn(rng, (2, S, 4), dtype),
            randn(rng, (2, S, 3), dtype), is_causal=True)


@DTYPES
def test_bool_and_float_masks(rng, dtype):
    q, k, v = randn(rng, (2, 2, 4, 4), dtype), randn(rng, (2, 2, 6, 4), dtype), randn(rng, (2, 2, 6, 3), dtype)
    compare(q, k, v, attn_mask=rng.random((2, 1, 4, 6)) < 0.6)
    compare(q, k, v, attn_mask=randn(rng, (4, 6), dtype))
    compare(q, k, v, attn_mask=px.causal_mask(4, 6))  # bottom-right, as with a KV cache


@DTYPES
def test_fully_masked_rows_are_zero_in_both(rng, dtype):
    q, k, v = randn(rng, (2, 4, 4), dtype), randn(rng, (2, 6, 4), dtype), randn(rng, (2, 6, 3), dtype)
    mask = rng.random((2, 4, 6)) < 0.6
    mask[0, 1] = False
    mask[1, 3] = False
    out = compare(q, k, v, attn_mask=mask)
    assert np.all(out[0, 1] == 0) and np.all(out[1, 3] == 0)
    bias = np.where(mask, 0.0, -np.inf).astype(dtype)
    out = compare(q, k, v, attn_mask=bias)
    assert np.all(out[0, 1] == 0) and np.all(out[1, 3] == 0)
    # more queries than keys with a bottom-right causal mask: the first rows see nothing
    compare(q, k[:, :2], v[:, :2], attn_mask=px.causal_mask(4, 2))


@DTYPES
def test_enable_gqa(rng, dtype):
    compare(randn(rng, (2, 6, 3, 4), dtype), randn(rng, (2, 2, 5, 4), dtype),
            randn(rng, (2, 2, 5, 3), dtype), enable_gqa=True)
    compare(randn(rng, (4, 3, 4), dtype), randn(rng, (1, 5, 4), dtype),
            randn(rng, (1, 5, 3), dtype), enable_gqa=True, is_causal=True)


@st.composite
def problems(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    B = draw(st.integers(1, 2))
    hkv = draw(st.integers(1, 3))
    gqa = draw(st.booleans())
    hq = hkv * draw(st.integers(1, 3)) if gqa else hkv
    L, S, E, Ev = (draw(st.integers(1, 6)) for _ in range(4))
    one = lambda n: draw(st.sampled_from([n, 1]))  # noqa: E731 a dim that may broadcast
    q_shape = (one(B), hq, L, E)
    k_shape = (one(B), hkv if gqa else one(hkv), S, E)
    v_shape = (one(B), k_shape[1], S, Ev)
    kwargs = {"enable_gqa": gqa}
    mask_kind = draw(st.sampled_from(["none", "bool", "float", "causal"]))
    heads = hq if gqa else max(q_shape[1], k_shape[1])  # after repeating kv heads
    batch = (max(q_shape[0], k_shape[0], v_shape[0]), heads)
    mask_shape = (one(batch[0]), one(batch[1]), one(L), S)
    if draw(st.booleans()):
        mask_shape = mask_shape[2:]  # (L, S) or (1, S)
    if draw(st.booleans()):
        kwargs["scale"] = draw(st.floats(0.05, 2.0))
    return dtype, q_shape, k_shape, v_shape, mask_kind, mask_shape, kwargs, draw(st.integers(0, 2**32 - 1))


@given(problems())
def test_random_problems_match_torch(problem):
    dtype, q_shape, k_shape, v_shape, mask_kind, mask_shape, kwargs, seed = problem
    rng = np.random.default_rng(seed)
    q, k, v = randn(rng, q_shape, dtype), randn(rng, k_shape, dtype), randn(rng, v_shape, dtype)
    if mask_kind == "bool":
        kwargs["attn_mask"] = rng.random(mask_shape) < 0.5  # fully masked rows happen
    elif mask_kind == "float":
        bias = randn(rng, mask_shape, dtype)
        kwargs["attn_mask"] = np.where(rng.random(mask_shape) < 0.3, dtype(-np.inf), bias)
    elif mask_kind == "causal":
        kwargs["is_causal"] = True
    compare(q, k, v, **kwargs)
