"""One cache family: a model's cache is a list of per-layer entries.

A :class:`Cache` holds ``layers``, one entry a model layer, with the calls of
transformers 5.x's caches (``update(key_states, value_states, layer_idx)``,
``get_seq_length``, ``crop``, ``reset``). The entry follows the layer's type:
:class:`DynamicLayer` (grown by concatenation), :class:`StaticLayer`
(preallocated), :class:`SlidingWindowLayer` (the last ``window - 1`` tokens and
the attention sinks), :class:`LatentLayer` (multi-head latent attention's
latent) and :class:`LinearAttentionLayer` (a recurrent state that does not
grow). :class:`DynamicCache` builds its entries from a config; :class:`KVCache`
and :class:`SlidingWindowCache` are the two the chapters build by hand.

Shape legend:
    B       batch
    H_kv    key/value heads (stored instead of query heads: GQA's saving)
    T       positions appended by one ``update`` (1 when decoding)
    S       positions a layer returns: those it held and the new ones
    d_head  head size
"""

from __future__ import annotations

import numpy as np

from ._checks import (as_config_dict, as_float_array, check_float_dtype,
                      check_int, check_positive_int, check_same_dtype,
                      check_shape)

__all__ = ["Cache", "KVCache", "SlidingWindowCache", "DynamicCache",
           "CacheLayer", "DynamicLayer", "StaticLayer", "SlidingWindowLayer",
           "LatentLayer", "LinearAttentionLayer"]


# ------------------------------------------------------------- the entries
class CacheLayer:
    """What every entry has: the tokens seen, those held, their bytes."""

    kind = "f"  #: in a cache's repr: full, sliding, latent, recurrent

    def __init__(self):
        self.keys = self.values = None  # (B, H_kv, held, d_head) or None
        self.seen = 0  # tokens passed to update so far

    @property
    def held(self) -> int:
        """Tokens held between calls (what the next query can see)."""
        return 0 if self.keys is None else self.keys.shape[2]

    def get_seq_length(self) -> int:
        """Tokens seen so far (transformers' name)."""
        return self.seen

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return sum(0 if a is None else a.nbytes
                   for a in (self.keys, self.values))

    def check(self, key_states, value_states):
        """``key_states`` and ``value_states`` as arrays of (B, H_kv, T,
        d_head), T >= 1, that fit what is held."""
        k = as_float_array("key_states", key_states, ndim=4)
        v = as_float_array("value_states", value_states, ndim=4)
        check_shape("value_states", v, v.shape[:3] == k.shape[:3],
                    f"(B, H_kv, T) of key_states, {k.shape[:3]}")
        check_same_dtype(key_states=k, value_states=v)
        check_shape("key_states", k, k.shape[2] >= 1,
                    "(B, H_kv, T, d_head) with T >= 1")
        if self.keys is not None:
            B, H_kv, _, d = self.keys.shape
            check_shape("key_states", k, (k.shape[0], k.shape[1],
                                          k.shape[3]) == (B, H_kv, d),
                        f"(B, H_kv, T, d_head) = ({B}, {H_kv}, T, {d}) as "
                        "the layer holds")
            check_same_dtype(key_cache=self.keys, key_states=k)
        return k, v

    def reset(self) -> None:
        """Forget every token."""
        self.keys = self.values = None
        self.seen = 0

    def crop(self, max_length: int) -> None:
        """Keep the first ``max_length`` tokens (negative: drop that many
        from the end, as ``transformers.DynamicCache.crop``)."""
        n = self.seen + max_length if max_length < 0 else max_length
        n = min(max(n, 0), self.seen)
        if self.keys is not None:
            self.keys, self.values = (a[:, :, :n] for a in (self.keys,
                                                            self.values))
        self.seen = n


class DynamicLayer(CacheLayer):
    """A full layer's keys and values, grown by concatenation."""

    def update(self, key_states, value_states):
        """Append ``key_states`` and ``value_states`` (T tokens); return all
        (B, H_kv, S, d_head) held."""
        self.seen += key_states.shape[2]
        if self.keys is not None:  # (B, H_kv, S_old + T, d_head)
            key_states = np.concatenate([self.keys, key_states], axis=2)
            value_states = np.concatenate([self.values, value_states], axis=2)
        self.keys, self.values = key_states, value_states
        return key_states, value_states


class StaticLayer(CacheLayer):
    """A full layer's keys and values in two arrays allocated once, of
    (``batch_size``, ``num_key_value_heads``, ``max_cache_len``, ``head_dim``)
    and ``dtype``; ``update`` returns views of the first S, which later updates
    leave unchanged."""

    def __init__(self, batch_size: int, num_key_value_heads: int,
                 head_dim: int, max_cache_len: int, dtype):
        super().__init__()
        shape = (batch_size, num_key_value_heads, max_cache_len, head_dim)
        self.key_cache = np.zeros(shape, dtype)  # the storage
        self.value_cache = np.zeros(shape, dtype)

    @property
    def held(self) -> int:
        return self.seen

    @property
    def nbytes(self) -> int:
        """Bytes allocated, whatever is filled."""
        return self.key_cache.nbytes + self.value_cache.nbytes

    def check(self, key_states, value_states):
        """``key_states`` and ``value_states`` of the storage's shape and
        dtype, with room for them."""
        k = as_float_array("key_states", key_states, ndim=4)
        v = as_float_array("value_states", value_states, ndim=4)
        B, H_kv, capacity, d = self.key_cache.shape
        T = k.shape[2]
        for name, x in (("key_states", k), ("value_states", v)):
            check_shape(name, x, x.shape == (B, H_kv, T, d) and T >= 1,
                        f"(B, H_kv, T, d_head) = ({B}, {H_kv}, T, {d}) "
                        "with T >= 1")
        check_same_dtype(key_cache=self.key_cache, key_states=k,
                         value_states=v)
        if self.seen + T > capacity:  # nothing is written then
            raise ValueError(
                f"key_states: cannot append {T} positions: the layer holds "
                f"{self.seen} and max_cache_len is {capacity} ({self.seen} "
                f"+ {T} = {self.seen + T} > {capacity})")
        return k, v

    def update(self, key_states, value_states):
        """Write the T new positions after those held; return all S.

        ``key_states``, ``value_states``: (B, H_kv, T, d_head); the returned
        views of the storage stay as they are through later updates."""
        start, S = self.seen, self.seen + key_states.shape[2]
        self.key_cache[:, :, start:S] = key_states  # positions start..S-1
        self.value_cache[:, :, start:S] = value_states
        self.seen = S
        return self.key_cache[:, :, :S], self.value_cache[:, :, :S]

    def reset(self) -> None:
        self.seen = 0  # the storage stays allocated

    def crop(self, max_length: int) -> None:
        n = self.seen + max_length if max_length < 0 else max_length
        self.seen = min(max(n, 0), self.seen)


class SlidingWindowLayer(CacheLayer):
    """A sliding layer's cache: the first ``sink_tokens`` and the last
    ``sliding_window`` - 1 tokens stay after each call, since the next query
    sees those and itself. Keys are cached after RoPE: a kept token keeps its
    position (StreamingLLM renumbers them instead)."""

    kind = "s"

    def __init__(self, sliding_window: int, sink_tokens: int = 0):
        super().__init__()
        self.sliding_window = check_positive_int("sliding_window",
                                                 sliding_window)
        self.sink_tokens = check_int("sink_tokens", sink_tokens, low=0)

    def update(self, key_states, value_states):
        """Return the held and the new tokens; keep sinks + window - 1.

        ``key_states``, ``value_states``: (B, H_kv, T, d_head). After the
        call the sinks and the last ``sliding_window - 1`` tokens stay."""
        self.seen += key_states.shape[2]
        keys, values = key_states, value_states
        if self.keys is not None:  # (B, H_kv, held + T, d_head)
            keys = np.concatenate([self.keys, key_states], axis=2)
            values = np.concatenate([self.values, value_states], axis=2)
        n, sinks, keep = keys.shape[2], self.sink_tokens, \
            self.sliding_window - 1
        kept = np.r_[0:min(sinks, n), max(n - keep, min(sinks, n)):n]
        self.keys, self.values = keys[:, :, kept], values[:, :, kept]
        return keys, values

    def crop(self, max_length: int) -> None:
        raise ValueError("crop: a sliding window layer has evicted tokens "
                         "and cannot go back; start a new cache instead")


class LatentLayer(CacheLayer):
    """MLA's entry: ``c_kv`` (after ``kv_a_layernorm``, ``kv_lora_rank``
    numbers) and the rotated ``k_pe`` (``qk_rope_head_dim``) of every token,
    side by side in one row, as ``kv_a_proj_with_mqa`` lays them out; no head's
    key or value. The buffer doubles when full."""

    kind = "l"

    def __init__(self, kv_lora_rank: int, qk_rope_head_dim: int):
        super().__init__()
        self.kv_lora_rank = check_positive_int("kv_lora_rank", kv_lora_rank)
        self.qk_rope_head_dim = check_positive_int("qk_rope_head_dim",
                                                   qk_rope_head_dim)
        self.buffer = None  # (B, capacity, r + d_rope)

    @property
    def held(self) -> int:
        return self.seen

    @property
    def latent(self):
        """ndarray, shape (B, S, r + d_rope): ``[c_kv, k_pe]`` a token."""
        return None if self.buffer is None else self.buffer[:, :self.seen]

    @property
    def c_kv(self):
        """ndarray, shape (B, S, r): the normalised latents."""
        return None if self.buffer is None else self.latent[
            ..., :self.kv_lora_rank]

    @property
    def k_pe(self):
        """ndarray, shape (B, S, d_rope): the rotated key slices."""
        return None if self.buffer is None else self.latent[
            ..., self.kv_lora_rank:]

    @property
    def nbytes(self) -> int:
        """``B * S * (r + d_rope) * itemsize``."""
        return 0 if self.buffer is None else self.latent.nbytes

    def check(self, c_kv, k_pe):
        """``c_kv`` (B, T, r) and ``k_pe`` (B, T, d_rope) of one dtype,
        fitting the buffer."""
        c = as_float_array("c_kv", c_kv, ndim=3)
        k = as_float_array("k_pe", k_pe, ndim=3)
        B, T = c.shape[:2]
        check_shape("c_kv", c, c.shape[2] == self.kv_lora_rank and T >= 1,
                    f"(B, T, kv_lora_rank = {self.kv_lora_rank}), T >= 1")
        check_shape("k_pe", k, k.shape == (B, T, self.qk_rope_head_dim),
                    f"(B, T, qk_rope_head_dim) = ({B}, {T}, "
                    f"{self.qk_rope_head_dim})")
        check_same_dtype(c_kv=c, k_pe=k)
        if self.buffer is not None:
            check_shape("c_kv", c, B == self.buffer.shape[0],
                        f"the cache's batch of {self.buffer.shape[0]}")
            check_same_dtype(latent=self.buffer, c_kv=c)
        return c, k

    def update(self, c_kv, k_pe):
        """Append the new tokens' latent ``c_kv`` and rotated key slice
        ``k_pe``; return every token held, (B, S, r + d_rope), a view of the
        buffer."""
        B, T, r = c_kv.shape
        S = self.seen + T
        if self.buffer is None or S > self.buffer.shape[1]:  # grow: x2
            grown = np.empty((B, max(S, 2 * self.seen),
                              r + k_pe.shape[-1]), c_kv.dtype)
            grown[:, :self.seen] = self.latent
            self.buffer = grown
        self.buffer[:, self.seen:S, :r] = c_kv
        self.buffer[:, self.seen:S, r:] = k_pe
        self.seen = S
        return self.latent

    def reset(self) -> None:
        self.buffer, self.seen = None, 0

    def crop(self, max_length: int) -> None:
        n = self.seen + max_length if max_length < 0 else max_length
        self.seen = min(max(n, 0), self.seen)


class LinearAttentionLayer(CacheLayer):
    """A linear-attention layer's entry (transformers'
    ``LinearAttentionLayer``): ``conv_state`` (B, conv_dim, K), the last K
    inputs of the convolution, and ``recurrent_state`` (B, H, d_k, d_v).
    Neither grows; ``Qwen3NextGatedDeltaNet`` writes both."""

    kind = "r"

    def __init__(self, conv_state=None, recurrent_state=None):
        super().__init__()
        self.conv_state = conv_state
        self.recurrent_state = recurrent_state

    @property
    def nbytes(self) -> int:
        return sum(0 if x is None else x.nbytes
                   for x in (self.conv_state, self.recurrent_state))

    def update(self, key_states, value_states):
        """Refused: ``key_states`` and ``value_states`` have no place here."""
        raise TypeError("a linear-attention layer keeps a state, not keys "
                        "and values: its layer writes conv_state and "
                        "recurrent_state")

    def reset(self) -> None:
        self.conv_state = self.recurrent_state = None
        self.seen = 0

    def crop(self, max_length: int) -> None:
        raise ValueError("crop: a linear-attention state cannot go back")

    def __repr__(self) -> str:
        shapes = [None if x is None else x.shape
                  for x in (self.conv_state, self.recurrent_state)]
        return (f"LinearAttentionLayer(conv_state {shapes[0]}, "
                f"recurrent_state {shapes[1]}, {self.nbytes} bytes)")


# ---------------------------------------------------------------- caches
class Cache:
    """A model's cache: ``layers``, one entry a model layer.

    ``layers``: :class:`CacheLayer` entries; none (the default): full entries
    (:class:`DynamicLayer`) are added as ``update`` reaches them."""

    def __init__(self, layers=None):
        self.layers = list(layers or ())
        self.grows = not self.layers  # entries added as updates reach them

    def entry(self, layer_idx, grow: bool = False) -> CacheLayer:
        """The entry of layer ``layer_idx``; ``grow``: add full entries up
        to it, in a cache built without a layer list."""
        if grow and self.grows:
            i = check_int("layer_idx", layer_idx, low=0)
            while len(self.layers) <= i:
                self.layers.append(self._new_full())
        return self.layers[check_int("layer_idx", layer_idx, low=0,
                                     high=len(self.layers) - 1)]

    def _new_full(self) -> CacheLayer:
        return DynamicLayer()

    def update(self, key_states, value_states, layer_idx: int):
        """Append T tokens to layer ``layer_idx``; return what it attends.

        ``key_states``, ``value_states`` (B, H_kv, T, d_head) -> keys, values
        (B, H_kv, S, d_head), held first (a latent entry: ``c_kv``, ``k_pe`` ->
        the latent). Nothing is written if anything is wrong. As
        ``transformers.DynamicCache.update``."""
        layer = self.entry(layer_idx, grow=True)
        return layer.update(*layer.check(key_states, value_states))

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Tokens layer ``layer_idx`` has seen (0 before its first
        update)."""
        if self.grows and layer_idx >= len(self.layers):
            return 0  # not reached yet
        return self.entry(layer_idx).get_seq_length()

    def get_held_length(self, layer_idx: int = 0) -> int:
        """Tokens layer ``layer_idx`` holds: what new queries see besides
        themselves (fewer than seen in a sliding layer)."""
        if self.grows and layer_idx >= len(self.layers):
            return 0
        return self.entry(layer_idx).held

    def reset(self) -> None:
        """Forget every token (a static layer keeps its storage)."""
        for layer in self.layers:
            layer.reset()

    def crop(self, max_length: int) -> None:
        """Keep the first ``max_length`` tokens of every layer; a negative
        one drops that many from the end (transformers' form)."""
        n = check_int("max_length", max_length)
        for layer in self.layers:
            layer.crop(n)

    @property
    def nbytes(self) -> int:
        """Bytes of every layer's entry."""
        return sum(layer.nbytes for layer in self.layers)

    def __len__(self) -> int:
        return len(self.layers)

    def __repr__(self) -> str:
        kinds = repr("".join(x.kind for x in self.layers))
        if len(self.layers) > 12 and len(set(kinds)) == 2:  # 'ff...f'
            kinds = f"{kinds[:2]}' x {len(self.layers)}"
        counts = {name: [getattr(x, name) for x in self.layers]
                  for name in ("seen", "held")}
        said = "".join(f", {name}={v[0]}" if len(set(v)) == 1 else
                       f", {name}={v}" for name, v in counts.items() if v)
        return (f"{type(self).__name__}(layers={len(self.layers)} {kinds}"
                f"{said}, nbytes={self.nbytes:,})")


class DynamicCache(Cache):
    """One entry a layer, of its layer's type, from a config.

    As ``transformers.DynamicCache(config=config)``, for each entry of
    ``config.layer_types``: a :class:`SlidingWindowLayer` of
    ``config.sliding_window`` for ``"sliding_attention"``, a
    :class:`LinearAttentionLayer` for ``"linear_attention"``, else a full one:
    :class:`LatentLayer` for an MLA config (``kv_lora_rank``),
    :class:`DynamicLayer` otherwise. Without ``layer_types`` (or ``config``: a
    transformers config or its ``to_dict()``), full entries are added as
    ``update`` reaches them.
    """

    def __init__(self, config=None):
        c = {} if config is None else as_config_dict(config)
        self.config = c
        kinds = {"sliding_attention": lambda: SlidingWindowLayer(
                     c.get("sliding_window")),
                 "linear_attention": LinearAttentionLayer}
        super().__init__([kinds.get(kind, self._new_full)()
                          for kind in c.get("layer_types") or ()])

    def _new_full(self) -> CacheLayer:
        """A full layer's entry: latent for an MLA config."""
        c = self.config
        if c.get("kv_lora_rank"):
            return LatentLayer(c["kv_lora_rank"], c["qk_rope_head_dim"])
        return DynamicLayer()


class KVCache(Cache):
    """Keys and values of every layer, preallocated: one
    :class:`StaticLayer` of (B, H_kv, max_cache_len, d_head) a layer.

    ``num_hidden_layers``, ``batch_size``, ``num_key_value_heads``,
    ``head_dim``: ``L``, ``B``, ``H_kv``, ``d_head``; ``max_cache_len``: the
    positions allocated (the most ``S`` reaches); ``dtype`` (float64): the one
    every ``update`` must pass.

    See Also
    --------
    transformers.StaticCache : the same idea.
    """

    def __init__(self, num_hidden_layers: int, batch_size: int,
                 num_key_value_heads: int, head_dim: int, max_cache_len: int,
                 dtype=np.float64):
        sizes = [check_positive_int(name, n) for name, n in (
            ("batch_size", batch_size),
            ("num_key_value_heads", num_key_value_heads),
            ("head_dim", head_dim), ("max_cache_len", max_cache_len))]
        self.dtype = check_float_dtype("dtype", dtype)
        L = check_positive_int("num_hidden_layers", num_hidden_layers)
        super().__init__([StaticLayer(*sizes, self.dtype) for _ in range(L)])
        self.max_cache_len = max_cache_len

    @property
    def key_cache(self) -> list:
        """Each layer's key storage, (B, H_kv, max_cache_len, d_head)."""
        return [layer.key_cache for layer in self.layers]

    @property
    def value_cache(self) -> list:
        """Each layer's value storage, as :attr:`key_cache`."""
        return [layer.value_cache for layer in self.layers]


class SlidingWindowCache(Cache):
    """Every layer a :class:`SlidingWindowLayer`: after each update the
    first ``sink_tokens`` and the last ``window - 1`` positions stay, so a
    query decoded one at a time attends to the sinks, the ``window - 1``
    positions before it and itself: ``kv <= q and (q - kv < window or kv <
    sink_tokens)``. The caller passes ``position_ids``.

    ``num_hidden_layers``: ``L``; ``window`` counts the query itself;
    ``sink_tokens`` (default 0) are never evicted.
    """

    def __init__(self, num_hidden_layers: int, *, window: int,
                 sink_tokens: int = 0):
        L = check_positive_int("num_hidden_layers", num_hidden_layers)
        super().__init__([SlidingWindowLayer(window, sink_tokens)
                          for _ in range(L)])
        self.window, self.sink_tokens = window, sink_tokens
