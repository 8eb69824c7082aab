"""Linear attention and Gated DeltaNet: attention as a running state.

Without the softmax, ``o_t = sum_s (q_t . k_s) v_s`` is ``o_t = S_t q_t``
with ``S_t = sum_s v_s k_s^T``: one ``d_v x d_k`` matrix per head replaces
every past key and value. Three updates, each a special case of the next:

* linear attention:  ``S_t = S_{t-1} + v_t k_t^T``
* the delta rule:    ``S_t = S_{t-1} (I - b_t k_t k_t^T) + b_t v_t k_t^T``
* Gated DeltaNet:    ``S_t = g_t S_{t-1} (I - b_t k_t k_t^T) + b_t v_t k_t^T``

(``b_t``: ``beta``, the write strength; ``g_t``: the decay.) The delta rule
writes ``v_t`` minus what the state holds for ``k_t``: a key written twice
keeps its latest value. Each runs a token at a time (decode) or in chunks
(prefill), to the same numbers, as transformers'
``torch_recurrent_gated_delta_rule`` and ``torch_chunk_gated_delta_rule``:
inputs (B, T, heads, d), the decay as its log ``g``, the state stored
transposed, ``state[k, v]``, so ``o_t = q_t @ state``.
:class:`Qwen3NextGatedDeltaNet` is Qwen3-Next's layer around the rule; its
cache entry (:class:`~pyxis_nb.kv_cache.LinearAttentionLayer`) holds the same
bytes at every length.

Shape legend:
    B        batch
    T        positions
    H        heads of the state and the output (value heads)
    H_k      query and key heads; each serves n_rep = H / H_k state heads
    d_k      size of one query or key head
    d_v      size of one value head
    C        chunk length
    d_model  hidden size
"""

from __future__ import annotations

import numpy as np

from ._checks import (as_config_dict, as_float_array, check_01_mask,
                      check_bool, check_number,
                      check_positive_int, check_same_dtype, check_shape,
                      check_state_shapes, is_index)
from .kv_cache import Cache, LinearAttentionLayer
from .masks import causal_mask_mod

__all__ = [
    "Qwen3NextGatedDeltaNet",
    "chunk_gated_delta_rule",
    "chunk_gated_delta_rule_core",
    "l2norm",
    "l2norm_core",
    "recurrent_gated_delta_rule",
    "recurrent_gated_delta_rule_core",
]


def l2norm(x, eps: float = 1e-6) -> np.ndarray:
    """``x / sqrt(sum(x^2) + eps)`` over the last axis (FLA's l2norm).

    Parameters
    ----------
    x, eps : float ndarray (..., d) of queries or keys; float under the root

    See Also
    --------
    transformers.models.qwen3_next.modeling_qwen3_next.l2norm"""
    x = as_float_array("x", x)
    eps = check_number("eps", eps, at_least=0)
    return l2norm_core(x, eps)


def l2norm_core(x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Unchecked core of :func:`l2norm`.

    Parameters
    ----------
    x, eps : as in :func:`l2norm`"""
    return x / np.sqrt((x * x).sum(axis=-1, keepdims=True) + eps)


# ------------------------------------------------------------ the two forms
def _check_delta_rule(query, key, value, g, beta, initial_state,
                      output_final_state, use_qk_l2norm_in_kernel, scale,
                      delta_rule, chunk_size=64):
    """The arrays of a delta rule call, their shapes and one dtype."""
    q = as_float_array("query", query, ndim=4)
    k = as_float_array("key", key, ndim=4)
    v = as_float_array("value", value, ndim=4)
    B, T, H_k, d_k = q.shape
    check_shape("query", q, T >= 1 and d_k >= 1 and H_k >= 1,
                "(B, T, H_k, d_k) with T, H_k, d_k >= 1")
    check_shape("key", k, k.shape == q.shape,
                f"(B, T, H_k, d_k) = {q.shape} as query")
    H = v.shape[2]
    check_shape("value", v, v.shape[:2] == (B, T) and H % H_k == 0
                and v.shape[3] >= 1 and H >= 1,
                f"(B, T, H, d_v) with (B, T) = {(B, T)} and H a multiple of "
                f"H_k = {H_k}")
    arrays = {"query": q, "key": k, "value": v}
    for name, x in (("g", g), ("beta", beta)):
        if x is not None:
            x = arrays[name] = as_float_array(name, x, ndim=3, finite=True)
            check_shape(name, x, x.shape == (B, T, H),
                        f"(B, T, H) = {(B, T, H)}")
    if g is not None and np.any(arrays["g"] > 0):
        raise ValueError(
            f"g is the log of a decay and must be <= 0, got a maximum of "
            f"{float(arrays['g'].max())!r}")
    d_v = v.shape[3]
    if initial_state is not None:
        s = arrays["initial_state"] = as_float_array(
            "initial_state", initial_state, ndim=4)
        check_shape("initial_state", s, s.shape == (B, H, d_k, d_v),
                    f"(B, H, d_k, d_v) = {(B, H, d_k, d_v)}")
    check_same_dtype(**arrays)
    check_bool("output_final_state", output_final_state)
    check_bool("use_qk_l2norm_in_kernel", use_qk_l2norm_in_kernel)
    check_bool("delta_rule", delta_rule)
    if scale is not None:
        check_number("scale", scale, above=0)
    check_positive_int("chunk_size", chunk_size)
    return arrays


def _heads_first(arrays: dict, use_qk_l2norm_in_kernel: bool, scale):
    """transformers' conventions: heads first, q and k repeated for each
    value head they serve, L2-normalised on request, queries scaled."""
    q, k, v = arrays["query"], arrays["key"], arrays["value"]
    B, T, H, d_v = v.shape
    n_rep = H // q.shape[2]
    # (B, T, H_k, d_k) -> (B, T, H, d_k): head h reads key head h // n_rep
    q, k = np.repeat(q, n_rep, axis=2), np.repeat(k, n_rep, axis=2)
    # (B, T, heads, d) -> (B, heads, T, d)
    q, k, v = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
    if use_qk_l2norm_in_kernel:
        q, k = l2norm_core(q), l2norm_core(k)
    q = q * (q.shape[-1] ** -0.5 if scale is None else scale)
    g, beta = arrays.get("g"), arrays.get("beta")
    g = np.zeros((B, H, T), v.dtype) if g is None else g.transpose(0, 2, 1)
    beta = (np.ones((B, H, T), v.dtype) if beta is None
            else beta.transpose(0, 2, 1))  # (B, T, H) -> (B, H, T)
    state = arrays.get("initial_state")
    if state is None:
        state = np.zeros((B, H, k.shape[-1], d_v), v.dtype)
    return q, k, v, g, beta, state


def recurrent_gated_delta_rule_core(q, k, v, g, beta, state,
                                    delta_rule: bool = True):
    """Unchecked core: the state updated and read one token at a time.

    Returns ``(out, state)``: (B, H, T, d_v), the state after the last token.

    Parameters
    ----------
    q, k : (B, H, T, d_k), queries (already scaled) and keys, per state head
    v : (B, H, T, d_v)
    g, beta : (B, H, T), each token's log-decay and write strength
    state : (B, H, d_k, d_v), the state before the first token
    delta_rule : bool, False: (gated) linear attention, ``v_t`` added on top
    """
    out = np.empty_like(v)
    for t in range(v.shape[2]):
        q_t, k_t = q[:, :, t, None], k[:, :, t, None]  # (B, H, 1, d_k)
        v_t = v[:, :, t, None]  # (B, H, 1, d_v)
        state = state * np.exp(g[:, :, t, None, None])  # g_t S
        if delta_rule:  # what the state already holds for k_t
            # (B, H, 1, d_k) @ (B, H, d_k, d_v) -> (B, H, 1, d_v)
            v_t = v_t - k_t @ state
        # (B, H, d_k, 1) @ (B, H, 1, d_v) -> (B, H, d_k, d_v)
        state = state + k_t.swapaxes(-1, -2) @ (beta[:, :, t, None, None]
                                                * v_t)
        # (B, H, 1, d_k) @ (B, H, d_k, d_v) -> (B, H, 1, d_v)
        out[:, :, t] = (q_t @ state)[:, :, 0]
    return out, state


def chunk_gated_delta_rule_core(q, k, v, g, beta, state,
                                chunk_size: int = 64,
                                delta_rule: bool = True):
    """Unchecked core: ``C`` tokens at a time, the state between chunks.

    Token ``i`` sees the chunk's starting state through ``exp(G_i)`` (``G``
    the cumulative log-decay) and tokens ``j <= i`` through ``exp(G_i -
    G_j)``; the delta rule's values ``u`` solve, per chunk,
    ``(I + tril(beta k k^T * decay, -1)) u = beta v``.

    Parameters
    ----------
    q, k, v, g, beta, state, delta_rule : as in the recurrent core
    chunk_size : int, ``C``; T is padded (writing nothing) to a multiple
    """
    B, H, T, d_v = v.shape
    C, pad = chunk_size, -T % chunk_size
    q, k, v = (np.pad(x, ((0, 0), (0, 0), (0, pad), (0, 0)))
               for x in (q, k, v))
    g, beta = (np.pad(x, ((0, 0), (0, 0), (0, pad))) for x in (g, beta))
    # (B, H, T, d) -> (B, H, T/C, C, d): T/C chunks of C
    q, k, v = (x.reshape(B, H, -1, C, x.shape[-1]) for x in (q, k, v))
    g, beta = g.reshape(B, H, -1, C), beta.reshape(B, H, -1, C)
    G = np.cumsum(g, axis=-1)  # (B, H, T/C, C): log-decay in the chunk
    i = np.arange(C)
    causal = causal_mask_mod(0, 0, i[:, None], i)  # (C, C), j <= i
    # exp(G_i - G_j) for j <= i, 0 above: (B, H, T/C, C, C)
    decay = np.exp(np.where(causal, G[..., :, None] - G[..., None, :],
                            -np.inf))
    k_beta, v_beta = k * beta[..., None], v * beta[..., None]
    # (B, H, T/C, C, d_k) @ (B, H, T/C, d_k, C) -> (B, H, T/C, C, C)
    attn = q @ k.swapaxes(-1, -2) * decay  # within the chunk
    if delta_rule:  # (I + strictly lower part) u = beta v
        strict = causal & (i[:, None] != i)  # j < i
        A = (np.where(strict, k_beta @ k.swapaxes(-1, -2) * decay, 0)
             + np.eye(C, dtype=k.dtype))  # (B, H, T/C, C, C)
        u = np.linalg.solve(A, v_beta)  # (B, H, T/C, C, d_v)
        w = np.linalg.solve(A, k_beta * np.exp(G)[..., None])  # (..., C, d_k)
    else:
        u, w = v_beta, None
    q_in = q * np.exp(G)[..., None]  # reads the chunk's starting state
    k_out = k * np.exp(G[..., -1:] - G)[..., None]  # decayed to chunk end
    out = np.empty_like(v)  # (B, H, T/C, C, d_v)
    for n in range(q.shape[2]):
        # (B, H, C, d_k) @ (B, H, d_k, d_v) -> (B, H, C, d_v)
        u_n = u[:, :, n] if w is None else u[:, :, n] - w[:, :, n] @ state
        # (B, H, C, C) @ (B, H, C, d_v) -> (B, H, C, d_v)
        out[:, :, n] = q_in[:, :, n] @ state + attn[:, :, n] @ u_n
        # (B, H, d_k, C) @ (B, H, C, d_v) -> (B, H, d_k, d_v)
        state = (state * np.exp(G[:, :, n, -1, None, None])
                 + k_out[:, :, n].swapaxes(-1, -2) @ u_n)
    return out.reshape(B, H, -1, d_v)[:, :, :T], state  # (B, H, T, d_v)


def recurrent_gated_delta_rule(query, key, value, g=None, beta=None, *,
                               initial_state=None,
                               output_final_state: bool = False,
                               use_qk_l2norm_in_kernel: bool = False,
                               scale: float | None = None,
                               delta_rule: bool = True):
    """Gated DeltaNet (or the delta rule, or linear attention), token by
    token.

    Without ``g``: the delta rule; with ``delta_rule=False`` and neither ``g``
    nor ``beta``: linear attention. Returns (B, T, H, d_v), the last state.

    Parameters
    ----------
    query, key : ndarray of float, shape (B, T, H_k, d_k)
    value : (B, T, H, d_v); key head ``h // n_rep`` serves state head ``h``
    g : (B, T, H), each token's log-decay, <= 0; None: 0
    beta : (B, T, H), each token's write strength; None: 1
    initial_state : (B, H, d_k, d_v), a cache's state; None: zeros
    output_final_state : bool, return the last state, else None
    use_qk_l2norm_in_kernel : bool, L2-normalise queries and keys first
    scale : float, on the queries; None: ``d_k ** -0.5``
    delta_rule : bool, False: add ``b_t v_t k_t^T``, nothing taken out first

    See Also
    --------
    transformers.models.qwen3_next.modeling_qwen3_next\
.torch_recurrent_gated_delta_rule"""
    arrays = _check_delta_rule(query, key, value, g, beta, initial_state,
                               output_final_state, use_qk_l2norm_in_kernel,
                               scale, delta_rule)
    q, k, v, g, beta, state = _heads_first(arrays, use_qk_l2norm_in_kernel,
                                           scale)
    out, state = recurrent_gated_delta_rule_core(q, k, v, g, beta, state,
                                                 delta_rule)
    # (B, H, T, d_v) -> (B, T, H, d_v)
    return out.transpose(0, 2, 1, 3), state if output_final_state else None


def chunk_gated_delta_rule(query, key, value, g=None, beta=None, *,
                           chunk_size: int = 64, initial_state=None,
                           output_final_state: bool = False,
                           use_qk_l2norm_in_kernel: bool = False,
                           scale: float | None = None,
                           delta_rule: bool = True):
    """Gated DeltaNet (or the delta rule, or linear attention), in chunks.

    The same numbers as :func:`recurrent_gated_delta_rule`, ``C`` tokens
    at a time: matrix products within a chunk, the state between chunks.

    Parameters
    ----------
    query, key, value, g, beta : as in :func:`recurrent_gated_delta_rule`
    initial_state, output_final_state, scale : as in the recurrent form
    use_qk_l2norm_in_kernel, delta_rule : as in the recurrent form
    chunk_size : int, ``C``, tokens per chunk (transformers: 64)

    See Also
    --------
    transformers.models.qwen3_next.modeling_qwen3_next\
.torch_chunk_gated_delta_rule"""
    arrays = _check_delta_rule(query, key, value, g, beta, initial_state,
                               output_final_state, use_qk_l2norm_in_kernel,
                               scale, delta_rule, chunk_size)
    q, k, v, g, beta, state = _heads_first(arrays, use_qk_l2norm_in_kernel,
                                           scale)
    out, state = chunk_gated_delta_rule_core(q, k, v, g, beta, state,
                                             chunk_size, delta_rule)
    # (B, H, T, d_v) -> (B, T, H, d_v)
    return out.transpose(0, 2, 1, 3), state if output_final_state else None


# --------------------------------------------------------- Qwen3-Next layer
#: the config keys the layer reads
_CONFIG_KEYS = ("hidden_size", "linear_num_key_heads",
                "linear_num_value_heads", "linear_key_head_dim",
                "linear_value_head_dim", "linear_conv_kernel_dim",
                "rms_norm_eps", "hidden_act", "layer_types")


def _layer_sizes(config, layer_idx) -> dict:
    """The sizes of layer ``layer_idx`` from a Qwen3-Next config."""
    c = as_config_dict(config, _CONFIG_KEYS)
    sizes = {name: check_positive_int(name, c[name]) for name in (
        "hidden_size", "linear_num_key_heads", "linear_num_value_heads",
        "linear_key_head_dim", "linear_value_head_dim",
        "linear_conv_kernel_dim")}
    if sizes["linear_num_value_heads"] % sizes["linear_num_key_heads"]:
        raise ValueError(
            f"linear_num_value_heads = {sizes['linear_num_value_heads']} is "
            "not a multiple of linear_num_key_heads = "
            f"{sizes['linear_num_key_heads']}")
    if c["hidden_act"] != "silu":
        raise ValueError(f"config's hidden_act is {c['hidden_act']!r}, "
                         "expected 'silu' (the convolution's activation)")
    layer_types = c["layer_types"]
    if (not is_index(layer_idx, len(layer_types))
            or layer_types[layer_idx] != "linear_attention"):
        kinds = sorted({t for t in layer_types})
        raise ValueError(
            f"layer_idx must index a 'linear_attention' layer of "
            f"config.layer_types (0 .. {len(layer_types) - 1}, kinds "
            f"{kinds}), got {layer_idx!r}")
    sizes["rms_norm_eps"] = check_number("rms_norm_eps", c["rms_norm_eps"],
                                         at_least=0)
    return sizes


def _state_shapes(s: dict) -> dict:
    """The module's state_dict shapes (torch's layout)."""
    H_k, H = s["linear_num_key_heads"], s["linear_num_value_heads"]
    d_k, d_v = s["linear_key_head_dim"], s["linear_value_head_dim"]
    key_dim, value_dim = H_k * d_k, H * d_v
    conv_dim = 2 * key_dim + value_dim
    return {
        "in_proj_qkvz.weight": (2 * key_dim + 2 * value_dim,
                                s["hidden_size"]),
        "in_proj_ba.weight": (2 * H, s["hidden_size"]),
        "conv1d.weight": (conv_dim, 1, s["linear_conv_kernel_dim"]),
        "dt_bias": (H,),
        "A_log": (H,),
        "norm.weight": (d_v,),
        "out_proj.weight": (s["hidden_size"], value_dim),
    }


def _silu(x):
    """``x * sigmoid(x)``."""
    return x / (1 + np.exp(-x))


def _softplus(x):
    """``log(1 + exp(x))``, without overflow."""
    return np.logaddexp(0, x)


class Qwen3NextGatedDeltaNet:
    """Qwen3-Next's linear-attention layer (a Gated DeltaNet).

    Build it with :meth:`from_state_dict` or :meth:`from_config`.

    Parameters
    ----------
    weights : dict of str to ndarray, by transformers' names, unchecked here
    sizes : dict, the config's sizes (``hidden_size``, ...), checked
    layer_idx : int, the layer's index in the model (and its cache)
    chunk_size : int, ``C`` of the chunked form (transformers: 64)

    See Also
    --------
    transformers.models.qwen3_next.modeling_qwen3_next\
.Qwen3NextGatedDeltaNet
    """

    def __init__(self, weights: dict, sizes: dict, layer_idx: int = 0,
                 chunk_size: int = 64):
        self.layer_idx, self.chunk_size = layer_idx, chunk_size
        self.hidden_size = sizes["hidden_size"]
        self.num_k_heads = sizes["linear_num_key_heads"]
        self.num_v_heads = sizes["linear_num_value_heads"]
        self.head_k_dim = sizes["linear_key_head_dim"]
        self.head_v_dim = sizes["linear_value_head_dim"]
        self.conv_kernel_size = sizes["linear_conv_kernel_dim"]
        self.layer_norm_epsilon = sizes["rms_norm_eps"]
        self.key_dim = self.num_k_heads * self.head_k_dim
        self.value_dim = self.num_v_heads * self.head_v_dim
        self.conv_dim = 2 * self.key_dim + self.value_dim
        self.in_proj_qkvz = weights["in_proj_qkvz.weight"]
        self.in_proj_ba = weights["in_proj_ba.weight"]
        self.conv1d = weights["conv1d.weight"][:, 0]  # (conv_dim, K)
        self.dt_bias, self.A_log = weights["dt_bias"], weights["A_log"]
        self.norm = weights["norm.weight"]
        self.out_proj = weights["out_proj.weight"]
        self.dtype = self.out_proj.dtype

    @classmethod
    def from_state_dict(cls, state_dict, config, layer_idx: int = 0, *,
                        chunk_size: int = 64):
        """The layer from transformers' module's own ``state_dict()``.

        Parameters
        ----------
        state_dict : mapping of str to ndarray or torch.Tensor, of one dtype
        config : Qwen3NextConfig or its ``to_dict()``
        layer_idx : int, a "linear_attention" entry of ``config.layer_types``
        chunk_size : int, ``C`` of the chunked form
        """
        sizes = _layer_sizes(config, layer_idx)
        check_state_shapes(
            "state_dict", {k: tuple(np.shape(v))
                           for k, v in state_dict.items()},
            _state_shapes(sizes), against="config")
        weights = {k: np.asarray(v) for k, v in state_dict.items()}
        for name, w in weights.items():
            as_float_array(name, w)
        check_same_dtype(**weights)
        chunk_size = check_positive_int("chunk_size", chunk_size)
        return cls(weights, sizes, layer_idx, chunk_size)

    @classmethod
    def from_config(cls, config, layer_idx: int = 0, *, seed: int = 0,
                    dtype=np.float64, chunk_size: int = 64):
        """The layer with seeded random weights, as transformers inits it.

        Parameters
        ----------
        config, layer_idx, chunk_size : as in :meth:`from_state_dict`
        seed : int, the generator's seed
        dtype : numpy float dtype, the weights'
        """
        sizes = _layer_sizes(config, layer_idx)
        std = as_config_dict(config).get("initializer_range", 0.02)
        rng = np.random.default_rng(seed)
        weights = {name: rng.normal(0, std, shape)
                   for name, shape in _state_shapes(sizes).items()}
        H = sizes["linear_num_value_heads"]
        weights["dt_bias"] = np.ones(H)
        weights["A_log"] = np.log(rng.uniform(0.01, 16, H))
        weights["norm.weight"] = np.ones(sizes["linear_value_head_dim"])
        return cls.from_state_dict(
            {k: w.astype(dtype) for k, w in weights.items()}, config,
            layer_idx, chunk_size=chunk_size)

    def state_dict(self) -> dict:
        """The arrays under transformers' names (torch's layout)."""
        return {"in_proj_qkvz.weight": self.in_proj_qkvz,
                "in_proj_ba.weight": self.in_proj_ba,
                "conv1d.weight": self.conv1d[:, None],  # (conv_dim, 1, K)
                "dt_bias": self.dt_bias, "A_log": self.A_log,
                "norm.weight": self.norm, "out_proj.weight": self.out_proj}

    def _check_call(self, hidden_states, attention_mask, cache):
        """hidden_states (B, T, d_model) of the weights' dtype, a (B, T)
        mask, a cache of this layer's shapes."""
        x = as_float_array("hidden_states", hidden_states, ndim=3)
        check_shape("hidden_states", x, x.shape[1] >= 1
                    and x.shape[2] == self.hidden_size,
                    f"(B, T, d_model) with T >= 1, d_model = "
                    f"{self.hidden_size}")
        check_same_dtype(weights=self.out_proj, hidden_states=x)
        mask = None
        if attention_mask is not None:
            mask = check_01_mask("attention_mask", attention_mask)
            check_shape("attention_mask", mask, mask.shape == x.shape[:2],
                        f"(B, T) = {x.shape[:2]}")
        if cache is not None:  # this layer's entry of the model's cache
            entry = (cache.entry(self.layer_idx)
                     if isinstance(cache, Cache) else None)
            if not isinstance(entry, LinearAttentionLayer):
                raise ValueError(
                    f"cache must hold a LinearAttentionLayer at layer_idx "
                    f"{self.layer_idx} (px.kv_cache.DynamicCache(config) of "
                    f"a Qwen3-Next config), got {type(cache).__name__}")
            cache = entry
        if cache is not None and cache.conv_state is not None and (
                cache.conv_state.shape[0] != x.shape[0]
                or cache.conv_state.dtype != x.dtype):
            raise ValueError(
                f"cache holds a batch of {cache.conv_state.shape[0]} in "
                f"{cache.conv_state.dtype}, got hidden_states of shape "
                f"{x.shape} in {x.dtype}")
        return x, mask, cache

    def __call__(self, hidden_states, attention_mask=None, cache=None):
        """The layer's output; with ``cache``, continue from it and update it.

        Recurrent for one token after a filled cache, else chunked.

        Parameters
        ----------
        hidden_states : (B, T, d_model), after ``input_layernorm``
        attention_mask : (B, T) of 0/1 or bool; padding (0) inputs are zeroed
        cache : Cache, e.g. ``px.kv_cache.DynamicCache(config)``"""
        x, mask, entry = self._check_call(hidden_states, attention_mask,
                                          cache)
        return self.forward_core(x, mask, entry)

    def forward_core(self, hidden_states, attention_mask=None, cache=None):
        """Unchecked core of :meth:`__call__`.

        Parameters
        ----------
        hidden_states, attention_mask : (B, T, d_model), (B, T) bool or None
        cache : LinearAttentionLayer or None, updated in place
        """
        x = hidden_states
        if attention_mask is not None:  # padding tokens write nothing
            x = x * attention_mask[:, :, None]
        B, T, _ = x.shape
        H_k, H, d_k, d_v = (self.num_k_heads, self.num_v_heads,
                            self.head_k_dim, self.head_v_dim)
        n_rep = H // H_k
        # (B, T, d_model) @ (d_model, ...) -> (B, T, H_k, ...), per key head
        qkvz = (x @ self.in_proj_qkvz.T).reshape(B, T, H_k, -1)
        ba = (x @ self.in_proj_ba.T).reshape(B, T, H_k, 2 * n_rep)
        q, k, v, z = np.split(qkvz, np.cumsum([d_k, d_k, n_rep * d_v]), -1)
        b, a = ba[..., :n_rep].reshape(B, T, H), ba[..., n_rep:].reshape(
            B, T, H)  # (B, T, H_k, n_rep) -> (B, T, H)
        mixed = np.concatenate([q.reshape(B, T, -1), k.reshape(B, T, -1),
                                v.reshape(B, T, -1)], axis=-1)
        mixed = _silu(self._causal_conv(mixed, cache))  # (B, T, conv_dim)
        q, k, v = np.split(mixed, [self.key_dim, 2 * self.key_dim], -1)
        q, k = q.reshape(B, T, H_k, d_k), k.reshape(B, T, H_k, d_k)
        v = v.reshape(B, T, H, d_v)  # (B, T, H * d_v) -> (B, T, H, d_v)
        beta = 1 / (1 + np.exp(-b))  # (B, T, H): how hard to write
        g = -np.exp(self.A_log) * _softplus(a + self.dt_bias)  # log-decay
        arrays = {"query": q, "key": k, "value": v, "g": g, "beta": beta}
        if cache is not None:
            arrays["initial_state"] = cache.recurrent_state
        q, k, v, g, beta, state = _heads_first(arrays, True, None)
        if cache is not None and cache.recurrent_state is not None and T == 1:
            out, state = recurrent_gated_delta_rule_core(q, k, v, g, beta,
                                                         state)
        else:
            out, state = chunk_gated_delta_rule_core(q, k, v, g, beta, state,
                                                     self.chunk_size)
        if cache is not None:
            cache.recurrent_state = state
            cache.seen += T
        out = out.transpose(0, 2, 1, 3)  # (B, H, T, d_v) -> (B, T, H, d_v)
        z = z.reshape(B, T, H, d_v)  # (B, T, H_k, n_rep d_v) -> per head
        variance = (out * out).mean(-1, keepdims=True)
        out = out / np.sqrt(variance + self.layer_norm_epsilon) * self.norm
        out = (out * _silu(z)).reshape(B, T, H * d_v)  # gated RMSNorm
        return out @ self.out_proj.T  # (B, T, H d_v) @ (H d_v, d_model)

    def _causal_conv(self, mixed, cache):
        """Depthwise causal conv over T (K taps), the cache's inputs first.

        ``out[t] = sum_j w[j] x[t - K + 1 + j]``; before the first token,
        zeros (or the cached inputs).
        """
        B, T, _ = mixed.shape
        K = self.conv_kernel_size
        x = mixed.transpose(0, 2, 1)  # (B, T, conv_dim) -> (B, conv_dim, T)
        if cache is not None and cache.conv_state is not None:
            past = cache.conv_state[..., 1:]  # (B, conv_dim, K - 1)
        else:
            past = np.zeros((B, self.conv_dim, K - 1), x.dtype)
        full = np.concatenate([past, x], axis=-1)  # (B, conv_dim, K-1+T)
        if cache is not None:  # transformers keeps the last K inputs
            held = (full if cache.conv_state is None else
                    np.concatenate([cache.conv_state[..., :1], full], -1))
            cache.conv_state = held[..., -K:].copy()
        out = sum(self.conv1d[:, j, None] * full[..., j:j + T]
                  for j in range(K))  # (B, conv_dim, T)
        return out.transpose(0, 2, 1)  # (B, T, conv_dim)
