"""How good a language model is, in units that compare across tokenizers.

Shape legend:
    B, T    batch, positions of the tokens scored
    V       vocabulary size

A loss in nats per token depends on the tokenizer: a vocabulary with longer
tokens has fewer, harder predictions. Bits per byte divide the total loss by
the bytes of text those tokens stand for, so a model, a bigram table and a
compressor such as zlib can be compared on the same text. The bytes must be
those of the very tokens scored: a mean over other text (a whole file when a
part was scored) gives another number.
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

    Parameters
    ----------
    tokenizer : tokenizers.Tokenizer
        A byte-level BPE, as ``px.load_tokenizer`` returns (the kind Qwen3
        and GPT-2 use): every character of a token's string is one byte.

    Returns
    -------
    ndarray of int64, shape (V,)
        ``V = tokenizer.get_vocab_size()``. Special tokens (such as
        ``<|endoftext|>``) count 0 bytes: ``decode`` drops them from the
        text. For ids without special tokens,
        ``token_byte_lengths(tok)[ids].sum()`` equals
        ``len(tok.decode(ids).encode())``.

    Raises
    ------
    ValueError
        If a token that is not special has a character outside the byte
        alphabet (the tokenizer is not byte-level).

    See Also
    --------
    bits_per_byte : the loss per byte of those tokens.
    """
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
    loss : float
        Mean cross-entropy in nats per token over ``labels``, as
        ``px.next_token_loss`` returns it (or torch's ``cross_entropy``).
    labels : ndarray of int, shape (B, T), or any shape
        The tokens whose predictions the loss averaged: the targets, not the
        inputs. For ``px.next_token_loss(logits, input_ids)`` these are
        ``input_ids[:, 1:]``.
    token_bytes : ndarray of int, shape (V,)
        Bytes of text each token id stands for (:func:`token_byte_lengths`).

    Returns
    -------
    float
        ``loss * labels.size / ln 2 / token_bytes[labels].sum()``: the
        total loss in bits, divided by the bytes of those tokens.

    Raises
    ------
    ValueError
        If ``loss`` is negative or not a number, ``token_bytes`` is not a
        non-negative 1-D integer array, ``labels`` are not token ids below
        ``V``, or the labels stand for no bytes at all.

    Examples
    --------
    >>> bits_per_byte(np.log(2), np.array([0, 1]), np.array([1, 3]))
    0.5
    """
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
