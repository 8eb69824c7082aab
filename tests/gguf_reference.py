"""What gguf's own reader reads from a GGUF file: the reference that the
package's fast header reader (``pyxis_nb.gguf_file``) is compared with.

Run as a script (``python tests/gguf_reference.py FILE.gguf OUT.npz``) in
a fresh interpreter that imports neither pyxis_nb nor the tests' modules,
it writes to OUT a ``record``: JSON of ``header_record`` of what
``gguf.GGUFReader`` reads, with sha256 digests in place of the values, so
that a 262,144-token vocabulary is a few kilobytes. tests/kept_reference.py
keeps OUT, keyed by the file's sha256, this script's text and the versions
of PACKAGES: gguf's reader takes 4 s on SmolLM2's file and 15-20 s on
Gemma 3's, once, not every run. The tests on small files read with gguf
directly (``library_header``).
"""

import hashlib
import json
import sys

SCRIPTS = ()
PACKAGES = ("gguf", "numpy")


def library_header(file) -> tuple:
    """What ``gguf.GGUFReader`` reads: the metadata (its own ``GGUF.*``
    keys left out) and each tensor's name, type, shape (out, in), data."""
    import gguf

    reader = gguf.GGUFReader(file)
    return ({k: f.contents() for k, f in reader.fields.items()
             if not k.startswith("GGUF.")},
            [(t.name, t.tensor_type, tuple(int(n) for n in t.shape[::-1]),
              t.data) for t in reader.tensors])


def typed(value):
    """A value with the Python type of it and of each element."""
    if isinstance(value, list):
        return [typed(v) for v in value]
    return type(value).__name__, repr(value)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def header_record(fields: dict, tensors) -> dict:
    """Digests of a header: ``fields`` as [key, sha256 of the JSON of its
    ``typed`` value] in order; ``tensors`` ((name, type, shape, data) each)
    as [name, type, shape, data's dtype, data's shape, sha256 of its
    bytes]. Equal records: equal keys, types, values and tensors."""
    return {"fields": [[k, _sha(json.dumps(typed(v)).encode())]
                       for k, v in fields.items()],
            "tensors": [[name, int(kind), list(shape), str(data.dtype),
                         list(data.shape), _sha(data.tobytes())]
                        for name, kind, shape, data in tensors]}


def main(file: str, out: str) -> None:
    import numpy as np

    np.savez(out, record=np.array(json.dumps(header_record(
        *library_header(file)))))


if __name__ == "__main__":
    main(*sys.argv[1:])
