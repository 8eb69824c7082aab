"""The tiled kernel's promise, measured on the shipped model: no (T, S) array.

One forward of the Qwen3 trained on Shakespeare (its first layer) at
T = 32,768 positions, far past its 1,024 trained ones (RoPE has no length
limit; transformers runs it too), under tracemalloc, which sees numpy's
allocations. A causal mask of
(T, S) booleans alone would be 1 GiB; the weights are 14 MiB and one layer's
activations (its MLP's (T, d_ff) arrays) a few hundred MiB.
"""

import tracemalloc

import numpy as np
import pytest

import pyxis_nb as px


def peak_bytes(model, T: int) -> int:
    ids = np.random.default_rng(0).integers(0, model.vocab_size, (1, T))
    tracemalloc.start()
    try:
        logits = model(ids, logits_to_keep=1).logits
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        assert np.isfinite(logits).all()


@pytest.mark.slow
def test_one_forward_at_32k_holds_no_query_by_key_array():
    model = px.Qwen3ForCausalLM.from_pretrained(px.model.SHAKESPEARE_CHECKPOINT)
    # its first layer only: the peak is one layer's, and four layers of
    # 32,768^2 scores take four minutes here
    model.layers = model.layers[:1]
    c, T = model.config, 32_768
    one_layer = 6 * T * (c.intermediate_size + c.hidden_size) * 4  # float32
    peak = peak_bytes(model, T)
    assert peak < one_layer, (peak, one_layer)
    assert peak < T * T // 2  # a (T, T) boolean mask would be twice this
    # linear in T: a quarter of the length, about a quarter of the memory
    assert peak < 5 * peak_bytes(model, T // 4)
