"""The 2024-26 variants against their naive forms: MLA's absorbed decode
and Gated DeltaNet's chunked form.

``make bench BENCH=bench_variants``. Two measurements, each a ratio of two
ways of computing the same numbers (checked equal in this run):

- Multi-head latent attention (``px.variants.DeepseekV3Attention``), one
  decode step over a latent cache of S tokens: the expanded form runs
  ``kv_b_proj`` over every cached token to build each head's keys and
  values; the absorbed form folds ``kv_b_proj`` into the query and the
  output and attends over the latent itself. Shapes: DeepSeek-V3's head
  sizes (kv_lora_rank 512, qk_nope 128, qk_rope 64, v 128) with 16 heads and
  hidden 2048 instead of 128 and 7168, so that one step runs in
  milliseconds; ``px.memory.mla_decode_cost`` gives the full-size counts.
- Gated DeltaNet (``px.linear_attention``) over T tokens: the recurrent form
  is one (d_k, d_v) state update a token; the chunked form does the same
  work as matrix products over chunks of 64.

Targets: the absorbed step at least 2x faster than the expanded one at
S = 4096; the chunked form at least 2x faster than the recurrent one at
T = 2048. One BLAS thread, on the machine's own kernel (machine.py).
"""

from __future__ import annotations

import os
import sys

from machine import describe, use_own_blas  # benchmarks/machine.py

use_own_blas()  # before numpy: OpenBLAS on its own kernel, as a reader's
if "numpy" not in sys.modules:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import pyxis_nb as px  # noqa: E402
from pyxis_nb import linear_attention as la  # noqa: E402
from timing import best_of  # noqa: E402  (benchmarks/timing.py)

MLA = dict(hidden_size=2048, num_attention_heads=16, q_lora_rank=1536,
           kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
           v_head_dim=128, rope_theta=10_000.0, rms_norm_eps=1e-6,
           max_position_embeddings=8192, rope_interleave=True)
CONTEXT = 4096
DELTANET = dict(B=1, T=2048, H=8, d_k=128, d_v=128)
TARGET_ABSORBED = 2.0
TARGET_CHUNKED = 2.0


def decode(layer, x, cache, position_ids=None, absorb=False):
    """New tokens through ``cache`` (a DynamicCache of the MLA config),
    the latent expanded or (``absorb``) the weights absorbed."""
    layer.absorb = absorb
    return layer(x, cache=cache, position_ids=position_ids)


def mla_ratio() -> float:
    """Expanded / absorbed time of one decode step at S = CONTEXT."""
    rng = np.random.default_rng(0)
    shapes = px.variants.DeepseekV3Attention(MLA).state_shapes()
    state = {k: (rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32)
             for k, s in shapes.items()}
    layer = px.variants.DeepseekV3Attention.from_state_dict(state, MLA)
    x = rng.standard_normal((1, CONTEXT + 1, MLA["hidden_size"]))
    x = x.astype(np.float32)
    cache = px.kv_cache.DynamicCache(layer.config)
    decode(layer, x[:, :CONTEXT], cache, absorb=True)  # prefill the latent
    full = cache.layers[0].seen
    outs, times = {}, {}
    for absorb in (False, True):
        def step():
            cache.layers[0].seen = full  # forget the previous repeat's
            outs[absorb] = decode(layer, x[:, CONTEXT:], cache, absorb=absorb)
        step()
        times[absorb] = best_of(step, 5)
    gap = np.abs(outs[True] - outs[False]).max() / np.abs(outs[False]).max()
    assert gap < 1e-4, gap  # the same numbers, to float32 rounding
    cost = {a: px.memory.mla_decode_cost(MLA, CONTEXT, absorb=a)
            for a in (False, True)}
    print(f"MLA decode, S = {CONTEXT}: expanded {times[False] * 1e3:.1f} ms,"
          f" absorbed {times[True] * 1e3:.1f} ms; multiply-adds "
          f"{cost[False]['macs'] / cost[True]['macs']:.1f}x, bytes "
          f"{cost[False]['bytes'] / cost[True]['bytes']:.2f}x")
    return times[False] / times[True]


def deltanet_ratio() -> float:
    """Recurrent / chunked time of Gated DeltaNet over T tokens."""
    B, T, H, d_k, d_v = DELTANET.values()
    rng = np.random.default_rng(1)
    q, k = (rng.standard_normal((B, T, H, d_k)) for _ in range(2))
    v = rng.standard_normal((B, T, H, d_v))
    g = -rng.random((B, T, H)) * 0.1
    beta = rng.random((B, T, H))
    kw = dict(use_qk_l2norm_in_kernel=True)
    outs, times = {}, {}
    for name, fn in (("recurrent", la.recurrent_gated_delta_rule),
                     ("chunked", la.chunk_gated_delta_rule)):
        def run():
            outs[name] = fn(q, k, v, g, beta, **kw)[0]
        run()
        times[name] = best_of(run, 3)
    gap = np.abs(outs["recurrent"] - outs["chunked"]).max()
    assert gap < 1e-10, gap
    print(f"Gated DeltaNet, T = {T}, {H} heads of {d_k}: recurrent "
          f"{times['recurrent'] * 1e3:.0f} ms, chunked "
          f"{times['chunked'] * 1e3:.0f} ms")
    return times["recurrent"] / times["chunked"]


def main() -> bool:
    describe()
    absorbed, chunked = mla_ratio(), deltanet_ratio()
    ok_a, ok_c = absorbed >= TARGET_ABSORBED, chunked >= TARGET_CHUNKED
    print(f"{'PASS' if ok_a else 'FAIL'}: expanded / absorbed MLA step "
          f"{absorbed:.1f}x (target >= {TARGET_ABSORBED}x)")
    print(f"{'PASS' if ok_c else 'FAIL'}: recurrent / chunked Gated DeltaNet "
          f"{chunked:.1f}x (target >= {TARGET_CHUNKED}x)")
    return ok_a and ok_c


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
