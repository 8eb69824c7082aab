"""pyxis_nb: the numpy core of the Pyxis Notebooks attention book.

Import it as ``import pyxis_nb as px``; every public name of every module is
available at the top level. One concept per module:

==================  ==========================================================
``softmax``         stable softmax, zeros for fully masked rows
``masks``           boolean masks, True = may attend (causal, window, padding)
``attention``       ``scaled_dot_product_attention`` with torch's semantics
``head``            ``Head``: one attention head with Wq, Wk, Wv
``experiments``     measurements behind the ``1 / sqrt(d_head)`` scale
``positions``       sinusoidal absolute position encodings (Vaswani et al.)
``engine``          causal attention one query at a time, as an engine runs it
``batching``        padding token lists, a tiny language model, greedy decoding
``memory``          KV-cache, score-matrix and parameter arithmetic; Qwen3-1.7B
``norms``           ``rms_norm``, Qwen3's q_norm / k_norm
``rope``            rotary position embeddings, both layouts
``multihead``       split/merge heads, ``repeat_kv``, the GQA layer
``qwen3``           Qwen3-1.7B's config; seeded random (Qwen3) attention layers
``kv_cache``        ``KVCache``: preallocated keys and values for decoding
``tiled``           online softmax, exact attention in tiles (FlashAttention)
``model``           ``Qwen3ForCausalLM``: checkpoints, MLP, sampling, tokenizer
``generation``      ``TinyDecoder``: that model without MLPs, seeded; FLOPs
``attention_only``  a trainable attention-only transformer, backward by hand
``circuits``        a trained model's heads: maps, scores, ablation, layouts
``evaluation``      bits per byte, from the bytes of the tokens scored
``source``          ``show_source``: the package's own code as a listing
``plotting``        labelled heatmaps and the chapters' figures (matplotlib)
``widgets``         interactive views that also work on the static website
==================  ==========================================================

Only numpy is imported with the package: ``plotting`` and ``widgets`` (and
so matplotlib and ipywidgets) load on first use of one of their names,
e.g. ``px.plot_attention(...)`` (PEP 562).
"""

import ast as _ast
import importlib as _importlib
import pathlib as _pathlib
import sys as _sys

from .softmax import *  # noqa: F401,F403
from .masks import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .head import *  # noqa: F401,F403
from .experiments import *  # noqa: F401,F403
from .positions import *  # noqa: F401,F403
from .engine import *  # noqa: F401,F403
from .batching import *  # noqa: F401,F403
from .memory import *  # noqa: F401,F403
from .norms import *  # noqa: F401,F403
from .rope import *  # noqa: F401,F403
from .multihead import *  # noqa: F401,F403
from .qwen3 import *  # noqa: F401,F403
from .kv_cache import *  # noqa: F401,F403
from .tiled import *  # noqa: F401,F403
from .model import *  # noqa: F401,F403
from .generation import *  # noqa: F401,F403
from .attention_only import *  # noqa: F401,F403
from .circuits import *  # noqa: F401,F403
from .evaluation import *  # noqa: F401,F403
from .source import *  # noqa: F401,F403

# Every module, in layers: a module imports only modules listed before it.
# Each defines __all__. The _LAZY ones are imported on first use.
_MODULES = ["softmax", "masks", "attention", "head", "experiments",
            "positions", "engine", "batching", "memory", "norms", "rope",
            "multihead", "qwen3", "kv_cache", "tiled", "model", "generation",
            "attention_only", "circuits", "evaluation", "source",
            "plotting", "widgets"]
_LAZY = ("plotting", "widgets")


def _declared_all(module: str) -> list[str]:
    """A lazy module's ``__all__``, read from its source without importing."""
    path = _pathlib.Path(__file__).with_name(f"{module}.py")
    for node in _ast.parse(path.read_text(encoding="utf-8")).body:
        if (isinstance(node, _ast.Assign)
                and any(getattr(t, "id", "") == "__all__"
                        for t in node.targets)):
            return list(_ast.literal_eval(node.value))
    # reason: a broken package, not bad input: no argument to name
    raise ImportError(f"pyxis_nb.{module} defines no literal __all__")


_LAZY_NAMES = {name: module for module in _LAZY
               for name in _declared_all(module)}

__all__ = sorted(
    [name for module in _MODULES if module not in _LAZY
     for name in _sys.modules[f"{__name__}.{module}"].__all__]
    + list(_LAZY_NAMES)
)
__version__ = "0.2.0"


def __getattr__(name: str):
    """Load ``plotting`` / ``widgets`` when one of their names is used."""
    module = _LAZY_NAMES.get(name, name if name in _LAZY else None)
    if module is None:  # reason: PEP 562 wants AttributeError here
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = _importlib.import_module(f".{module}", __name__)
    value = loaded if name == module else getattr(loaded, name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_LAZY))
