"""Checks for the exercises of "A real model" (book/real_model.ipynb).

The checks measure again, on the shipped Shakespeare checkpoint and the
chapter's held-out blocks, what the reader measured; exercise 2's answer is a
function of a ``config.json`` read as a dict, run on several configs.
"""

from __future__ import annotations

import functools
import zlib

import numpy as np

from ..circuits import next_token_loss
from ..loading import load_tokenizer
from ..model import SHAKESPEARE_CHECKPOINT, Qwen3ForCausalLM


@functools.lru_cache(maxsize=1)
def _setting():
    """The model, its tokenizer and the chapter's 4 held-out blocks."""
    ckpt = SHAKESPEARE_CHECKPOINT
    model = Qwen3ForCausalLM.from_pretrained(ckpt,
                                             attn_implementation="eager")
    tok = load_tokenizer(ckpt)
    text = (ckpt / "heldout.txt").read_text()
    blocks = np.array(tok.encode(text).ids)[:1024].reshape(4, 256)
    return model, tok, blocks


def _number(answer) -> float:
    x = np.asarray(answer, dtype=float)
    if x.shape != ():
        raise ValueError(f"give one number, not an array of shape {x.shape}")
    return float(x)


def zlib_here(answer) -> str | None:
    """1. zlib's bits per byte on the bytes of the 1,020 scored tokens."""
    x = _number(answer)
    _, tok, blocks = _setting()
    used = tok.decode(blocks[:, 1:].ravel().tolist()).encode()
    size = len(zlib.compress(used, 9))
    if np.isclose(x, 8 * size / len(used), atol=1e-3):
        return None
    if np.isclose(x, size / len(used), atol=1e-3):
        return ("that is bytes per byte: a byte is 8 bits")
    if np.isclose(x, 8 * size / blocks[:, 1:].size, atol=1e-3):
        return ("that is bits per token: divide by the bytes of the text, "
                "not by the number of tokens")
    if np.isclose(x, 8 * len(used) / size, atol=1e-3):
        return ("that is the compression ratio upside down: bits of the "
                "compressed text over bytes of the original")
    return ("not zlib's bits per byte on those bytes: decode the scored "
            "tokens (blocks[:, 1:]), encode the text to bytes, compress "
            "them at level 9 and divide the compressed bits by the "
            "original bytes")


# config.json's attention keys of three Qwen3 models and a made-up one;
# Qwen3-0.6B's head_dim is not hidden_size / num_attention_heads
_CONFIGS = {
    "Qwen3-0.6B": dict(num_hidden_layers=28, hidden_size=1024,
                       num_attention_heads=16, num_key_value_heads=8,
                       head_dim=128, torch_dtype="bfloat16"),
    "Qwen3-1.7B": dict(num_hidden_layers=28, hidden_size=2048,
                       num_attention_heads=16, num_key_value_heads=8,
                       head_dim=128, torch_dtype="bfloat16"),
    "the shipped model": dict(num_hidden_layers=4, hidden_size=256,
                              num_attention_heads=8, num_key_value_heads=4,
                              head_dim=32, torch_dtype="bfloat16"),
    "a made-up config": dict(num_hidden_layers=3, hidden_size=96,
                             num_attention_heads=6, num_key_value_heads=1,
                             head_dim=24, torch_dtype="bfloat16"),
}


def _kv_bytes(c: dict) -> int:
    return (2 * c["num_hidden_layers"] * c["num_key_value_heads"]
            * c["head_dim"] * 2)


def kv_bytes_per_token(answer) -> str | None:
    """2. kv_bytes_per_token(config): bf16 cache bytes per token."""
    got = {name: answer(dict(c)) for name, c in _CONFIGS.items()}
    wrong = [name for name, c in _CONFIGS.items()
             if got[name] != _kv_bytes(c)]
    if not wrong:
        return None
    where = f"for {wrong[0]}:"
    if got[wrong[0]] is None:
        return f"{where} your function returned None: return a number"

    def every(mistake):  # the answer is this mistake on every config
        return all(np.isclose(got[name], mistake(c))
                   for name, c in _CONFIGS.items())

    for mistake, hint in [
        (lambda c: _kv_bytes(c) * c["num_attention_heads"]
         // c["num_key_value_heads"],
         "you count every query head; the cache keeps the key/value heads "
         "only"),
        (lambda c: _kv_bytes(c) * c["hidden_size"]
         // (c["num_attention_heads"] * c["head_dim"]),
         "hidden_size / num_attention_heads is not the head size in every "
         "model: read head_dim"),
        (lambda c: _kv_bytes(c) / 2,
         "you get half the bytes: count both a key and a value, each "
         "number at 2 bytes in bf16"),
        (lambda c: _kv_bytes(c) / 4,
         "you count one number per head and layer: the cache holds a key "
         "and a value, at 2 bytes a number")]:
        if every(mistake):
            return f"{where} {hint}"
    return (f"{where} you get {got[wrong[0]]:,} bytes, not the cache's: per "
            "token, each layer keeps a key and a value of head_dim numbers "
            "for each key/value head, at 2 bytes a number in bf16")


def heads_together(answer) -> str | None:
    """3. (costs alone, cost together) of L2 H4-H7 on the first block."""
    try:
        alone, together = answer
    except (TypeError, ValueError):
        return ("give a pair: (the four costs alone, the cost of all four "
                "together)")
    alone, together = np.asarray(alone, dtype=float), _number(together)
    if alone.shape != (4,):
        return (f"the costs alone have shape {alone.shape}: give four, for "
                "heads 4 to 7 of layer 2")
    model, _, blocks = _setting()
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads

    def loss(ids, *heads):
        mask = np.ones((L, H))
        for i, h in heads:
            mask[i, h] = 0
        return next_token_loss(model(ids, head_mask=mask).logits, ids)

    one = blocks[:1]
    base = loss(one)
    want_alone = np.array([loss(one, (2, h)) for h in range(4, 8)]) - base
    want_together = loss(one, *[(2, h) for h in range(4, 8)]) - base
    if (np.allclose(alone, want_alone, atol=1e-3)
            and np.isclose(together, want_together, atol=1e-3)):
        return None
    if np.allclose(alone, want_alone + base, atol=1e-3):
        return ("these are losses, not costs: subtract the loss with every "
                "head on")
    if np.allclose(alone, want_alone, atol=1e-3):
        return ("the four costs alone are right; switch off all four heads "
                "in one head_mask for the cost together")
    everywhere = loss(blocks, (2, 4)) - loss(blocks)
    if np.isclose(alone[0], everywhere, atol=1e-3):
        return ("measured on all four blocks: the exercise asks for the "
                "first block of 256 tokens")
    return ("not the costs of switching the heads off: a head_mask of ones "
            "with a 0 at each switched-off head, the next-token loss of the "
            "first block, minus the loss with every head on")


CHECKS = {1: zlib_here, 2: kv_bytes_per_token, 3: heads_together}
