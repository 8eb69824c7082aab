"""A preallocated key/value cache, one slot per layer, for prefill and decode.

Shape legend:
    B       batch
    H_kv    key/value heads (the cache stores key/value heads, not query
            heads: this is where GQA saves memory)
    T       positions appended by one ``update`` (a prompt chunk, or 1 when
            decoding)
    S       positions a layer holds after it
    d_head  head size

Each layer owns two arrays of shape (B, H_kv, max_cache_len, d_head),
allocated once; an ``update`` writes ``T`` new positions after those
already there and returns views of the first ``S``. Nothing is copied or
reallocated while decoding.

:class:`SlidingWindowCache` is the same cache with an eviction rule: a
window of the last positions, plus the first ``sink_tokens`` kept for good
(Xiao et al. 2023's "attention sinks").

:class:`DynamicCache` is transformers' other kind: it grows by
concatenation and reads ``config.layer_types``, so a model that mixes
full and sliding layers keeps every token in its full layers and only the
last ``sliding_window - 1`` in its sliding ones
(:class:`DynamicSlidingWindowLayer`).
"""

from __future__ import annotations

import numpy as np

from ._checks import (as_config_dict, as_float_array, check_float_dtype,
                      check_int, check_positive_int, check_same_dtype,
                      check_shape)

__all__ = ["KVCache", "SlidingWindowCache", "DynamicCache", "DynamicLayer",
           "DynamicSlidingWindowLayer"]


class KVCache:
    """Keys and values of every layer, so decoding never recomputes the past.

    Parameters
    ----------
    num_hidden_layers : int
        ``L``.
    batch_size : int
        ``B``.
    num_key_value_heads : int
        ``H_kv``.
    head_dim : int
        ``d_head``.
    max_cache_len : int
        Positions allocated per layer (the most ``S`` can reach).
    dtype : numpy float dtype, default float64
        Every ``update`` must pass exactly this dtype (the package default,
        float64, as ``MultiHeadAttention`` and ``TinyDecoder``).

    Attributes
    ----------
    key_cache, value_cache : list of ndarray
        Shape (B, H_kv, max_cache_len, d_head): the storage, one array per
        layer (HF 5.x keeps them per layer as ``cache.layers[i].keys`` /
        ``.values``).

    Raises
    ------
    ValueError
        If a size is not an integer >= 1 or ``dtype`` is not a float dtype.

    See Also
    --------
    transformers.StaticCache : Hugging Face's preallocated cache (same idea).
    transformers.DynamicCache : grows by concatenation instead; same
        ``update`` and ``get_seq_length``.
    """

    def __init__(self, num_hidden_layers: int, batch_size: int,
                 num_key_value_heads: int, head_dim: int, max_cache_len: int,
                 dtype=np.float64):
        self.num_hidden_layers = check_positive_int(
            "num_hidden_layers", num_hidden_layers)
        self.batch_size = check_positive_int("batch_size", batch_size)
        self.num_key_value_heads = check_positive_int(
            "num_key_value_heads", num_key_value_heads)
        self.head_dim = check_positive_int("head_dim", head_dim)
        self.max_cache_len = check_positive_int("max_cache_len", max_cache_len)
        self.dtype = check_float_dtype("dtype", dtype)
        shape = (self.batch_size, self.num_key_value_heads, self.max_cache_len,
                 self.head_dim)
        layers = range(self.num_hidden_layers)
        self.key_cache = [np.zeros(shape, self.dtype) for _ in layers]
        self.value_cache = [np.zeros(shape, self.dtype) for _ in layers]
        self._lengths = [0] * self.num_hidden_layers

    def _check_layer(self, layer_idx) -> int:
        return check_int("layer_idx", layer_idx, low=0,
                         high=self.num_hidden_layers - 1)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Positions held so far by layer ``layer_idx`` (HF's name).

        Parameters
        ----------
        layer_idx : int, default 0
            ``0 .. L-1``.

        Returns
        -------
        int
            ``S``: the next ``update`` of this layer appends after them.
        """
        return self._lengths[self._check_layer(layer_idx)]

    def update(self, key_states, value_states, layer_idx: int):
        """Append T positions to layer ``layer_idx``; return all it holds.

        Same call as ``transformers.DynamicCache.update``. Nothing is written
        if anything is wrong.

        Parameters
        ----------
        key_states, value_states : ndarray, shape (B, H_kv, T, d_head)
            The new positions' keys and values, of the cache's dtype, T >= 1.
        layer_idx : int
            ``0 .. L-1``.

        Returns
        -------
        keys, values : ndarray, shape (B, H_kv, S, d_head)
            Views of the storage, which later updates leave unchanged.

        Raises
        ------
        ValueError
            If a shape or dtype is wrong, or ``S`` would pass
            ``max_cache_len``.

        See Also
        --------
        transformers.DynamicCache.update
        """
        i, k, v = self._check_update(key_states, value_states, layer_idx)
        start, T = self._lengths[i], k.shape[2]
        self.key_cache[i][:, :, start:start + T] = k  # positions start..S-1
        self.value_cache[i][:, :, start:start + T] = v
        self._lengths[i] = S = start + T
        return self.key_cache[i][:, :, :S], self.value_cache[i][:, :, :S]

    def _check_update(self, key_states, value_states, layer_idx):
        """update's door: the layer, and new keys and values that fit it."""
        i = self._check_layer(layer_idx)
        k = as_float_array("key_states", key_states, ndim=4)
        v = as_float_array("value_states", value_states, ndim=4)
        start, T = self._lengths[i], k.shape[2]
        want = (self.batch_size, self.num_key_value_heads, T, self.head_dim)
        for name, x in (("key_states", k), ("value_states", v)):
            check_shape(name, x, x.shape == want and T >= 1,
                        f"(B, H_kv, T, d_head) = ({want[0]}, {want[1]}, T, "
                        f"{want[3]}) with T >= 1")
        check_same_dtype(key_cache=self.key_cache[i], key_states=k,
                         value_states=v)
        if start + T > self.max_cache_len:  # nothing is written then
            raise ValueError(
                f"key_states: cannot append {T} positions to layer {i}: it "
                f"holds {start} and max_cache_len is {self.max_cache_len} "
                f"({start} + {T} = {start + T} > {self.max_cache_len})")
        return i, k, v

    def reset(self) -> None:
        """Forget every position (the storage stays allocated)."""
        self._lengths = [0] * self.num_hidden_layers

    def crop(self, max_length: int) -> None:
        """Keep the first ``max_length`` positions of every layer.

        Parameters
        ----------
        max_length : int
            Positions to keep. A negative one drops that many from the end
            instead (the only form ``transformers.DynamicCache.crop`` accepts
            in HF 5.x). Layers holding fewer keep what they have.

        See Also
        --------
        transformers.DynamicCache.crop
        """
        n = check_int("max_length", max_length)
        self._lengths = [max(L + n, 0) if n < 0 else min(L, n)
                         for L in self._lengths]

    @property
    def nbytes(self) -> int:
        """Bytes allocated for the keys and values of all layers."""
        return sum(a.nbytes for a in self.key_cache + self.value_cache)

    def __repr__(self) -> str:
        same = len(set(self._lengths)) == 1
        held = (f"every layer holds {self._lengths[0]}" if same
                else f"lengths={self._lengths}")
        return (f"{type(self).__name__}("
                f"num_hidden_layers={self.num_hidden_layers}, "
                f"batch_size={self.batch_size}, "
                f"num_key_value_heads={self.num_key_value_heads}, "
                f"head_dim={self.head_dim}, "
                f"max_cache_len={self.max_cache_len}, "
                f"dtype={self.dtype}; {held})")


class SlidingWindowCache(KVCache):
    """A KVCache that keeps the sinks and the last ``window - 1`` positions.

    After each update it evicts the oldest positions but the first
    ``sink_tokens``, so a query decoded one at a time attends to the
    sinks, the ``window - 1`` positions before it and itself: the mask
    ``kv <= q and (q - kv < window or kv < sink_tokens)``. Keys are cached
    after RoPE, so every kept token keeps its original position; the caller
    passes ``position_ids``. (StreamingLLM instead renumbers the positions
    inside the cache; transformers' ``SlidingWindowCache`` has no sinks.)

    Parameters
    ----------
    num_hidden_layers, batch_size, num_key_value_heads, head_dim : int
        As :class:`KVCache`.
    max_cache_len : int
        At least ``window + sink_tokens``: the most an update may hold
        before it evicts.
    dtype : numpy float dtype, default float64
        As :class:`KVCache`.
    window : int
        Positions a query sees besides the sinks, itself included.
    sink_tokens : int, default 0
        The first positions, never evicted.

    Raises
    ------
    ValueError
        As :class:`KVCache`, and if ``window`` is not an integer >= 1,
        ``sink_tokens`` is negative, or ``max_cache_len < window +
        sink_tokens``.
    """

    def __init__(self, num_hidden_layers: int, batch_size: int,
                 num_key_value_heads: int, head_dim: int, max_cache_len: int,
                 dtype=np.float64, *, window: int, sink_tokens: int = 0):
        super().__init__(num_hidden_layers, batch_size, num_key_value_heads,
                         head_dim, max_cache_len, dtype)
        self.window = check_positive_int("window", window)
        self.sink_tokens = check_int("sink_tokens", sink_tokens, low=0)
        if self.max_cache_len < self.window + self.sink_tokens:
            raise ValueError(
                "max_cache_len must hold window + sink_tokens = "
                f"{self.window} + {self.sink_tokens}, "
                f"got {self.max_cache_len}")

    def update(self, key_states, value_states, layer_idx: int):
        """Append T positions, return all held, then evict for the next.

        Parameters
        ----------
        key_states, value_states : ndarray, shape (B, H_kv, T, d_head)
        layer_idx : int

        Returns
        -------
        keys, values : ndarray, shape (B, H_kv, S, d_head)
            Copies (the eviction then moves the storage).
        """
        keys, values = super().update(key_states, value_states, layer_idx)
        keys, values = keys.copy(), values.copy()  # the storage moves next
        i, keep, sinks = layer_idx, self.window - 1, self.sink_tokens
        n = self._lengths[i]
        if n > sinks + keep:  # keep the sinks and the last window - 1
            for a in (self.key_cache[i], self.value_cache[i]):
                a[:, :, sinks:sinks + keep] = a[:, :, n - keep:n]
            self._lengths[i] = sinks + keep
        return keys, values

    def __repr__(self) -> str:
        return (super().__repr__()[:-1]  # its name, sizes and lengths
                + f"; window={self.window}, sink_tokens={self.sink_tokens})")


# ------------------------------------------------ one cache layer a layer type
class DynamicLayer:
    """A full layer's cache: every token's keys and values, grown by
    concatenation (transformers' ``DynamicLayer``).

    Attributes
    ----------
    keys, values : ndarray, shape (B, H_kv, S, d_head), or None
        What the layer holds between calls (None before the first).
    """

    def __init__(self):
        self.keys = self.values = None
        self.seen = 0  # tokens passed to update so far

    @property
    def held(self) -> int:
        """Tokens held between calls: ``S``."""
        return 0 if self.keys is None else self.keys.shape[2]

    def get_seq_length(self) -> int:
        """Tokens seen so far (transformers' name)."""
        return self.seen

    @property
    def nbytes(self) -> int:
        """Bytes of the keys and values held."""
        if self.keys is None:
            return 0
        return self.keys.nbytes + self.values.nbytes

    def update(self, key_states, value_states):
        """Append the new tokens; return every key and value to attend to.

        Parameters
        ----------
        key_states, value_states : ndarray, shape (B, H_kv, T, d_head)
            Checked by :meth:`DynamicCache.update`.

        Returns
        -------
        keys, values : ndarray, shape (B, H_kv, S, d_head)
        """
        self.seen += key_states.shape[2]
        if self.keys is not None:  # (B, H_kv, S_old + T, d_head)
            key_states = np.concatenate([self.keys, key_states], axis=2)
            value_states = np.concatenate([self.values, value_states], axis=2)
        self.keys, self.values = key_states, value_states
        return key_states, value_states


class DynamicSlidingWindowLayer(DynamicLayer):
    """A sliding layer's cache: after each call only the last
    ``sliding_window - 1`` tokens stay, since the next query sees those and
    itself (transformers' ``DynamicSlidingWindowLayer``).

    Parameters
    ----------
    sliding_window : int
        The window, >= 1, the query included.
    """

    def __init__(self, sliding_window: int):
        super().__init__()
        self.sliding_window = check_positive_int("sliding_window",
                                                 sliding_window)

    def update(self, key_states, value_states):
        """Append, return all (the window and the new tokens), then evict.

        Parameters
        ----------
        key_states, value_states : ndarray, shape (B, H_kv, T, d_head)
            Checked by :meth:`DynamicCache.update`.

        Returns
        -------
        keys, values : ndarray, shape (B, H_kv, S, d_head)
            The tokens held before the call and the new ones.
        """
        keys, values = DynamicLayer.update(self, key_states, value_states)
        start = max(keys.shape[2] - (self.sliding_window - 1), 0)
        self.keys, self.values = keys[:, :, start:], values[:, :, start:]
        return keys, values


class DynamicCache:
    """One cache layer a model layer, each of its layer's type.

    Built from a config as transformers' ``DynamicCache(config=config)``:
    a :class:`DynamicSlidingWindowLayer` for every ``"sliding_attention"``
    entry of ``config.layer_types``, a :class:`DynamicLayer` for the
    others; without a config (or ``layer_types``), full layers, added as
    ``update`` reaches them. The variants of :mod:`pyxis_nb.variants` take
    it as ``past_key_values``.

    Parameters
    ----------
    config : transformers config or dict, optional
        A config or its ``to_dict()``: ``layer_types`` and
        ``sliding_window`` are read.

    Attributes
    ----------
    layers : list of DynamicLayer
    """

    def __init__(self, config=None):
        self.layers = []
        c = {} if config is None else as_config_dict(config)
        #: the layers come from config.layer_types (else added by update)
        self.from_config = bool(c.get("layer_types"))
        for kind in c.get("layer_types") or ():
            self.layers.append(
                DynamicSlidingWindowLayer(c.get("sliding_window"))
                if kind == "sliding_attention" else DynamicLayer())

    def _layer(self, layer_idx, grow: bool = False) -> DynamicLayer:
        """The cache layer of ``layer_idx``; without a config's
        ``layer_types``, ``grow`` adds full layers up to it."""
        i = check_int("layer_idx", layer_idx, low=0)
        while grow and not self.from_config and len(self.layers) <= i:
            self.layers.append(DynamicLayer())
        if i >= len(self.layers):
            raise ValueError(
                f"layer_idx must index one of the cache's "
                f"{len(self.layers)} layers, got {i}")
        return self.layers[i]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Tokens layer ``layer_idx`` has seen (0 before its first update).

        Parameters
        ----------
        layer_idx : int, default 0

        Returns
        -------
        int
        """
        if not self.from_config and layer_idx >= len(self.layers):
            return 0  # not reached yet
        return self._layer(layer_idx).get_seq_length()

    def update(self, key_states, value_states, layer_idx: int):
        """Append T tokens to layer ``layer_idx``; return all to attend to.

        Parameters
        ----------
        key_states, value_states : ndarray, shape (B, H_kv, T, d_head)
            The new tokens' keys and values, one float dtype, T >= 1, the
            layer's (B, H_kv, d_head) and dtype after its first update.
        layer_idx : int
            The model layer.

        Returns
        -------
        keys, values : ndarray, shape (B, H_kv, S, d_head)
            The tokens the layer held and the new ones.
        """
        layer = self._layer(layer_idx, grow=True)
        k = as_float_array("key_states", key_states, ndim=4)
        v = as_float_array("value_states", value_states, ndim=4)
        check_shape("value_states", v, v.shape == k.shape,
                    f"key_states' shape {k.shape}")
        check_same_dtype(key_states=k, value_states=v)
        check_shape("key_states", k, k.shape[2] >= 1, "(B, H_kv, T, d_head) "
                    "with T >= 1")
        if layer.keys is not None:
            B, H_kv, _, d = layer.keys.shape
            check_shape("key_states", k, k.shape[:2] + k.shape[3:] ==
                        (B, H_kv, d), f"(B, H_kv, T, d_head) = ({B}, {H_kv}"
                        f", T, {d}) as the layer holds")
            check_same_dtype(key_cache=layer.keys, key_states=k)
        return layer.update(k, v)

    @property
    def nbytes(self) -> int:
        """Bytes held by all layers between calls."""
        return sum(layer.nbytes for layer in self.layers)

    def __repr__(self) -> str:
        kinds = "".join("s" if isinstance(x, DynamicSlidingWindowLayer)
                        else "f" for x in self.layers)
        return (f"DynamicCache(layers={len(self.layers)} '{kinds}', held="
                f"{[x.held for x in self.layers]}, nbytes={self.nbytes})")
