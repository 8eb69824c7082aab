"""Tests of pyxis_nb.linear_attention: the three updates in both forms,
Qwen3-Next's layer and its cache, against transformers where installed."""

import numpy as np
import pytest

import pyxis_nb as px
from conftest import run_in_float64

la = px.linear_attention
FORMS = {  # name: (uses g, uses beta, delta_rule)
    "linear attention": (False, False, False),
    "gated linear attention": (True, False, False),
    "delta rule": (False, True, True),
    "gated delta rule": (True, True, True),
}
CONFIG = dict(hidden_size=32, linear_num_key_heads=2,
              linear_num_value_heads=4, linear_key_head_dim=8,
              linear_value_head_dim=6, linear_conv_kernel_dim=4,
              rms_norm_eps=1e-6, hidden_act="silu",
              layer_types=["linear_attention"] * 3 + ["full_attention"])


def inputs(rng, B=2, T=11, H_k=2, H=4, d_k=8, d_v=6, dtype=np.float64):
    """query, key (B, T, H_k, d_k), value (B, T, H, d_v), g, beta (B, T, H)
    and a state (B, H, d_k, d_v); keys of norm about 1, so that the delta
    rule without L2 normalisation stays bounded."""
    q = rng.standard_normal((B, T, H_k, d_k))
    k = rng.standard_normal((B, T, H_k, d_k)) / np.sqrt(d_k)
    v = rng.standard_normal((B, T, H, d_v))
    g = -rng.uniform(0, 0.5, (B, T, H))
    beta = rng.uniform(0, 1, (B, T, H))
    s0 = rng.standard_normal((B, H, d_k, d_v))
    return [x.astype(dtype) for x in (q, k, v, g, beta, s0)]


def run(form, chunk_size=None, rng=None, **kw):
    """One form's output and last state, recurrent or chunked."""
    q, k, v, g, beta, s0 = inputs(rng or np.random.default_rng(0), **kw)
    uses_g, uses_beta, delta = FORMS[form]
    args = dict(g=g if uses_g else None, beta=beta if uses_beta else None,
                initial_state=s0, output_final_state=True, delta_rule=delta)
    if chunk_size is None:
        return la.recurrent_gated_delta_rule(q, k, v, **args)
    return la.chunk_gated_delta_rule(q, k, v, chunk_size=chunk_size, **args)


# ------------------------------------------------ the forms, and the maths
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("chunk_size", [1, 4, 11, 64])
def test_chunked_equals_recurrent(form, chunk_size):
    out, state = run(form)
    out_c, state_c = run(form, chunk_size)
    assert out.shape == out_c.shape == (2, 11, 4, 6)
    assert state.shape == state_c.shape == (2, 4, 8, 6)
    np.testing.assert_allclose(out_c, out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(state_c, state, rtol=1e-12, atol=1e-12)


def test_linear_attention_is_attention_without_the_softmax(rng):
    """o_t = sum_{s <= t} exp(G_t - G_s) (q_t . k_s) v_s (scale included)."""
    q, k, v, g, _, _ = inputs(rng, H_k=4)
    for decay in (None, g):
        out, _ = la.chunk_gated_delta_rule(q, k, v, decay, chunk_size=4,
                                           delta_rule=False)
        G = np.zeros_like(g) if decay is None else np.cumsum(g, axis=1)
        # (B, T, H, d_k) x (B, S, H, d_k) -> (B, H, T, S)
        scores = np.einsum("bthd,bshd->bhts", q, k) * 8 ** -0.5
        lag = G.transpose(0, 2, 1)[..., :, None] - G.transpose(0, 2, 1)[
            ..., None, :]  # (B, H, T, S): G_t - G_s
        weights = np.tril(scores * np.exp(np.minimum(lag, 0)))
        # (B, H, T, S) x (B, S, H, d_v) -> (B, T, H, d_v)
        ref = np.einsum("bhts,bshd->bthd", weights, v)
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)


def test_the_delta_rule_keeps_the_latest_value():
    """Associative recall: a key written twice. Linear attention returns the
    sum of both values; the delta rule returns the second."""
    d = 4
    keys = np.eye(d)[[0, 1, 0]]  # key 0, key 1, key 0 again
    values = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0]])
    k = keys[None, :, None]  # (B, T, H_k, d_k) = (1, 3, 1, 4)
    v = values[None, :, None]  # (1, 3, 1, 4)
    read = np.eye(d)[None, [0], None]  # query key 0: (1, 1, 1, 4)
    for delta, expected in ((False, [1.0, 0, 1.0, 0]), (True, [0, 0, 1.0, 0])):
        _, state = la.recurrent_gated_delta_rule(
            k, k, v, output_final_state=True, scale=1.0, delta_rule=delta)
        out, _ = la.recurrent_gated_delta_rule(
            read, read, np.zeros((1, 1, 1, d)), beta=np.zeros((1, 1, 1)),
            initial_state=state, scale=1.0)  # beta 0: read only
        np.testing.assert_allclose(out[0, 0, 0], expected, atol=1e-15)


@pytest.mark.parametrize("form", FORMS)
def test_the_state_carries_a_sequence_across_calls(form, rng):
    q, k, v, g, beta, s0 = inputs(rng, T=20)
    uses_g, uses_beta, delta = FORMS[form]
    g, beta = (g if uses_g else None), (beta if uses_beta else None)
    whole, end = la.chunk_gated_delta_rule(
        q, k, v, g, beta, chunk_size=8, initial_state=s0,
        output_final_state=True, delta_rule=delta)
    cut = 13
    parts, state = [], s0
    for sl in (slice(0, cut), slice(cut, 20)):
        out, state = la.recurrent_gated_delta_rule(
            q[:, sl], k[:, sl], v[:, sl], None if g is None else g[:, sl],
            None if beta is None else beta[:, sl], initial_state=state,
            output_final_state=True, delta_rule=delta)
        parts.append(out)
    np.testing.assert_allclose(np.concatenate(parts, 1), whole, atol=1e-12)
    np.testing.assert_allclose(state, end, atol=1e-12)


def test_conventions_l2norm_scale_dtype_and_no_state(rng):
    q, k, v, g, beta, _ = inputs(rng)
    a, none = la.chunk_gated_delta_rule(q, k, v, g, beta,
                                        use_qk_l2norm_in_kernel=True)
    assert none is None
    b, _ = la.recurrent_gated_delta_rule(la.l2norm(q), la.l2norm(k), v, g,
                                         beta)
    np.testing.assert_allclose(a, b, atol=1e-12)
    c, _ = la.recurrent_gated_delta_rule(q * 8 ** -0.5, k, v, g, beta,
                                         scale=1.0)
    d, _ = la.recurrent_gated_delta_rule(q, k, v, g, beta)
    np.testing.assert_allclose(c, d, atol=1e-12)
    np.testing.assert_allclose(la.l2norm(np.array([3.0, 4.0]), eps=0.0),
                               [0.6, 0.8])
    f32 = inputs(rng, dtype=np.float32)
    for fn in (la.recurrent_gated_delta_rule, la.chunk_gated_delta_rule):
        out, state = fn(*f32[:5], initial_state=f32[5],
                        output_final_state=True)
        assert out.dtype == state.dtype == np.float32


# -------------------------------------------------------- the Qwen3-Next layer
def layer(seed=0, **kw):
    """A layer with weights large enough that every part shows."""
    rng = np.random.default_rng(seed)
    w = la.Qwen3NextGatedDeltaNet.from_config(CONFIG, seed=seed).state_dict()
    w = {k: rng.normal(0, 0.5, v.shape) for k, v in w.items()}
    w["A_log"] = np.log(rng.uniform(0.01, 16, 4))
    w["norm.weight"] = rng.uniform(0.5, 1.5, 6)
    return la.Qwen3NextGatedDeltaNet.from_state_dict(w, CONFIG, **kw)


def test_decode_token_by_token_equals_the_full_forward(rng):
    x = rng.standard_normal((2, 12, 32))
    gdn = layer()
    full = gdn(x)
    assert full.shape == (2, 12, 32)
    cache = px.kv_cache.DynamicCache(CONFIG)
    steps = [gdn(x[:, :5], cache=cache)]  # prefill, chunked
    steps += [gdn(x[:, t:t + 1], cache=cache) for t in range(5, 12)]
    np.testing.assert_allclose(np.concatenate(steps, 1), full, atol=1e-12)
    cache = px.kv_cache.DynamicCache(CONFIG)
    one = [gdn(x[:, t:t + 1], cache=cache) for t in range(12)]
    np.testing.assert_allclose(np.concatenate(one, 1), full, atol=1e-12)


def test_chunk_size_changes_nothing(rng):
    x = rng.standard_normal((1, 23, 32))
    ref = layer()(x)
    for C in (1, 5, 23):
        np.testing.assert_allclose(layer(chunk_size=C)(x), ref, atol=1e-12)


def test_padding_tokens_write_nothing(rng):
    """Left padding: the real tokens' outputs are those of the unpadded
    sequence (the zeroed inputs pass through the convolution as zeros)."""
    x = rng.standard_normal((1, 7, 32))
    gdn = layer()
    padded = np.concatenate([rng.standard_normal((1, 3, 32)), x], 1)
    mask = np.array([[0, 0, 0] + [1] * 7])
    out = gdn(padded, attention_mask=mask)
    np.testing.assert_allclose(out[:, 3:], gdn(x), atol=1e-12)


def test_the_cache_does_not_grow(rng):
    gdn = layer()
    cache = px.kv_cache.DynamicCache(CONFIG)
    assert cache.nbytes == 0 and "layers=4 'rrrf'" in repr(cache)
    gdn(rng.standard_normal((2, 3, 32)), cache=cache)
    first = cache.nbytes
    for _ in range(5):
        gdn(rng.standard_normal((2, 1, 32)), cache=cache)
    gdn(rng.standard_normal((2, 40, 32)), cache=cache)
    assert cache.nbytes == first == 2 * 8 * (56 * 4 + 4 * 8 * 6)
    entry = cache.layers[0]  # layer 0's: a LinearAttentionLayer
    assert entry.conv_state.shape == (2, 56, 4) and entry.seen == 48
    assert entry.recurrent_state.shape == (2, 4, 8, 6)
    assert "conv_state (2, 56, 4)" in repr(entry)
    assert px.memory.linear_attention_state_bytes(
        CONFIG, dtype_bytes=8, batch_size=2) == first


def test_state_bytes_against_the_kv_cache_of_qwen3_next():
    """Qwen3-Next's defaults: one linear layer holds H d_k d_v + conv_dim K
    numbers at any length; one full layer 2 H_kv d_head a token."""
    config = dict(linear_num_key_heads=16, linear_num_value_heads=32,
                  linear_key_head_dim=128, linear_value_head_dim=128,
                  linear_conv_kernel_dim=4)
    state = px.memory.linear_attention_state_bytes(config)
    assert state == 4 * 32 * 128 * 128 + 2 * (2 * 16 * 128 + 32 * 128) * 4
    kv = [px.memory.kv_cache_bytes(1, 2, 256, T) for T in (1024, 32768)]
    assert kv == [2_097_152, 67_108_864]  # 2 MiB and 64 MiB
    assert kv[0] < state < kv[1]  # 2.06 MiB: passed at 1,056 tokens


# ------------------------------------------------------ against transformers
def hf():
    """transformers' qwen3_next module, or skip."""
    pytest.importorskip("torch", reason="torch is not installed: "
                        "reference check skipped")
    pytest.importorskip("transformers", reason="transformers is not "
                        "installed: reference check skipped")
    from transformers.models.qwen3_next import modeling_qwen3_next
    return modeling_qwen3_next


def tensors(*arrays):
    import torch
    return [torch.as_tensor(a) for a in arrays]


@pytest.mark.parametrize("l2", [False, True], ids=["raw", "l2norm"])
@pytest.mark.parametrize("shape", [dict(T=150, H_k=2, H=4),
                                   dict(T=7, H_k=4, H=4, B=1)],
                         ids=["3 chunks, 2 heads per key", "7 tokens"])
@pytest.mark.parametrize("lifted", [True, False],
                         ids=["float64", "float32 as shipped"])
def test_both_forms_equal_transformers(l2, shape, lifted, monkeypatch):
    """torch_recurrent_gated_delta_rule and torch_chunk_gated_delta_rule:
    with their float32 casts made float64, to 1e-12; as shipped (they
    compute in float32 whatever the input), to float32 rounding (measured
    at most 4e-7 of the output's largest value)."""
    mq = hf()
    if lifted:
        run_in_float64(monkeypatch, mq)
    q, k, v, g, beta, s0 = inputs(np.random.default_rng(1), **shape)
    kw = dict(initial_state=s0, output_final_state=True,
              use_qk_l2norm_in_kernel=l2)
    tol = 1e-12 if lifted else 1e-6
    for ours, theirs in ((la.recurrent_gated_delta_rule,
                          mq.torch_recurrent_gated_delta_rule),
                         (la.chunk_gated_delta_rule,
                          mq.torch_chunk_gated_delta_rule)):
        out, state = ours(q, k, v, g, beta, **kw)
        ref, ref_state = theirs(*tensors(q, k, v, g, beta), **dict(
            kw, initial_state=tensors(s0)[0]))
        scale = np.abs(ref.numpy()).max()
        assert np.abs(out - ref.numpy()).max() <= tol * scale
        scale = np.abs(ref_state.numpy()).max()
        assert np.abs(state - ref_state.numpy()).max() <= tol * scale


def hf_layer(mq, config, seed=0):
    """transformers' module with random weights (std 0.5), in float64."""
    import torch
    torch.manual_seed(seed)
    module = mq.Qwen3NextGatedDeltaNet(config, 0)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name != "A_log":
                p.normal_(0, 0.5)
        module.norm.weight.uniform_(0.5, 1.5)
    return module.double()


def hf_config():
    from transformers import Qwen3NextConfig
    return Qwen3NextConfig(**CONFIG, num_hidden_layers=4,
                           num_attention_heads=4, num_key_value_heads=2,
                           head_dim=8)


@pytest.mark.parametrize("lifted", [True, False],
                         ids=["float64", "float32 as shipped"])
def test_the_layer_equals_transformers(lifted, monkeypatch):
    """The module's forward (chunked, T = 5 and 150) and its cached decode
    (recurrent), with every float32 cast made float64: to 1e-12 of the
    output's largest value (measured 1.5e-13 absolute at outputs up to 44,
    3e-15 of it); as shipped (the rule and the norm in float32, g from
    float32 copies), to 2e-5 of it (measured 2.8e-6)."""
    mq = hf()  # skips where torch or transformers is not installed
    import torch
    from transformers.cache_utils import DynamicCache
    if lifted:
        run_in_float64(monkeypatch, mq, tensor_float=True)
    config = hf_config()
    module = hf_layer(mq, config)
    ours = la.Qwen3NextGatedDeltaNet.from_state_dict(module.state_dict(),
                                                      config.to_dict())
    tol = 1e-12 if lifted else 2e-5
    rng = np.random.default_rng(2)
    for T in (5, 150):
        x = rng.standard_normal((2, T, 32))
        with torch.no_grad():
            ref = module(torch.as_tensor(x)).numpy()
        assert np.abs(ours(x) - ref).max() <= tol * np.abs(ref).max()
    # prefill 5 tokens, then decode 7, both caches compared as they go
    x = rng.standard_normal((2, 12, 32))
    cache = px.kv_cache.DynamicCache(config)
    hf_cache = DynamicCache(config=config)
    for sl in [slice(0, 5)] + [slice(t, t + 1) for t in range(5, 12)]:
        with torch.no_grad():
            ref = module(torch.as_tensor(x[:, sl]), cache=hf_cache).numpy()
        assert np.abs(ours(x[:, sl], cache=cache) - ref).max() <= (
            tol * np.abs(ref).max())
        held = hf_cache.layers[0]
        np.testing.assert_allclose(cache.layers[0].conv_state,  # the projections
                                   held.conv_states[0].numpy(), rtol=1e-12,
                                   atol=1e-12)
        ref_state = held.recurrent_states[0].numpy()
        assert np.abs(cache.layers[0].recurrent_state - ref_state).max() <= (
            tol * np.abs(ref_state).max())


def test_the_layer_equals_transformers_with_padding(monkeypatch):
    mq = hf()  # skips where torch or transformers is not installed
    import torch
    run_in_float64(monkeypatch, mq, tensor_float=True)
    config = hf_config()
    module = hf_layer(mq, config, seed=3)
    ours = la.Qwen3NextGatedDeltaNet.from_state_dict(
        {k: v for k, v in module.state_dict().items()}, config)  # tensors
    x = np.random.default_rng(3).standard_normal((2, 9, 32))
    mask = np.ones((2, 9), dtype=int)
    mask[0, :4] = 0
    with torch.no_grad():
        ref = module(torch.as_tensor(x),
                     attention_mask=torch.as_tensor(mask)).numpy()
    np.testing.assert_allclose(ours(x, attention_mask=mask), ref,
                               rtol=1e-12, atol=1e-12)
