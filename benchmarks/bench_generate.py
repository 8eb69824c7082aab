"""Prefill and decode of the book's models, as fractions of the machine's limits.

    make bench BENCH=bench_generate

Four models, each run by px and by transformers from the same float32
weights on the same number of threads (1 unless OPENBLAS_NUM_THREADS says
otherwise): the shipped Qwen3 trained on Shakespeare (3.7M parameters), a
random model of Qwen3-0.6B's shapes (0.6B), SmolLM2-135M from its GGUF file
(``make smollm2``) and Gemma 3 270M from its GGUF file (``make gemma3``;
each skipped without its file).

Decode is timed per step, the prompt's prefill left out: ``(t(P, N) -
t(P, 1)) / (N - 1)`` for N new tokens after a P-token prompt, on both sides.
The limits are measured in the same run, on the BLAS kernel OpenBLAS picks
for this processor (benchmarks/machine.py prints it first):

* decode reads every weight once a token. The *weight-streaming bound*
  divides the weights' bytes by the bandwidth of one large matrix-vector
  product (a 512 MiB matrix, both layouts; the faster). The model's own
  matrices stream faster or slower than that one (by the layout, the
  shapes, what the caches keep), so even the products alone can beat that
  estimate, and the target is held on the *products bound*: the model's
  weight products with one row (every layer's projections and MLP, and the
  output embedding, in the model's own layout), timed alone back to back,
  the time a decode step cannot beat on this BLAS. Target: at least 75 % of it for the models
  that do not fit in a cache; both fractions are printed.
* prefill is matrix products: the same products with T rows (one row
  through the output embedding), timed alone back to back, and the
  attention's own two products, each head's QK^T and PV at (T, d_head)
  timed whole for one layer, times the layers and the causal share of their
  work, (T + 1) / 2T (as ``bench_tiled`` bounds the tiled kernel), give the
  time numpy's BLAS needs for a forward's products: the *matrix-multiply
  bound*. Target: prefill at least 85 % of it, for the same models. Both
  parts are printed.

The ratios to transformers are printed beside the fractions: on one
machine they mostly say how fast each library's BLAS multiplies (OpenBLAS
against torch's MKL), so they are reported, not targets. Calls of the two
libraries and of the bounds' products alternate (``timing.interleaved``),
so that a change of the machine's load hits them all.
"""

from __future__ import annotations

import os

from machine import describe, one_blas_thread, use_own_blas  # benchmarks/machine.py

use_own_blas()  # before numpy: OpenBLAS on its own kernel, as a reader's
one_blas_thread()

import numpy as np  # noqa: E402

import pyxis_nb as px  # noqa: E402
from timing import best_of, interleaved  # noqa: E402  (benchmarks/timing.py)

THREADS = int(os.environ.get("OPENBLAS_NUM_THREADS", "1"))
PROMPT = 16
PREFILL = 512
DECODE_TARGET = 0.75  # of the products bound (one row, the model's shapes)
PREFILL_TARGET = 0.85  # of the matrix-multiply bound at the model's shapes
#: rounds of the decode timings of the GGUF models (a few seconds each):
#: with the best of three, a step's share of the bound moved by up to ten
#: points between runs on a shared two-core machine
DECODE_REPEATS = 5
GEMMA3 = px.loading.cache_folder() / "gemma3" / px.loading.GEMMA3_GGUF
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
    return ours, viewing(torch, ours, transformers.LlamaForCausalLM(config))


def gemma3_pair(torch, transformers):
    """Gemma 3 270M from its GGUF (px); transformers views px's own arrays
    (its norms zero-centred, as HF stores them: px's ``state_dict``)."""
    ours = px.Gemma3ForCausalLM.from_pretrained(GEMMA3.parent,
                                                gguf_file=GEMMA3.name)
    config = transformers.Gemma3TextConfig(
        **{k: list(v) if isinstance(v, tuple) else v
           for k, v in ours.config.to_dict().items()},
        tie_word_embeddings=True)
    return ours, viewing(torch, ours, transformers.Gemma3ForCausalLM(config))


def viewing(torch, ours, theirs):
    """``theirs`` (a transformers model) with ``ours``'s arrays as its
    weights, no copy, the output head tied to the embedding; eval mode."""
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()},
                           strict=False, assign=True)
    theirs.tie_weights()
    theirs.eval()
    assert theirs.lm_head.weight.data_ptr() == ours.embed_tokens.ctypes.data
    return theirs


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

    def px_generate(n=n_new):
        return ours.generate(prompt, n)  # a 1-D prompt: (P + n,)

    def hf_generate(n=n_new):
        with torch.no_grad():
            return theirs.generate(t_prompt, max_new_tokens=n, do_sample=False,
                                   use_cache=True)[0].numpy()

    a, b = px_generate(), hf_generate()  # warm up, and the same tokens?
    assert len(a) == len(b) == PROMPT + n_new
    same = int(np.sum(a[PROMPT:] == b[PROMPT:]))
    # in turn, with the bound, as prefill below: a change of the machine's
    # load hits all; t(P, N) - t(P, 1): N - 1 steps, without the prefill
    gen = {k: min(v) for k, v in interleaved(
        {"px": px_generate, "hf": hf_generate,
         "px 1": lambda: px_generate(1), "hf 1": lambda: hf_generate(1),
         "bound": weight_products(ours, 1)}, repeats).items()}
    px_step = (gen["px"] - gen["px 1"]) / (n_new - 1)
    hf_step = (gen["hf"] - gen["hf 1"]) / (n_new - 1)
    bound_step = gen["bound"]  # one row's products: a decode step's

    long = rng.integers(0, V, (1, prefill))
    t_long = torch.from_numpy(long)

    def px_prefill():
        ours(long, cache=ours.new_cache(prefill), logits_to_keep=1)

    def hf_prefill():
        with torch.no_grad():
            theirs(t_long, use_cache=True, logits_to_keep=1)

    px_prefill(), hf_prefill()  # warm up
    # in turn, so that a change of the machine's load hits all three
    times = {k: min(v) for k, v in interleaved(
        {"px": px_prefill, "hf": hf_prefill,
         "weights": weight_products(ours, prefill),
         "attention": attention_products(ours, prefill)},
        prefill_repeats).items()}
    px_pre, hf_pre = times["px"], times["hf"]
    # all layers, causal share: a sliding layer's window (Gemma 3's 512)
    # must hold the prefill, so that its keys are the causal ones too
    window = getattr(ours.config, "sliding_window", None)
    assert window is None or window >= prefill, (window, prefill)
    attention = (times["attention"] * ours.config.num_hidden_layers
                 * (prefill + 1) / (2 * prefill))
    bound_pre = times["weights"] + attention
    row = dict(name=name, px_step=px_step, hf_step=hf_step, same=same,
               n=n_new, bound_step=bound_step, px_pre=prefill / px_pre,
               hf_pre=prefill / hf_pre, prefill_share=bound_pre / px_pre,
               weights=4 * ours.num_parameters())
    print(f"{name}\n  decode, a step after a {PROMPT}-token prompt: px "
          f"{1e3 * px_step:.1f} ms, HF {1e3 * hf_step:.1f} ms, ratio "
          f"{hf_step / px_step:.2f} (greedy tokens equal: {same}/{n_new}); "
          f"px at {bound_step / px_step:.0%} of the products bound "
          f"({1e3 * bound_step:.1f} ms for one row's products alone)",
          flush=True)
    print(f"  prefill T={prefill}: px {row['px_pre']:.1f} tok/s, HF "
          f"{row['hf_pre']:.1f} tok/s, ratio {row['px_pre'] / row['hf_pre']:.2f}; "
          f"px at {row['prefill_share']:.0%} of the matrix-multiply bound "
          f"({1e3 * bound_pre:.1f} ms for the products alone: the weights' "
          f"{1e3 * times['weights']:.1f}, attention's {1e3 * attention:.1f})",
          flush=True)
    return row


def weight_products(model, T: int):
    """A function that runs a forward call's weight products alone (run
    once already): ``x @ w.T`` for every layer's projections and MLP with
    T rows (the model's own arrays, in its own layout), and one row through
    the output embedding (``logits_to_keep=1``). T = 1: a decode step's."""
    mats = [w for layer in model.layers
            for w in (layer.self_attn.q_proj, layer.self_attn.k_proj,
                      layer.self_attn.v_proj, layer.self_attn.o_proj,
                      layer.mlp.gate_up_proj, layer.mlp.down_proj)]
    rows = {w.shape[1]: np.ones((T, w.shape[1]), np.float32) for w in mats}
    last = np.ones((1, model.lm_head.shape[1]), np.float32)

    def products():
        for w in mats:
            rows[w.shape[1]] @ w.T
        last @ model.lm_head.T
    products()  # warm
    return products


def attention_products(model, T: int):
    """A function that runs one layer's attention products alone (run once
    already): each query head's QK^T, (T, d_head) x (d_head, T), and PV,
    (T, T) x (T, d_head), whole (no causal mask)."""
    c = model.config
    H = c.num_attention_heads
    d_head = c.head_dim or c.hidden_size // H
    q, k, v = np.random.default_rng(0).standard_normal((3, H, T, d_head),
                                                       np.float32)
    p = np.ones((T, T), np.float32)

    def products():
        for h in range(H):
            q[h] @ k[h].T  # (T, d_head) x (d_head, T)
            p @ v[h]       # (T, T) x (T, d_head)
    products()  # warm
    return products


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
                            n_new=64, repeats=DECODE_REPEATS, prefill_repeats=3,
                            prefill=256))
    else:
        print("SKIP: SmolLM2-135M, its GGUF is not in the cache (make smollm2)")
    if GEMMA3.is_file():
        rows.append(measure("Gemma 3 270M (GGUF, f32)",
                            *gemma3_pair(torch, transformers), torch,
                            n_new=32, repeats=DECODE_REPEATS, prefill_repeats=3,
                            prefill=256))
    else:
        print("SKIP: Gemma 3 270M, its GGUF is not in the cache (make gemma3)")
    ok = True
    print()
    for row in rows:
        held = row["weights"] > LARGE
        streaming = row["weights"] / bandwidth  # seconds if a step only read
        print(f"{row['name']}: decode at {streaming / row['px_step']:.0%} of "
              f"the weight-streaming bound ({row['weights'] / 1e6:.0f} MB at "
              f"{bandwidth / 1e9:.1f} GB/s: {1e3 * streaming:.1f} ms a step)")
        for what, share, target, ratio, limit in (
                ("decode", row["bound_step"] / row["px_step"], DECODE_TARGET,
                 row["hf_step"] / row["px_step"], "products bound"),
                ("prefill", row["prefill_share"], PREFILL_TARGET,
                 row["px_pre"] / row["hf_pre"], "matrix-multiply bound")):
            verdict = ("PASS" if share >= target else "FAIL") if held else "INFO"
            ok &= share >= target or not held
            print(f"{verdict}: {row['name']}, {what} at {share:.0%} of the {limit}"
                  + (f" (target >= {target:.0%})" if held else
                     " (fits in a cache: no target)")
                  + f"; px / transformers {ratio:.2f}")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
