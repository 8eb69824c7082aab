"""A reference that transformers (or gguf) computes from a model file, in a
fresh interpreter, once, and that the tests keep.

``kept_reference(script, model_file, name)`` runs ``python SCRIPT FILE
OUT.npz`` (a script that imports neither pyxis_nb nor the test modules,
only other reference scripts, its ``SCRIPTS``, so that transformers loads
the file as a user does) and keeps OUT under
``px.loading.cache_folder()/references``, keyed by the file's sha256, the
text of the script and of its ``SCRIPTS``, and the versions of the
packages it names in ``PACKAGES``. A change of any of them computes it
again; otherwise a run reads the file (computing it takes about 25 s for
SmolLM2 and 80 s for Gemma 3, most of it transformers loading the GGUF
model and its tokenizer). The file is written whole or not at all, and
replaces the one kept under an earlier key.

``assert_header_is_gguf_s(file, name)`` compares the package's GGUF header
reader with gguf's reading kept that way (tests/gguf_reference.py), or,
without a name, read now (the tests' small files).
"""

import hashlib
import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

import gguf_reference
import pyxis_nb as px
from gguf_reference import header_record


def reference_key(script, file_sha: str) -> str:
    """What the reference depends on: the file, the script (and the test
    scripts it imports: ``SCRIPTS``) and the packages that compute it."""
    texts = [pathlib.Path(m.__file__).read_bytes()
             for m in (script, *getattr(script, "SCRIPTS", ()))]
    versions = {name: importlib.metadata.version(name)
                for name in script.PACKAGES}
    text = json.dumps([file_sha, [hashlib.sha256(t).hexdigest()
                                  for t in texts], versions], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def kept_reference(script, model_file: pathlib.Path,
                   name: str) -> pathlib.Path:
    """The path of ``script``'s output for ``model_file``, computed if it is
    not kept yet (an assertion with the script's stderr if it fails)."""
    folder = px.loading.cache_folder() / "references"
    key = reference_key(script, px.loading._sha256(model_file))
    file = folder / f"{name}-{key}.npz"
    if not file.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        part = folder / f"{file.stem}.{os.getpid()}.part.npz"
        run = subprocess.run([sys.executable, script.__file__,
                              str(model_file), str(part)],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-3000:]
        os.replace(part, file)  # whole, or not there
        for old in folder.glob(f"{name}-{'?' * len(key)}.npz"):
            if old != file:
                old.unlink()  # kept under other versions or another script
    return file


def assert_header_is_gguf_s(file: pathlib.Path, name: str | None = None):
    """pyxis_nb's header of ``file`` is what ``gguf.GGUFReader`` reads from
    it (kept as ``name``; read now if None): the same keys in order, each
    value with its type, every tensor's name, type, shape and bytes; the
    data read-only. Returns the header, (fields, tensors)."""
    fields, tensors = px.gguf_file._read_header(file)
    if name is None:
        want = header_record(*gguf_reference.library_header(file))
    else:
        with np.load(kept_reference(gguf_reference, file, name)) as ref:
            want = json.loads(str(ref["record"]))
    got = header_record(fields, [(t.name, t.tensor_type, t.shape, t.data)
                                 for t in tensors.values()])
    assert [k for k, _ in got["fields"]] == [k for k, _ in want["fields"]]
    for mine, theirs in zip(got["fields"], want["fields"]):
        assert mine == theirs, f"{mine[0]}: another value or type"
    assert len(got["tensors"]) == len(want["tensors"])
    for mine, theirs in zip(got["tensors"], want["tensors"]):
        assert mine == theirs, f"{mine[0]}: {mine[1:]} != {theirs[1:]}"
    assert not any(t.data.flags.writeable for t in tensors.values())
    return fields, tensors
