"""pyxis_nb: the numpy core of the Pyxis Notebooks attention book.

Import it as ``import pyxis_nb as px``; every public name of every module is
available at the top level. One concept per module:

=================  ==========================================================
``softmax``        stable softmax, zeros for fully masked rows
``masks``          boolean masks, True = may attend (causal, sliding window, padding)
``attention``      ``scaled_dot_product_attention`` with torch's semantics
``head``           ``Head``: one attention head with Wq, Wk, Wv
``plotting``       labelled heatmaps of attention weights
``widgets``        interactive views that also work on the static website
``experiments``    measurements behind the ``1 / sqrt(d)`` scale
``positions``      sinusoidal absolute position encodings (Vaswani et al.)
``engine``         causal attention one query at a time, as an inference engine runs it
``batching``       padding token lists, a tiny language model, greedy generation
``multihead``      split/merge heads, ``repeat_kv``, the multi-head (GQA) layer
``memory``         KV-cache, score-matrix and parameter arithmetic; Qwen3-1.7B's config
``kv_cache``       ``KVCache``: preallocated keys and values for decoding
``norms``          ``rms_norm``, Qwen3's q_norm / k_norm
``rope``           rotary position embeddings, both layouts, ``apply_rotary_pos_emb``
``tiled``          online softmax and exact attention in tiles (FlashAttention's idea)
``generation``     a tiny model that generates with and without a KV cache
``source``         ``show_source``: the package's own code as a chapter listing
=================  ==========================================================
"""

import sys as _sys

from .attention import *  # noqa: F401,F403
from .batching import *  # noqa: F401,F403
from .engine import *  # noqa: F401,F403
from .experiments import *  # noqa: F401,F403
from .generation import *  # noqa: F401,F403
from .head import *  # noqa: F401,F403
from .kv_cache import *  # noqa: F401,F403
from .masks import *  # noqa: F401,F403
from .memory import *  # noqa: F401,F403
from .multihead import *  # noqa: F401,F403
from .norms import *  # noqa: F401,F403
from .plotting import *  # noqa: F401,F403
from .positions import *  # noqa: F401,F403
from .rope import *  # noqa: F401,F403
from .softmax import *  # noqa: F401,F403
from .source import *  # noqa: F401,F403
from .tiled import *  # noqa: F401,F403
from .widgets import *  # noqa: F401,F403

# the modules above, in the order the book introduces them; each defines __all__
_MODULES = ["softmax", "masks", "attention", "head", "plotting", "widgets",
            "experiments", "positions", "engine", "batching", "multihead", "memory",
            "kv_cache", "norms", "rope", "tiled", "generation", "source"]

__all__ = sorted(
    name for module in _MODULES for name in _sys.modules[f"{__name__}.{module}"].__all__
)
__version__ = "0.2.0"
