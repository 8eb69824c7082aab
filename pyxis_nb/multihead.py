"""Multi-head attention with MHA, GQA and MQA, up to Qwen3's complete attention layer.

Shape legend (as in Hugging Face's ``modeling_qwen3.py``):
    B       batch
    T       query positions (the new tokens of this call)
    S       key/value positions (T, plus what a KV cache already holds)
    C       hidden_size, the width of the residual stream
    H       num_attention_heads, query heads
    Hkv     num_key_value_heads, key/value heads; H % Hkv == 0
    n_rep   num_key_value_groups = H // Hkv, query heads per key/value head
    D       head_dim (need not equal C // H: Qwen3-1.7B has C = 2048, H = 16, D = 128)

MHA is ``Hkv == H``, GQA ``1 < Hkv < H``, MQA ``Hkv == 1``. Query head ``h``
reads key/value head ``h // n_rep`` (= ``h * Hkv // H``), so consecutive query
heads share one key/value head, as ``repeat_kv`` lays them out.

Weights use PyTorch's ``Linear`` layout, (out_features, in_features), as the
checkpoints store them, so a projection is ``x @ W.T``.

Qwen3 adds two optional pieces, both off by default: ``q_norm`` / ``k_norm``
(an RMSNorm over D of every query and key head, weights of shape (D,)) and
RoPE (``rope_theta``; half layout, rotated by ``position_ids``), applied in
Hugging Face's order: project, norm, rotate, append to the cache, attend.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ._checks import as_float_array, check_nonempty, check_positive_int
from .attention import scaled_dot_product_attention
from .masks import causal_mask
from .memory import QWEN3_1_7B
from .norms import rms_norm
from ._checks import check_even as _check_head_dim, check_theta
from .rope import apply_rope, apply_rotary_pos_emb, rotary_cos_sin

__all__ = [
    "split_heads",
    "merge_heads",
    "repeat_kv",
    "kv_head_for",
    "MultiHeadAttention",
]

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")
NORMS = ("q_norm", "k_norm")


def split_heads(x, num_heads: int) -> np.ndarray:
    """Cut the last axis into heads: (B, T, H*D) -> (B, H, T, D).

    Parameters
    ----------
    x : ndarray, shape (B, T, H*D)
    num_heads : int
        ``H``; must divide the last axis.

    Returns
    -------
    ndarray, shape (B, H, T, D)
        Head ``h`` holds features ``h*D : (h+1)*D`` of every token.

    Raises
    ------
    ValueError
        If ``x`` is not a 3-D float array or ``num_heads`` does not divide its last axis.

    See Also
    --------
    merge_heads : the inverse.
    transformers.models.qwen3.modeling_qwen3.Qwen3Attention.forward :
        ``q_proj(x).view(B, T, -1, D).transpose(1, 2)``.
    """
    x = as_float_array("x", x)
    num_heads = check_positive_int("num_heads", num_heads)
    if x.ndim != 3 or x.shape[-1] % num_heads:
        raise ValueError(
            f"x has shape {x.shape}, expected (B, T, H*D) with a last axis divisible by "
            f"num_heads = {num_heads}"
        )
    B, T, HD = x.shape
    x = x.reshape(B, T, num_heads, HD // num_heads)  # (B, T, H*D) -> (B, T, H, D)
    return x.transpose(0, 2, 1, 3)  # (B, T, H, D) -> (B, H, T, D)


def merge_heads(x) -> np.ndarray:
    """Concatenate the heads again: (B, H, T, D) -> (B, T, H*D).

    Parameters
    ----------
    x : ndarray, shape (B, H, T, D)

    Returns
    -------
    ndarray, shape (B, T, H*D)

    Raises
    ------
    ValueError
        If ``x`` is not a 4-D float array.

    See Also
    --------
    split_heads : the inverse.
    transformers.models.qwen3.modeling_qwen3.Qwen3Attention.forward :
        ``attn_output.reshape(*input_shape, -1)``.
    """
    x = as_float_array("x", x)
    if x.ndim != 4:
        raise ValueError(f"x has shape {x.shape}, expected (B, H, T, D)")
    B, H, T, D = x.shape
    x = x.transpose(0, 2, 1, 3)  # (B, H, T, D) -> (B, T, H, D)
    return x.reshape(B, T, H * D)  # (B, T, H, D) -> (B, T, H*D)


def repeat_kv(hidden_states, n_rep: int) -> np.ndarray:
    """Repeat each key/value head for ``n_rep`` consecutive query heads.

    The numpy twin of Hugging Face's ``repeat_kv``: (B, Hkv, S, D) ->
    (B, Hkv * n_rep, S, D), where output head ``h`` is input head ``h // n_rep``
    (heads 0, 0, 1, 1, ... for ``n_rep = 2``; not 0, 1, 0, 1). Equivalent to
    ``np.repeat(hidden_states, n_rep, axis=1)``. Like Hugging Face, it returns
    the input itself when ``n_rep == 1``; otherwise a new array.

    Parameters
    ----------
    hidden_states : ndarray, shape (B, Hkv, S, D)
    n_rep : int
        ``num_key_value_groups``, >= 1.

    Returns
    -------
    ndarray, shape (B, Hkv * n_rep, S, D)

    Raises
    ------
    ValueError
        If ``hidden_states`` is not a 4-D float array or ``n_rep`` is not an integer >= 1.

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.repeat_kv : the reference.
    torch.nn.functional.scaled_dot_product_attention : ``enable_gqa=True`` does the same
        inside the attention.
    """
    x = as_float_array("hidden_states", hidden_states)
    n_rep = check_positive_int("n_rep", n_rep)
    if x.ndim != 4:
        raise ValueError(f"hidden_states has shape {x.shape}, expected (B, Hkv, S, D)")
    if n_rep == 1:
        return x
    B, Hkv, S, D = x.shape
    # (B, Hkv, 1, S, D) -> (B, Hkv, n_rep, S, D): a view, nothing copied yet
    x = np.broadcast_to(x[:, :, None], (B, Hkv, n_rep, S, D))
    # (B, Hkv, n_rep, S, D) -> (B, Hkv*n_rep, S, D): this reshape copies
    return x.reshape(B, Hkv * n_rep, S, D)


def kv_head_for(q_head: int, num_attention_heads: int, num_key_value_heads: int) -> int:
    """The key/value head that query head ``q_head`` reads: ``q_head * Hkv // H``.

    Parameters
    ----------
    q_head : int
        In ``0 .. H - 1``.
    num_attention_heads, num_key_value_heads : int
        ``H`` and ``Hkv``, with ``H % Hkv == 0``.

    Returns
    -------
    int
        Equal to ``q_head // (H // Hkv)``: with 16 query and 8 key/value heads,
        query heads 0 and 1 read head 0, 2 and 3 read head 1, and so on.

    Raises
    ------
    ValueError
        If ``Hkv`` does not divide ``H`` or ``q_head`` is out of range.

    See Also
    --------
    repeat_kv : lays the key/value heads out in this order.
    """
    H, Hkv = _check_heads(num_attention_heads, num_key_value_heads)
    is_int = isinstance(q_head, (int, np.integer)) and not isinstance(q_head, bool)
    if not is_int or not 0 <= q_head < H:
        raise ValueError(f"q_head must be an integer in 0 .. {H - 1}, got {q_head!r}")
    return int(q_head) * Hkv // H


def _check_heads(num_attention_heads, num_key_value_heads) -> tuple[int, int]:
    H = check_positive_int("num_attention_heads", num_attention_heads)
    Hkv = check_positive_int("num_key_value_heads", num_key_value_heads)
    if H % Hkv:
        raise ValueError(
            f"num_attention_heads = {H} is not a multiple of num_key_value_heads = {Hkv}: "
            f"each key/value head must serve the same number of query heads"
        )
    return H, Hkv


def _weight_shapes(C: int, H: int, Hkv: int, D: int) -> dict[str, tuple[int, int]]:
    return {"q_proj": (H * D, C), "k_proj": (Hkv * D, C), "v_proj": (Hkv * D, C), "o_proj": (C, H * D)}


def _check_weight(name: str, weight, shape: tuple) -> np.ndarray:
    w = np.asarray(weight)
    if not np.issubdtype(w.dtype, np.floating):
        raise ValueError(f"{name}.weight must be a float array, got dtype {w.dtype} "
                         f"with shape {w.shape}")
    if w.shape != shape:
        raise ValueError(f"{name}.weight has shape {w.shape}, expected {shape}")
    return w


def _check_rope(rope_theta, head_dim: int) -> float:
    """rope_theta as a float; RoPE also needs an even head_dim."""
    theta = check_theta("rope_theta", rope_theta)
    _check_head_dim("head_dim", head_dim)
    return theta


class MultiHeadAttention:
    """An attention layer with ``H`` query heads and ``Hkv`` key/value heads (MHA, GQA, MQA).

    Computes, per head ``h`` with key/value head ``g = h // n_rep``,
    ``softmax(Q_h K_g^T / sqrt(D) + mask) V_g``, concatenates the ``H`` head
    outputs and mixes them with ``o_proj``. With ``q_norm``, ``k_norm`` and
    ``rope_theta`` set it is Qwen3's attention layer; without them (the
    default) the plain multi-head layer. There are no biases (Qwen3 has none).

    Parameters
    ----------
    hidden_size : int
        ``C``.
    num_attention_heads : int
        ``H``.
    num_key_value_heads : int
        ``Hkv``; must divide ``H``.
    head_dim : int
        ``D``; need not equal ``C // H``.
    q_proj : ndarray, shape (H*D, C)
    k_proj : ndarray, shape (Hkv*D, C)
    v_proj : ndarray, shape (Hkv*D, C)
    o_proj : ndarray, shape (C, H*D)
        Float arrays of one dtype, in PyTorch's ``Linear`` layout (out, in).
    q_norm, k_norm : ndarray, shape (D,), optional
        Qwen3's RMSNorm weights, applied to every query (key) head after the
        projection and before RoPE. Give both or neither; same dtype as the projections.
    rms_norm_eps : float, default 1e-6
        The norms' epsilon (Qwen3's ``rms_norm_eps``).
    rope_theta : float, optional
        Turn on RoPE (half layout, Hugging Face's ``rotate_half``) with this base;
        ``D`` must be even. None (the default) leaves positions out.

    Attributes
    ----------
    num_key_value_groups : int
        ``n_rep = H // Hkv``.
    scaling : float
        ``D ** -0.5``.

    Raises
    ------
    ValueError
        Sizes that are not integers >= 1, ``Hkv`` not dividing ``H``, a weight
        that is not a float array of the expected shape (the message names it),
        weights of different dtypes, only one of ``q_norm`` / ``k_norm``, a
        negative ``rms_norm_eps``, or a ``rope_theta`` that is not > 1 or comes
        with an odd ``head_dim``.

    Notes
    -----
    Differences in naming from ``Qwen3Attention``: Hugging Face computes
    ``cos, sin`` once per model (``Qwen3RotaryEmbedding``) and passes them in
    as ``position_embeddings``; this layer takes ``position_ids`` and computes
    them itself (:func:`rotary_cos_sin`). The cache argument is
    ``past_key_value`` here, ``past_key_values`` there, and the layer index is
    an argument of ``forward`` rather than of the constructor.

    See Also
    --------
    MultiHeadAttention.random : seeded random weights.
    MultiHeadAttention.qwen3 : a random layer with Qwen3-1.7B's shapes, norms and RoPE.
    MultiHeadAttention.from_state_dict : weights named like the checkpoint.
    transformers.models.qwen3.modeling_qwen3.Qwen3Attention : the reference layer.
    torch.nn.MultiheadAttention : torch's layer (MHA only, packed ``in_proj_weight``).
    """

    def __init__(self, hidden_size: int, num_attention_heads: int, num_key_value_heads: int,
                 head_dim: int, *, q_proj, k_proj, v_proj, o_proj, q_norm=None, k_norm=None,
                 rms_norm_eps: float = 1e-6, rope_theta: float | None = None):
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        self.num_attention_heads, self.num_key_value_heads = _check_heads(
            num_attention_heads, num_key_value_heads)
        self.head_dim = check_positive_int("head_dim", head_dim)
        self.num_key_value_groups = self.num_attention_heads // self.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        given = {"q_proj": q_proj, "k_proj": k_proj, "v_proj": v_proj, "o_proj": o_proj}
        expected = self.weight_shapes()
        for name in PROJECTIONS:
            setattr(self, name, _check_weight(name, given[name], expected[name]))
        dtypes = {name: getattr(self, name).dtype for name in PROJECTIONS}
        if len(set(dtypes.values())) > 1:
            listed = ", ".join(f"{n} {d}" for n, d in dtypes.items())
            raise ValueError(f"the four projection weights must share one dtype, got {listed}")
        self.q_norm = self.k_norm = None
        if (q_norm is None) != (k_norm is None):
            raise ValueError(f"give both q_norm and k_norm or neither, got only "
                             f"{'q_norm' if k_norm is None else 'k_norm'}")
        if q_norm is not None:
            for name, w in (("q_norm", q_norm), ("k_norm", k_norm)):
                w = _check_weight(name, w, (self.head_dim,))
                if w.dtype != self.dtype:
                    raise ValueError(f"{name}.weight has dtype {w.dtype}, expected {self.dtype} "
                                     f"(the projections' dtype)")
                setattr(self, name, w)
        if isinstance(rms_norm_eps, bool) or not np.isscalar(rms_norm_eps) or not rms_norm_eps >= 0:
            raise ValueError(f"rms_norm_eps must be a number >= 0, got {rms_norm_eps!r}")
        self.rms_norm_eps = float(rms_norm_eps)
        self.rope_theta = None if rope_theta is None else _check_rope(rope_theta, self.head_dim)

    def weight_shapes(self) -> dict[str, tuple[int, int]]:
        """The (out_features, in_features) shape each projection must have."""
        return _weight_shapes(self.hidden_size, self.num_attention_heads,
                              self.num_key_value_heads, self.head_dim)

    @classmethod
    def random(cls, hidden_size: int, num_attention_heads: int, num_key_value_heads: int,
               head_dim: int, seed: int = 0, dtype=np.float64, *, qk_norm: bool = False,
               rms_norm_eps: float = 1e-6, rope_theta: float | None = None) -> "MultiHeadAttention":
        """A layer with seeded normal weights of standard deviation ``1 / sqrt(in_features)``.

        That scale keeps projected entries at about unit variance when the inputs
        have it (as ``Head`` does). The weights are drawn in float64 and then cast,
        so float32 and float64 layers with one seed hold the same numbers. With
        ``qk_norm=True`` the norm weights are drawn after the projections (so
        the projections do not change) as ``1 + 0.1 * normal``; ``rms_norm_eps``
        and ``rope_theta`` are passed on to the constructor.
        """
        C = check_positive_int("hidden_size", hidden_size)
        H, Hkv = _check_heads(num_attention_heads, num_key_value_heads)
        D = check_positive_int("head_dim", head_dim)
        rng = np.random.default_rng(seed)
        weights = {name: (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(dtype)
                   for name, shape in _weight_shapes(C, H, Hkv, D).items()}
        if qk_norm:
            weights |= {name: (1.0 + 0.1 * rng.standard_normal(D)).astype(dtype) for name in NORMS}
        return cls(hidden_size, num_attention_heads, num_key_value_heads, head_dim, **weights,
                   rms_norm_eps=rms_norm_eps, rope_theta=rope_theta)

    @classmethod
    def qwen3(cls, config=QWEN3_1_7B, *, seed: int = 0, dtype=np.float32) -> "MultiHeadAttention":
        """A random layer with a Qwen3 configuration: its shapes, q/k norms, RoPE and epsilon.

        Parameters
        ----------
        config : ModelConfig, default QWEN3_1_7B
            Read: ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``,
            ``head_dim``, ``rope_theta``, ``rms_norm_eps``.
        seed : int, default 0
        dtype : numpy float dtype, default float32
            Qwen3-1.7B's four projections hold 12.6 million numbers (48 MiB in float32).

        Returns
        -------
        MultiHeadAttention
            ``random(..., qk_norm=True)`` with the config's ``rope_theta`` and ``rms_norm_eps``.

        See Also
        --------
        transformers.models.qwen3.modeling_qwen3.Qwen3Attention : ``Qwen3Attention(config, layer_idx)``.
        """
        return cls.random(config.hidden_size, config.num_attention_heads,
                          config.num_key_value_heads, config.head_dim, seed=seed, dtype=dtype,
                          qk_norm=True, rms_norm_eps=config.rms_norm_eps,
                          rope_theta=config.rope_theta)

    @classmethod
    def from_state_dict(cls, state_dict: Mapping[str, object], *, hidden_size: int,
                        num_attention_heads: int, num_key_value_heads: int, head_dim: int,
                        prefix: str = "", rms_norm_eps: float = 1e-6,
                        rope_theta: float | None = None) -> "MultiHeadAttention":
        """A layer from arrays named like the checkpoint: ``{prefix}q_proj.weight`` and so on.

        Parameters
        ----------
        state_dict : mapping of str to ndarray
            Must hold ``{prefix}q_proj.weight``, ``{prefix}k_proj.weight``,
            ``{prefix}v_proj.weight`` and ``{prefix}o_proj.weight``. If it holds
            ``{prefix}q_norm.weight`` and ``{prefix}k_norm.weight`` (a Qwen3
            checkpoint does), they are loaded too. Other keys (other layers) are ignored.
        hidden_size, num_attention_heads, num_key_value_heads, head_dim : int
            The configuration the weights must fit (``QWEN3_1_7B.attention_config()``
            gives the real model's).
        prefix : str, default ""
            For example ``"model.layers.0.self_attn."``.
        rms_norm_eps : float, default 1e-6
        rope_theta : float, optional
            Not stored in the weights: pass ``QWEN3_1_7B.rope_theta`` for Qwen3.

        Raises
        ------
        ValueError
            A missing key (named), only one of the two norm weights, or a weight
            of the wrong shape, e.g.
            ``"k_proj.weight has shape (2048, 2048), expected (1024, 2048)"``.

        See Also
        --------
        torch.nn.Module.load_state_dict : the torch counterpart.
        """
        missing = [f"{prefix}{n}.weight" for n in PROJECTIONS if f"{prefix}{n}.weight" not in state_dict]
        if missing:
            raise ValueError(f"state_dict is missing {missing}; it has {sorted(state_dict)[:8]}"
                             f"{' ...' if len(state_dict) > 8 else ''}")
        weights = {n: state_dict[f"{prefix}{n}.weight"] for n in PROJECTIONS}
        norms = {n: state_dict[f"{prefix}{n}.weight"] for n in NORMS if f"{prefix}{n}.weight" in state_dict}
        if len(norms) == 1:
            (have,) = norms
            other = NORMS[1 - NORMS.index(have)]
            raise ValueError(f"state_dict has {prefix}{have}.weight but not {prefix}{other}.weight: "
                             f"expected both (Qwen3) or neither")
        return cls(hidden_size, num_attention_heads, num_key_value_heads, head_dim, **weights,
                   **norms, rms_norm_eps=rms_norm_eps, rope_theta=rope_theta)

    def state_dict(self, prefix: str = "") -> dict[str, np.ndarray]:
        """The weights under their checkpoint names (``{prefix}q_proj.weight``, ...; norms if set)."""
        names = PROJECTIONS + (NORMS if self.q_norm is not None else ())
        return {f"{prefix}{n}.weight": getattr(self, n) for n in names}

    @property
    def dtype(self):
        return self.q_proj.dtype

    def _check_hidden(self, hidden_states) -> np.ndarray:
        x = as_float_array("hidden_states", hidden_states)
        if x.ndim != 3 or x.shape[-1] != self.hidden_size:
            raise ValueError(f"hidden_states has shape {x.shape}, expected (B, T, hidden_size) "
                             f"with hidden_size = {self.hidden_size}")
        check_nonempty("hidden_states", x, {0: "batch", 1: "sequence"})
        return x

    def project(self, hidden_states):
        """Project and split into heads (and apply ``q_norm`` / ``k_norm`` if set).

        Returns
        -------
        query : ndarray, shape (B, H, T, D)
        key, value : ndarray, shape (B, Hkv, T, D)
            Not yet rotated: RoPE needs the positions, which ``forward`` has.
        """
        x = self._check_hidden(hidden_states)
        wq, wk, wv = (getattr(self, n).astype(x.dtype, copy=False) for n in PROJECTIONS[:3])
        q = split_heads(x @ wq.T, self.num_attention_heads)  # (B, T, C) x (C, H*D) -> (B, T, H*D) -> (B, H, T, D)
        k = split_heads(x @ wk.T, self.num_key_value_heads)  # (B, T, C) x (C, Hkv*D) -> (B, T, Hkv*D) -> (B, Hkv, T, D)
        v = split_heads(x @ wv.T, self.num_key_value_heads)  # (B, T, C) x (C, Hkv*D) -> (B, T, Hkv*D) -> (B, Hkv, T, D)
        if self.q_norm is not None:  # Qwen3: RMSNorm over D, each head on its own, before RoPE
            q = rms_norm(q, self.q_norm, self.rms_norm_eps)  # (B, H, T, D)
            k = rms_norm(k, self.k_norm, self.rms_norm_eps)  # (B, Hkv, T, D); values are not normed
        return q, k, v

    def _position_ids(self, position_ids, B: int, T: int, past: int | None) -> np.ndarray:
        """Validate positions (or make the default ``past + arange(T)``); returns (B, T).

        ``past`` is the cache length, or None without a cache (any start is allowed then).
        """
        if position_ids is None:
            return np.broadcast_to((past or 0) + np.arange(T), (B, T))
        pos = np.asarray(position_ids)
        if not np.issubdtype(pos.dtype, np.integer) or pos.shape not in ((T,), (1, T), (B, T)):
            raise ValueError(f"position_ids has shape {pos.shape} and dtype {pos.dtype}, expected "
                             f"integers of shape (T,) or (B, T) = ({B}, {T})")
        pos = np.broadcast_to(pos, (B, T))
        if np.any(pos < 0) or np.any(np.diff(pos, axis=-1) != 1):
            raise ValueError(f"position_ids must be consecutive non-negative integers along T, "
                             f"got {pos.tolist()}")
        if past is not None and np.any(pos[:, 0] != past):
            raise ValueError(f"position_ids start at {pos[:, 0].tolist()}, but the cache already "
                             f"holds {past} positions: expected them to start at {past}")
        return pos

    def forward(self, hidden_states, is_causal: bool = True, return_weights: bool = False, *,
                past_key_value=None, layer_idx: int = 0, position_ids=None):
        """Attend over the tokens (and over what the cache holds), then mix heads with ``o_proj``.

        The order is Hugging Face's: project and split heads; ``q_norm`` /
        ``k_norm`` (if set); RoPE on queries and keys (if ``rope_theta`` is
        set); append keys and values to the cache; attend; merge heads; ``o_proj``.

        Parameters
        ----------
        hidden_states : ndarray, shape (B, T, C)
        is_causal : bool, default True
            Each query sees only keys at its own position or before. With a cache,
            the ``T`` queries are the last ``T`` of ``S`` positions, so the triangle
            is aligned bottom-right (``causal_mask(T, S)``): prefill, chunked
            prefill and one-token decode all see exactly their past.
        return_weights : bool, default False
            Also return the per-head weights.
        past_key_value : KVCache, optional
            The new keys and values are appended with
            ``past_key_value.update(layer_idx, key, value)``; attention then runs
            over all ``S`` keys it returns.
        layer_idx : int, default 0
            Which layer of the cache this layer writes.
        position_ids : array of int, shape (T,) or (B, T), optional
            Absolute positions of the new tokens; default ``cache length + arange(T)``.
            Must be consecutive; with a non-empty cache they must start at its length.
            RoPE (when ``rope_theta`` is set) rotates queries and keys by them;
            otherwise they are only checked.

        Returns
        -------
        out : ndarray, shape (B, T, C)
        weights : ndarray, shape (B, H, T, S), only with ``return_weights=True``

        Raises
        ------
        ValueError
            ``hidden_states`` not (B, T, C), bad ``position_ids``, and whatever
            ``KVCache.update`` refuses (overflow, shape, dtype, layer index).

        See Also
        --------
        transformers.models.qwen3.modeling_qwen3.Qwen3Attention.forward : the reference.
        """
        q, k, v = self.project(hidden_states)  # (B, H, T, D), (B, Hkv, T, D) twice; normed if set
        B, _, T, _ = q.shape
        past = None if past_key_value is None else past_key_value.get_seq_length(layer_idx)
        pos = self._position_ids(position_ids, B, T, past)  # (B, T)
        if self.rope_theta is not None:  # rotate before caching: the cache holds rotated keys
            cos, sin = rotary_cos_sin(pos, self.head_dim, theta=self.rope_theta,
                                      dtype=q.dtype)  # (B, T, D) each
            q, k = apply_rotary_pos_emb(q, k, cos, sin)  # (B, H, T, D), (B, Hkv, T, D)
        if past_key_value is not None:
            k, v = past_key_value.update(layer_idx, k, v)  # (B, Hkv, S, D), S = past + T
        S = k.shape[-2]
        out, weights = scaled_dot_product_attention(  # (B, H, T, D), (B, H, T, S)
            q, k, v, attn_mask=causal_mask(T, S) if is_causal else None,  # (T, S) bottom-right
            enable_gqa=True, return_weights=True,
        )
        wo = self.o_proj.astype(out.dtype, copy=False)
        out = merge_heads(out) @ wo.T  # (B, T, H*D) x (H*D, C) -> (B, T, C)
        return (out, weights) if return_weights else out

    __call__ = forward

    def forward_per_head(self, hidden_states, is_causal: bool = True):
        """The same layer as a loop over query heads (slow; for teaching and tests).

        Query head ``h`` uses rows ``h*D:(h+1)*D`` of ``q_proj`` and the rows of
        key/value head ``g = kv_head_for(h, H, Hkv)`` of ``k_proj`` and ``v_proj``;
        the head outputs are concatenated and multiplied by ``o_proj``. Norms and
        RoPE, if set, are applied per head (RoPE with ``apply_rope`` at positions
        ``0 .. T-1``); there is no cache.

        Returns
        -------
        ndarray, shape (B, T, C)
        """
        x = self._check_hidden(hidden_states)
        D, H, Hkv = self.head_dim, self.num_attention_heads, self.num_key_value_heads
        heads = []
        for h in range(H):
            g = kv_head_for(h, H, Hkv)
            wq = self.q_proj[h * D:(h + 1) * D].astype(x.dtype)  # (D, C): this head's rows
            wk = self.k_proj[g * D:(g + 1) * D].astype(x.dtype)  # (D, C): rows of kv head g
            wv = self.v_proj[g * D:(g + 1) * D].astype(x.dtype)  # (D, C)
            q, k, v = x @ wq.T, x @ wk.T, x @ wv.T  # (B, T, C) x (C, D) -> (B, T, D)
            if self.q_norm is not None:
                q = rms_norm(q, self.q_norm, self.rms_norm_eps)  # (B, T, D)
                k = rms_norm(k, self.k_norm, self.rms_norm_eps)
            if self.rope_theta is not None:
                q = apply_rope(q, np.arange(q.shape[1]), theta=self.rope_theta)  # (B, T, D), half layout
                k = apply_rope(k, np.arange(k.shape[1]), theta=self.rope_theta)
            out = scaled_dot_product_attention(q, k, v, is_causal=is_causal)  # (B, T, D)
            heads.append(out)
        concat = np.concatenate(heads, axis=-1)  # H x (B, T, D) -> (B, T, H*D)
        return concat @ self.o_proj.astype(x.dtype).T  # (B, T, H*D) x (H*D, C) -> (B, T, C)

    def __repr__(self) -> str:
        kind = ("MHA" if self.num_key_value_heads == self.num_attention_heads
                else "MQA" if self.num_key_value_heads == 1 else "GQA")
        return (f"MultiHeadAttention({kind}: hidden_size={self.hidden_size}, "
                f"num_attention_heads={self.num_attention_heads}, "
                f"num_key_value_heads={self.num_key_value_heads}, head_dim={self.head_dim}, "
                f"dtype={self.dtype})")
