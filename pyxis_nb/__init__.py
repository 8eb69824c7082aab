"""pyxis_nb: the numpy core of the Pyxis Notebooks attention book.

Import it as ``import pyxis_nb as px``. The top level holds what a reader
of every chapter needs (about 40 names: attention and masks, softmax and
RMSNorm, RoPE, the multi-head layer, the KV cache, the models and their
loaders, the attention plots and views, ``show_source``). One chapter's
kit stays in its module: ``px.circuits.induction_score``,
``px.attention_only.train``, ``px.plotting.plot_rope_layout_bug``.

The modules come in four layers; a module imports only from its own layer
(modules listed before it) or from a lower one (``LAYERS``, checked by
tests/test_conventions.py, drawn in CONTRIBUTING.md)::

    views        plotting  widgets                       matplotlib, ipywidgets
      |
    analysis     circuits  evaluation  attention_only  experiments  memory
                 exercises
      |
    chapter kit  positions  head  engine  batching  source  table
                 linear_attention  variants  gemma3  serving  speculative
      |
    model stack  stable_softmax  masks  tiled  attention  norms  rope
                 kv_cache  paged  multihead  qwen3  gguf_file  loading  model

Only numpy is imported with the package: ``plotting`` and ``widgets`` (and
so matplotlib and ipywidgets) load on first use of one of their names,
e.g. ``px.plot_attention(...)`` or ``px.widgets`` (PEP 562).
"""

import importlib as _importlib

from . import (stable_softmax, masks, tiled, attention, norms,  # noqa
               rope, kv_cache, paged, multihead, qwen3, gguf_file,
               loading, model)
from . import (positions, head, engine, batching, source,  # noqa
               linear_attention, variants, gemma3, serving, speculative)
from . import (circuits, evaluation, attention_only, experiments,  # noqa
               memory, exercises)
from .attention import scaled_dot_product_attention
from .head import Head
from .kv_cache import KVCache
from .gguf_file import SMOLLM2_GGUF
from .gemma3 import Gemma3ForCausalLM
from .loading import (fetch_gemma3, fetch_smollm2, load_tokenizer,
                      safetensors_header)
from .masks import causal_mask, padding_mask, sliding_window_mask
from .model import (SHAKESPEARE_CHECKPOINT, CausalLMOutputWithPast,
                    GenerateDecoderOnlyOutput, LlamaForCausalLM,
                    Qwen3DecoderLayer, Qwen3ForCausalLM, Qwen3MLP,
                    Qwen3RMSNorm, TinyDecoder)
from .multihead import MultiHeadAttention, merge_heads, repeat_kv, split_heads
from .norms import rms_norm
from .qwen3 import QWEN3_1_7B, ModelConfig, random_attention
from .rope import (apply_rope, apply_rotary_pos_emb, permute_qk_proj,
                   rope_frequencies, rotary_cos_sin, rotate_half)
from .stable_softmax import softmax
from .source import show_source
from .table import Table
from .tiled import tiled_attention

#: layer -> its modules, lowest first; a module imports only from modules
#: before it in this order (tests/test_conventions.py).
LAYERS = {
    "model stack": ["stable_softmax", "masks", "tiled", "attention", "norms",
                    "rope", "kv_cache", "paged", "multihead", "qwen3",
                    "gguf_file", "loading", "model"],
    "chapter kit": ["positions", "head", "engine", "batching", "source",
                    "table", "linear_attention", "variants", "gemma3",
                    "serving", "speculative"],
    "analysis": ["circuits", "evaluation", "attention_only", "experiments",
                 "memory", "exercises"],
    "views": ["plotting", "widgets"],
}
_MODULES = [m for modules in LAYERS.values() for m in modules]
_LAZY = ("plotting", "widgets")
#: the top-level names of the lazy modules (each in its module's __all__)
_LAZY_NAMES = {
    "plot_attention": "plotting", "plot_attention_grid": "plotting",
    "attention_explorer": "widgets", "describe_attention": "widgets",
    "model_view": "widgets", "view_grid": "widgets",
    "view_switcher": "widgets",
}

__all__ = sorted([
    # attention, masks, softmax, norms
    "scaled_dot_product_attention", "causal_mask", "sliding_window_mask",
    "padding_mask", "softmax", "rms_norm",
    # RoPE
    "apply_rope", "apply_rotary_pos_emb", "rotate_half", "rotary_cos_sin",
    "rope_frequencies", "permute_qk_proj",
    # heads and layers
    "Head", "split_heads", "merge_heads", "repeat_kv", "MultiHeadAttention",
    "random_attention", "KVCache", "tiled_attention",
    # models, configs, loaders
    "ModelConfig", "QWEN3_1_7B", "Qwen3ForCausalLM", "Qwen3DecoderLayer",
    "Qwen3MLP", "Qwen3RMSNorm", "CausalLMOutputWithPast",
    "GenerateDecoderOnlyOutput", "TinyDecoder", "SHAKESPEARE_CHECKPOINT",
    "LlamaForCausalLM", "SMOLLM2_GGUF", "fetch_smollm2", "load_tokenizer",
    "safetensors_header", "Gemma3ForCausalLM", "fetch_gemma3",
    # views and listings
    *_LAZY_NAMES, "show_source", "Table",
])
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
