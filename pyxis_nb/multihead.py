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
from .masks import causal_mask
from .norms import rms_norm_core
from .rope import apply_rotary, rotary_cos_sin

__all__ = [
    "split_heads",
    "split_heads_core",
    "merge_heads",
    "merge_heads_core",
    "repeat_kv",
    "kv_head_for",
    "weight_shapes",
    "position_ids_from_mask",
    "MultiHeadAttention",
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

    The maths is :func:`split_heads_core`; this checks ``x`` first.

    Parameters
    ----------
    x : ndarray of float, shape (B, T, H*d_head)
        A projection's output; its last axis must divide by ``head_dim``.
    head_dim : int
        ``d_head``, >= 1.

    Returns
    -------
    ndarray, shape (B, H, T, d_head)
        A view of ``x`` where numpy can make one.

    See Also
    --------
    merge_heads : the inverse.
    """
    x, d_head = _check_split_heads(x, head_dim)
    return split_heads_core(x, d_head)


def split_heads_core(x, head_dim):
    """Unchecked :func:`split_heads`. HF: ``view(B, T, -1, head_dim)``.

    Parameters
    ----------
    x : ndarray, shape (B, T, H*d_head)
    head_dim : int
        ``d_head``; must divide the last axis of ``x``.

    Returns
    -------
    ndarray, shape (B, H, T, d_head)
    """
    B, T, _ = x.shape
    # (B, T, H*d_head) -> (B, T, H, d_head)
    x = x.reshape(B, T, -1, head_dim)
    return x.transpose(0, 2, 1, 3)  # -> (B, H, T, d_head)


def merge_heads(x) -> np.ndarray:
    """Concatenate the heads: (B, H, T, d_head) -> (B, T, H*d_head).

    The maths is :func:`merge_heads_core`; this checks ``x`` first.

    Parameters
    ----------
    x : ndarray of float, shape (B, H, T, d_head)

    Returns
    -------
    ndarray, shape (B, T, H*d_head)
        Head ``h`` fills columns ``h*d_head .. (h+1)*d_head - 1``.

    See Also
    --------
    split_heads : the inverse.
    """
    return merge_heads_core(as_float_array("x", x, ndim=4))


def merge_heads_core(x):
    """Unchecked :func:`merge_heads`. HF: ``reshape(*input_shape, -1)``.

    Parameters
    ----------
    x : ndarray, shape (B, H, T, d_head)

    Returns
    -------
    ndarray, shape (B, T, H*d_head)
    """
    B, H, T, d_head = x.shape
    x = x.transpose(0, 2, 1, 3)  # (B, H, T, d_head) -> (B, T, H, d_head)
    return x.reshape(B, T, H * d_head)  # -> (B, T, H*d_head)


def repeat_kv(hidden_states, n_rep: int) -> np.ndarray:
    """Repeat each key/value head for ``n_rep`` consecutive query heads.

    Output head ``h`` is input head ``h // n_rep`` (0, 0, 1, 1, ... for
    ``n_rep = 2``), so query head ``h`` meets the key/value head it reads.

    Parameters
    ----------
    hidden_states : ndarray of float, shape (B, H_kv, S, d_head)
        Keys or values.
    n_rep : int
        Query heads per key/value head, ``H // H_kv``, >= 1.

    Returns
    -------
    ndarray, shape (B, H_kv*n_rep, S, d_head)
        A copy; the input itself when ``n_rep == 1``, as Hugging Face does.

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

    With 16 query and 8 key/value heads, query heads 0 and 1 read head 0,
    2 and 3 read head 1, and so on.

    Parameters
    ----------
    q_head : int
        A query head, ``0 .. H-1``.
    num_attention_heads : int
        ``H``.
    num_key_value_heads : int
        ``H_kv``, dividing ``H``.

    Returns
    -------
    int
        The key/value head, ``0 .. H_kv-1``.
    """
    H, H_kv = check_heads(num_attention_heads, num_key_value_heads)
    q_head = check_int("q_head", q_head, low=0, high=H - 1)
    return q_head * H_kv // H


def weight_shapes(hidden_size: int, num_attention_heads: int,
                  num_key_value_heads: int, head_dim: int) -> dict:
    """The shape of every array a layer can hold, by constructor argument.

    Parameters
    ----------
    hidden_size : int
        ``d_model``.
    num_attention_heads : int
        ``H``.
    num_key_value_heads : int
        ``H_kv``.
    head_dim : int
        ``d_head``.

    Returns
    -------
    dict of str to tuple of int
        ``q_proj`` (H*d_head, d_model), ``k_proj`` and ``v_proj``
        (H_kv*d_head, d_model), ``o_proj`` (d_model, H*d_head), the three
        biases and ``q_norm``, ``k_norm`` (d_head,), as
        :class:`MultiHeadAttention` takes them (torch's ``Linear`` layout).
    """
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

    The real tokens of each row count 0, 1, 2, ...; padding gets 0
    (``attention_mask.cumsum(-1) - 1``, then ``masked_fill(mask == 0, 0)``).

    Parameters
    ----------
    attention_mask : ndarray of bool or 0/1, shape (B, S)
        1 (True) for a real token, 0 for padding.

    Returns
    -------
    ndarray of int64, shape (B, S)

    See Also
    --------
    transformers.GenerationMixin._prepare_position_ids_for_generation
    """
    real = check_01_mask("attention_mask", attention_mask)
    check_shape("attention_mask", real, real.ndim == 2, "(B, S)")
    return np.where(real, np.cumsum(real, axis=-1) - 1, 0)


def _layer_mask(attention_mask, B, T, past, is_causal):
    """Check the mask; return the SDPA mask and which keys are real, (B, S).

    A mask that would hide nothing is None, as in transformers' SDPA path:
    one new token after the cache sees every key (the causal triangle's
    last row), and a (B, S) mask of ones has no padding.
    """
    S = past + T
    causal = causal_mask(T, S) if is_causal and T > 1 else None  # (T, S)
    if attention_mask is None:
        return causal, np.ones((B, S), bool)
    m = check_01_mask("attention_mask", attention_mask)
    if m.ndim == 4:  # Hugging Face: a 4-D mask is the complete mask, as given
        check_shape("attention_mask", m,
                    m.shape in ((B, 1, T, S), (1, 1, T, S)),
                    f"(B, 1, T, S) = ({B}, 1, {T}, {S})")
        return m, np.ones((B, S), bool)
    check_shape("attention_mask", m, m.shape == (B, S),
                f"(B, S) = ({B}, {S}): {past} cached positions plus {T} new")
    if m.all():  # no padding
        return causal, m
    keys = m[:, None, None, :]  # (B, S) -> (B, 1, 1, S): True = may attend
    return (keys if causal is None else keys & causal), m


def _check_position_ids(name: str, position_ids, B: int, T: int,
                        max_position_embeddings: int | None = None
                        ) -> np.ndarray:
    """Integer positions >= 0 of shape (T,), (1, T) or (B, T), as (B, T).

    Only what is a property of the input: HF accepts any such positions
    (packed sequences, tree decoding), so their values are the caller's.
    """
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
                     is_causal=True, max_position_embeddings=None):
    """Check a layer's mask and positions; the SDPA mask and (B, T) ids.

    ``forward`` runs it for its layer; a model runs it once for all of its
    layers (HF: ``create_causal_mask`` and the position ids, built once in
    ``Qwen3Model.forward``). ``past``: positions the cache holds already.
    Positions are the caller's, as in HF: any integers >= 0 (below
    ``max_position_embeddings`` if given); the default counts the real
    tokens of the 2-D mask, as ``generate`` does.
    """
    mask, real = _layer_mask(attention_mask, B, T, past, is_causal)
    if position_ids is None:  # (B, S) -> (B, T): HF's derivation
        want = np.cumsum(real, axis=-1)[:, past:] - 1
        return mask, np.where(real[:, past:], want, 0)
    return mask, _check_position_ids("position_ids", position_ids, B, T,
                                     max_position_embeddings)


def _linear(x, weight, bias):
    """torch's ``F.linear``: (B, T, in) @ (in, out) -> (B, T, out), + bias."""
    y = x @ weight.T
    return y if bias is None else y + bias


def _check_hidden(layer, hidden_states) -> np.ndarray:
    x = as_float_array("hidden_states", hidden_states)
    check_shape("hidden_states", x,
                x.ndim == 3 and x.shape[-1] == layer.hidden_size,
                f"(B, T, d_model) with d_model = {layer.hidden_size}")
    check_nonempty("hidden_states", x, {0: "batch", 1: "sequence"})
    check_same_dtype(**{"q_proj.weight": layer.q_proj, "hidden_states": x})
    return x


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
    layer;
    with the three biases, Qwen2's; with none of them, the plain layer.

    Parameters
    ----------
    hidden_size, num_attention_heads, num_key_value_heads, head_dim : int
        ``d_model``, ``H``, ``H_kv`` (dividing ``H``), ``d_head``.
    q_proj, k_proj, v_proj, o_proj : ndarray
        (H*d_head, d_model), (H_kv*d_head, d_model) twice, (d_model,
        H*d_head): torch's ``Linear`` layout (out, in).
    q_proj_bias, k_proj_bias, v_proj_bias : ndarray, optional
        (H*d_head,), (H_kv*d_head,) twice. All three or none.
    q_norm, k_norm : ndarray, shape (d_head,), optional
        RMSNorm weights of every query/key head, before RoPE. Both or none.
    rms_norm_eps : float, default 1e-6
    rope_theta : float, optional
        RoPE base (half layout); ``d_head`` even. None: no RoPE.
    attn_implementation : {"flex_attention", "eager"}, default
        "flex_attention"
        The kernel (``px.attention.ATTENTION_FUNCTIONS``): the tiled one,
        which never holds the weights, or the eager one, which returns
        them (``output_attentions``).

    All arrays share one float dtype; inputs must have it too.

    See Also
    --------
    random_attention, qwen3_attention : seeded random layers.
    transformers.models.qwen3.modeling_qwen3.Qwen3Attention
    transformers.models.qwen2.modeling_qwen2.Qwen2Attention : biases.
    """

    def __init__(self, hidden_size, num_attention_heads, num_key_value_heads,
                 head_dim, *, q_proj, k_proj, v_proj, o_proj,
                 q_proj_bias=None, k_proj_bias=None, v_proj_bias=None,
                 q_norm=None, k_norm=None, rms_norm_eps=1e-6, rope_theta=None,
                 attn_implementation="flex_attention"):
        self.attn_implementation = check_attn_implementation(
            attn_implementation)
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        H, H_kv = check_heads(num_attention_heads, num_key_value_heads)
        self.num_attention_heads, self.num_key_value_heads = H, H_kv
        self.head_dim = check_positive_int("head_dim", head_dim)
        self.num_key_value_groups = H // H_kv  # n_rep
        self.scaling = self.head_dim ** -0.5
        given = dict(q_proj=q_proj, k_proj=k_proj, v_proj=v_proj,
                     o_proj=o_proj, q_proj_bias=q_proj_bias,
                     k_proj_bias=k_proj_bias, v_proj_bias=v_proj_bias,
                     q_norm=q_norm, k_norm=k_norm)
        shapes = weight_shapes(self.hidden_size, H, H_kv, self.head_dim)
        arrays = _check_arrays(given, shapes)
        for name in STATE_KEYS:  # absent optional arrays are None
            setattr(self, name, arrays.get(name))
        self.rms_norm_eps = check_number("rms_norm_eps", rms_norm_eps,
                                         at_least=0)
        self.rope_theta = (None if rope_theta is None
                           else check_theta("rope_theta", rope_theta))
        if rope_theta is not None:  # RoPE rotates pairs
            check_even("head_dim", self.head_dim)

    @classmethod
    def from_state_dict(cls, state_dict: Mapping, *, hidden_size,
                        num_attention_heads, num_key_value_heads, head_dim,
                        prefix="", rms_norm_eps=1e-6, rope_theta=_NOT_GIVEN,
                        attn_implementation="flex_attention"):
        """A layer from checkpoint arrays: ``{prefix}q_proj.weight``, ...

        All under ``prefix`` or nothing: an unknown key (``o_proj.bias``)
        raises, as a missing one does (torch: ``strict=True``).

        Parameters
        ----------
        state_dict : mapping of str to ndarray
            Checkpoint arrays under their torch names (``q_proj.weight``, ...).
        hidden_size, num_attention_heads, num_key_value_heads, head_dim : int
            ``d_model``, ``H``, ``H_kv``, ``d_head``, as in the class.
        prefix : str, default ""
            The keys' common prefix, e.g. ``"model.layers.0.self_attn."``.
        rms_norm_eps : float, default 1e-6
            The epsilon of ``q_norm`` and ``k_norm``.
        rope_theta : float or None
            Not in the weights, so it must be passed for a checkpoint with
            ``q_norm`` (Qwen3); None leaves RoPE out on purpose.
        attn_implementation : {"flex_attention", "eager"}
            The kernel, as in the class.

        Returns
        -------
        MultiHeadAttention

        See Also
        --------
        torch.nn.Module.load_state_dict
        """
        arrays = _checkpoint_arrays(state_dict, prefix)
        rope_theta = _checkpoint_theta(arrays, rope_theta)
        return cls(hidden_size, num_attention_heads, num_key_value_heads,
                   head_dim, **arrays, rms_norm_eps=rms_norm_eps,
                   rope_theta=rope_theta,
                   attn_implementation=attn_implementation)

    def state_dict(self, prefix: str = "") -> dict:
        """The arrays under their checkpoint keys (torch's ``state_dict``).

        Parameters
        ----------
        prefix : str, default ""
            Put in front of every key, e.g. ``"model.layers.0.self_attn."``.

        Returns
        -------
        dict of str to ndarray
            The layer's own arrays (not copies); absent optional ones are left
            out.
        """
        return {prefix + key: getattr(self, n) for n, key in STATE_KEYS.items()
                if getattr(self, n) is not None}

    @property
    def dtype(self):
        return self.q_proj.dtype

    def project(self, x):
        """(q, k, v): (B, H, T, d_head), (B, H_kv, T, d_head) x2, pre-RoPE.

        Unchecked: ``x`` as :meth:`forward` checked it. With ``q_norm`` and
        ``k_norm`` (Qwen3) each query and key head is RMS-normalised here.

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            Of the layer's dtype.

        Returns
        -------
        q : ndarray, shape (B, H, T, d_head)
        k, v : ndarray, shape (B, H_kv, T, d_head)
        """
        d = self.head_dim
        # (B, T, d_model) @ (d_model, H*d_head) -> (B, H, T, d_head)
        q = split_heads_core(_linear(x, self.q_proj, self.q_proj_bias), d)
        # (B, T, d_model) @ (d_model, H_kv*d_head) -> (B, H_kv, T, d_head)
        k = split_heads_core(_linear(x, self.k_proj, self.k_proj_bias), d)
        v = split_heads_core(_linear(x, self.v_proj, self.v_proj_bias), d)
        if self.q_norm is not None:  # Qwen3: RMSNorm over d_head, per head
            q = rms_norm_core(q, self.q_norm, self.rms_norm_eps)
            k = rms_norm_core(k, self.k_norm, self.rms_norm_eps)
        return q, k, v

    def forward(self, hidden_states, *, attention_mask=None, position_ids=None,
                cache=None, layer_idx=0, is_causal=True,
                output_attentions=False):
        """Check the inputs, build the mask and positions, then ``attend``.

        Parameters
        ----------
        hidden_states : ndarray, shape (B, T, d_model)
            Of the layer's dtype.
        attention_mask : ndarray, optional
            (B, S): 1 = real token, 0 = padding, over cached and new
            positions, combined with the causal mask; or 4-D (B or 1, 1, T,
            S), True = may attend, used as given (as Hugging Face does).
        position_ids : ndarray of int, shape (T,) or (B, T), optional
            Default: counted from the mask over the real tokens.
        cache : KVCache, optional
            Keys and values are appended at ``layer_idx`` and attended over.
        layer_idx : int, default 0
        is_causal : bool, default True
        output_attentions : bool, default False
            Also return the weights: needs ``attn_implementation="eager"``.

        Returns
        -------
        out : ndarray, shape (B, T, d_model)
        weights : ndarray, shape (B, H, T, S), only with output_attentions

        See Also
        --------
        transformers.models.qwen3.modeling_qwen3.Qwen3Attention.forward
        """
        is_causal = check_bool("is_causal", is_causal)
        output_attentions = check_output_attentions(output_attentions,
                                                    self.attn_implementation)
        x = _check_hidden(self, hidden_states)  # (B, T, d_model)
        B, T, _ = x.shape
        past = 0 if cache is None else cache.get_seq_length(layer_idx)
        mask, pos = attention_inputs(attention_mask, position_ids, B, T,
                                     past, is_causal)
        rope = None if self.rope_theta is None else rotary_cos_sin(
            pos, self.head_dim, rope_theta=self.rope_theta, dtype=x.dtype)
        out, weights = self.attend(x, mask, rope, cache=cache,
                                   layer_idx=layer_idx)
        return (out, weights) if output_attentions else out

    def attend(self, x, attn_mask, position_embeddings, *, cache=None,
               layer_idx=0, head_mask=None, rope_layout="half", hook=None):
        """Unchecked core of :meth:`forward`: project, rotate, cache, attend.

        A model calls it for every layer with what it built once (HF:
        ``Qwen3Attention.forward``, given the model's mask and rotary tables).

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            Of the layer's dtype.
        attn_mask : ndarray or None
            Boolean, True = may attend, broadcastable to (B, H, T, S); None:
            every key.
        position_embeddings : (cos, sin) or None
            Each (B, T, d_head), from :func:`~pyxis_nb.rope.rotary_cos_sin`;
            None: no RoPE.
        cache : KVCache, optional
            The rotated keys and values are appended at ``layer_idx``, and
            attention runs over all S cached positions.
        layer_idx : int, default 0
        head_mask : ndarray, shape (H,), optional
            Multiplies each head's weights (1 keeps a head, 0 removes it).
        rope_layout : {"half", "interleaved"}, default "half"
            "interleaved" rotates neighbouring pairs: the layout bug the
            chapters demonstrate.
        hook : callable, optional
            ``hook(heads) -> heads`` on every head's output (B, H, T,
            d_head) before ``o_proj`` mixes them: patching, ablation.

        Returns
        -------
        out : ndarray, shape (B, T, d_model)
        weights : ndarray, shape (B, H, T, S), or None
            None from the ``"flex_attention"`` kernel, which never holds
            them.
        """
        q, k, v = self.project(x)  # (B, H or H_kv, T, d_head)
        if position_embeddings is not None:  # rotate before caching
            cos, sin = position_embeddings  # (B, T, d_head) each
            cos, sin = cos[:, None], sin[:, None]  # -> (B, 1, T, d_head)
            q = apply_rotary(q, cos, sin, rope_layout)
            k = apply_rotary(k, cos, sin, rope_layout)
        if cache is not None:  # -> (B, H_kv, S, d_head)
            k, v = cache.update(k, v, layer_idx)
        attention = ATTENTION_FUNCTIONS[self.attn_implementation]  # by name
        out, weights = attention(q, k, v, attn_mask, scaling=self.scaling,
                                 head_mask=head_mask)  # (B, H, T, d_head)
        if hook is not None:  # an intervention on the heads' outputs
            out = hook(out)
        # (B, T, H*d_head) @ (H*d_head, d_model) -> (B, T, d_model)
        out = merge_heads_core(out) @ self.o_proj.T
        return out, weights

    __call__ = forward

    def __repr__(self) -> str:
        H, H_kv = self.num_attention_heads, self.num_key_value_heads
        kind = {1: "MQA", H: "MHA"}.get(H_kv, "GQA")
        return (f"MultiHeadAttention({kind}: hidden_size={self.hidden_size}, "
                f"num_attention_heads={H}, num_key_value_heads={H_kv}, "
                f"head_dim={self.head_dim}, dtype={self.dtype})")


def attention_per_head(layer: MultiHeadAttention, hidden_states, *,
                       is_causal: bool = True) -> np.ndarray:
    """The layer as a loop over query heads, positions 0 .. T-1, no cache.

    Query head ``h`` uses its rows of ``q_proj`` and those of key/value head
    ``kv_head_for(h, H, H_kv)`` of ``k_proj`` and ``v_proj``; ``o_proj``
    mixes the concatenated heads. For teaching and tests.

    Parameters
    ----------
    layer : MultiHeadAttention
    hidden_states : ndarray, shape (B, T, d_model)
        Of the layer's dtype.
    is_causal : bool, default True

    Returns
    -------
    ndarray, shape (B, T, d_model)
        Equal to the layer's output.
    """
    x = _check_hidden(layer, hidden_states)  # (B, T, d_model)
    is_causal = check_bool("is_causal", is_causal)
    d_head, H, T = layer.head_dim, layer.num_attention_heads, x.shape[1]
    heads = []
    for h in range(H):
        g = kv_head_for(h, H, layer.num_key_value_heads)
        qr = slice(h * d_head, (h + 1) * d_head)  # query head h's rows
        kr = slice(g * d_head, (g + 1) * d_head)  # key/value head g's rows
        # (B, T, d_model) @ (d_model, d_head) -> (B, T, d_head)
        q = _linear(x, layer.q_proj[qr], _rows(layer.q_proj_bias, qr))
        k = _linear(x, layer.k_proj[kr], _rows(layer.k_proj_bias, kr))
        v = _linear(x, layer.v_proj[kr], _rows(layer.v_proj_bias, kr))
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
