"""px.Qwen3ForCausalLM against transformers.Qwen3ForCausalLM on the same files.

The shipped Shakespeare checkpoint: logits in float32 and float64, greedy
text with and without the cache, a left-padded batch. Then a random
checkpoint of Qwen3-0.6B's real layer shapes (two of its 28 layers, a
vocabulary of 3,000), written by transformers here in bf16 and sharded,
read by both. Nothing is downloaded.

HF's RMSNorm computes in float32 and its rotary tables come from float32
angles whatever the model's dtype (right for bf16 models). So the float64
check replaces those two functions by the same formulas in float64: every
other operation is HF's own, and the two models then agree to 1e-10.
"""

import dataclasses

import numpy as np
import pytest

import pyxis_nb as px
from conftest import generate_with_logits

torch = pytest.importorskip(
    "torch", reason="torch is not installed: HF reference skipped")
transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed: HF reference skipped")
from transformers.models.qwen3 import modeling_qwen3  # noqa: E402

CKPT = px.SHAKESPEARE_CHECKPOINT
pytestmark = pytest.mark.skipif(
    not (CKPT / "model.safetensors").is_file(),
    reason="the shipped checkpoint is not built (make real-model)")


@pytest.fixture(scope="module")
def tokenizer():
    return px.load_tokenizer(CKPT)


@pytest.fixture(scope="module")
def ours():
    return px.Qwen3ForCausalLM.from_pretrained(CKPT)


@pytest.fixture(scope="module")
def theirs():
    return transformers.Qwen3ForCausalLM.from_pretrained(
        CKPT, dtype=torch.float32).eval()


def heldout_ids(tokenizer, rows, T):
    """``rows`` windows of ``T`` tokens of the held-out plays."""
    ids = np.array(tokenizer.encode((CKPT / "heldout.txt").read_text()).ids)
    starts = np.linspace(0, len(ids) - T, rows).astype(int)
    return np.stack([ids[s:s + T] for s in starts])


def hf_logits(model, ids, mask=None):
    with torch.no_grad():
        out = model(torch.from_numpy(ids),
                    attention_mask=None if mask is None
                    else torch.from_numpy(mask))
    return out.logits.float().numpy() if out.logits.dtype != torch.float64 \
        else out.logits.numpy()


def test_float32_logits_match_transformers(ours, theirs, tokenizer):
    ids = heldout_ids(tokenizer, 3, 200)
    ref = hf_logits(theirs, ids)
    got = ours(ids).logits
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-4,
                               atol=1e-4 * np.abs(ref).max())


def test_past_max_position_embeddings_as_transformers(ours, theirs,
                                                    tokenizer):
    """1,100 positions, past the config's 1,024: both run, and agree, with
    the tiled kernel's mask-free path and through the cache."""
    ids = heldout_ids(tokenizer, 1, 1_100)
    assert ids.shape[1] > ours.max_position_embeddings
    ref = hf_logits(theirs, ids)
    np.testing.assert_allclose(ours(ids).logits, ref, rtol=1e-4,
                               atol=1e-4 * np.abs(ref).max())
    out = ours(ids[:, :1_090], use_cache=True)  # then 10 decode steps
    steps = [ours(ids[:, t:t + 1], cache=out.cache).logits
             for t in range(1_090, 1_100)]
    np.testing.assert_allclose(np.concatenate(steps, 1), ref[:, 1_090:],
                               rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def f64_rms_norm(self, hidden_states):
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    return self.weight * (hidden_states
                          * torch.rsqrt(variance + self.variance_epsilon))


def f64_rotary(self, x, position_ids):
    theta = self.config.rope_parameters["rope_theta"]
    dim = 2 * self.inv_freq.shape[0]
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64)
                               / dim)
    freqs = position_ids[..., None].double() * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def test_float64_logits_match_transformers_to_1e_10(tokenizer, monkeypatch):
    monkeypatch.setattr(modeling_qwen3.Qwen3RMSNorm, "forward", f64_rms_norm)
    monkeypatch.setattr(modeling_qwen3.Qwen3RotaryEmbedding, "forward",
                        f64_rotary)
    theirs64 = transformers.Qwen3ForCausalLM.from_pretrained(
        CKPT, dtype=torch.float64).eval()
    ours64 = px.Qwen3ForCausalLM.from_pretrained(CKPT, dtype=np.float64)
    ids = heldout_ids(tokenizer, 2, 300)
    ref, got = hf_logits(theirs64, ids), ours64(ids).logits
    assert got.dtype == np.float64
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-10


def test_left_padded_batch_matches_transformers(ours, theirs, tokenizer):
    ids = heldout_ids(tokenizer, 3, 40)
    mask = np.ones_like(ids)
    mask[1, :15], mask[2, :33] = 0, 0  # left padding
    ids = np.where(mask == 1, ids, 0)
    real = mask.astype(bool)
    ref, got = hf_logits(theirs, ids, mask), ours(ids, attention_mask=mask).logits
    np.testing.assert_allclose(got[real], ref[real], rtol=1e-4,
                               atol=1e-4 * np.abs(ref).max())


PROMPTS = ["KING RICHARD:\nNow is the", "To be, or not to be",
           "HAMLET.\nMy lord,", "O, what a rogue and peasant slave am I!\n",
           "Enter"]


def hf_generate(model, ids, n, **kw):
    with torch.no_grad():
        out = model.generate(torch.from_numpy(np.atleast_2d(ids)),
                             max_new_tokens=n, do_sample=False, **kw)
    return out.numpy()


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_text_is_token_identical_to_hf_generate(
        ours, theirs, tokenizer, use_cache):
    n = 40 if use_cache else 10  # without a cache every step reruns it all
    # with the cache, two prompts (16 tokens and 1: the longest and the
    # shortest), 40 new tokens each; PROMPTS[:4] are generated with the
    # cache, 16 tokens each, in
    # test_left_padded_batch_generates_what_each_prompt_does_alone, against
    # transformers too (all five here took 3.4 s)
    for text in (PROMPTS[3], PROMPTS[4]) if use_cache else PROMPTS[:2]:
        ids = np.array(tokenizer.encode(text).ids)
        got = ours.generate(ids, n, use_cache=use_cache)
        ref = hf_generate(theirs, ids, n, use_cache=use_cache)[0]
        np.testing.assert_array_equal(got, ref, err_msg=text)


def test_left_padded_batch_generates_what_each_prompt_does_alone(
        ours, theirs, tokenizer):
    rows = [tokenizer.encode(t).ids for t in PROMPTS[:4]]
    P = max(map(len, rows))
    ids = np.array([[0] * (P - len(r)) + r for r in rows])
    mask = np.array([[0] * (P - len(r)) + [1] * len(r) for r in rows])
    got, got_logits = generate_with_logits(ours, ids, 16, attention_mask=mask)
    ref = hf_generate(theirs, ids, 16, attention_mask=torch.from_numpy(mask))
    np.testing.assert_array_equal(got, ref)
    for b, r in enumerate(rows):
        alone, alone_logits = generate_with_logits(ours, r, 16)
        np.testing.assert_array_equal(got[b, P:P + len(alone) - len(r)],
                                      alone[len(r):])
        np.testing.assert_allclose(got_logits[b, :len(alone_logits)],
                                   alone_logits, atol=1e-4)


# Qwen3-0.6B's layer shapes with a vocabulary of 3,000 (not 151,936): its
# embedding, 311 MB of bf16, took most of the test's 12 s for transformers
# to initialise. 3,000 is none of the layer's sizes (1024, 2048, 3072, 128),
# so an embedding read transposed still fails.
VOCAB = 3_000


def test_random_qwen3_0_6b_shapes_in_bf16_shards(tmp_path):
    """Qwen3-0.6B's layer shapes, two layers, a small vocabulary: written
    by HF in bf16 shards, read by both."""
    config = transformers.Qwen3Config(
        vocab_size=VOCAB, hidden_size=1024, intermediate_size=3072,
        num_hidden_layers=2, num_attention_heads=16, num_key_value_heads=8,
        head_dim=128, rope_theta=1_000_000.0, rms_norm_eps=1e-6,
        max_position_embeddings=40_960, tie_word_embeddings=True,
        bos_token_id=VOCAB - 3, eos_token_id=VOCAB - 1)
    torch.manual_seed(0)  # HF's own init, made in bf16 (as Qwen3 ships)
    model = transformers.AutoModelForCausalLM.from_config(
        config, dtype=torch.bfloat16)
    model.save_pretrained(tmp_path, max_shard_size="20MB")  # 4 shards
    del model
    shards = sorted(p.name for p in tmp_path.glob("*.safetensors"))
    assert len(shards) >= 2 and (tmp_path
                                 / "model.safetensors.index.json").is_file()
    header = px.safetensors_header(tmp_path / shards[0])
    assert {dtype for dtype, _ in header.values()} == {"BF16"}

    ours = px.Qwen3ForCausalLM.from_pretrained(tmp_path)
    theirs = transformers.Qwen3ForCausalLM.from_pretrained(
        tmp_path, dtype=torch.float32).eval()
    c = ours.config
    assert (c.hidden_size, c.intermediate_size, c.num_attention_heads,
            c.num_key_value_heads, c.head_dim, c.vocab_size,
            c.rope_theta) == (1024, 3072, 16, 8, 128, VOCAB, 1e6)
    assert ours.tie_word_embeddings
    ids = np.random.default_rng(0).integers(0, VOCAB, (2, 12))
    ref = hf_logits(theirs, ids)
    np.testing.assert_allclose(ours(ids).logits, ref, rtol=1e-4,
                               atol=1e-4 * np.abs(ref).max())
    got = ours.generate(ids[0], 4)
    np.testing.assert_array_equal(got, hf_generate(theirs, ids[0], 4)[0])


def test_output_attentions_match_transformers_eager(ours, tokenizer):
    theirs = transformers.Qwen3ForCausalLM.from_pretrained(
        CKPT, dtype=torch.float32, attn_implementation="eager").eval()
    ids = heldout_ids(tokenizer, 2, 30)
    with torch.no_grad():
        ref = theirs(torch.from_numpy(ids), output_attentions=True,
                     output_hidden_states=True)
    ours = px.Qwen3ForCausalLM.from_pretrained(CKPT,
                                               attn_implementation="eager")
    got = ours(ids, output_attentions=True, output_hidden_states=True)
    attentions = np.stack([a.numpy() for a in ref.attentions])
    assert got.attentions.shape == attentions.shape == (4, 2, 8, 30, 30)
    np.testing.assert_allclose(got.attentions, attentions, atol=2e-6)
    hidden = np.stack([h.numpy() for h in ref.hidden_states])
    assert got.hidden_states.shape == hidden.shape == (5, 2, 30, 256)
    np.testing.assert_allclose(got.hidden_states, hidden, rtol=1e-4,
                               atol=1e-4 * np.abs(hidden).max())


# RoPE scalings: a tiny random Qwen3 written by transformers with
# rope_parameters of each type, read by both, on a sequence longer than
# original_max_position_embeddings (where the scaling changes the angles).
ROPE_SCALED = [
    ("yarn", {"rope_type": "yarn", "factor": 4.0,
              "original_max_position_embeddings": 64}),
    ("llama3", {"rope_type": "llama3", "factor": 8.0,
                "original_max_position_embeddings": 64,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0}),
    ("linear", {"rope_type": "linear", "factor": 2.0}),
]


@pytest.mark.parametrize("arch", ["Qwen3", "Llama"])
@pytest.mark.parametrize("rope", [r[1] for r in ROPE_SCALED],
                         ids=[r[0] for r in ROPE_SCALED])
def test_rope_scaled_model_matches_transformers(tmp_path, rope, arch):
    config = getattr(transformers, f"{arch}Config")(
        vocab_size=300, hidden_size=64, intermediate_size=96,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=32, rms_norm_eps=1e-6, max_position_embeddings=256,
        rope_parameters={**rope, "rope_theta": 10_000.0},
        tie_word_embeddings=False)
    cls = getattr(transformers, f"{arch}ForCausalLM")
    torch.manual_seed(0)
    cls(config).save_pretrained(tmp_path)
    ours = getattr(px, f"{arch}ForCausalLM").from_pretrained(tmp_path)
    theirs = cls.from_pretrained(tmp_path, dtype=torch.float32).eval()
    assert ours.config.rope_parameters["rope_type"] == rope["rope_type"]
    np.testing.assert_allclose(ours.inv_freq,
                               theirs.model.rotary_emb.inv_freq.numpy(),
                               rtol=1e-6)
    assert ours.attention_scaling == pytest.approx(
        theirs.model.rotary_emb.attention_scaling, rel=1e-12)
    ids = np.random.default_rng(0).integers(0, 300, (2, 160))  # T > 64
    ref = hf_logits(theirs, ids)
    np.testing.assert_allclose(ours(ids).logits, ref, rtol=1e-4,
                               atol=1e-4 * np.abs(ref).max())
    # a transformers config from ours takes the same RoPE
    again = type(config)(**ours.config.to_dict())
    assert again.rope_parameters == theirs.config.rope_parameters


def test_rope_scaling_changes_logits_past_the_original_context(tmp_path):
    """The check above is not vacuous: without its YaRN, the same weights
    give other logits."""
    config = transformers.Qwen3Config(
        vocab_size=300, hidden_size=64, intermediate_size=96,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=32, max_position_embeddings=256,
        rope_parameters={**ROPE_SCALED[0][1], "rope_theta": 10_000.0})
    torch.manual_seed(0)
    transformers.Qwen3ForCausalLM(config).save_pretrained(tmp_path)
    ours = px.Qwen3ForCausalLM.from_pretrained(tmp_path)
    plain = px.Qwen3ForCausalLM.from_state_dict(
        ours.state_dict(), dataclasses.replace(ours.config,
                                               rope_parameters=None))
    ids = np.random.default_rng(0).integers(0, 300, (1, 160))
    assert np.abs(ours(ids).logits - plain(ids).logits).max() > 1e-3
