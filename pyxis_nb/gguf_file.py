"""GGUF, llama.cpp's file format: a file's metadata and tensors, read.

Shape legend:
    L        decoder layers (``{arch}.block_count``)
    V        vocab_size
    d_model  hidden_size (``{arch}.embedding_length``)
    d_ff     intermediate_size (``{arch}.feed_forward_length``)
    H, H_kv  query and key/value heads
    d_head   head_dim

A GGUF holds metadata (sizes, the tokenizer, a chat template) and tensors
in ggml types: F32, F16, or blocks of 32 quantized weights (Q4_1: an f16
scale ``d``, an f16 minimum ``m``, 32 4-bit codes ``q``; weight ``d * q +
m``). The header is read here (``_read_header``); llama.cpp's ``gguf``
package, imported only when used, names the types and dequantizes.
llama.cpp permutes Llama's q/k rows for its interleaved RoPE (not Qwen's);
:func:`read_gguf` undoes that, as transformers' GGUF loader does.
"""

from __future__ import annotations

import functools
import math
import mmap
import pathlib
import struct
from typing import NamedTuple

import numpy as np

from ._checks import (check_bool, check_choice, check_config_value,
                      check_float_dtype, check_found, check_model_config,
                      check_needs, check_state_shapes)
from .qwen3 import ModelConfig, state_shapes, weight_order
from .rope import permute_qk_proj

__all__ = [
    "SMOLLM2_GGUF",
    "GGUFCheckpoint",
    "dequantizable_types",
    "generation_config",
    "gguf_metadata",
    "gguf_tensor_data",
    "gguf_tensor_types",
    "read_gguf",
]

#: SmolLM2-135M-Instruct in llama.cpp's format, 4-bit (Q4_1).
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

FETCH_HINT = ("run `make smollm2` in the repository, or px.fetch_smollm2() "
              "in Python, with the package index reachable")


# -------------------------------------------------------- reading errors
def _check_file_error(name: str, error, want: str) -> None:
    """Raise if a library could not read ``name`` (``error``, or None)."""
    if error is not None:
        raise ValueError(f"{name} is not a valid {want} (truncated or "
                         f"corrupt?): {type(error).__name__}: {error}")


# -------------------------------------------------------------- reading
#: What each architecture this package runs needs from a GGUF: q/k RMSNorm
#: (Qwen3), whether llama.cpp permuted the q/k rows (Llama), and the
#: defaults transformers' config classes give keys a file omits.
ARCHITECTURES = {
    "llama": dict(qk_norm=False, permuted=True, context_length=2048,
                  head_dim=None),
    "qwen3": dict(qk_norm=True, permuted=False, context_length=32_768,
                  head_dim=128),
}
NOT_IMPLEMENTED = "this package does not implement it"


class GGUFCheckpoint(NamedTuple):
    """:func:`read_gguf`'s result: what ``from_pretrained`` needs.

    Parameters
    ----------
    architecture : str, "llama" or "qwen3"
    config : ModelConfig
    tie_word_embeddings : bool, no ``output.weight``: lm_head = embedding
    generation_config : dict, the bos / eos / pad token ids
    state_dict : dict of str to ndarray, HF's names, torch's (out, in) layout
    """

    architecture: str  # "llama" or "qwen3"
    config: ModelConfig
    tie_word_embeddings: bool  # no output.weight: lm_head = embed_tokens
    generation_config: dict  # bos / eos / pad token ids
    state_dict: dict  # Hugging Face's names -> float arrays, (out, in)


class GGUFTensor(NamedTuple):
    """One tensor of a GGUF file: what its header says, and a view of it."""

    name: str  # llama.cpp's, such as "blk.0.attn_q.weight"
    tensor_type: object  # gguf.GGMLQuantizationType
    shape: tuple  # numpy's order: (out, in), ggml's dims reversed
    data: np.ndarray  # read-only view: blocks (uint8) or F16/F32 values


def _reader(path):
    """(metadata, ``{name: GGUFTensor}``, file) of ``path``, or a named error.

    Cached for the last few files, by path, size and modification time."""
    file = pathlib.Path(path)
    check_found(file.is_file(), f"path {str(path)!r} is not a file: "
                "expected a GGUF file" + (
                    f"; for SmolLM2, {FETCH_HINT}"
                    if file.name == SMOLLM2_GGUF else ""))
    stat = file.stat()
    return _open(str(file.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _open(file: str, size: int, mtime_ns: int):
    file = pathlib.Path(file)
    try:
        fields, tensors = _read_header(file)
    except Exception as err:  # bad bytes fail in many ways: name the file
        _check_file_error(file.name, err, "GGUF file")
    return fields, tensors, file


# The header is read here, not by gguf.GGUFReader: that reader makes each
# element of an array a field of its own (numpy views, Python calls each),
# and Gemma 3's 262,144 tokens, scores and token types are such arrays: 39 s
# to open its file (25 s through the plain-array views this module used
# before), 0.45 s read as below (this 2-core machine, shared). gguf still
# names the ggml types and dequantizes. The layout (GGUF v2 and v3):
# "GGUF", u32 version, u64 tensor count, u64 key count; each key a string
# (u64 length, utf-8 bytes), a u32 value type and its value (an array: u32
# element type, u64 count, the elements); each tensor a string name, u32
# n_dims, n_dims u64 sizes (the row first), u32 ggml type, u64 offset into
# the data, which starts at the first multiple of ``general.alignment``
# (default 32) after the header.
_STRING, _ARRAY = 8, 9  # gguf.GGUFValueType's, and its scalars':
_SCALARS = {0: "u1", 1: "i1", 2: "u2", 3: "i2", 4: "u4", 5: "i4", 6: "f4",
            7: "?", 10: "u8", 11: "i8", 12: "f8"}
#: ggml types whose data gguf.GGUFReader views as numbers, not as bytes
_NUMBERS = {"F16": "f2", "F32": "f4", "F64": "f8", "I8": "i1",
            "I16": "i2", "I32": "i4", "I64": "i8"}


class _Header:
    """A cursor over a GGUF file's bytes ``buf``: each method reads one
    item of ``what`` (for errors), in byte order ``endian``."""

    def __init__(self, buf, endian: str):
        self.buf, self.end, self.at, self.endian = buf, len(buf), 0, endian
        self.u64 = struct.Struct(endian + "Q").unpack_from

    def skip(self, n: int, what: str) -> int:
        """Move past ``n`` bytes; the offset they start at."""
        if self.at + n > self.end:
            raise ValueError(f"{what} at byte {self.at} runs past the "
                             f"file's end ({self.end} bytes)")
        self.at += n
        return self.at - n

    def numbers(self, kind: int, count: int, what: str) -> list:
        dtype = np.dtype(_SCALARS[kind]).newbyteorder(self.endian)
        return np.frombuffer(self.buf, dtype, count, self.skip(
            dtype.itemsize * count, what)).tolist()

    def string(self, what: str) -> str:
        n = self.numbers(10, 1, what)[0]
        return str(self.buf[self.skip(n, what):self.at], "utf-8")

    def strings(self, count: int, what: str) -> list:
        """``count`` strings: the one loop that runs per token."""
        buf, at, u64, out = self.buf, self.at, self.u64, []
        self.skip(8 * count, what)  # each string has its 8-byte length
        self.at = at
        try:
            for _ in range(count):
                n = u64(buf, at)[0]
                at += 8 + n
                out.append(str(buf[at - n:at], "utf-8"))
        except struct.error:  # a length read past the end
            at = self.end + 1
        self.skip(at - self.at, what)  # raises if a string ran past it
        return out

    def value(self, kind: int, what: str):
        """One value of GGUF type ``kind``, as gguf's ``contents()`` gives
        it: Python scalars, lists (an array of arrays flattened)."""
        if kind == _STRING:
            return self.string(what)
        if kind in _SCALARS:
            return self.numbers(kind, 1, what)[0]
        if kind != _ARRAY:
            raise ValueError(f"{what} has value type {kind}, not a GGUF one")
        kind, count = self.numbers(4, 1, what)[0], self.numbers(10, 1, what)[0]
        if kind == _STRING:
            return self.strings(count, what)
        if kind in _SCALARS:
            return self.numbers(kind, count, what)
        if kind != _ARRAY:
            raise ValueError(f"{what} has elements of type {kind}, not a "
                             "GGUF one")
        out = []
        for _ in range(count):  # each array's elements, in one list
            out += self.value(_ARRAY, what)
        return out


def _read_header(file: pathlib.Path) -> tuple[dict, dict]:
    """(metadata, ``{name: GGUFTensor}``) of ``file``, as gguf.GGUFReader
    reads them; a ValueError saying where the bytes stop making sense."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
    from gguf.quants import quant_shape_to_byte_shape
    with open(file, "rb") as f:  # a read-only map: views, not copies
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if buf[:4] != b"GGUF":
        raise ValueError("GGUF magic invalid")
    h = _Header(buf, "<")
    h.skip(4, "the magic")
    if h.numbers(4, 1, "the version")[0] & 0xFFFF == 0:  # the other order
        h.endian, h.u64 = ">", struct.Struct(">Q").unpack_from
    version = np.frombuffer(buf, h.endian + "u4", 1, 4)[0]
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version}: only 2 and 3 are read")
    n_tensors, n_keys = h.numbers(10, 2, "the tensor and key counts")
    if 13 * n_keys + 24 * n_tensors > h.end - h.at:  # their least sizes
        raise ValueError(f"{n_keys} keys and {n_tensors} tensors cannot "
                         f"fit in the file's {h.end} bytes")
    fields, kinds = {}, {}
    for _ in range(n_keys):
        key = h.string("a metadata key")
        if key in fields:
            raise ValueError(f"metadata key {key!r} is there twice")
        kinds[key] = h.numbers(4, 1, key)[0]
        fields[key] = h.value(kinds[key], f"metadata key {key}")
    infos = []
    for _ in range(n_tensors):
        name = h.string("a tensor name")
        dims = h.numbers(10, h.numbers(4, 1, name)[0], f"tensor {name}")
        infos.append((name, dims, *h.numbers(4, 1, f"tensor {name}"),
                      *h.numbers(10, 1, f"tensor {name}")))
    align = fields.get("general.alignment", 32)
    if "general.alignment" in fields and (kinds["general.alignment"] != 4
                                          or align & (align - 1) or not align):
        raise ValueError(f"general.alignment {align!r}: a u32 power of two")
    start, tensors = -(-h.at // align) * align, {}  # the data, aligned
    for name, dims, kind, offset in infos:
        kind = GGMLQuantizationType(kind)
        if name in tensors:
            raise ValueError(f"tensor {name!r} is there twice")
        block, size = GGML_QUANT_SIZES[kind]
        shape, n = tuple(dims[::-1]), math.prod(dims)
        item = _NUMBERS.get(kind.name)
        stored = shape if item else quant_shape_to_byte_shape(shape, kind)
        h.at = start + offset
        at = h.skip(n * size // block, f"tensor {name}'s data")
        data = np.frombuffer(buf, np.dtype(item or "u1").newbyteorder(
            h.endian), n if item else n * size // block, at)
        tensors[name] = GGUFTensor(name, kind, shape, data.reshape(stored))
    return fields, tensors


def gguf_metadata(path) -> dict:
    """Every metadata key of a GGUF file, as Python values (lists, str).

    ``path``: a GGUF file, str or os.PathLike."""
    return dict(_reader(path)[0])


def gguf_tensor_types(path) -> dict:
    """``{name: (ggml type, shape)}`` of every tensor, shape (out, in).

    Parameters
    ----------
    path : str or os.PathLike, a GGUF file"""
    return {t.name: (t.tensor_type.name, t.shape)
            for t in _reader(path)[1].values()}


def gguf_tensor_data(path, name: str) -> np.ndarray:
    """One tensor as the file stores it: its blocks' raw bytes, not weights.

    A read-only view of the file: uint8 (out, bytes a row) for a quantized
    type, float32 weights for F32; ``gguf.quants.dequantize(data, type)``
    turns blocks into weights.

    Parameters
    ----------
    path : str or os.PathLike, a GGUF file
    name : str, llama.cpp's tensor name, such as ``"blk.0.attn_q.weight"``"""
    tensors = _reader(path)[1]
    if name not in tensors:
        raise ValueError(f"name {name!r} is not a tensor of "
                         f"{pathlib.Path(path).name}; it has "
                         f"{', '.join(list(tensors)[:3])}, ...")
    return tensors[name].data


def _config(fields: dict, tensors: dict, name: str):
    """(architecture, ModelConfig, tied, generation config), all checked."""
    arch = fields.get("general.architecture")
    check_config_value(name, "general.architecture", arch,
                       tuple(ARCHITECTURES), NOT_IMPLEMENTED)
    spec = ARCHITECTURES[arch]

    def key(k, default=None):
        value = fields.get(f"{arch}.{k}", default)
        check_needs(value is not None, name, f"metadata key {arch}.{k}",
                    "a decoder's size is not optional")
        return value

    scaling = fields.get(f"{arch}.rope.scaling.type", "none")
    check_config_value(name, f"{arch}.rope.scaling.type", scaling,
                       ("none",), "RoPE scaling: " + NOT_IMPLEMENTED)
    factor = fields.get(f"{arch}.rope.scaling.factor", 1.0)
    check_config_value(name, f"{arch}.rope.scaling.factor", factor,
                       (1.0,), "RoPE scaling: " + NOT_IMPLEMENTED)
    for feature in ("attention.sliding_window", "expert_count"):
        check_config_value(name, f"{arch}.{feature}",
                           fields.get(f"{arch}.{feature}"), (None, 0),
                           NOT_IMPLEMENTED)
    H = key("attention.head_count")
    d_model = key("embedding_length")
    d_head = fields.get(f"{arch}.attention.key_length") or (
        fields.get(f"{arch}.rope.dimension_count") if arch == "llama"
        else None) or spec["head_dim"] or d_model // H
    for k in ("attention.value_length", "rope.dimension_count"):
        check_config_value(name, f"{arch}.{k}", fields.get(f"{arch}.{k}"),
                           (None, d_head), "it must equal head_dim "
                           f"{d_head}: " + NOT_IMPLEMENTED)
    tokens = fields.get("tokenizer.ggml.tokens")
    vocab = fields.get(f"{arch}.vocab_size") or (
        len(tokens) if tokens else None)
    check_needs(vocab is not None, name, f"{arch}.vocab_size or "
                "tokenizer.ggml.tokens", "the vocabulary's size")
    config = ModelConfig(
        hidden_size=d_model, num_attention_heads=H,
        num_key_value_heads=fields.get(f"{arch}.attention.head_count_kv")
        or H, head_dim=d_head, num_hidden_layers=key("block_count"),
        rope_theta=key("rope.freq_base", 10_000.0),
        rms_norm_eps=key("attention.layer_norm_rms_epsilon", 1e-6),
        intermediate_size=key("feed_forward_length"), vocab_size=vocab,
        max_position_embeddings=key("context_length",
                                    spec["context_length"]))
    check_model_config(config)
    return (arch, config, "output.weight" not in tensors,
            generation_config(fields))


def generation_config(fields: dict) -> dict:
    """``generation_config.json``'s token ids from a GGUF's metadata
    ``fields``: ``bos_token_id``, ``eos_token_id``, ``pad_token_id``."""
    return {f"{k}_token_id": fields[f"tokenizer.ggml.{g}_token_id"]
            for k, g in (("bos", "bos"), ("eos", "eos"), ("pad", "padding"))
            if f"tokenizer.ggml.{g}_token_id" in fields}


@functools.cache
def dequantizable_types() -> tuple:
    """The ggml types ``gguf.quants.dequantize`` reads, by name."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
    from gguf.quants import dequantize
    handled = []
    for qtype in GGMLQuantizationType:
        try:  # one block of zeros
            dequantize(np.zeros((1, GGML_QUANT_SIZES[qtype][1]), np.uint8),
                       qtype)
            handled.append(qtype.name)
        except NotImplementedError:
            pass
    return tuple(handled)


def read_gguf(path, *, dtype=np.float32, unpermute_qk: bool = True,
              architecture: str | None = None) -> GGUFCheckpoint:
    """A Llama or Qwen3 GGUF file: its config and its weights, HF's names.

    Everything is checked before a weight is read (the file, the
    architecture, unsupported metadata, each ggml type, every tensor's name
    and shape); weights are dequantized to ``dtype``, column-major
    (:func:`~pyxis_nb.qwen3.weight_order`).

    Parameters
    ----------
    path : str or os.PathLike, a GGUF file
    dtype : numpy float dtype
    unpermute_qk : bool, put Llama's q/k rows in HF's half-layout order
    architecture : str, optional, "llama" or "qwen3"; default either

    See Also
    --------
    transformers.modeling_gguf_pytorch_utils.load_gguf_checkpoint"""
    from gguf import MODEL_ARCH_NAMES, get_tensor_name_map
    dtype = check_float_dtype("dtype", dtype)
    unpermute_qk = check_bool("unpermute_qk", unpermute_qk)
    fields, tensors, file = _reader(path)
    arch, config, tied, generation = _config(fields, tensors, file.name)
    if architecture is not None:
        check_config_value(file.name, "general.architecture", arch,
                           (architecture,), "this class reads "
                           f"{architecture} files")
    for t in tensors.values():
        check_choice(f"{t.name} in {file.name}: ggml type",
                     t.tensor_type.name, dequantizable_types())
    spec = ARCHITECTURES[arch]
    want = state_shapes(config, tied, qk_norm=spec["qk_norm"])
    names = get_tensor_name_map(
        {v: k for k, v in MODEL_ARCH_NAMES.items()}[arch],
        config.num_hidden_layers)
    hf = {names.get_name(k.removesuffix(".weight")) + ".weight": k
          for k in want}  # gguf name -> HF name
    check_state_shapes(file.name, {hf.get(n, n): t.shape
                                   for n, t in tensors.items()}, want,
                       ("lm_head.weight",) if tied else (),
                       against="its metadata")
    out = {}
    for name, t in tensors.items():  # all checked: now read
        order = weight_order(t.shape)  # (out, in), as torch's Linear
        if spec["permuted"] and unpermute_qk and (
                ".attn_q." in name or ".attn_k." in name):
            w = permute_qk_proj(dequantized(t.data, t.tensor_type, t.shape),
                                head_dim=config.head_dim)  # -> half layout
            out[hf[name]] = w.astype(dtype, order)
        else:
            out[hf[name]] = dequantized(t.data, t.tensor_type, t.shape,
                                        dtype, order)
    return GGUFCheckpoint(arch, config, tied, generation, out)


#: Weights a ``gguf.quants.dequantize`` call reads: whole tensors up to
#: this size, bigger ones in runs of rows this size. gguf's own loop takes
#: 16 rows a call (2.7 s for Gemma 3's Q8_0 embedding), all the rows in one
#: call as long, and 3 GB; 2**16 weights, 0.43 s: a call's temporaries
#: (256 KB of float32 each) stay in the cache (512 KB of L2 here; from
#: 2**17 for Q4_1, 2**18 for Q8_0, it runs 2-3x slower).
DEQUANTIZE_CHUNK = 1 << 16


def dequantized(data: np.ndarray, qtype, shape: tuple, dtype=np.float32,
                order: str = "C") -> np.ndarray:
    """A tensor's weights, dequantized into a new array of their own.

    ``data``: its stored blocks (:func:`gguf_tensor_data`); ``qtype``: its
    ggml type (``gguf.GGMLQuantizationType`` or its name); ``shape``: the
    weights', (out, in); ``dtype`` and ``order``: the new array's. Each
    row's weights are gguf's, bit for bit: its dequantize runs block by
    block, on as many rows as DEQUANTIZE_CHUNK holds."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize  # here: a test counts its calls
    if isinstance(qtype, str):
        qtype = GGMLQuantizationType[qtype]
    out = np.empty(shape, dtype, order)
    if len(shape) != 2:
        out[...] = dequantize(data, qtype).reshape(shape)
        return out
    rows = data.reshape(shape[0], -1)  # a view: the file's rows
    step = max(1, DEQUANTIZE_CHUNK // max(1, shape[1]))
    for a in range(0, shape[0], step):  # one row of blocks a call: one
        part = rows[a:a + step]  # dequantize_blocks on all of them
        out[a:a + len(part)] = dequantize(part.reshape(1, -1),
                                          qtype).reshape(len(part), -1)
    return out
