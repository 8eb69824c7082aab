"""Batches, padding and generation: the pieces the padding chapter runs.

Shape legend: ``B`` sequences in a batch, ``T`` (or ``S``) padded length,
``V`` vocabulary size, ``d_model`` embedding size, ``d_head`` head size.
Token ids are integers; PAD is an id like any other, hidden by a mask.

* :func:`pad_sequences` turns token lists of different lengths into one
  (B, T) array plus the lengths, which :func:`pyxis_nb.padding_mask` takes.
* :class:`TinyLM` is the smallest language model with attention in it:
  embedding, sinusoidal positions, one causal head, output projection.
* :func:`greedy_generate` runs it one token at a time, as generation must.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._checks import check_positive_int
from .attention import scaled_dot_product_attention
from .head import Head
from .masks import causal_mask
from .positions import add_positions

__all__ = ["pad_sequences", "TinyLM", "greedy_generate"]


def pad_sequences(sequences: Sequence[Sequence[int]], *, pad_id: int = 0, side: str = "right",
                  length: int | None = None):
    """Pad token-id lists to one length, so they stack into a (B, T) array.

    Parameters
    ----------
    sequences : sequence of sequences of int
        ``B`` non-empty token-id lists.
    pad_id : int, default 0
        The id written into the padding slots.
    side : {"right", "left"}
        Right padding puts the real tokens first (usual for training); left
        padding puts them last, so every sequence ends at the same column
        (usual for batched generation).
    length : int, optional
        Padded length ``T``; defaults to the longest sequence.

    Returns
    -------
    ids : ndarray of int64, shape (B, T)
    lengths : ndarray of int64, shape (B,)
        Real tokens per row: pass them to ``px.padding_mask(lengths, T, side=side)``.

    Raises
    ------
    ValueError
        If ``sequences`` is empty or holds an empty or non-integer list, ``side``
        is unknown, or ``length`` is shorter than the longest sequence.

    See Also
    --------
    transformers.PreTrainedTokenizerBase.pad : the Hugging Face counterpart
        (``padding_side="right"|"left"``), which returns ``attention_mask`` too.
    """
    if side not in ("right", "left"):
        raise ValueError(f"side must be 'right' or 'left', got {side!r}")
    seqs = [np.asarray(s) for s in sequences]
    if not seqs:
        raise ValueError("sequences is empty: expected at least one token list")
    for b, s in enumerate(seqs):
        if s.ndim != 1 or s.shape[0] == 0 or not np.issubdtype(s.dtype, np.integer):
            raise ValueError(
                f"sequences[{b}] must be a non-empty 1-D list of integer token ids, "
                f"got shape {s.shape} and dtype {s.dtype}"
            )
    lengths = np.array([s.shape[0] for s in seqs], dtype=np.int64)  # (B,)
    T = int(lengths.max()) if length is None else check_positive_int("length", length)
    if T < lengths.max():
        raise ValueError(f"length={T} is shorter than the longest sequence ({lengths.max()})")
    ids = np.full((len(seqs), T), pad_id, dtype=np.int64)  # (B, T)
    for b, s in enumerate(seqs):
        if side == "right":
            ids[b, : s.shape[0]] = s
        else:
            ids[b, T - s.shape[0]:] = s
    return ids, lengths


class TinyLM:
    """A one-head language model: embed, add positions, attend causally, project to logits.

    ``logits = attention(E[ids] + PE) @ W_out``: no MLP, no normalisation, no
    training. The weights are seeded random numbers, so the "predictions" mean
    nothing; what matters is *which* positions each logit depends on.

    Parameters
    ----------
    vocab_size : int
        ``V``, the number of token ids.
    d_model : int, default 16
        Embedding size (even, for the sinusoidal positions).
    d_head : int, default 8
    seed : int, default 0
        Seeds the embedding, the head and the output projection.
    dtype : numpy dtype, default float64

    Attributes
    ----------
    embedding : ndarray, shape (V, d_model)
    head : Head
    W_out : ndarray, shape (d_head, V)

    See Also
    --------
    transformers.GPT2LMHeadModel : the same skeleton with many layers, MLPs and norms.
    """

    def __init__(self, vocab_size: int, d_model: int = 16, d_head: int = 8, seed: int = 0,
                 dtype=np.float64):
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        d_model = check_positive_int("d_model", d_model)
        if d_model % 2:
            raise ValueError(f"d_model must be even (sinusoidal positions), got {d_model}")
        rng = np.random.default_rng(seed)
        self.embedding = rng.standard_normal((self.vocab_size, d_model)).astype(dtype)
        self.head = Head(d_model, d_head, seed=seed + 1, dtype=dtype)
        self.W_out = (rng.standard_normal((d_head, self.vocab_size)) / np.sqrt(d_head)).astype(dtype)

    def forward(self, ids, *, attn_mask=None, causal: bool = True) -> np.ndarray:
        """Logits for the next token at every position.

        Parameters
        ----------
        ids : array_like of int, shape (..., T)
            Token ids in ``0 .. V - 1``.
        attn_mask : ndarray of bool, optional
            True = may attend; broadcastable to (..., 1, T, T), the 1 being the
            head axis. ``px.padding_mask(lengths, T)`` of shape (B, 1, 1, T)
            fits ids of shape (B, T). Combined with the causal mask by ``&``.
        causal : bool, default True
            Position ``t`` sees only positions ``0 .. t`` (teacher forcing).

        Returns
        -------
        ndarray, shape (..., T, V)
            Row ``t`` scores every candidate for the token at position ``t + 1``.

        Raises
        ------
        ValueError
            If ``ids`` is not integer, has no positions, or holds an id outside
            ``0 .. V - 1``; or if ``attn_mask`` does not broadcast.
        """
        ids = np.asarray(ids)
        if not np.issubdtype(ids.dtype, np.integer) or ids.ndim < 1 or ids.shape[-1] == 0:
            raise ValueError(
                f"ids must be an integer array of shape (..., T) with T >= 1, got shape "
                f"{ids.shape} and dtype {ids.dtype}"
            )
        if ids.min() < 0 or ids.max() >= self.vocab_size:
            raise ValueError(f"ids must lie in 0 .. {self.vocab_size - 1}, got {ids.min()} .. {ids.max()}")
        T = ids.shape[-1]
        x = add_positions(self.embedding[ids])  # (..., T) -> (..., T, d_model)
        q, k, v = (a[..., None, :, :] for a in self.head.qkv(x))  # each (..., 1, T, d_head): one head
        mask = causal_mask(T) if causal else np.ones((T, T), dtype=bool)  # (T, T)
        if attn_mask is not None:
            mask = mask & np.asarray(attn_mask, dtype=bool)  # (..., 1, T, T)
        h = scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (..., 1, T, d_head)
        return h[..., 0, :, :] @ self.W_out  # (..., T, d_head) x (d_head, V) -> (..., T, V)

    __call__ = forward

    def __repr__(self) -> str:
        return (f"TinyLM(vocab_size={self.vocab_size}, d_model={self.head.d_model}, "
                f"d_head={self.head.d_head})")


def greedy_generate(model: TinyLM, prompt: Sequence[int], max_new_tokens: int):
    """Generate token by token: run the model, take the argmax, append, repeat.

    Each step reruns the whole prefix (no KV cache yet: see the KV-cache
    chapter) and uses only the logits of the last position.

    Parameters
    ----------
    model : TinyLM
    prompt : sequence of int, length P >= 1
    max_new_tokens : int
        ``N >= 1`` tokens to add.

    Returns
    -------
    ids : ndarray of int64, shape (P + N,)
        The prompt followed by the generated tokens.
    step_logits : ndarray, shape (N, V)
        The logits each step chose from (row ``n`` produced ``ids[P + n]``).

    Raises
    ------
    ValueError
        If ``prompt`` is empty or not integer, or ``max_new_tokens`` < 1.

    See Also
    --------
    transformers.GenerationMixin.generate : with ``do_sample=False``, greedy search.
    """
    ids = np.asarray(prompt)
    if ids.ndim != 1 or ids.shape[0] == 0 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(
            f"prompt must be a non-empty 1-D list of token ids, got shape {ids.shape} "
            f"and dtype {ids.dtype}"
        )
    n = check_positive_int("max_new_tokens", max_new_tokens)
    ids = ids.astype(np.int64)
    step_logits = []
    for _ in range(n):
        logits = model(ids)[-1]  # (T, V) -> (V,): only the newest position predicts
        step_logits.append(logits)
        ids = np.append(ids, np.int64(np.argmax(logits)))
    return ids, np.stack(step_logits)  # (P + N,), (N, V)
