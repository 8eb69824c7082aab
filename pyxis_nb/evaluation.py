"""How good a language model is, in units that compare across tokenizers.

Shape legend:
    B, T, V  batch, positions of the tokens scored, vocabulary size
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import (check_int_array, check_needs, check_number,
                      check_token_ids)

__all__ = ["bits_per_byte", "token_byte_lengths"]


def _byte_alphabet() -> frozenset:
    """The 256 characters byte-level BPE writes bytes as (GPT-2's map)."""
    shown = [*range(33, 127), *range(161, 173), *range(174, 256)]
    hidden = [b for b in range(256) if b not in shown]
    return frozenset(map(chr, shown + [256 + i for i in range(len(hidden))]))


def token_byte_lengths(tokenizer) -> np.ndarray:
    """The bytes of UTF-8 text each token id stands for, in a byte-level BPE.

    (V,) int64; a special token counts 0 bytes, as ``decode`` drops it.

    Parameters
    ----------
    tokenizer : tokenizers.Tokenizer, byte-level BPE (``px.load_tokenizer``)"""
    alphabet = _byte_alphabet()
    special = {i for i, t in tokenizer.get_added_tokens_decoder().items()
               if t.special}
    lengths = np.zeros(tokenizer.get_vocab_size(), dtype=np.int64)  # (V,)
    for i in range(len(lengths)):
        if i in special:
            continue
        token = tokenizer.id_to_token(i)
        check_needs(set(token) <= alphabet, "tokenizer",
                    "a byte-level BPE vocabulary",
                    f"token {i} {token!r} has characters outside the byte "
                    "alphabet")
        lengths[i] = len(token)
    return lengths


def bits_per_byte(loss, labels, token_bytes) -> float:
    """A mean next-token loss in bits per byte of the tokens it scored.

    Parameters
    ----------
    loss : float, mean nats per token over ``labels`` (``px.next_token_loss``)
    labels : ndarray of int, the targets scored, e.g. ``input_ids[:, 1:]``
    token_bytes : ndarray of int, shape (V,), :func:`token_byte_lengths`"""
    loss = check_number("loss", loss, at_least=0)
    token_bytes = check_int_array("token_bytes", token_bytes, ndim=1,
                                  want="(V,)")
    check_needs(token_bytes.min() >= 0, "token_bytes", "counts >= 0",
                f"got {token_bytes.min()} bytes for a token")
    labels = check_token_ids("labels", labels, len(token_bytes),
                             want="(B, T) or (T,)")
    n_bytes = int(token_bytes[labels].sum())
    check_needs(n_bytes > 0, "labels", "at least one byte of text",
                f"its {labels.size} tokens stand for 0 bytes")
    return loss * labels.size / math.log(2) / n_bytes
