"""Serving SmolLM2: continuous batching, the paged kernel, speculative
decoding, and llama.cpp on the same file.

    make bench BENCH=bench_serving      (make llamacpp fetches llama.cpp)

SmolLM2-135M from its GGUF (``make smollm2``; skipped without it), as
float32, on one BLAS thread (unless OPENBLAS_NUM_THREADS says otherwise),
on the BLAS kernel OpenBLAS picks (benchmarks/machine.py prints it first).

1. Throughput of ``px.serving.generate_batch`` (greedy) against the number
   of concurrent requests R = 1 .. 32. R prompts of 16 to 32 random tokens,
   all prefilled in one step (``max_batch_tokens`` holds them all), then
   each step decodes one token of every request. Decode only: the time
   from the prefill's forward returning to ``generate_batch`` returning,
   N - 1 steps of R tokens with their scheduling (the model wrapped in a
   stopwatch), the best of the rounds. A step
   reads every weight once whatever R, so throughput grows with R as far
   as the machine's matrix products let it: the limit, measured in the same
   run, is the model's weight products alone (``x @ W.T`` for every
   projection, MLP matrix and the output head, in the model's own layout)
   with R rows. Target: at 16 requests, the speed-up over one request at
   least 70 % of the products' own speed-up from one row to 16. Beside it,
   each R's share of the products bound and of the weight-streaming bound
   (bench_generate's: the weights' bytes a step over the bandwidth of a
   512 MiB matrix-vector product). The runs of every R alternate in each
   round, and so do the products, so that a change of the machine's load
   hits them all.
2. The paged cache against the dense one (``PagedCache`` against
   ``DynamicCache``) at the same held lengths: a decode step of the model,
   and its attention alone (each layer's cache update and kernel). Target:
   the paged decode step at most 1.2 times the dense one.
3. Speculative decoding (``px.speculative.speculative_generate``) against
   plain greedy ``generate``, wall clock, prefill included, on a chat that
   repeats its prompt (a code function the answer copies) and one that
   does not (a story): prompt lookup and early exit, their acceptance
   rates. Reported, not a target; the tokens must equal plain greedy's.
4. llama.cpp on the same GGUF file and the same prompts, one thread: the
   prebuilt CPU wheel xllamacpp (MIT), installed by ``make llamacpp`` into
   the cache (not into .venv) and run in a process of its own. Decode
   tokens per second beside px's, and the bytes each reads a weight.
   Reported, not a target.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from machine import describe, one_blas_thread, use_own_blas  # benchmarks/machine.py

use_own_blas()  # before numpy: OpenBLAS on its own kernel, as a reader's
one_blas_thread()

import numpy as np  # noqa: E402

import pyxis_nb as px  # noqa: E402
from bench_generate import read_bandwidth  # noqa: E402  (benchmarks/)
from pyxis_nb.attention import attention_function  # noqa: E402
from pyxis_nb.kv_cache import DynamicCache  # noqa: E402
from pyxis_nb.paged import PagedCache, blocks_for  # noqa: E402
from pyxis_nb.serving import generate_batch  # noqa: E402
from pyxis_nb.speculative import speculative_generate  # noqa: E402
from timing import SETTLE_S, interleaved  # noqa: E402  (benchmarks/timing.py)

THREADS = int(os.environ.get("OPENBLAS_NUM_THREADS", "1"))
REQUESTS = (1, 2, 4, 8, 16, 32)
PROMPTS = (16, 32)  # shortest and longest prompt, in tokens
NEW = 17  # tokens a request generates: NEW - 1 decode steps timed
MAX_BATCH = 1024  # >= 32 prompts of 32 tokens: one prefill step
TARGET_SHARE = 0.70  # of the products' speed-up from 1 row to 16
AT = 16  # requests the target is held at
HELD = (250, 1000)  # paged / dense: tokens held (no step takes a block)
PAGED_TARGET = 1.2  # paged step at most this times the dense one
SPECULATIVE_NEW = 48  # tokens a speculative run generates at most
LOOKUP = 10  # prompt_lookup_num_tokens (transformers' example value)
EARLY_EXIT = 4  # assistant_early_exit: the draft's layers, of 30
LLAMACPP_NEW = 32  # tokens each side decodes for the comparison
#: the llama.cpp wheel ``make llamacpp`` installs (Makefile: LLAMACPP_PIN)
LLAMACPP = ("xllamacpp", "2026.10.11549")
LLAMACPP_DIR = px.loading.cache_folder() / "llamacpp"

CODE = '''def mean(values):
    total = 0
    count = 0
    for value in values:
        total += value
        count += 1
    return total / count
'''
#: (user message, the start of the assistant's answer) of each chat
CHATS = {
    "code (repeats its prompt)": (
        "Here is a Python function:\n\n```python\n" + CODE + "```\n\n"
        "Add a comment to each line of it.", "```python\n"),
    "story (does not)": (
        "Write a short story about a lighthouse keeper who finds a "
        "message in a bottle.", ""),
}


# ------------------------------------------------------- 1. throughput
def step_products(model, rows: int):
    """A function that runs a decode step's weight products alone, for
    ``rows`` requests (run once already): ``x @ w.T`` with ``rows`` rows
    for every layer's projections and MLP and for the output head (each
    request keeps its logits), the model's own arrays in its own layout."""
    mats = [w for layer in model.layers
            for w in (layer.self_attn.q_proj, layer.self_attn.k_proj,
                      layer.self_attn.v_proj, layer.self_attn.o_proj,
                      layer.mlp.gate_up_proj, layer.mlp.down_proj)]
    mats.append(model.lm_head)
    xs = {w.shape[1]: np.ones((rows, w.shape[1]), model.dtype) for w in mats}

    def products():
        for w in mats:
            xs[w.shape[1]] @ w.T
    products()  # warm
    return products


class Stopwatch:
    """``model`` as generate_batch sees it, noting when each forward
    returns (``returns``)."""

    def __init__(self, model):
        self.model, self.returns = model, []

    def __getattr__(self, name):
        return getattr(self.model, name)

    def forward(self, *args, **kwargs):
        out = self.model.forward(*args, **kwargs)
        self.returns.append(time.perf_counter())
        return out


def decode_time(model, prompts) -> float:
    """Seconds of one generate_batch call's NEW - 1 decode steps: from the
    prefill's forward returning to the call returning."""
    watch = Stopwatch(model)
    generate_batch(watch, prompts, max_new_tokens=NEW,
                   max_batch_tokens=MAX_BATCH, eos_token_id=[])
    end = time.perf_counter()
    assert len(watch.returns) == NEW, "the prompts took more than one step"
    return end - watch.returns[0]


def throughput(model, repeats: int, products_repeats: int) -> dict:
    """Each R's decode step (seconds, R tokens) and its weight products'
    time. In each round every R runs in turn, and so do the products, so
    that a change of the machine's load hits them all."""
    rng = np.random.default_rng(0)
    prompts = [rng.integers(0, model.vocab_size,
                            rng.integers(PROMPTS[0], PROMPTS[1] + 1)).tolist()
               for _ in range(max(REQUESTS))]
    decode_time(model, prompts[:2])  # warm
    steps = {R: [] for R in REQUESTS}
    for _ in range(repeats):
        for R, seen in steps.items():
            time.sleep(SETTLE_S)
            seen.append(decode_time(model, prompts[:R]) / (NEW - 1))
    products = {R: min(v) for R, v in interleaved(
        {R: step_products(model, R) for R in REQUESTS},
        products_repeats).items()}
    return {R: dict(step=min(steps[R]), products=products[R])
            for R in REQUESTS}


def report_throughput(rows: dict, weights: int, bandwidth: float) -> bool:
    streaming = weights / bandwidth  # a step that only read the weights
    one = rows[1]
    print(f"{'R':>3} {'step ms':>8} {'tokens/s':>9} {'speed-up':>9} "
          f"{'products':>9} {'of products':>12} {'of streaming':>13}")
    for R, row in rows.items():
        print(f"{R:3d} {1e3 * row['step']:8.1f} {R / row['step']:9.1f} "
              f"{one['step'] * R / row['step']:8.2f}x "
              f"{one['products'] * R / row['products']:8.2f}x "
              f"{row['products'] / row['step']:11.0%} "
              f"{streaming / row['step']:12.0%}")
    print("(speed-up: tokens/s over one request's; products: the weight "
          "products' own, R rows in the time of one; of products: the "
          "products of R rows alone over the step's time; of streaming: "
          f"{weights / 1e6:.0f} MB of weights read once a step, bytes x "
          f"steps / time over {bandwidth / 1e9:.1f} GB/s)")
    speedup = one["step"] * AT / rows[AT]["step"]
    limit = one["products"] * AT / rows[AT]["products"]
    ok = speedup >= TARGET_SHARE * limit
    print(f"{'PASS' if ok else 'FAIL'}: {AT} requests decode {speedup:.2f}x "
          f"the tokens/s of one; the weight products alone run {AT} rows "
          f"{limit:.2f}x as fast as one: {speedup / limit:.0%} of that "
          f"limit (target >= {TARGET_SHARE:.0%})")
    return ok


# --------------------------------------------------- 2. paged / dense
def paged_against_dense(model, repeats: int) -> bool:
    """A decode step and its attention alone on a PagedCache and a
    DynamicCache holding the same random keys and values."""
    c, ok = model.config, True
    H_kv, d, L = c.num_key_value_heads, c.head_dim, c.num_hidden_layers
    kernel = attention_function(c._attn_implementation)
    rng = np.random.default_rng(1)
    token = np.array([[rng.integers(model.vocab_size)]])

    def random(*shape):
        return rng.standard_normal(shape).astype(model.dtype)

    q = random(1, c.num_attention_heads, 1, d)  # a step's query, keys,
    k1, v1 = random(1, H_kv, 1, d), random(1, H_kv, 1, d)  # values
    for held in HELD:
        dense = DynamicCache(c)
        paged = PagedCache.from_config(c, num_blocks=blocks_for(held + 1, 16),
                                       block_size=16, dtype=model.dtype)
        for i in range(L):
            k, v = random(1, H_kv, held, d), random(1, H_kv, held, d)
            dense.update(k, v, i), paged.update(k, v, i)

        def step(cache):
            def run():
                logits = model(token, cache=cache, logits_to_keep=1).logits
                cache.crop(held)  # back to the same length
                return logits

            return run

        def attention(cache):
            def run():
                for i in range(L):
                    keys, values = cache.update(k1, v1, i)
                    kernel(q, keys, values, None, scaling=d ** -0.5)
                cache.crop(held)

            return run

        same = np.array_equal(step(dense)(), step(paged)())
        attention(dense)(), attention(paged)()  # warm
        t = {k: min(v) for k, v in interleaved(
            {"dense step": step(dense), "paged step": step(paged),
             "dense attention": attention(dense),
             "paged attention": attention(paged)}, repeats,
            settle=0.05).items()}  # numpy alone: no threads left spinning
        ratio = t["paged step"] / t["dense step"]
        ok &= ratio <= PAGED_TARGET
        print(f"  {held} tokens held: a decode step dense "
              f"{1e3 * t['dense step']:.1f} ms, paged "
              f"{1e3 * t['paged step']:.1f} ms (logits equal: "
              f"{'yes' if same else 'NO'}); its attention alone ({L} "
              f"layers' cache update and kernel) dense "
              f"{1e3 * t['dense attention']:.2f} ms, paged "
              f"{1e3 * t['paged attention']:.2f} ms: "
              f"{t['paged attention'] / t['dense attention']:.2f}x")
        print(f"{'PASS' if ratio <= PAGED_TARGET and same else 'FAIL'}: "
              f"paged decode step at {held} tokens {ratio:.2f}x the dense "
              f"one (target <= {PAGED_TARGET})")
        ok &= same
    return ok


# ------------------------------------------------- 3. speculative
def chat_prompts(folder) -> dict:
    """CHATS as token ids, through SmolLM2's chat template."""
    tokenizer = px.load_tokenizer(folder, gguf_file=px.SMOLLM2_GGUF)
    template = px.gguf_file.gguf_metadata(folder / px.SMOLLM2_GGUF)[
        "tokenizer.chat_template"]
    return {name: np.array(tokenizer.encode(px.loading.apply_chat_template(
        [{"role": "user", "content": user}], chat_template=template,
        add_generation_prompt=True) + answer).ids)
        for name, (user, answer) in CHATS.items()}


def speculative(model, chats: dict) -> None:
    for name, ids in chats.items():
        start = time.perf_counter()
        plain = model.generate(ids, SPECULATIVE_NEW)
        t_plain = time.perf_counter() - start
        n = len(plain) - len(ids)
        print(f"  {name}: a {len(ids)}-token prompt, {n} new tokens; plain "
              f"greedy {t_plain:.2f} s")
        for label, kwargs in (
                (f"prompt lookup (k = {LOOKUP})",
                 dict(prompt_lookup_num_tokens=LOOKUP)),
                (f"early exit ({EARLY_EXIT} of {len(model.layers)} layers, "
                 "k = 5)", dict(assistant_early_exit=EARLY_EXIT,
                                num_assistant_tokens=5))):
            start = time.perf_counter()
            out, stats = speculative_generate(model, ids, SPECULATIVE_NEW,
                                              **kwargs)
            t = time.perf_counter() - start
            print(f"    {label}: acceptance {stats.acceptance_rate:.0%} "
                  f"({stats.accepted} of {stats.drafted} drafts), "
                  f"{stats.forwards} forwards for {n} tokens; "
                  f"{t:.2f} s, speed-up {t_plain / t:.2f}x (tokens equal "
                  f"to plain greedy: "
                  f"{'yes' if np.array_equal(out, plain) else 'NO'})",
                  flush=True)


# ------------------------------------------------------- 4. llama.cpp
#: run in a process of its own: llama.cpp's server (xllamacpp) on one
#: thread, greedy, each prompt's decode time as llama.cpp measures it
WORKER = r"""
import json, sys
args = json.loads(sys.argv[1])
sys.path.insert(0, args["dir"])
import xllamacpp
params = xllamacpp.CommonParams()
params.model.path = args["gguf"]
params.n_ctx, params.n_parallel = 512, 1
params.cpuparams.n_threads = params.cpuparams_batch.n_threads = args["threads"]
server = xllamacpp.Server(params)
out = {"version": xllamacpp.__version__, "prompts": []}
for ids in args["prompts"]:
    best = None
    for _ in range(args["repeats"] + 1):  # the first warms
        r = server.handle_completions({
            "prompt": ids, "n_predict": args["new"], "temperature": 0,
            "ignore_eos": True, "cache_prompt": False, "logprobs": 1})
        ms = r["timings"]["predicted_per_token_ms"]
        best = ms if best is None else min(best, ms)
    tokens = [t["id"] for t in r["choices"][0]["logprobs"]["content"]]
    out["prompts"].append({"ms": best, "tokens": tokens})
print(json.dumps(out))
"""


def llamacpp_decode(gguf, prompts: list, repeats: int):
    """llama.cpp's decode (ms a token) and greedy tokens of each prompt,
    or the reason it could not run."""
    name, version = LLAMACPP
    if not (LLAMACPP_DIR / f"{name}-{version}.dist-info").is_dir():
        return (f"{name}=={version} is not in {LLAMACPP_DIR} (make "
                "llamacpp installs it from the package index)")
    args = dict(dir=str(LLAMACPP_DIR), gguf=str(gguf), threads=THREADS,
                new=LLAMACPP_NEW, repeats=repeats,
                prompts=[[int(t) for t in p] for p in prompts])
    try:
        run = subprocess.run([sys.executable, "-c", WORKER, json.dumps(args)],
                             capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "llama.cpp ran past 300 s"
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return f"llama.cpp failed (exit status {run.returncode}): {last}"
    return json.loads(run.stdout.strip().splitlines()[-1])


def px_decode(model, ids, repeats: int):
    """px's greedy tokens and decode step (s) on ``ids``, no end token:
    ``(t(N) - t(1)) / (N - 1)``, each the best of ``repeats``."""
    times, out = {LLAMACPP_NEW: [], 1: []}, {}
    for _ in range(repeats):
        for n, seen in times.items():
            time.sleep(SETTLE_S)
            start = time.perf_counter()
            out[n] = model.generate(ids, n, eos_token_id=[])
            seen.append(time.perf_counter() - start)
    tokens = out[LLAMACPP_NEW][len(ids):]
    step = (min(times[LLAMACPP_NEW]) - min(times[1])) / (LLAMACPP_NEW - 1)
    return tokens, step


def gguf_bytes_per_weight(gguf) -> tuple[float, dict]:
    """Bytes a weight in the GGUF file (every tensor), and its tensors'
    types, counted."""
    types = px.gguf_file.gguf_tensor_types(gguf)
    stored = sum(px.gguf_file.gguf_tensor_data(gguf, n).nbytes
                 for n in types)
    weights = sum(int(np.prod(shape)) for _, shape in types.values())
    kinds = {}
    for kind, _ in types.values():
        kinds[kind] = kinds.get(kind, 0) + 1
    return stored / weights, kinds


def llamacpp(model, gguf, prompts: dict, bandwidth: float,
             repeats: int) -> None:
    got = llamacpp_decode(gguf, list(prompts.values()), repeats)
    if isinstance(got, str):
        print(f"SKIP: llama.cpp: {got}; the rest is measured")
        return
    per_weight, kinds = gguf_bytes_per_weight(gguf)
    params = model.num_parameters()
    print(f"  llama.cpp: {LLAMACPP[0]} {got['version']}, {THREADS} thread; "
          f"{gguf.name}")
    px_ms, cpp_ms = [], []
    for (name, ids), theirs in zip(prompts.items(), got["prompts"]):
        tokens, step = px_decode(model, ids, repeats)
        agree = next((i for i, (a, b) in enumerate(zip(tokens,
                      theirs["tokens"])) if a != b), len(tokens))
        px_ms.append(1e3 * step), cpp_ms.append(theirs["ms"])
        print(f"  {name}, {len(ids)}-token prompt, {LLAMACPP_NEW} new: "
              f"llama.cpp {1e3 / cpp_ms[-1]:.1f} tokens/s "
              f"({cpp_ms[-1]:.1f} ms a token), px {1e3 / px_ms[-1]:.1f} "
              f"tokens/s ({px_ms[-1]:.1f} ms); greedy tokens equal for the "
              f"first {agree} of {LLAMACPP_NEW}", flush=True)
    cpp_bytes, px_bytes = per_weight * params, 4 * params
    print(f"  bytes a weight: llama.cpp reads the file's {per_weight:.3f} ("
          + ", ".join(f"{n} {k}" for k, n in kinds.items())
          + f" tensors; {cpp_bytes / 1e6:.0f} MB a token), px float32's 4 "
          f"({px_bytes / 1e6:.0f} MB a token): {4 / per_weight:.1f}x more")
    cpp_share = 1e3 * cpp_bytes / bandwidth / np.mean(cpp_ms)
    px_share = 1e3 * px_bytes / bandwidth / np.mean(px_ms)
    print(f"  of each one's weight-streaming bound (its bytes a token at "
          f"{bandwidth / 1e9:.1f} GB/s), mean over the prompts: llama.cpp "
          f"{cpp_share:.0%}, px {px_share:.0%}")
    bound = ("arithmetic (unpacking blocks in its dot products) bounds "
             "llama.cpp more than memory" if cpp_share < px_share else
             "both are bound by memory")
    print(f"  why they differ: a decode step reads every weight once; "
          f"llama.cpp reads the 4-bit blocks themselves, {4 / per_weight:.1f}x "
          "fewer bytes than px, since numpy has no 4-bit product and px "
          "dequantizes the file to float32 at load; on one thread " + bound
          + ", and px adds Python between its layers")


def main() -> bool:
    describe()
    print(f"threads: BLAS {THREADS} (OPENBLAS_NUM_THREADS); numpy "
          f"{np.__version__}")
    try:
        folder = px.fetch_smollm2()
    except OSError as err:
        print(f"SKIP: bench_serving needs SmolLM2's GGUF (make smollm2): {err}")
        return True
    gguf = folder / px.SMOLLM2_GGUF
    model = px.LlamaForCausalLM.from_pretrained(folder, gguf_file=gguf.name)
    speeds = read_bandwidth()
    bandwidth = max(speeds.values())
    weights = 4 * model.num_parameters()
    print(f"SmolLM2-135M (GGUF, float32): {weights / 1e6:.0f} MB of weights; "
          "read bandwidth of a 512 MiB matrix-vector product "
          + ", ".join(f"{k} {v / 1e9:.1f} GB/s" for k, v in speeds.items()))

    print(f"\n1. generate_batch, greedy: R prompts of {PROMPTS[0]}-"
          f"{PROMPTS[1]} random tokens prefilled in one step, then the "
          f"{NEW - 1} decode steps of R tokens timed, from the prefill's "
          "forward returning to generate_batch returning", flush=True)
    ok = report_throughput(throughput(model, repeats=2, products_repeats=5),
                           weights, bandwidth)

    print("\n2. PagedCache against DynamicCache, one request, the same "
          "random keys held", flush=True)
    ok &= paged_against_dense(model, repeats=20)

    chats = chat_prompts(folder)
    print(f"\n3. speculative_generate against plain greedy generate, at most "
          f"{SPECULATIVE_NEW} new tokens, wall clock with the prefill "
          "(reported)", flush=True)
    speculative(model, chats)

    print("\n4. llama.cpp on the same GGUF and prompts, decode (reported)",
          flush=True)
    rng = np.random.default_rng(0)
    first = rng.integers(0, model.vocab_size,
                         rng.integers(PROMPTS[0], PROMPTS[1] + 1))
    llamacpp(model, gguf, {"random (part 1's first)": first, **chats},
             bandwidth, repeats=2)
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
