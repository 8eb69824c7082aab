"""A preallocated key/value cache, one slot per layer, for prefill and decode.

Shape legend:
    B       batch
    Hkv     num_key_value_heads, ``H_kv`` in the book (the cache stores key/value
            heads, not query heads: this is where GQA saves memory)
    t       positions appended by one ``update`` (a prompt chunk, or 1 when
            decoding); the book's ``L``, the new tokens
    S       positions held so far by a layer
    S_max   ``max_seq_len``, the positions allocated up front
    D       head_dim, ``d_head`` in the book

Each layer owns two arrays of shape (B, Hkv, S_max, D), allocated once; an
``update`` writes ``t`` new positions after the ``S`` already there and returns
views of the first ``S + t``. Nothing is copied or reallocated while decoding.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_positive_int

__all__ = ["KVCache"]


class KVCache:
    """Keys and values of every layer, kept so that decode does not recompute the past.

    Parameters
    ----------
    num_layers : int
    batch_size : int
        ``B``.
    num_key_value_heads : int
        ``Hkv``.
    head_dim : int
        ``D``.
    max_seq_len : int
        ``S_max``: positions allocated per layer; appending past it is an error.
    dtype : numpy float dtype, default float64
        Every ``update`` must pass exactly this dtype.

    Attributes
    ----------
    key_cache, value_cache : list of ndarray, shape (B, Hkv, S_max, D)
        The preallocated storage, one array per layer (Hugging Face's names).

    Raises
    ------
    ValueError
        If a size is not an integer >= 1 or ``dtype`` is not a float dtype.

    See Also
    --------
    transformers.StaticCache : Hugging Face's preallocated cache (same idea).
    transformers.DynamicCache : grows by concatenation instead; same ``update`` and
        ``get_seq_length``.
    """

    def __init__(self, num_layers: int, batch_size: int, num_key_value_heads: int,
                 head_dim: int, max_seq_len: int, dtype=np.float64):
        self.num_layers = check_positive_int("num_layers", num_layers)
        self.batch_size = check_positive_int("batch_size", batch_size)
        self.num_key_value_heads = check_positive_int("num_key_value_heads", num_key_value_heads)
        self.head_dim = check_positive_int("head_dim", head_dim)
        self.max_seq_len = check_positive_int("max_seq_len", max_seq_len)
        self.dtype = np.dtype(dtype)
        if not np.issubdtype(self.dtype, np.floating):
            raise ValueError(f"dtype must be a float dtype (float32 or float64), got {self.dtype}")
        shape = (self.batch_size, self.num_key_value_heads, self.max_seq_len, self.head_dim)
        self.key_cache = [np.zeros(shape, self.dtype) for _ in range(self.num_layers)]
        self.value_cache = [np.zeros(shape, self.dtype) for _ in range(self.num_layers)]
        self._lengths = [0] * self.num_layers

    def _check_layer(self, layer_idx) -> int:
        if (isinstance(layer_idx, bool) or not isinstance(layer_idx, (int, np.integer))
                or not 0 <= layer_idx < self.num_layers):
            raise ValueError(f"layer_idx must be an integer in 0 .. {self.num_layers - 1} "
                             f"(the cache has {self.num_layers} layers), got {layer_idx!r}")
        return int(layer_idx)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Positions held so far by layer ``layer_idx`` (Hugging Face's name)."""
        return self._lengths[self._check_layer(layer_idx)]

    def update(self, layer_idx: int, key, value):
        """Append new keys and values to one layer and return everything it holds.

        Parameters
        ----------
        layer_idx : int
        key, value : ndarray, shape (B, Hkv, t, D)
            The keys and values of the ``t`` new positions, of the cache's dtype.

        Returns
        -------
        keys, values : ndarray, shape (B, Hkv, S, D)
            Views of the storage, ``S`` = the previous length + ``t``. A later
            ``update`` writes after them and leaves them unchanged.

        Raises
        ------
        ValueError
            A bad ``layer_idx``; ``key`` or ``value`` of the wrong dtype or shape
            (the message names the expected (B, Hkv, t, D)); or more positions than
            ``max_seq_len`` allows (the message names both lengths).

        See Also
        --------
        transformers.DynamicCache.update : the same call in Hugging Face.
        """
        layer_idx = self._check_layer(layer_idx)
        want = (self.batch_size, self.num_key_value_heads, "t", self.head_dim)
        arrays = {}
        for name, x in (("key", key), ("value", value)):
            x = as_float_array(name, x)
            if x.dtype != self.dtype:
                raise ValueError(f"{name} has dtype {x.dtype}, expected {self.dtype} (the cache's dtype)")
            if (x.ndim != 4 or x.shape[2] == 0
                    or (x.shape[0], x.shape[1], x.shape[3]) != (want[0], want[1], want[3])):
                raise ValueError(f"{name} has shape {x.shape}, expected (B, Hkv, t, D) = "
                                 f"({want[0]}, {want[1]}, t, {want[3]}) with t >= 1")
            arrays[name] = x
        if arrays["key"].shape != arrays["value"].shape:
            raise ValueError(f"key has shape {arrays['key'].shape} but value has shape "
                             f"{arrays['value'].shape}; expected the same (B, Hkv, t, D)")
        start, t = self._lengths[layer_idx], arrays["key"].shape[2]
        if start + t > self.max_seq_len:
            raise ValueError(f"cannot append {t} positions to layer {layer_idx}: it holds {start} "
                             f"and max_seq_len is {self.max_seq_len} ({start} + {t} = {start + t} "
                             f"> {self.max_seq_len})")
        end = start + t
        self.key_cache[layer_idx][:, :, start:end] = arrays["key"]  # (B, Hkv, t, D) into positions start..end-1
        self.value_cache[layer_idx][:, :, start:end] = arrays["value"]
        self._lengths[layer_idx] = end
        return (self.key_cache[layer_idx][:, :, :end],  # (B, Hkv, S, D) views
                self.value_cache[layer_idx][:, :, :end])

    def reset(self) -> None:
        """Forget every position (the storage stays allocated)."""
        self._lengths = [0] * self.num_layers

    def crop(self, max_length: int) -> None:
        """Keep only the first ``max_length`` positions of every layer.

        Layers holding fewer keep what they have. Cropping then appending again
        is how a benchmark repeats one decode step at a fixed context length, and
        how speculative decoding drops rejected tokens.

        Parameters
        ----------
        max_length : int
            >= 0.

        Raises
        ------
        ValueError
            If ``max_length`` is not an integer >= 0.

        See Also
        --------
        transformers.DynamicCache.crop : the same call in Hugging Face (which also
            takes a negative length, counted from the end).
        """
        if (isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer))
                or max_length < 0):
            raise ValueError(f"max_length must be an integer >= 0, got {max_length!r}")
        self._lengths = [min(n, int(max_length)) for n in self._lengths]

    @property
    def nbytes(self) -> int:
        """Bytes allocated for keys and values of all layers (at ``max_seq_len``)."""
        return sum(a.nbytes for a in self.key_cache + self.value_cache)

    def __repr__(self) -> str:
        held = (f"every layer holds {self._lengths[0]}" if len(set(self._lengths)) == 1
                else f"lengths={self._lengths}")
        return (f"KVCache(num_layers={self.num_layers}, batch_size={self.batch_size}, "
                f"num_key_value_heads={self.num_key_value_heads}, head_dim={self.head_dim}, "
                f"max_seq_len={self.max_seq_len}, dtype={self.dtype}; {held})")
