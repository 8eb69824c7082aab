"""px.memory.mla_decode_cost against a measured decode step: the bytes of
the arrays the step reads and the multiply-adds of its matrix products,
counted by an ndarray subclass that watches every operation."""

import numpy as np
import pytest

import pyxis_nb as px

SIZES = dict(hidden_size=32, num_attention_heads=4, q_lora_rank=12,
             kv_lora_rank=10, qk_nope_head_dim=6, qk_rope_head_dim=4,
             v_head_dim=5, rope_theta=10000.0)
#: the layer's arrays the formula counts as weights
WEIGHTS = ("q_proj", "q_a_proj", "q_a_bias", "q_a_layernorm", "q_b_proj",
           "kv_a_proj_with_mqa", "kv_a_bias", "kv_a_layernorm", "kv_b_proj",
           "w_uk", "w_uv", "o_proj", "o_proj_bias")


def decode(layer, x, cache, position_ids=None, absorb=False):
    """New tokens through ``cache`` (a DynamicCache of the MLA config),
    the latent expanded or (``absorb``) the weights absorbed."""
    layer.absorb = absorb
    return layer(x, cache=cache, position_ids=position_ids)


class Traced(np.ndarray):
    """An array whose operations are logged: matmul's multiply-adds, and
    which elements of a watched source array each operation reads."""

    log = None  # {"macs": int, "read": {source: set of element offsets}}
    sources = {}  # source name -> the plain array it views

    def __array_finalize__(self, obj):
        # a view keeps its source; an operation's result gets none
        self.source = getattr(obj, "source", None)

    @classmethod
    def watch(cls, array, source):
        """``array`` as a Traced view reading ``source`` (a name)."""
        view = np.asarray(array).view(cls)
        view.source = source
        return view

    @classmethod
    def _read(cls, x):
        """Log the elements of a source that ``x`` views."""
        if not isinstance(x, Traced) or x.source is None:
            return
        source = x.source
        base, x = cls.sources[source], x.view(np.ndarray)
        if not np.shares_memory(x, base):
            return  # a copy that kept the tag: not a read of the source
        start = (x.__array_interface__["data"][0]
                 - base.__array_interface__["data"][0])
        # (ndim, ...) indices . strides -> each element's byte offset
        offsets = start + np.tensordot(np.array(x.strides),
                                       np.indices(x.shape), axes=1)
        cls.log["read"].setdefault(source, set()).update(
            offsets.ravel().tolist())

    @staticmethod
    def _plain(x):
        if isinstance(x, Traced):
            return x.view(np.ndarray)
        if isinstance(x, (list, tuple)):
            return type(x)(Traced._plain(y) for y in x)
        return x

    @staticmethod
    def _wrap(x):
        if isinstance(x, np.ndarray) and not isinstance(x, Traced):
            return x.view(Traced)
        if isinstance(x, tuple):
            return tuple(Traced._wrap(y) for y in x)
        return x

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        for x in inputs:
            Traced._read(x)
        if ufunc is np.matmul and method == "__call__":
            a, b = inputs  # (..., m, k) @ (..., k, n): m k n a batch entry
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            Traced.log["macs"] += (int(np.prod(batch)) * a.shape[-2]
                                   * a.shape[-1] * b.shape[-1])
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = Traced._plain(out)
        result = getattr(ufunc, method)(*Traced._plain(inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return Traced._wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        for x in args:
            for y in (x if isinstance(x, (list, tuple)) else [x]):
                Traced._read(y)
        return Traced._wrap(func(*Traced._plain(args),
                                 **Traced._plain(kwargs)))


def _measure(layer, S, absorb, monkeypatch):
    """Bytes read (weights, cache, the keys and values the kernel gets
    that are not the cache) and multiply-adds of one decode step with S
    tokens in the cache, the new one included."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, S, layer.hidden_size))
    cache = px.kv_cache.DynamicCache(layer.config)
    decode(layer, x[:, :S - 1], cache, absorb=absorb)
    entry = cache.layers[0]  # the LatentLayer
    if entry.buffer.shape[1] < S:  # room for the new token: no re-copy
        entry.update(*(np.zeros((1, 1, n)) for n in (
            layer.kv_lora_rank, layer.qk_rope_head_dim)))
        entry.seen -= 1
    Traced.sources = {"cache": entry.buffer}
    entry.buffer = Traced.watch(entry.buffer, "cache")
    for name in WEIGHTS:  # w_uk, w_uv: views of kv_b_proj
        array = getattr(layer, name)
        if array is not None:
            source = "kv_b_proj" if name in ("w_uk", "w_uv") else name
            Traced.sources.setdefault(source, getattr(layer, source))
            setattr(layer, name, Traced.watch(array, source))
    kernel = px.attention.ATTENTION_FUNCTIONS["eager"]

    def kernel_reads(query, key, value, *args, **kwargs):
        made = [a for a in (key, value) if not np.shares_memory(
            a.view(np.ndarray), Traced.sources["cache"])]
        Traced.log["made"] = sum(a.nbytes for a in made)
        return kernel(query, key, value, *args, **kwargs)
    monkeypatch.setitem(px.variants.ATTENTION_FUNCTIONS, "eager",
                        kernel_reads)
    Traced.log = {"macs": 0, "read": {}}
    decode(layer, x[:, S - 1:].view(Traced), cache, absorb=absorb)
    read = {k: len(v) * 8 for k, v in Traced.log["read"].items()}
    read["expanded"] = Traced.log["made"]
    return read, Traced.log["macs"]


@pytest.mark.parametrize("absorb", [False, True], ids=["expanded",
                                                       "absorbed"])
@pytest.mark.parametrize("overrides", [{}, dict(q_lora_rank=None),
                                       dict(attention_bias=True)],
                         ids=["low-rank q", "q_proj", "biases"])
def test_decode_cost_formula_equals_a_measured_step(overrides, absorb,
                                                   monkeypatch):
    config = SIZES | overrides
    layer = px.variants.DeepseekV3Attention(config,
                                            attn_implementation="eager")
    rng = np.random.default_rng(1)
    layer.load({k: rng.standard_normal(shape) * 0.3
                for k, shape in layer.state_shapes().items()})
    S = 23
    read, macs = _measure(layer, S, absorb, monkeypatch)
    cost = px.memory.mla_decode_cost(config, S, absorb=absorb,
                                     dtype_bytes=8)
    assert read.pop("cache") == cost["cache_bytes"]
    assert read.pop("expanded") == cost["expanded_bytes"]
    assert sum(read.values()) == cost["weight_bytes"]
    assert macs == cost["macs"]


def test_absorbed_reads_less_and_multiplies_less_at_deepseek_v3():
    config = dict(hidden_size=7168, num_attention_heads=128,
                  q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                  qk_rope_head_dim=64, v_head_dim=128)
    expanded, absorbed = (px.memory.mla_decode_cost(config, 4096,
                                                    absorb=a)
                          for a in (False, True))
    assert expanded["cache_bytes"] == absorbed["cache_bytes"] == (
        4096 * 576 * 2)
    assert expanded["expanded_bytes"] == 4096 * 128 * (192 + 128) * 2
    assert absorbed["expanded_bytes"] == 0
    assert expanded["macs"] > 90 * absorbed["macs"]
