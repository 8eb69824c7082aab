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
``tiled``          exact attention in tiles with an online softmax (long contexts)
=================  ==========================================================
"""

from .attention import *  # noqa: F401,F403
from .head import *  # noqa: F401,F403
from .masks import *  # noqa: F401,F403
from .plotting import *  # noqa: F401,F403
from .softmax import *  # noqa: F401,F403
from .tiled import *  # noqa: F401,F403
from .widgets import *  # noqa: F401,F403

import sys as _sys

# the modules above, in the order the book introduces them; each defines __all__
_MODULES = ["softmax", "masks", "attention", "head", "plotting", "widgets", "tiled"]

__all__ = sorted(
    name for module in _MODULES for name in _sys.modules[f"{__name__}.{module}"].__all__
)
__version__ = "0.1.0"
