"""Prefill and decode of the book's models, as fractions of the machine's limits.

    make bench BENCH=bench_generate

Three models, each run by px and by transformers from the same float32
weights on the same number of threads (1 unless OPENBLAS_NUM_THREADS says
otherwise): the shipped Qwen3 trained on Shakespeare (3.7M parameters), a
random model of Qwen3-0.6B's shapes (0.6B), and SmolLM2-135M from its GGUF
file (``make smollm2``; skipped without it).

Two limits are measured in the same run, on the BLAS kernel OpenBLAS picks
for this processor (benchmarks/machine.py prints it first):

* decode reads every weight once a token, so it can go no faster than the
  memory bandwidth a matrix-vector product streams (a 512 MiB matrix, both
  layouts; the faster) divided by the weights' bytes: the *weight-streaming
  bound*. Target: at least 75 % of it for the two models that do not fit in
  a cache (Qwen3-0.6B's shapes, SmolLM2).
* prefill is matrix products: the model's own weight products at its own
  shapes (T rows through every layer's projections and MLP, one row through
  the output embedding), timed alone back to back, give the time numpy's
  BLAS needs for them: the *matrix-multiply bound*. Target: prefill at
  least 85 % of it, for the same two models.

The ratios to transformers are printed beside the fractions: on one
machine they mostly say how fast each library's BLAS multiplies (OpenBLAS
against torch's MKL), so they are reported, not targets. Calls of the two
libraries alternate (``timing.interleaved``), so that a change of the
machine's load hits both.
"""

from __future__ import annotations

import os
import sys

from machine import describe, use_own_blas  # benchmarks/machine.py

use_own_blas()  # before numpy: OpenBLAS on its own kernel, as a reader's
if "numpy" not in sys.modules:  # too late to change once numpy (and BLAS) are loaded
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "VECLIB_MAXIMUM_THREADS"):
        os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import pyxis_nb as px  # noqa: E402
from timing import best_of, interleaved  # noqa: E402  (benchmarks/timing.py)

THREADS = int(os.environ.get("OPENBLAS_NUM_THREADS", "1"))
PROMPT = 16
PREFILL = 512
DECODE_TARGET = 0.75  # of the weight-streaming bound
PREFILL_TARGET = 0.85  # of the matrix-multiply bound at the model's shapes
LARGE = 100e6  # bytes of weights past which a model is held to the targets
QWEN3_0_6B = dict(vocab_size=151_936, hidden_size=1024, intermediate_size=3072,
                  num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                  head_dim=128, rope_theta=1_000_000.0, rms_norm_eps=1e-6,
                  max_position_embeddings=40_960, tie_word_embeddings=True)


def shipped_pair(torch, transformers):
    ours = px.Qwen3ForCausalLM.from_pretrained(px.SHAKESPEARE_CHECKPOINT)
    theirs = transformers.Qwen3ForCausalLM.from_pretrained(
        px.SHAKESPEARE_CHECKPOINT, dtype=torch.float32).eval()
    return ours, theirs


def qwen3_0_6b_pair(torch, transformers):
    """Qwen3-0.6B's shapes, random (HF's init); px views HF's own tensors."""
    config = transformers.Qwen3Config(**QWEN3_0_6B)
    torch.manual_seed(0)
    theirs = transformers.Qwen3ForCausalLM(config).eval()
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()
             if k != "lm_head.weight"}  # tied: the embedding itself
    ours = px.Qwen3ForCausalLM.from_state_dict(
        state, px.ModelConfig(**{k: v for k, v in QWEN3_0_6B.items()
                                 if k != "tie_word_embeddings"}))
    assert ours.embed_tokens.ctypes.data == theirs.model.embed_tokens.weight.data_ptr()
    return ours, theirs


def smollm2_pair(torch, transformers):
    """SmolLM2 from its GGUF (px); transformers views px's own arrays."""
    folder = px.loading.cache_folder() / "smollm2"
    ours = px.LlamaForCausalLM.from_pretrained(folder, gguf_file=px.SMOLLM2_GGUF)
    # px's config fields are Hugging Face's names (the chapter does the same)
    config = transformers.LlamaConfig(**ours.config.to_dict(),
                                      tie_word_embeddings=True)
    theirs = transformers.LlamaForCausalLM(config)
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()},
                           strict=False, assign=True)
    theirs.tie_weights()
    theirs.eval()
    assert theirs.lm_head.weight.data_ptr() == ours.embed_tokens.ctypes.data
    return ours, theirs


def read_bandwidth(repeats: int = 5) -> dict:
    """Bytes per second that a matrix-vector product streams from memory:
    a 512 MiB float32 matrix (far past every cache) times a vector, both
    ways round. ``"w @ x"`` is a row-major (out, in) matrix, the layout
    torch's ``Linear`` stores; ``"x @ w"`` a row-major (in, out) one, which
    is what ``x @ weight.T`` multiplies when the weight is column-major, as
    px's checkpoint readers store it (``px.qwen3.weight_order``)."""
    w = np.random.default_rng(0).standard_normal((1 << 17, 1024), np.float32)
    x, y = np.ones(1024, np.float32), np.ones(1 << 17, np.float32)
    w @ x, y @ w  # warm
    return {"w @ x": w.nbytes / best_of(lambda: w @ x, repeats),
            "x @ w": w.nbytes / best_of(lambda: y @ w, repeats)}


def measure(name, ours, theirs, torch, n_new: int, repeats: int,
            prefill_repeats: int, prefill: int = PREFILL) -> dict:
    V = ours.vocab_size
    rng = np.random.default_rng(0)
    prompt = rng.integers(0, V, PROMPT)
    ours.generation_config = {}  # no end-of-sequence: exactly n_new tokens
    theirs.generation_config.eos_token_id = None
    theirs.generation_config.pad_token_id = 0
    t_prompt = torch.from_numpy(prompt)[None]

    def px_generate():
        return ours.generate(prompt, n_new)  # a 1-D prompt: (P + N,)

    def hf_generate():
        with torch.no_grad():
            return theirs.generate(t_prompt, max_new_tokens=n_new, do_sample=False,
                                   use_cache=True)[0].numpy()

    a, b = px_generate(), hf_generate()  # warm up, and the same tokens?
    assert len(a) == len(b) == PROMPT + n_new
    same = int(np.sum(a[PROMPT:] == b[PROMPT:]))
    # in turn, as prefill below: a change of the machine's load hits both
    gen = interleaved({"px": px_generate, "hf": hf_generate}, repeats)
    px_gen, hf_gen = min(gen["px"]), min(gen["hf"])

    long = rng.integers(0, V, (1, prefill))
    t_long = torch.from_numpy(long)

    def px_prefill():
        ours(long, cache=ours.new_cache(prefill), logits_to_keep=1)

    def hf_prefill():
        with torch.no_grad():
            theirs(t_long, use_cache=True, logits_to_keep=1)

    px_prefill(), hf_prefill()  # warm up
    # in turn, so that a change of the machine's load hits both sides
    times = interleaved({"px": px_prefill, "hf": hf_prefill}, prefill_repeats)
    px_pre, hf_pre = min(times["px"]), min(times["hf"])
    bound_pre = products_time(ours, prefill, prefill_repeats)
    row = dict(name=name, px_tps=n_new / px_gen, hf_tps=n_new / hf_gen,
               px_pre=prefill / px_pre, hf_pre=prefill / hf_pre, same=same, n=n_new,
               prefill_share=bound_pre / px_pre, weights=4 * ours.num_parameters())
    print(f"{name:<24} decode px {row['px_tps']:8.1f} tok/s  HF {row['hf_tps']:8.1f} tok/s  "
          f"ratio {row['px_tps'] / row['hf_tps']:5.2f}   (greedy tokens equal: "
          f"{same}/{n_new})", flush=True)
    print(f"{'':<24} prefill T={prefill}: px {row['px_pre']:8.1f} tok/s  HF "
          f"{row['hf_pre']:8.1f} tok/s  ratio {row['px_pre'] / row['hf_pre']:5.2f}; "
          f"px at {row['prefill_share']:.0%} of the matrix-multiply bound "
          f"({1e3 * bound_pre:.1f} ms for the products alone)", flush=True)
    return row


def products_time(model, T: int, repeats: int) -> float:
    """Seconds of a prefill's weight products alone, best of ``repeats``:
    ``x @ w.T`` for every layer's projections and MLP with T rows (the
    model's own arrays, in its own layout), and one row through the output
    embedding (``logits_to_keep=1``)."""
    mats = [w for layer in model.layers
            for w in (layer.self_attn.q_proj, layer.self_attn.k_proj,
                      layer.self_attn.v_proj, layer.self_attn.o_proj,
                      layer.mlp.gate_up_proj, layer.mlp.down_proj)]
    rows = {w.shape[1]: np.ones((T, w.shape[1]), np.float32) for w in mats}
    last = np.ones((1, model.embed_tokens.shape[1]), np.float32)

    def products():
        for w in mats:
            rows[w.shape[1]] @ w.T
        last @ model.embed_tokens.T
    products()  # warm
    return best_of(products, repeats)


def main() -> bool:
    try:
        import torch
        import transformers
    except ImportError as err:
        print(f"SKIP: bench_generate needs torch and transformers ({err})")
        return True
    torch.set_num_threads(THREADS)
    describe(torch)
    print(f"threads: BLAS {THREADS} (OPENBLAS_NUM_THREADS), torch "
          f"{torch.get_num_threads()}; numpy {np.__version__}, torch "
          f"{torch.__version__}, transformers {transformers.__version__}")
    speeds = read_bandwidth()
    bandwidth = max(speeds.values())  # the faster layout, the one decode uses
    print("read bandwidth of a 512 MiB matrix-vector product: "
          + ", ".join(f"{k} {v / 1e9:.1f} GB/s" for k, v in speeds.items()))
    rows = [measure("shipped Shakespeare", *shipped_pair(torch, transformers), torch,
                    n_new=64, repeats=5, prefill_repeats=5)]
    ours, theirs = qwen3_0_6b_pair(torch, transformers)
    rows.append(measure("Qwen3-0.6B shapes (f32)", ours, theirs, torch,
                        n_new=16, repeats=2, prefill_repeats=2))
    del ours, theirs
    if (px.loading.cache_folder() / "smollm2" / px.SMOLLM2_GGUF).is_file():
        rows.append(measure("SmolLM2-135M (GGUF, f32)",
                            *smollm2_pair(torch, transformers), torch,
                            n_new=64, repeats=3, prefill_repeats=3, prefill=256))
    else:
        print("SKIP: SmolLM2-135M, its GGUF is not in the cache (make smollm2)")
    ok = True
    print()
    for row in rows:
        bound = bandwidth / row["weights"]  # tokens/s if a step only read
        held = row["weights"] > LARGE
        for what, share, target, ratio in (
                ("decode", row["px_tps"] / bound, DECODE_TARGET,
                 row["px_tps"] / row["hf_tps"]),
                ("prefill", row["prefill_share"], PREFILL_TARGET,
                 row["px_pre"] / row["hf_pre"])):
            limit = ("weight-streaming bound" if what == "decode"
                     else "matrix-multiply bound")
            verdict = ("PASS" if share >= target else "FAIL") if held else "INFO"
            ok &= share >= target or not held
            print(f"{verdict}: {row['name']}, {what} at {share:.0%} of the {limit}"
                  + (f" (target >= {target:.0%})" if held else
                     " (fits in a cache: no target)")
                  + f"; px / transformers {ratio:.2f}")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
