"""Checks for the exercises of "Many heads, fewer keys: multi-head attention
and GQA" (book/multihead.ipynb)."""

from __future__ import annotations

import numpy as np

from ..masks import causal_mask
from ..memory import kv_cache_bytes
from ..multihead import MultiHeadAttention
from ..qwen3 import random_attention

# (L, H, H_kv, d_head): Qwen3-1.7B as GQA, MHA and MQA, and SmolLM2-135M
SIZES = ((28, 16, 8, 128), (28, 16, 16, 128), (28, 16, 1, 128),
         (30, 9, 3, 64))


def one_token_cache(answer) -> str | None:
    """1. ``answer(L, H, H_kv, d_head)``: the arrays a KV cache adds for
    one more token, 2 bytes a value; their bytes are kv_cache_bytes'."""
    for L, H, H_kv, d_head in SIZES:
        arrays = answer(L, H, H_kv, d_head)
        if isinstance(arrays, np.ndarray) or not all(
                isinstance(a, np.ndarray) for a in arrays):
            return ("return a list of numpy arrays, one for every array "
                    "the cache keeps for the new token")
        where = f"for (L, H, H_kv, d_head) = {(L, H, H_kv, d_head)}"
        sizes = {a.dtype.itemsize for a in arrays}
        if sizes != {2}:
            return (f"store every value in 2 bytes (np.float16, as bf16), "
                    f"yours take {sorted(sizes)} bytes a value")
        if len(arrays) != 2 * L:
            return (f"{where} you returned {len(arrays)} arrays: what does "
                    "each of the L layers keep of a token, keys only?")
        numbers = {a.size for a in arrays}
        if numbers == {H * d_head} and H != H_kv:
            return (f"{where} each array holds {H} heads: which heads does "
                    "attention read keys and values from?")
        if numbers == {H // H_kv * d_head} and H // H_kv != H_kv:
            return (f"{where} each array holds {H // H_kv} heads: that is "
                    "the group size H / H_kv, the trap of the chapter")
        if numbers != {H_kv * d_head}:
            return (f"{where} your arrays hold {sorted(numbers)} numbers "
                    "each: count the vectors one layer keeps of a token")
        total = sum(a.nbytes for a in arrays)
        assert total == kv_cache_bytes(L, H_kv, d_head, seq_len=1)
    return None


def _layer():
    """A GQA layer (d_model 64, H 8, H_kv 2, d_head 16), eager, and x."""
    layer = random_attention(64, 8, 2, 16, seed=5,
                             attn_implementation="eager")
    x = np.random.default_rng(5).standard_normal((2, 6, 64))
    return layer, x


def prune_head(answer) -> str | None:
    """2. ``answer(layer, h)``: a new layer whose output no longer reads
    head ``h``; the change is that head's contribution."""
    layer, x = _layer()
    before = layer.o_proj.copy()
    for h in (3, 0, 7):
        pruned = answer(layer, h)
        if not np.array_equal(layer.o_proj, before):
            return ("your function changed the layer it was given: build "
                    "the pruned layer from a copy of its o_proj")
        if not isinstance(pruned, MultiHeadAttention):
            return ("return a layer (px.MultiHeadAttention) that can be "
                    "called on x")
        out = pruned(x)

        def without(heads, h=h):  # head h's output set to zero
            heads = heads.copy()
            heads[:, h] = 0.0
            return heads
        want = layer.attend(x, causal_mask(x.shape[1]), None,
                            hook=without)[0]
        if np.allclose(out, want, atol=1e-12):
            continue
        if np.allclose(out, layer(x), atol=1e-12):
            return (f"for head {h} the output did not change: the pruned "
                    "layer still reads every head")
        if np.any(np.all(np.abs(out) < 1e-15, axis=(0, 1))):
            return ("some output features are exactly zero: the rows of "
                    "o_proj are the d_model outputs, the heads come in "
                    "through its columns")
        return (f"for head {h} the output is not the layer's without that "
                f"head: which columns of o_proj read head {h}?")
    return None


def _group_means(w, H_kv, d_head):
    """(H*d_head, d_model) -> (H_kv*d_head, d_model): each group's mean."""
    H = w.shape[0] // d_head
    groups = w.reshape(H_kv, H // H_kv, d_head, -1)
    return groups.mean(axis=1).reshape(H_kv * d_head, -1)


def mha_to_gqa(answer) -> str | None:
    """3. ``answer(layer, H_kv)``: the MHA layer with the key and value
    projections of each group of query heads averaged (Ainslie et al.)."""
    mha = random_attention(64, 8, 8, 16, seed=6)
    for H_kv in (2, 4):
        gqa = answer(mha, H_kv)
        if not isinstance(gqa, MultiHeadAttention):
            return "return a layer (px.MultiHeadAttention)"
        if gqa.num_key_value_heads != H_kv:
            return (f"asked for H_kv = {H_kv}, the layer you returned has "
                    f"{gqa.num_key_value_heads} key/value heads")
        if not (np.array_equal(gqa.q_proj, mha.q_proj)
                and np.array_equal(gqa.o_proj, mha.o_proj)):
            return ("q_proj and o_proj stay as they are: every query head "
                    "keeps its queries, only keys and values are shared")
        want = _group_means(mha.k_proj, H_kv, 16)
        got = gqa.k_proj
        heads = mha.k_proj.reshape(8, 16, 64)
        n_rep = 8 // H_kv
        strided = heads.reshape(n_rep, H_kv, 16, 64).mean(axis=0)
        if np.allclose(got, strided.reshape(-1, 64)):
            return ("your groups mix heads of different groups: query head "
                    "h reads key/value head h // n_rep")
        if np.allclose(got, n_rep * want):
            return f"your k_proj is {n_rep} times too large"
        if np.allclose(got, heads[::n_rep].reshape(-1, 64)):
            return ("you kept one head of each group: the conversion "
                    "averages all of them")
        if not np.allclose(got, want):
            return ("k_proj is not the average of the key heads of each "
                    "group of query heads")
        if not np.allclose(gqa.v_proj, _group_means(mha.v_proj, H_kv, 16)):
            return "k_proj is right; v_proj is not converted the same way"
    return None


CHECKS = {1: one_token_cache, 2: prune_head, 3: mha_to_gqa}
