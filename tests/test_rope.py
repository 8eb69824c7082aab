"""Tests of pyxis_nb.rope: invariants (hypothesis), hand values, torch reference, bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px

LAYOUTS = st.sampled_from(["half", "interleaved"])
HEAD_DIMS = st.sampled_from([2, 4, 8, 16, 64, 128])
THETAS = st.sampled_from([10_000.0, 1_000_000.0])


@st.composite
def vectors(draw, n_rows=None):
    """A float64 (T, D) array with D even: hypothesis picks the shape, scale and seed.

    (Drawing 128 floats one by one through hypothesis is slow; a seeded
    generator keeps the file fast and the examples reproducible.)
    """
    d = draw(HEAD_DIMS)
    t = n_rows if n_rows is not None else draw(st.integers(1, 6))
    scale = draw(st.sampled_from([1e-3, 1.0, 10.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return rng.standard_normal((t, d)) * scale


def score(q, k, m, n, *, layout="half", theta=1_000_000.0):
    """Dot product of q rotated to position m with k rotated to position n."""
    qm = px.apply_rope(q[None, :], [m], rope_theta=theta, layout=layout)[0]
    kn = px.apply_rope(k[None, :], [n], rope_theta=theta, layout=layout)[0]
    return float(qm @ kn)


# --------------------------------------------------------------------- hand values
def test_frequencies_by_hand():
    inv = px.rope_frequencies(4, rope_theta=100.0)
    np.testing.assert_allclose(inv, [1.0, 0.1])
    inv = px.rope_frequencies(128)
    assert inv.shape == (64,) and inv[0] == 1.0
    np.testing.assert_allclose(inv[-1], 1e6 ** (-126 / 128))


def test_rotation_by_hand():
    # D = 2: one pair, turning 1 rad per position, both layouts agree
    x = np.array([[1.0, 0.0], [1.0, 0.0]])
    for layout in ("half", "interleaved"):
        out = px.apply_rope(x, [0, 1], layout=layout)
        np.testing.assert_allclose(out, [[1.0, 0.0], [np.cos(1.0), np.sin(1.0)]])
    # D = 4, theta 100: pair 1 turns 0.1 rad per position
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    c0, s0, c1, s1 = np.cos(2.0), np.sin(2.0), np.cos(0.2), np.sin(0.2)
    half = px.apply_rope(x, [2], rope_theta=100.0, layout="half")  # pairs (1, 3), (2, 4)
    np.testing.assert_allclose(half, [[1 * c0 - 3 * s0, 2 * c1 - 4 * s1,
                                       1 * s0 + 3 * c0, 2 * s1 + 4 * c1]])
    inter = px.apply_rope(x, [2], rope_theta=100.0, layout="interleaved")  # pairs (1, 2), (3, 4)
    np.testing.assert_allclose(inter, [[1 * c0 - 2 * s0, 1 * s0 + 2 * c0,
                                        3 * c1 - 4 * s1, 3 * s1 + 4 * c1]])


def test_permutations_by_hand():
    np.testing.assert_array_equal(px.rope.interleaved_to_half_permutation(8), [0, 2, 4, 6, 1, 3, 5, 7])
    np.testing.assert_array_equal(px.rope.half_to_interleaved_permutation(8), [0, 4, 1, 5, 2, 6, 3, 7])


def test_cos_sin_layout_and_shapes():
    cos, sin = px.rotary_cos_sin(np.arange(5), 8)
    assert cos.shape == sin.shape == (1, 5, 8) and cos.dtype == np.float32
    np.testing.assert_array_equal(cos[..., :4], cos[..., 4:])  # emb = cat(freqs, freqs)
    np.testing.assert_array_equal(cos[0, 0], np.ones(8, np.float32))
    cos2, _ = px.rotary_cos_sin(np.stack([np.arange(5), np.arange(5) + 3]), 8, dtype=np.float64)
    assert cos2.shape == (2, 5, 8) and cos2.dtype == np.float64
    np.testing.assert_allclose(cos2[1, 0], cos2[0, 3])


def test_float32_stays_float32(rng):
    x = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    for layout in ("half", "interleaved"):
        assert px.apply_rope(x, np.arange(5), layout=layout).dtype == np.float32
    cos, sin = px.rotary_cos_sin(np.arange(5)[None].repeat(2, 0), 8)
    q, k = px.apply_rotary_pos_emb(x, x[:, :1], cos, sin)
    assert q.dtype == k.dtype == np.float32 and q.shape == x.shape and k.shape == (2, 1, 5, 8)
    assert px.rotate_half(x).dtype == np.float32
    w = rng.standard_normal((16, 4)).astype(np.float32)
    assert px.permute_qk_proj(w, head_dim=8).dtype == np.float32


def test_unsqueeze_dim_2(rng):
    # (B, T, H, D) tensors with unsqueeze_dim=2, as the Hugging Face docstring describes
    q = rng.standard_normal((2, 5, 3, 8))
    cos, sin = px.rotary_cos_sin(np.arange(5)[None].repeat(2, 0), 8, dtype=np.float64)
    q2, _ = px.apply_rotary_pos_emb(q, q, cos, sin, unsqueeze_dim=2)
    ref = px.apply_rope(np.swapaxes(q, 1, 2), np.arange(5))
    np.testing.assert_allclose(np.swapaxes(q2, 1, 2), ref, atol=1e-12)


# ----------------------------------------------------------------- properties
@given(vectors(), LAYOUTS, st.integers(-50_000, 50_000))
def test_norm_is_preserved(x, layout, start):
    pos = start + np.arange(x.shape[0])
    out = px.apply_rope(x, pos, layout=layout)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1),
                               rtol=1e-9, atol=1e-9)


@given(vectors(n_rows=2), LAYOUTS, THETAS, st.integers(0, 40_960), st.integers(0, 40_960),
       st.integers(-5_000, 5_000))
def test_score_depends_on_relative_position_only(qk, layout, theta, m, n, shift):
    q, k = qk
    a = score(q, k, m, n, layout=layout, theta=theta)
    b = score(q, k, m + shift, n + shift, layout=layout, theta=theta)
    scale = np.linalg.norm(q) * np.linalg.norm(k)
    assert abs(a - b) <= 1e-9 * max(scale, 1.0)


@given(vectors(), LAYOUTS)
def test_position_zero_is_identity(x, layout):
    np.testing.assert_array_equal(px.apply_rope(x, np.zeros(x.shape[0], int), layout=layout), x)


@given(vectors())
def test_rotate_half_twice_negates(x):
    np.testing.assert_array_equal(px.rotate_half(px.rotate_half(x)), -x)


@given(vectors(), st.integers(0, 40_960), THETAS)
def test_hf_form_equals_half_layout(x, start, theta):
    T, D = x.shape
    pos = start + np.arange(T)
    cos, sin = px.rotary_cos_sin(pos, D, rope_theta=theta, dtype=np.float64)  # (1, T, D)
    q_embed, k_embed = px.apply_rotary_pos_emb(x[None, None], x[None, None, :, ::-1], cos, sin)
    np.testing.assert_allclose(q_embed[0, 0], px.apply_rope(x, pos, rope_theta=theta), atol=1e-12)
    np.testing.assert_allclose(k_embed[0, 0], px.apply_rope(x[:, ::-1], pos, rope_theta=theta),
                               atol=1e-12)


@given(vectors(), st.integers(-40_960, 40_960), THETAS)
def test_interleaved_equals_complex_multiplication(x, start, theta):
    T, D = x.shape
    pos = start + np.arange(T)
    z = x[:, 0::2] + 1j * x[:, 1::2]  # (T, D/2) complex: pair i = x[2i] + i x[2i+1]
    z = z * np.exp(1j * pos[:, None] * px.rope_frequencies(D, theta))  # as Meta's freqs_cis
    expected = np.stack([z.real, z.imag], axis=-1).reshape(T, D)
    np.testing.assert_allclose(px.apply_rope(x, pos, rope_theta=theta, layout="interleaved"),
                               expected, atol=1e-10)


@given(vectors())
def test_permutation_maps_interleaved_result_to_half_result(x):
    T, D = x.shape
    perm = px.rope.interleaved_to_half_permutation(D)
    pos = np.arange(T) * 37
    np.testing.assert_allclose(px.apply_rope(x[:, perm], pos, layout="half"),
                               px.apply_rope(x, pos, layout="interleaved")[:, perm], atol=1e-12)
    np.testing.assert_array_equal(x[:, perm][:, px.rope.half_to_interleaved_permutation(D)], x)


@given(st.integers(1, 4), st.sampled_from([2, 8, 16]), st.integers(1, 6), st.integers(0, 10_000),
       st.integers(0, 2**32 - 1))
def test_permuting_projection_rows_gives_identical_scores(num_heads, D, T, start, seed):
    """Weights made for the interleaved layout, run in the half layout after permute_qk_proj."""
    rng = np.random.default_rng(seed)
    hidden = 12
    x = rng.standard_normal((T, hidden))
    Wq = rng.standard_normal((num_heads * D, hidden))
    Wk = rng.standard_normal((num_heads * D, hidden))
    pos = start + np.arange(T)

    def scores(Wq, Wk, layout):
        q = (x @ Wq.T).reshape(T, num_heads, D).transpose(1, 0, 2)  # (T, H*D) -> (H, T, D)
        k = (x @ Wk.T).reshape(T, num_heads, D).transpose(1, 0, 2)
        q, k = px.apply_rope(q, pos, layout=layout), px.apply_rope(k, pos, layout=layout)
        return q @ k.transpose(0, 2, 1)  # (H, T, D) x (H, D, T) -> (H, T, T)

    truth = scores(Wq, Wk, "interleaved")
    fixed = scores(px.permute_qk_proj(Wq, head_dim=D), px.permute_qk_proj(Wk, head_dim=D), "half")
    np.testing.assert_allclose(fixed, truth, rtol=1e-9, atol=1e-9)
    # and back again
    np.testing.assert_array_equal(
        px.permute_qk_proj(px.permute_qk_proj(Wq, head_dim=D), head_dim=D, inverse=True), Wq)


def test_mixing_layouts_changes_scores(rng):
    """The bug the chapter tells: the same weights under the other layout give other scores."""
    x = rng.standard_normal((8, 32))
    Wq, Wk = rng.standard_normal((2, 16, 32))
    pos = np.arange(8)
    q, k = x @ Wq.T, x @ Wk.T  # (T, hidden) x (hidden, D) -> (T, D)
    s = {lay: px.apply_rope(q, pos, layout=lay) @ px.apply_rope(k, pos, layout=lay).T
         for lay in ("half", "interleaved")}
    np.testing.assert_allclose(np.diag(s["half"]), np.diag(s["interleaved"]))  # m = n agrees
    assert np.abs(s["half"] - s["interleaved"]).max() > 1.0


def test_permute_matches_hf_llama_permute(rng):
    """Same result as `w.view(n_heads, D // 2, 2, dim).transpose(1, 2).reshape(...)`."""
    n_heads, D, dim = 3, 8, 5
    w = rng.standard_normal((n_heads * D, dim))
    hf = w.reshape(n_heads, D // 2, 2, dim).transpose(0, 2, 1, 3).reshape(n_heads * D, dim)
    np.testing.assert_array_equal(px.permute_qk_proj(w, head_dim=D), hf)
    np.testing.assert_array_equal(px.permute_qk_proj(w[:, 0], head_dim=D), hf[:, 0])  # a bias


# ------------------------------------------------------------- torch reference
def _hf_torch(position_ids, head_dim, theta, x):
    """The Hugging Face formulas (Qwen3RotaryEmbedding.forward, apply_rotary_pos_emb) in torch."""
    torch = pytest.importorskip("torch", reason="torch is not installed: reference check skipped")
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    pid = torch.as_tensor(position_ids)
    inv_freq_expanded = inv_freq[None, :, None].float().expand(pid.shape[0], -1, 1)
    position_ids_expanded = pid[:, None, :].float()
    freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def rotate_half(t):
        t1, t2 = t[..., : t.shape[-1] // 2], t[..., t.shape[-1] // 2:]
        return torch.cat((-t2, t1), dim=-1)

    q = torch.as_tensor(x)
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    return inv_freq.numpy(), cos.numpy(), sin.numpy(), (q * c + rotate_half(q) * s).numpy()


@pytest.mark.parametrize("theta", [10_000.0, 1_000_000.0])
def test_against_hugging_face_formulas_in_torch(rng, theta):
    B, H, T, D = 2, 3, 7, 128
    position_ids = np.stack([np.arange(T), np.arange(T) + 1000])  # (B, T)
    x = rng.standard_normal((B, H, T, D)).astype(np.float32)
    inv_freq, cos_t, sin_t, q_t = _hf_torch(position_ids, D, theta, x)
    np.testing.assert_allclose(px.rope_frequencies(D, theta), inv_freq, rtol=1e-6)
    cos, sin = px.rotary_cos_sin(position_ids, D, rope_theta=theta)
    assert cos.shape == cos_t.shape == (B, T, D) and cos.dtype == cos_t.dtype
    # torch computes the angles in float32: off by up to ~1000 * 6e-8 rad here
    np.testing.assert_allclose(cos, cos_t, atol=2e-4)
    np.testing.assert_allclose(sin, sin_t, atol=2e-4)
    q_embed, _ = px.apply_rotary_pos_emb(x, x, cos, sin)
    np.testing.assert_allclose(q_embed, q_t, atol=2e-3)
    # given torch's own tables, the rotation itself agrees to float32 rounding
    q_same, _ = px.apply_rotary_pos_emb(x, x, cos_t, sin_t)
    np.testing.assert_allclose(q_same, q_t, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------ bad input


# ------------------------------------------------------------- RoPE scaling
GPT_OSS_YARN = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                "beta_slow": 1.0, "truncate": False,
                "original_max_position_embeddings": 4096,
                "rope_theta": 150000.0}
LLAMA31 = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}


def test_scaled_frequencies_by_hand():
    inv = px.rope_frequencies(64, 150000.0)
    # linear: every pair / factor; dynamic up to max_position_embeddings:
    # plain RoPE
    lin, s = px.rope.compute_rope_parameters(
        {"rope_type": "linear", "rope_theta": 150000.0, "factor": 4.0}, 64)
    np.testing.assert_allclose(lin, inv / 4, rtol=1e-15)
    assert s == 1.0
    dyn, _ = px.rope.compute_rope_parameters(
        {"rope_type": "dynamic", "rope_theta": 150000.0, "factor": 4.0}, 64,
        max_position_embeddings=4096, seq_len=4096)
    np.testing.assert_allclose(dyn, inv, rtol=1e-15)
    longer, _ = px.rope.compute_rope_parameters(
        {"rope_type": "dynamic", "rope_theta": 150000.0, "factor": 4.0}, 64,
        max_position_embeddings=4096, seq_len=8192)
    assert longer[0] == 1.0 and np.all(longer[1:] < inv[1:])  # larger base
    # YaRN (gpt-oss): the fast pairs kept, the slow ones / 32, a ramp between
    yarn, s = px.rope.compute_yarn_parameters(GPT_OSS_YARN, 64)
    assert s == pytest.approx(0.1 * np.log(32) + 1, abs=1e-15)
    ratio = inv / yarn
    assert ratio[0] == 1.0 and ratio[-1] == pytest.approx(32.0, rel=1e-14)
    assert np.all(np.diff(ratio) >= -1e-12)  # 1 -> 32, never back
    # llama3: short waves kept, long waves / 8
    ll, _ = px.rope.compute_llama3_parameters(LLAMA31, 128)
    inv = px.rope_frequencies(128, 500000.0)
    wavelen = 2 * np.pi / inv
    np.testing.assert_array_equal(ll[wavelen < 8192 / 4],
                                  inv[wavelen < 8192 / 4])
    np.testing.assert_allclose(ll[wavelen > 8192], inv[wavelen > 8192] / 8,
                               rtol=1e-15)
    assert px.rope.yarn_get_mscale(1.0) == 1.0
    assert px.rope.yarn_get_mscale(40.0, 0.707) == pytest.approx(
        0.1 * 0.707 * np.log(40) + 1)


def test_partial_rotary_factor_rotates_a_fraction():
    inv, _ = px.rope.compute_rope_parameters(
        {"rope_type": "default", "rope_theta": 1e4,
         "partial_rotary_factor": 0.25}, 256)
    np.testing.assert_array_equal(inv, px.rope_frequencies(64, 1e4))


def test_cos_sin_from_inv_freq():
    pos = np.arange(6)
    inv = px.rope_frequencies(8, 1e4)
    ref = px.rotary_cos_sin(pos, 8, rope_theta=1e4, dtype=np.float64)
    got = px.rotary_cos_sin(pos, 8, inv_freq=inv, dtype=np.float64)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    cos, sin = px.rotary_cos_sin(pos, 8, inv_freq=inv, dtype=np.float64,
                                 attention_scaling=1.5)
    np.testing.assert_allclose(cos, 1.5 * ref[0], rtol=1e-15)
    np.testing.assert_allclose(sin, 1.5 * ref[1], rtol=1e-15)
    assert cos[0, 0, 0] == 1.5  # position 0: the scaling itself


def _hf_rope_cases():
    """(id, transformers config, head_dim, seq_len) for each rope_type."""
    t = pytest.importorskip("transformers",
                            reason="transformers is not installed: "
                            "reference check skipped")
    yarn_ds = dict(rope_type="yarn", rope_theta=10000.0, factor=40.0,
                   mscale=1.0, mscale_all_dim=1.0, beta_fast=32,
                   beta_slow=1, original_max_position_embeddings=4096)
    ds = dict(max_position_embeddings=163840)
    dynamic = dict(rope_type="dynamic", rope_theta=10000.0, factor=4.0)
    cases = [
        ("gpt-oss yarn", t.GptOssConfig(), 64, None),
        ("DeepSeek-V3 yarn", t.DeepseekV3Config(rope_parameters=yarn_ds,
                                                **ds), 64, None),
        ("DeepSeek mscale 0.707", t.DeepseekV3Config(
            rope_parameters=yarn_ds | dict(mscale=0.707), **ds), 64, None),
        ("yarn truncated, factor 4", t.LlamaConfig(
            rope_parameters=dict(rope_type="yarn", rope_theta=1e6,
                                 factor=4.0,
                                 original_max_position_embeddings=32768),
            max_position_embeddings=131072), 128, None),
        ("yarn attention_factor", t.LlamaConfig(
            rope_parameters=dict(rope_type="yarn", rope_theta=1e4,
                                 factor=8.0, attention_factor=1.25,
                                 beta_fast=16.0, beta_slow=2.0,
                                 original_max_position_embeddings=2048),
            max_position_embeddings=16384), 128, None),
        ("Llama-3.1 llama3", t.LlamaConfig(
            rope_parameters=LLAMA31, max_position_embeddings=131072), 128,
         None),
        ("linear", t.LlamaConfig(rope_parameters=dict(
            rope_type="linear", rope_theta=1e4, factor=4.0)), 128, None),
        ("default", t.LlamaConfig(), 128, None),
        ("default, partial 0.25 (Qwen3-Next)", t.Qwen3NextConfig(), 256,
         None),
    ]
    cases += [(f"dynamic seq_len {n}", t.LlamaConfig(
        rope_parameters=dynamic, max_position_embeddings=2048), 128, n)
        for n in (None, 100, 2048, 2049, 4096, 10000, 131072)]
    return cases


def _hf_rope(config, seq_len):
    """transformers' inv_freq and attention scaling for this config."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.llama import modeling_llama
    from transformers.models.qwen3_next import modeling_qwen3_next
    rope_type = config.rope_parameters["rope_type"]
    if rope_type != "default":
        kwargs = {} if seq_len is None else {"seq_len": seq_len}
        return ROPE_INIT_FUNCTIONS[rope_type](config, "cpu", **kwargs)
    module = (modeling_qwen3_next.Qwen3NextRotaryEmbedding
              if config.model_type == "qwen3_next"
              else modeling_llama.LlamaRotaryEmbedding)
    return module.compute_default_rope_parameters(config)


def _ours(config, head_dim, seq_len):
    return px.rope.compute_rope_parameters(
        dict(config.rope_parameters), head_dim,
        max_position_embeddings=config.max_position_embeddings,
        seq_len=seq_len)


CASE_IDS = ["gpt-oss yarn", "DeepSeek-V3 yarn", "DeepSeek mscale 0.707",
            "yarn truncated, factor 4", "yarn attention_factor",
            "Llama-3.1 llama3", "linear", "default",
            "default, partial 0.25 (Qwen3-Next)"] + [
    f"dynamic seq_len {n}" for n in (None, 100, 2048, 2049, 4096, 10000,
                                     131072)]


@pytest.mark.parametrize("case", range(len(CASE_IDS)), ids=CASE_IDS)
def test_scaling_equals_transformers_in_float64(case, monkeypatch):
    """transformers' own functions, their float32 casts made float64."""
    from conftest import run_in_float64
    name, config, head_dim, seq_len = _hf_rope_cases()[case]
    assert name == CASE_IDS[case]
    import torch
    from transformers import modeling_rope_utils
    from transformers.models.llama import modeling_llama
    from transformers.models.qwen3_next import modeling_qwen3_next
    run_in_float64(monkeypatch, modeling_rope_utils, modeling_llama,
                   modeling_qwen3_next)
    inv_t, scaling_t = _hf_rope(config, seq_len)
    assert inv_t.dtype == torch.float64
    inv, scaling = _ours(config, head_dim, seq_len)
    assert inv.shape == tuple(inv_t.shape)
    np.testing.assert_allclose(inv, inv_t.numpy(), rtol=1e-12, atol=0)
    assert abs(scaling - float(scaling_t)) <= 1e-12


@pytest.mark.parametrize("case", range(len(CASE_IDS)), ids=CASE_IDS)
def test_scaling_equals_transformers_to_float32_rounding(case):
    """As transformers ships: inv_freq in float32 (a few units of float32
    rounding; the measured worst is 3.2e-7, llama3), the scaling in
    Python floats."""
    name, config, head_dim, seq_len = _hf_rope_cases()[case]
    inv_t, scaling_t = _hf_rope(config, seq_len)
    inv, scaling = _ours(config, head_dim, seq_len)
    np.testing.assert_allclose(inv, inv_t.double().numpy(), rtol=2.0**-21,
                               atol=0)
    assert abs(scaling - float(scaling_t)) <= 1e-12


def test_yarn_tables_equal_transformers_rotary_embedding():
    """cos and sin with YaRN's attention factor, as LlamaRotaryEmbedding
    makes them (its angles in float32: atol as the torch test above)."""
    t = pytest.importorskip("transformers")
    import torch
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    config = t.LlamaConfig(head_dim=64, rope_parameters=GPT_OSS_YARN,
                           max_position_embeddings=131072)
    position_ids = np.stack([np.arange(8), np.arange(8) + 3000])  # (B, T)
    x = torch.zeros(1, dtype=torch.float64)
    cos_t, sin_t = LlamaRotaryEmbedding(config)(
        x, torch.as_tensor(position_ids))
    inv, scaling = px.rope.compute_rope_parameters(GPT_OSS_YARN, 64)
    cos, sin = px.rotary_cos_sin(position_ids, 64, inv_freq=inv,
                                 attention_scaling=scaling,
                                 dtype=np.float64)
    assert cos.shape == tuple(cos_t.shape) == (2, 8, 64)
    assert cos[0, 0, 0] == pytest.approx(1.3465735902799727, abs=1e-15)
    np.testing.assert_allclose(cos, cos_t.numpy(), atol=4e-4)
    np.testing.assert_allclose(sin, sin_t.numpy(), atol=4e-4)
    np.testing.assert_allclose(cos[0], cos_t.numpy()[0], atol=1e-6)


def test_dynamic_reads_the_longest_position_as_transformers_does():
    """transformers' rotary embedding grows inv_freq to max(position) + 1."""
    t = pytest.importorskip("transformers")
    import torch
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    params = dict(rope_type="dynamic", rope_theta=1e4, factor=2.0)
    config = t.LlamaConfig(head_dim=32, rope_parameters=params,
                           max_position_embeddings=512)
    rotary = LlamaRotaryEmbedding(config)
    rotary(torch.zeros(1), torch.arange(1500)[None])  # seq_len 1500
    inv, _ = px.rope.compute_rope_parameters(
        params, 32, max_position_embeddings=512, seq_len=1500)
    np.testing.assert_allclose(inv, rotary.inv_freq.double().numpy(),
                               rtol=2.0**-21)
