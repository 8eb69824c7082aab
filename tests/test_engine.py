"""Tests of pyxis_nb.engine: the row-by-row causal attention of an inference engine."""

import numpy as np
import pytest

import pyxis_nb as px


def test_hand_example():
    # q = 1 at every position, keys [0, ln 2, ln 3], values [2, 4, 8], scale 1:
    # position 0 sees key 0 only; 1 sees weights [1/3, 2/3]; 2 sees [1/6, 2/6, 3/6]
    q = np.ones((3, 1))
    k = np.log(np.array([[1.0], [2.0], [3.0]]))
    v = np.array([[2.0], [4.0], [8.0]])
    out, w = px.engine.engine_causal_attention(q, k, v, scale=1.0, output_attentions=True)
    np.testing.assert_allclose(w, [[1, 0, 0], [1 / 3, 2 / 3, 0], [1 / 6, 2 / 6, 3 / 6]], atol=1e-15)
    np.testing.assert_allclose(out[:, 0], [2.0, 10 / 3, 17 / 3], atol=1e-14)
    assert np.all(w[np.triu_indices(3, k=1)] == 0.0)


@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 6, 4)])
def test_equals_matrix_way(rng, shape):
    q, k, v = (rng.standard_normal(shape) for _ in range(3))
    out_e, w_e = px.engine.engine_causal_attention(q, k, v, output_attentions=True)
    out_m, w_m = px.scaled_dot_product_attention(q, k, v, is_causal=True, output_attentions=True)
    np.testing.assert_allclose(out_e, out_m, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(w_e, w_m, rtol=1e-12, atol=1e-13)


def test_fewer_queries_than_keys_is_bottom_right(rng):
    # 2 new queries at positions 4 and 5 of 6: like decoding with a KV cache
    q = rng.standard_normal((2, 4))
    k, v = rng.standard_normal((6, 4)), rng.standard_normal((6, 3))
    out = px.engine.engine_causal_attention(q, k, v)
    ref = px.scaled_dot_product_attention(q, k, v, attn_mask=px.causal_mask(2, 6))
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-13)


def test_float32_stays_float32(rng):
    q = rng.standard_normal((4, 8)).astype(np.float32)
    out, w = px.engine.engine_causal_attention(q, q, q, output_attentions=True)
    assert out.dtype == np.float32 and w.dtype == np.float32


def test_matches_torch_is_causal(rng):
    torch = pytest.importorskip("torch", reason="torch not installed: reference check skipped")
    q, k, v = (rng.standard_normal((2, 3, 7, 5)) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), is_causal=True, dropout_p=0.0).numpy()
    np.testing.assert_allclose(px.engine.engine_causal_attention(q, k, v), ref, rtol=1e-12, atol=1e-13)
