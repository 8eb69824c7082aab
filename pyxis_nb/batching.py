"""Batches, padding and generation: the pieces the padding chapter runs.

Shape legend:
    ...       leading batch dimensions
    B         sequences in a batch
    T         padded length (query and key positions are the same tokens)
    V         vocabulary size
    d_model   size of one token's vector
    d_head    size of one head's query, key and value vectors

PAD is a token id like any other, hidden by a mask. The padding chapter
writes greedy generation out with :class:`TinyLM`; the package's one
generation loop is ``Qwen3ForCausalLM.generate``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._checks import (check_attn_mask, check_choice, check_even, check_int,
                      check_int_array, check_positive_int, check_token_ids)
from .attention import sdpa_core
from .head import Head
from .masks import causal_mask_mod, real_tokens
from .positions import sinusoidal_positions

__all__ = ["pad_sequences", "TinyLM"]


def _check_sequences(name: str, sequences) -> list[np.ndarray]:
    """A non-empty list of non-empty 1-D integer token-id lists."""
    seqs = [np.asarray(s) for s in sequences]
    if not seqs:
        raise ValueError(f"{name} is empty: expected at least one token list")
    for b, s in enumerate(seqs):
        check_int_array(f"{name}[{b}]", s, ndim=1, want="(T,)")
    return seqs


def pad_sequences(sequences: Sequence[Sequence[int]], *, pad_id: int = 0,
                  side: str = "right", length: int | None = None):
    """Pad token-id lists to one length, so they stack into a (B, T) array.

    The ``lengths`` are for ``px.padding_mask(lengths, T, side=side)``.

    Parameters
    ----------
    sequences : B non-empty sequences of int
    pad_id : int, the id of the padding
    side : "right" or "left" (batched generation): where the padding goes
    length : int, the padded length ``T``; default the longest sequence

    See Also
    --------
    transformers.PreTrainedTokenizerBase.pad : ``padding_side``.
    """
    check_choice("side", side, ("right", "left"))
    seqs = _check_sequences("sequences", sequences)
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)  # (B,)
    T = int(lengths.max()) if length is None else length
    T = check_int("length", T, low=int(lengths.max()))
    ids = np.full((len(seqs), T), pad_id, dtype=np.int64)  # (B, T)
    ids[real_tokens(lengths, T, side)] = np.concatenate(seqs)  # row by row
    return ids, lengths


class TinyLM:
    """A one-head language model: embed, add positions, attend, project.

    ``logits = attention(E[ids] + PE) @ W_out``: no MLP, no norm, no
    training; the seeded weights predict nothing, but show *which*
    positions each logit depends on.

    Parameters
    ----------
    vocab_size : int, ``V``
    hidden_size : int, ``d_model``, even (sinusoidal positions)
    head_dim : int, ``d_head``
    seed : int, the seed of the weights
    dtype : numpy dtype of the weights

    See Also
    --------
    transformers.GPT2LMHeadModel : the same skeleton, many layers deeper.
    """

    def __init__(self, vocab_size: int, hidden_size: int = 16,
                 head_dim: int = 8, seed: int = 0, dtype=np.float64):
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        d_model = check_even("hidden_size", hidden_size,
                             "sinusoidal positions")
        d_head = check_positive_int("head_dim", head_dim)
        rng = np.random.default_rng(seed)
        self.embedding = rng.standard_normal(
            (self.vocab_size, d_model)).astype(dtype)  # (V, d_model)
        self.head = Head(d_model, d_head, seed=seed + 1, dtype=dtype)
        self.W_out = (rng.standard_normal((d_head, self.vocab_size))
                      / np.sqrt(d_head)).astype(dtype)  # (d_head, V)

    def forward(self, input_ids, *, attn_mask=None, is_causal: bool = True):
        """Logits for the next token at every position.

        Returns (..., T, V): row ``t`` scores each candidate for ``t + 1``.

        Parameters
        ----------
        input_ids : array_like of int, shape (..., T), in ``0 .. V - 1``
        attn_mask : bool, broadcastable to (..., 1, T, T), e.g. a padding mask
        is_causal : bool, also apply the causal mask
        """
        ids = check_token_ids("input_ids", input_ids, self.vocab_size,
                              want="(..., T)")
        T, h = ids.shape[-1], self.head
        x = self.embedding[ids] + sinusoidal_positions(
            T, h.hidden_size, dtype=self.embedding.dtype)  # (..., T, d_model)
        # (..., T, d_model) @ (d_model, d_head) -> (..., 1, T, d_head)
        q, k, v = ((x @ W)[..., None, :, :] for W in (h.Wq, h.Wk, h.Wv))
        mask = causal_mask_mod(0, 0, np.arange(T)[:, None], np.arange(T)) \
            if is_causal else np.ones((T, T), bool)  # (T, T)
        if attn_mask is not None:  # (..., 1, T, T)
            mask = mask & check_attn_mask(attn_mask, False, q, k, v)
        out, _ = sdpa_core(q, k, v, attn_mask=mask)  # (..., 1, T, d_head)
        return out[..., 0, :, :] @ self.W_out  # (..., T, V)

    __call__ = forward

    def __repr__(self) -> str:
        return (f"TinyLM(vocab_size={self.vocab_size}, "
                f"hidden_size={self.head.hidden_size}, "
                f"head_dim={self.head.head_dim})")
