"""Multi-head attention (MHA, GQA, MQA), up to Qwen3's attention layer.

Shape legend (Hugging Face's config names in brackets):
    B        batch
    T        query positions: the new tokens of this call
    S        key/value positions: T plus what a KV cache already holds
    d_model  width of the residual stream (hidden_size)
    H        query heads (num_attention_heads)
    H_kv     key/value heads (num_key_value_heads); H % H_kv == 0
    n_rep    query heads per key/value head, H // H_kv
             (num_key_value_groups)
    d_head   size of one head (head_dim); need not be d_model // H

MHA is ``H_kv == H``, GQA ``1 < H_kv < H``, MQA ``H_kv == 1``. Query head
``h`` reads key/value head ``h // n_rep``, as ``repeat_kv`` lays them out.
Weights use torch's ``Linear`` layout (out_features, in_features), as
checkpoints store them: a projection is ``x @ W.T + b``.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ._checks import (as_float_array, check_01_mask, check_bool,
                      check_choice, check_even,
                      check_heads, check_int, check_keys, check_needs,
                      check_nonempty, check_number, check_positive_int,
                      check_same_dtype, check_shape, check_theta)
from .attention import ATTENTION_FUNCTIONS, sdpa_core
from .kv_cache import Cache
from .masks import causal_mask
from .norms import rms_norm_core
from .rope import (apply_rotary, rope_frequencies, rotary_cos_sin,
                   rotary_cos_sin_core)

__all__ = [
    "split_heads",
    "split_heads_core",
    "merge_heads",
    "merge_heads_core",
    "repeat_kv",
    "kv_head_for",
    "weight_shapes",
    "position_ids_from_mask",
    "linear",
    "MultiHeadAttention",
    "shifted_mask_mod",
    "attention_per_head",
]

#: constructor argument -> checkpoint key (torch's state-dict names)
STATE_KEYS = {
    "q_proj": "q_proj.weight", "k_proj": "k_proj.weight",
    "v_proj": "v_proj.weight", "o_proj": "o_proj.weight",
    "q_proj_bias": "q_proj.bias", "k_proj_bias": "k_proj.bias",
    "v_proj_bias": "v_proj.bias",
    "q_norm": "q_norm.weight", "k_norm": "k_norm.weight",
}
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")
OPTIONAL_GROUPS = (("q_proj_bias", "k_proj_bias", "v_proj_bias"),
                   ("q_norm", "k_norm"))
_NOT_GIVEN = object()  # from_state_dict: rope_theta not passed at all


def _check_split_heads(x, head_dim) -> tuple[np.ndarray, int]:
    """x (B, T, H*d_head) whose last axis splits into heads of head_dim."""
    x = as_float_array("x", x)
    d_head = check_positive_int("head_dim", head_dim)
    if x.ndim != 3 or x.shape[-1] % d_head:
        raise ValueError(
            f"x has shape {x.shape}, expected (B, T, H*d_head) with a last "
            f"axis divisible by head_dim = {d_head}")
    return x, d_head


def split_heads(x, *, head_dim: int) -> np.ndarray:
    """Cut the last axis into heads: (B, T, H*d_head) -> (B, H, T, d_head).

    Checks ``x`` (its last axis divisible by ``head_dim``), then
    :func:`split_heads_core`: a view where numpy can make one. Inverse:
    :func:`merge_heads`."""
    x, d_head = _check_split_heads(x, head_dim)
    return split_heads_core(x, d_head)


def split_heads_core(x, head_dim):
    """Unchecked :func:`split_heads`. HF: ``view(B, T, -1, head_dim)``.

    ``x`` (B, T, H*d_head), ``head_dim`` dividing its last axis."""
    B, T, _ = x.shape
    # (B, T, H*d_head) -> (B, T, H, d_head)
    x = x.reshape(B, T, -1, head_dim)
    return x.transpose(0, 2, 1, 3)  # -> (B, H, T, d_head)


def merge_heads(x) -> np.ndarray:
    """Concatenate the heads: (B, H, T, d_head) -> (B, T, H*d_head).

    Checks ``x``; head ``h`` fills columns ``h*d_head .. (h+1)*d_head - 1``."""
    return merge_heads_core(as_float_array("x", x, ndim=4))


def merge_heads_core(x):
    """Unchecked :func:`merge_heads`. HF: ``reshape(*input_shape, -1)``.

    ``x`` (B, H, T, d_head) -> (B, T, H*d_head)."""
    B, H, T, d_head = x.shape
    x = x.transpose(0, 2, 1, 3)  # (B, H, T, d_head) -> (B, T, H, d_head)
    return x.reshape(B, T, H * d_head)  # -> (B, T, H*d_head)


def repeat_kv(hidden_states, n_rep: int) -> np.ndarray:
    """Repeat each key/value head for ``n_rep`` consecutive query heads.

    ``hidden_states`` (B, H_kv, S, d_head) -> (B, H_kv*n_rep, S, d_head): head
    ``h`` is input head ``h // n_rep``. A copy; the input itself when ``n_rep
    == 1``, as Hugging Face does.

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.repeat_kv : the reference.
    torch.nn.functional.scaled_dot_product_attention : ``enable_gqa=True``.
    """
    x = as_float_array("hidden_states", hidden_states, ndim=4)
    n_rep = check_positive_int("n_rep", n_rep)
    if n_rep == 1:
        return x
    B, H_kv, S, d_head = x.shape
    # (B, H_kv, 1, S, d_head) -> (B, H_kv, n_rep, S, d_head): a view
    x = np.broadcast_to(x[:, :, None], (B, H_kv, n_rep, S, d_head))
    return x.reshape(B, H_kv * n_rep, S, d_head)  # this reshape copies


def kv_head_for(q_head: int, num_attention_heads: int,
                num_key_value_heads: int) -> int:
    """The key/value head query head ``q_head`` reads: ``q_head // n_rep``.

    ``q_head`` in ``0 .. H-1``; ``num_attention_heads`` ``H``,
    ``num_key_value_heads`` ``H_kv``. With 16 and 8, query heads 0 and 1 read
    head 0, 2 and 3 head 1, ..."""
    H, H_kv = check_heads(num_attention_heads, num_key_value_heads)
    q_head = check_int("q_head", q_head, low=0, high=H - 1)
    return q_head * H_kv // H


def weight_shapes(hidden_size: int, num_attention_heads: int,
                  num_key_value_heads: int, head_dim: int) -> dict:
    """The shape of every array a layer can hold, by constructor argument.

    ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``,
    ``head_dim``: ``d_model``, ``H``, ``H_kv``, ``d_head``. Torch's ``Linear``
    layout (out, in), as :class:`MultiHeadAttention` takes them."""
    d_model, H, H_kv, d_head = (hidden_size, num_attention_heads,
                                num_key_value_heads, head_dim)
    return {"q_proj": (H * d_head, d_model),
            "k_proj": (H_kv * d_head, d_model),
            "v_proj": (H_kv * d_head, d_model),
            "o_proj": (d_model, H * d_head),
            "q_proj_bias": (H * d_head,), "k_proj_bias": (H_kv * d_head,),
            "v_proj_bias": (H_kv * d_head,),
            "q_norm": (d_head,), "k_norm": (d_head,)}


def position_ids_from_mask(attention_mask) -> np.ndarray:
    """Positions of a left-padded batch, as HF's ``generate`` sets them.

    ``attention_mask`` (B, S), bool or 0/1 (1: a real token) -> int64 (B, S):
    each row's real tokens count 0, 1, 2, ...; padding gets 0.

    See Also
    --------
    transformers.GenerationMixin._prepare_position_ids_for_generation
    """
    real = check_01_mask("attention_mask", attention_mask)
    check_shape("attention_mask", real, real.ndim == 2, "(B, S)")
    return np.where(real, np.cumsum(real, axis=-1) - 1, 0)


def _layer_mask(attention_mask, B, T, past, is_causal, dense):
    """Check the mask; return the kernel's mask, whether the kernel adds
    the causal triangle itself, and which keys are real (B, S).

    ``dense`` (the eager kernel): the whole boolean mask, None where it would
    hide nothing. Else (tiled) never a (T, S) array: the padding as (B, 1, 1,
    S), and ``is_causal``."""
    S = past + T
    causal = is_causal and T > 1
    if attention_mask is None:
        real = np.ones((B, S), bool)
        return (causal_mask(T, S) if causal and dense else None,
                causal and not dense, real)
    m = check_01_mask("attention_mask", attention_mask)
    if m.ndim == 4:  # Hugging Face: a 4-D mask is the complete mask, as given
        check_shape("attention_mask", m,
                    m.shape in ((B, 1, T, S), (1, 1, T, S)),
                    f"(B, 1, T, S) = ({B}, 1, {T}, {S})")
        return m, False, np.ones((B, S), bool)
    check_shape("attention_mask", m, m.shape == (B, S),
                f"(B, S) = ({B}, {S}): {past} cached positions plus {T} new")
    keys = None if m.all() else m[:, None, None, :]  # (B, 1, 1, S)
    if not dense:
        return keys, causal, m
    if causal:
        tri = causal_mask(T, S)  # (T, S)
        return (tri if keys is None else keys & tri), False, m
    return keys, False, m


def _check_position_ids(name: str, position_ids, B: int, T: int,
                        max_position_embeddings: int | None = None
                        ) -> np.ndarray:
    """Integer positions >= 0 of shape (T,), (1, T) or (B, T), as (B, T).

    Their values are the caller's, as in HF (packed sequences, tree
    decoding)."""
    pos = np.asarray(position_ids)
    high = np.inf if max_position_embeddings is None else \
        max_position_embeddings
    if (not np.issubdtype(pos.dtype, np.integer)
            or pos.shape not in ((T,), (1, T), (B, T))
            or np.any(pos < 0) or np.any(pos >= high)):
        limit = "" if max_position_embeddings is None else \
            f" and < max_position_embeddings = {max_position_embeddings}"
        seen = (f", values {pos.min()} .. {pos.max()}"
                if pos.size and np.issubdtype(pos.dtype, np.number) else "")
        raise ValueError(
            f"{name} has shape {pos.shape} and dtype {pos.dtype}{seen}, "
            f"expected integers >= 0{limit} of shape (T,) or (B, T) = "
            f"({B}, {T})")
    return np.broadcast_to(pos, (B, T))


def attention_inputs(attention_mask, position_ids, B, T, past,
                     is_causal=True, max_position_embeddings=None, *,
                     dense=True, seen=None):
    """Check a layer's mask and positions: the kernel's mask, its
    ``is_causal``, and the (B, T) position ids.

    A model runs it once for all its layers (HF: ``create_causal_mask``).
    ``past``: positions the cache holds; ``seen``: positions it has seen
    (default ``past``); ``dense``: see :func:`_layer_mask`."""
    mask, causal, real = _layer_mask(attention_mask, B, T, past, is_causal,
                                     dense)
    if position_ids is None:  # (B, S) -> (B, T): HF's derivation
        want = np.cumsum(real, axis=-1)[:, past:] - 1 + (
            0 if seen is None else seen - past)
        return mask, causal, np.where(real[:, past:], want, 0)
    return mask, causal, _check_position_ids(
        "position_ids", position_ids, B, T, max_position_embeddings)


def linear(x, weight, bias=None):
    """torch's ``F.linear``: ``x`` (B, T, in) @ ``weight`` (out, in).T ->
    (B, T, out), + ``bias``."""
    y = x @ weight.T
    return y if bias is None else y + bias


def _check_hidden(layer, hidden_states) -> np.ndarray:
    x = as_float_array("hidden_states", hidden_states)
    check_shape("hidden_states", x,
                x.ndim == 3 and x.shape[-1] == layer.hidden_size,
                f"(B, T, d_model) with d_model = {layer.hidden_size}")
    check_nonempty("hidden_states", x, {0: "batch", 1: "sequence"})
    check_same_dtype(**{"o_proj.weight": layer.o_proj, "hidden_states": x})
    return x


def _check_forward(layer, hidden_states, cache, is_causal,
                   output_attentions) -> np.ndarray:
    """forward's door: the flags, the cache's kind, ``hidden_states``."""
    check_bool("is_causal", is_causal)
    check_output_attentions(output_attentions, layer.attn_implementation)
    if cache is not None and not isinstance(cache, Cache):
        raise TypeError(f"cache must be a px.kv_cache.Cache (KVCache, "
                        f"DynamicCache, ...), got {type(cache).__name__}")
    return _check_hidden(layer, hidden_states)


def _check_all_or_none(**given) -> None:
    """Arrays that come together (q_norm and k_norm): all of them or none."""
    have = [n for n, v in given.items() if v is not None]
    if 0 < len(have) < len(given):
        raise ValueError(
            f"give all of {tuple(given)} or none, got only {have}")


def _check_arrays(given: dict, shapes: dict) -> dict:
    """The arrays that are not None, checked: shapes, groups, one dtype."""
    for group in OPTIONAL_GROUPS:  # a checkpoint has all of them or none
        _check_all_or_none(**{n: given[n] for n in group})
    arrays = {}
    for name, w in given.items():
        if w is not None:
            arrays[name] = a = as_float_array(STATE_KEYS[name], w)
            check_shape(STATE_KEYS[name], a, a.shape == shapes[name],
                        str(shapes[name]))
    check_same_dtype(**arrays)
    return arrays


def _checkpoint_arrays(state_dict: Mapping, prefix: str) -> dict:
    """The arrays under ``prefix``; raise if a key is unknown or missing."""
    ours = {k[len(prefix):]: v for k, v in state_dict.items()
            if k.startswith(prefix)}
    check_keys(f"state_dict under prefix {prefix!r}",
               [prefix + k for k in ours],
               [prefix + k for k in STATE_KEYS.values()],
               [prefix + STATE_KEYS[n] for n in PROJECTIONS])
    return {n: ours[k] for n, k in STATE_KEYS.items() if k in ours}


def _checkpoint_theta(arrays: dict, rope_theta):
    """rope_theta as given; if not given, None, unless the arrays are
    Qwen3's."""
    if rope_theta is not _NOT_GIVEN:
        return rope_theta
    check_needs("q_norm" not in arrays and "k_norm" not in arrays,
                "rope_theta",
                "a value for a Qwen3 checkpoint (it has q_norm/k_norm)",
                "pass rope_theta=config.rope_theta, or rope_theta=None to "
                "leave RoPE out on purpose")
    return None


class MultiHeadAttention:
    """Attention with ``H`` query and ``H_kv`` key/value heads (MHA/GQA/MQA).

    With ``q_norm``, ``k_norm`` and ``rope_theta`` it is Qwen3's attention
    layer; with the three biases, Qwen2's. The :mod:`pyxis_nb.variants`
    subclass it: they override :meth:`project`, :meth:`rotate`, :meth:`values`
    or :meth:`combine`, or hand the kernel a ``score_mod``, ``mask_mod`` or
    ``sinks``.

    Parameters
    ----------
    hidden_size, num_attention_heads, num_key_value_heads, head_dim : int
        ``d_model``, ``H``, ``H_kv`` (dividing ``H``), ``d_head``.
    q_proj, k_proj, v_proj, o_proj : ndarray, torch's layout (out, in)
        (H*d_head, d_model), (H_kv*d_head, d_model) twice, (d_model,
        H*d_head); all arrays, and the inputs, of one float dtype
    q_proj_bias, k_proj_bias, v_proj_bias : ndarray, optional, all or none
        (H*d_head,), (H_kv*d_head,) twice
    q_norm, k_norm : (d_head,), optional, both or none: RMSNorm before RoPE
    rms_norm_eps : float, default 1e-6
    rope_theta : float, optional; RoPE's base (``d_head`` even), None: no RoPE
    layer_idx : int, default 0; the layer's entry in a model's cache
    attn_implementation : "flex_attention" (tiled) or "eager" (has weights)

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3Attention
    """

    #: what a variant hands the kernel besides q, k, v (None: nothing)
    score_mod = mask_mod = sinks = None
    o_proj_bias = None
    #: RoPE: its inverse frequencies (None: no RoPE) and cos/sin scale
    inv_freq, attention_scaling = None, 1.0

    def __init__(self, hidden_size, num_attention_heads, num_key_value_heads,
                 head_dim, *, q_proj, k_proj, v_proj, o_proj,
                 q_proj_bias=None, k_proj_bias=None, v_proj_bias=None,
                 q_norm=None, k_norm=None, rms_norm_eps=1e-6, rope_theta=None,
                 layer_idx=0, attn_implementation="flex_attention"):
        self._sizes(hidden_size, num_attention_heads, num_key_value_heads,
                    head_dim, layer_idx, attn_implementation)
        given = dict(q_proj=q_proj, k_proj=k_proj, v_proj=v_proj,
                     o_proj=o_proj, q_proj_bias=q_proj_bias,
                     k_proj_bias=k_proj_bias, v_proj_bias=v_proj_bias,
                     q_norm=q_norm, k_norm=k_norm)
        shapes = weight_shapes(self.hidden_size, self.num_attention_heads,
                               self.num_key_value_heads, self.head_dim)
        arrays = _check_arrays(given, shapes)
        for name in STATE_KEYS:  # absent optional arrays are None
            setattr(self, name, arrays.get(name))
        self.rms_norm_eps = check_number("rms_norm_eps", rms_norm_eps,
                                         at_least=0)
        self.rope_theta = (None if rope_theta is None
                           else check_theta("rope_theta", rope_theta))
        if rope_theta is not None:  # RoPE rotates pairs
            self.inv_freq = rope_frequencies(check_even(
                "head_dim", self.head_dim), self.rope_theta)

    def _sizes(self, hidden_size, num_attention_heads, num_key_value_heads,
               head_dim, layer_idx, attn_implementation) -> None:
        """The sizes, the cache entry and the kernel, checked (all
        classes)."""
        self.attn_implementation = check_attn_implementation(
            attn_implementation)
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        H, H_kv = check_heads(num_attention_heads, num_key_value_heads)
        self.num_attention_heads, self.num_key_value_heads = H, H_kv
        self.head_dim = check_positive_int("head_dim", head_dim)
        self.num_key_value_groups = H // H_kv  # n_rep
        self.scaling = self.head_dim ** -0.5
        self.layer_idx = check_int("layer_idx", layer_idx, low=0)

    @classmethod
    def from_state_dict(cls, state_dict: Mapping, *, hidden_size,
                        num_attention_heads, num_key_value_heads, head_dim,
                        prefix="", rms_norm_eps=1e-6, rope_theta=_NOT_GIVEN,
                        layer_idx=0, attn_implementation="flex_attention"):
        """A layer from checkpoint arrays: ``{prefix}q_proj.weight``, ...

        The keys of ``state_dict`` under ``prefix`` must be known and complete
        (torch's ``strict=True``). ``rope_theta`` is not in the weights: pass
        it for a checkpoint with ``q_norm`` (Qwen3), or None for no RoPE.
        ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``,
        ``head_dim``, ``rms_norm_eps``, ``layer_idx``, ``attn_implementation``:
        as the class takes them."""
        arrays = _checkpoint_arrays(state_dict, prefix)
        rope_theta = _checkpoint_theta(arrays, rope_theta)
        return cls(hidden_size, num_attention_heads, num_key_value_heads,
                   head_dim, **arrays, rms_norm_eps=rms_norm_eps,
                   rope_theta=rope_theta, layer_idx=layer_idx,
                   attn_implementation=attn_implementation)

    def state_dict(self, prefix: str = "") -> dict:
        """The arrays under their checkpoint keys (torch's ``state_dict``),
        each key after ``prefix``; absent optional ones left out."""
        return {prefix + key: getattr(self, n) for n, key in STATE_KEYS.items()
                if getattr(self, n) is not None}

    @property
    def dtype(self):
        return self.o_proj.dtype

    # ------------------------------------------------------------ pieces
    def project(self, x):
        """(q, k, v): (B, H, T, d_head), (B, H_kv, T, d_head) x2, pre-RoPE.

        Unchecked ``x`` (B, T, d_model); with ``q_norm`` and ``k_norm`` (Qwen3)
        each query and key head is RMS-normalised."""
        d = self.head_dim
        # (B, T, d_model) @ (d_model, H*d_head) -> (B, H, T, d_head)
        q = split_heads_core(linear(x, self.q_proj, self.q_proj_bias), d)
        # (B, T, d_model) @ (d_model, H_kv*d_head) -> (B, H_kv, T, d_head)
        k = split_heads_core(linear(x, self.k_proj, self.k_proj_bias), d)
        v = split_heads_core(linear(x, self.v_proj, self.v_proj_bias), d)
        if self.q_norm is not None:  # Qwen3: RMSNorm over d_head, per head
            q = rms_norm_core(q, self.q_norm, self.rms_norm_eps)
            k = rms_norm_core(k, self.k_norm, self.rms_norm_eps)
        return q, k, v

    def heads(self, x):
        """:meth:`project`'s q, k, v of ``x`` and what :meth:`combine`
        needs besides (Qwen3-Next: its gate; None here)."""
        return (*self.project(x), None)

    def rotary(self, position_ids, dtype):
        """RoPE's (cos, sin) at ``position_ids`` (B, T), each (B, T, d_rot)
        of ``dtype``; None for a layer without RoPE."""
        if self.inv_freq is None:
            return None
        return rotary_cos_sin_core(position_ids, self.inv_freq,
                                   self.attention_scaling, dtype)

    def rotate(self, x, cos, sin, layout="half"):
        """RoPE on the first ``d_rot`` channels of each head of ``x`` (B,
        heads, T, d_head), all of them unless the tables ``cos`` and ``sin``
        (B, 1, T, d_rot) are narrower (``partial_rotary_factor``); pairs as
        ``layout`` says."""
        d_rot = cos.shape[-1]
        if d_rot == x.shape[-1]:
            return apply_rotary(x, cos, sin, layout)
        # (B, H, T, d_rot) rotated, (B, H, T, d_head - d_rot) as they are
        return np.concatenate([apply_rotary(x[..., :d_rot], cos, sin, layout),
                               x[..., d_rot:]], axis=-1)

    def values(self, v):
        """The values ``v`` the kernel mixes (DiffLlama: both halves side
        by side)."""
        return v

    def combine(self, out, extra):
        """The kernel's output ``out`` (B, H, T, d_head) as ``o_proj`` reads
        it, (B, T, H*d_head); ``extra`` is what :meth:`heads` returned beside
        q, k, v."""
        return merge_heads_core(out)

    # ----------------------------------------------------------- forward
    def forward(self, hidden_states, *, attention_mask=None,
                position_ids=None, cache=None, is_causal=True,
                output_attentions=False):
        """Check the inputs, build the mask and positions, then ``attend``.

        Parameters
        ----------
        hidden_states : ndarray (B, T, d_model) of the layer's dtype
        attention_mask : (B, S): 1 = token, 0 = padding, held and new
            positions; or 4-D (B or 1, 1, T, S), True = may attend, as given
        position_ids : (T,) or (B, T) ints; default: the real tokens counted
        cache : Cache, optional; keys and values join entry ``layer_idx``
        is_causal : bool, default True
        output_attentions : bool; also return the weights (eager only)

        Returns ``out`` (B, T, d_model), or ``(out, weights)``, (B, H, T, S).

        See Also
        --------
        transformers.models.qwen3.modeling_qwen3.Qwen3Attention.forward
        """
        x = _check_forward(self, hidden_states, cache, is_causal,
                           output_attentions)  # (B, T, d_model)
        B, T, _ = x.shape
        held = seen = 0
        if cache is not None:
            held = cache.get_held_length(self.layer_idx)
            seen = cache.get_seq_length(self.layer_idx)
        mask, causal, pos = attention_inputs(
            attention_mask, position_ids, B, T, held, is_causal,
            dense=self.attn_implementation == "eager", seen=seen)
        out, weights = self.attend(x, mask, self.rotary(pos, x.dtype),
                                   cache=cache, is_causal=causal)
        return (out, weights) if output_attentions else out

    def attend(self, x, attn_mask, position_embeddings, *, cache=None,
               is_causal=False, head_mask=None, rope_layout="half",
               hook=None):
        """Unchecked core of forward: project, rotate, cache, attend, mix.

        Returns ``(out, weights)``. A model calls
        it for every layer with the mask and rotary tables it built once (HF:
        ``Qwen3Attention.forward``).

        Parameters
        ----------
        x : ndarray (B, T, d_model) of the layer's dtype
        attn_mask : bool ndarray (True = may attend) to (B, H, T, S), or None
        position_embeddings : (cos, sin) from :meth:`rotary`, or None: no RoPE
        cache : Cache, optional; the rotated keys and values join it
        is_causal : bool; the kernel adds the causal triangle, no (T, S) mask
        head_mask : ndarray (H,), optional; multiplies each head's weights
        rope_layout : "half" or "interleaved" (the chapters' layout bug)
        hook : ``hook(heads) -> heads`` on the heads' outputs (B, H, T, d_head)
            before ``o_proj``: patching, ablation
        """
        q, k, v, extra = self.heads(x)  # (B, H or H_kv, T, d_head)
        if position_embeddings is not None:  # rotate before caching
            cos, sin = position_embeddings  # (B, T, d_rot) each
            cos, sin = cos[:, None], sin[:, None]  # -> (B, 1, T, d_rot)
            q = self.rotate(q, cos, sin, rope_layout)
            k = self.rotate(k, cos, sin, rope_layout)
        held = 0  # keys held before these: the queries come after them
        if cache is not None:  # -> (B, H_kv, S, d_head), the held first
            held = cache.get_held_length(self.layer_idx)
            k, v = cache.update(k, v, self.layer_idx)
        attention = ATTENTION_FUNCTIONS[self.attn_implementation]  # by name
        out, weights = attention(
            q, k, self.values(v), attn_mask, scaling=self.scaling,
            score_mod=self.score_mod, sinks=self.sinks, head_mask=head_mask,
            mask_mod=shifted_mask_mod(self.mask_mod, held),  # a variant's
            is_causal=is_causal)  # (B, H, T, d_head)
        if hook is not None:  # an intervention on the heads' outputs
            out = hook(out)
        # (B, T, H*d_head) @ (H*d_head, d_model) -> (B, T, d_model)
        return linear(self.combine(out, extra), self.o_proj,
                      self.o_proj_bias), weights

    __call__ = forward

    def __repr__(self) -> str:
        H, H_kv = self.num_attention_heads, self.num_key_value_heads
        kind = {1: "MQA", H: "MHA"}.get(H_kv, "GQA")
        return (f"MultiHeadAttention({kind}: hidden_size={self.hidden_size}, "
                f"num_attention_heads={H}, num_key_value_heads={H_kv}, "
                f"head_dim={self.head_dim}, dtype={self.dtype})")


def shifted_mask_mod(mask_mod, past: int):
    """``mask_mod`` for queries that follow ``past`` held keys: new token
    ``i`` is key ``past + i``. The held keys are the last ones before the
    new tokens, so causal and sliding masks stay right."""
    if mask_mod is None or not past:
        return mask_mod

    def shifted(b, h, q_idx, kv_idx):
        return mask_mod(b, h, q_idx + past, kv_idx)
    return shifted


def attention_per_head(layer: MultiHeadAttention, hidden_states, *,
                       is_causal: bool = True) -> np.ndarray:
    """The layer as a loop over query heads, positions 0 .. T-1, no cache.

    Query head ``h`` uses its rows of ``q_proj`` and those of key/value head
    ``kv_head_for(h, H, H_kv)``. For teaching and tests: equal to ``layer``'s
    output on ``hidden_states`` (B, T, d_model), ``is_causal`` as given."""
    x = _check_hidden(layer, hidden_states)  # (B, T, d_model)
    is_causal = check_bool("is_causal", is_causal)
    d_head, H, T = layer.head_dim, layer.num_attention_heads, x.shape[1]
    heads = []
    for h in range(H):
        g = kv_head_for(h, H, layer.num_key_value_heads)
        qr = slice(h * d_head, (h + 1) * d_head)  # query head h's rows
        kr = slice(g * d_head, (g + 1) * d_head)  # key/value head g's rows
        # (B, T, d_model) @ (d_model, d_head) -> (B, T, d_head)
        q = linear(x, layer.q_proj[qr], _rows(layer.q_proj_bias, qr))
        k = linear(x, layer.k_proj[kr], _rows(layer.k_proj_bias, kr))
        v = linear(x, layer.v_proj[kr], _rows(layer.v_proj_bias, kr))
        if layer.q_norm is not None:  # Qwen3
            q = rms_norm_core(q, layer.q_norm, layer.rms_norm_eps)
            k = rms_norm_core(k, layer.k_norm, layer.rms_norm_eps)
        if layer.rope_theta is not None:
            cos, sin = rotary_cos_sin(np.arange(T), d_head,
                                      rope_theta=layer.rope_theta,
                                      dtype=x.dtype)  # (1, T, d_head)
            q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        heads.append(sdpa_core(q, k, v, is_causal=is_causal)[0])
    concat = np.concatenate(heads, axis=-1)  # -> (B, T, H*d_head)
    return concat @ layer.o_proj.T  # (B, T, H*d_head) -> (B, T, d_model)


def check_attn_implementation(attn_implementation) -> str:
    """One of the kernels' names (``ATTENTION_FUNCTIONS``)."""
    return check_choice("attn_implementation", attn_implementation,
                        tuple(ATTENTION_FUNCTIONS))


def check_output_attentions(output_attentions, attn_implementation) -> bool:
    """``output_attentions``, a bool, True only with the eager kernel
    (transformers raises the same way)."""
    if check_bool("output_attentions", output_attentions) and (
            attn_implementation != "eager"):
        raise ValueError(
            "output_attentions=True needs attn_implementation='eager', got "
            f"attn_implementation={attn_implementation!r}: the tiled kernel "
            "never holds the weights. Load or build with "
            "attn_implementation='eager', or call "
            "set_attn_implementation('eager') first")
    return output_attentions


def _rows(bias, rows):
    """The bias of one head (None for a layer without biases)."""
    return None if bias is None else bias[rows]
