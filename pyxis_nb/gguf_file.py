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
m``). Read with llama.cpp's ``gguf`` package, imported only when used.
llama.cpp permutes Llama's q/k rows for its interleaved RoPE (not Qwen's);
:func:`read_gguf` undoes that, as transformers' GGUF loader does.
"""

from __future__ import annotations

import functools
import pathlib
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


def _reader(path):
    """(``gguf.GGUFReader``, metadata, file) of ``path``, or a named error.

    Opening parses every metadata field (seconds for 49,152 tokens), so the
    last few files are cached, by path, size and modification time."""
    file = pathlib.Path(path)
    check_found(file.is_file(), f"path {str(path)!r} is not a file: "
                "expected a GGUF file" + (
                    f"; for SmolLM2, {FETCH_HINT}"
                    if file.name == SMOLLM2_GGUF else ""))
    stat = file.stat()
    return _open(str(file.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.cache
def _reader_class():
    """``gguf.GGUFReader``, reading through a plain view of its memmap.

    Each slice of a memmap runs a Python-level ``__array_finalize__``: most of
    the time to open SmolLM2's 98,000 strings. A plain view slices in C: 3x
    faster. ``_get`` overrides a private method of gguf 0.19.0, its body but
    for the view, so pyproject.toml pins ``gguf==0.19.0``; before moving the
    pin, run tests/test_gguf.py's
    test_the_fast_reader_reads_what_the_library_reads (every field and tensor
    against gguf's own reader)."""
    from gguf import GGUFReader

    class ArrayReader(GGUFReader):
        def _get(self, offset, dtype, count=1, override_order=None):
            if "_array" not in self.__dict__:
                self._array = np.asarray(self.data)  # a view, not a copy
            count = int(count)
            end = offset + np.dtype(dtype).itemsize * count
            arr = self._array[offset:end].view(dtype=dtype)[:count]
            return arr.view(arr.dtype.newbyteorder(
                self.byte_order if override_order is None
                else override_order))

    return ArrayReader


@functools.lru_cache(maxsize=4)
def _open(file: str, size: int, mtime_ns: int):
    file = pathlib.Path(file)
    try:
        reader = _reader_class()(file)
    except Exception as err:  # the reader fails in many ways on bad bytes
        _check_file_error(file.name, err, "GGUF file")
    fields = {k: f.contents() for k, f in reader.fields.items()
              if not k.startswith("GGUF.")}
    return reader, fields, file


def gguf_metadata(path) -> dict:
    """Every metadata key of a GGUF file, as Python values (lists, str).

    Parameters
    ----------
    path : str or os.PathLike, a GGUF file"""
    return dict(_reader(path)[1])


def gguf_tensor_types(path) -> dict:
    """``{name: (ggml type, shape)}`` of every tensor, shape (out, in).

    Parameters
    ----------
    path : str or os.PathLike, a GGUF file"""
    return {t.name: (t.tensor_type.name, tuple(int(n) for n in t.shape[::-1]))
            for t in _reader(path)[0].tensors}


def gguf_tensor_data(path, name: str) -> np.ndarray:
    """One tensor as the file stores it: its blocks' raw bytes, not weights.

    A read-only view of the file: uint8 (out, bytes a row) for a quantized
    type, float32 weights for F32; ``gguf.quants.dequantize(data, type)``
    turns blocks into weights.

    Parameters
    ----------
    path : str or os.PathLike, a GGUF file
    name : str, llama.cpp's tensor name, such as ``"blk.0.attn_q.weight"``"""
    tensors = {t.name: t for t in _reader(path)[0].tensors}
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
    from gguf.quants import dequantize
    dtype = check_float_dtype("dtype", dtype)
    unpermute_qk = check_bool("unpermute_qk", unpermute_qk)
    reader, fields, file = _reader(path)
    tensors = {t.name: t for t in reader.tensors}
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
    check_state_shapes(file.name, {
        hf.get(n, n): tuple(int(s) for s in t.shape[::-1])
        for n, t in tensors.items()}, want,
        ("lm_head.weight",) if tied else (), against="its metadata")
    c, out = config, {}
    for name, t in tensors.items():  # all checked: now read
        shape = want[hf[name]]  # (out, in), as torch's Linear
        w = dequantize(t.data, t.tensor_type).reshape(shape)  # F32: a view
        if spec["permuted"] and unpermute_qk and (  # of the file
                ".attn_q." in name or ".attn_k." in name):
            w = permute_qk_proj(w, head_dim=c.head_dim)  # -> half layout
        out[hf[name]] = w.astype(dtype, weight_order(shape))  # its own
    return GGUFCheckpoint(arch, config, tied, generation, out)
