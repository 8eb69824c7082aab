"""The reader's checks of book/multihead.ipynb: the solutions' answers are
right, the mistakes a reader makes get a hint, and no hint gives the
answer away."""

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb.exercises import multihead as ex


# ---------------------------------------------------------------- 1
def cache_right(L, H, H_kv, d_head):
    return [np.zeros((1, H_kv, 1, d_head), np.float16) for _ in range(2 * L)]


def cache_float32(L, H, H_kv, d_head):
    return [np.zeros((H_kv, d_head), np.float32) for _ in range(2 * L)]


def cache_keys_only(L, H, H_kv, d_head):
    return [np.zeros((H_kv, d_head), np.float16) for _ in range(L)]


def cache_query_heads(L, H, H_kv, d_head):
    return [np.zeros((H, d_head), np.float16) for _ in range(2 * L)]


def cache_group_size(L, H, H_kv, d_head):
    return [np.zeros((H // H_kv, d_head), np.float16) for _ in range(2 * L)]


def cache_one_array(L, H, H_kv, d_head):
    return np.zeros((2 * L, H_kv, d_head), np.float16)


def cache_one_vector(L, H, H_kv, d_head):
    return [np.zeros(d_head, np.float16) for _ in range(2 * L)]


# ---------------------------------------------------------------- 2
def prune_right(layer, h):
    o = layer.o_proj.copy()
    d = layer.head_dim
    o[:, h * d:(h + 1) * d] = 0.0
    return px.MultiHeadAttention(
        layer.hidden_size, layer.num_attention_heads,
        layer.num_key_value_heads, d, q_proj=layer.q_proj,
        k_proj=layer.k_proj, v_proj=layer.v_proj, o_proj=o)


def prune_in_place(layer, h):
    d = layer.head_dim
    layer.o_proj[:, h * d:(h + 1) * d] = 0.0
    return layer


def prune_rows(layer, h):
    o = layer.o_proj.copy()
    d = layer.head_dim
    o[h * d:(h + 1) * d] = 0.0
    return _with_o(layer, o)


def prune_off_by_one(layer, h):
    return prune_right(layer, (h + 1) % layer.num_attention_heads)


def prune_nothing(layer, h):
    return _with_o(layer, layer.o_proj.copy())


def prune_kv_rows(layer, h):  # zeroes the value rows of h's K/V head
    return prune_right(layer, h // layer.num_key_value_groups)


def _with_o(layer, o):
    return px.MultiHeadAttention(
        layer.hidden_size, layer.num_attention_heads,
        layer.num_key_value_heads, layer.head_dim, q_proj=layer.q_proj,
        k_proj=layer.k_proj, v_proj=layer.v_proj, o_proj=o)


# ---------------------------------------------------------------- 3
def _convert(layer, H_kv, pool):
    return px.MultiHeadAttention(
        layer.hidden_size, layer.num_attention_heads, H_kv, layer.head_dim,
        q_proj=layer.q_proj, k_proj=pool(layer.k_proj, H_kv, layer),
        v_proj=pool(layer.v_proj, H_kv, layer), o_proj=layer.o_proj)


def _mean(w, H_kv, layer):
    H, d = layer.num_attention_heads, layer.head_dim
    g = w.reshape(H_kv, H // H_kv, d, -1).mean(axis=1)
    return g.reshape(H_kv * d, -1)


def gqa_right(layer, H_kv):
    return _convert(layer, H_kv, _mean)


def gqa_strided(layer, H_kv):  # groups 0, 2, 4, 6 and 1, 3, 5, 7
    def pool(w, H_kv, layer):
        H, d = layer.num_attention_heads, layer.head_dim
        return w.reshape(H // H_kv, H_kv, d, -1).mean(0).reshape(H_kv * d, -1)
    return _convert(layer, H_kv, pool)


def gqa_sum(layer, H_kv):
    n = layer.num_attention_heads // H_kv
    return _convert(layer, H_kv, lambda w, k, lay: n * _mean(w, k, lay))


def gqa_first(layer, H_kv):
    def pool(w, H_kv, layer):
        H, d = layer.num_attention_heads, layer.head_dim
        g = w.reshape(H_kv, H // H_kv, d, -1)[:, 0]
        return g.reshape(H_kv * d, -1)
    return _convert(layer, H_kv, pool)


def gqa_keys_only(layer, H_kv):
    def pool(w, H_kv, layer):
        if w is layer.v_proj:
            d = layer.head_dim
            return w[:H_kv * d]
        return _mean(w, H_kv, layer)
    return _convert(layer, H_kv, pool)


def gqa_wrong_heads(layer, H_kv):
    return gqa_right(layer, 2 if H_kv != 2 else 4)


def gqa_changes_queries(layer, H_kv):
    out = gqa_right(layer, H_kv)
    out.q_proj = out.q_proj * 2
    return out


RIGHT = {1: cache_right, 2: prune_right, 3: gqa_right}
WRONG = [
    (1, cache_float32, "2 bytes"),
    (1, cache_keys_only, "keys only"),
    (1, cache_query_heads, "which heads"),
    (1, cache_group_size, "group size"),
    (1, cache_one_array, "list of numpy arrays"),
    (1, cache_one_vector, "count the vectors"),
    (2, prune_in_place, "changed the layer it was given"),
    (2, prune_rows, "rows of o_proj are the d_model outputs"),
    (2, prune_off_by_one, "which columns of o_proj read head 3"),
    (2, prune_nothing, "did not change"),
    (2, prune_kv_rows, "which columns"),
    (3, gqa_strided, "mix heads of different groups"),
    (3, gqa_sum, "times too large"),
    (3, gqa_first, "kept one head of each group"),
    (3, gqa_keys_only, "v_proj is not converted"),
    (3, gqa_wrong_heads, "key/value heads"),
    (3, gqa_changes_queries, "q_proj and o_proj stay"),
]


@pytest.mark.parametrize("n", RIGHT)
def test_the_solution_is_right(n, capsys):
    assert px.exercises.check("multihead", n, RIGHT[n])
    assert capsys.readouterr().out == "Right.\n"


@pytest.mark.parametrize("n, answer, hint", WRONG,
                         ids=[w[1].__name__ for w in WRONG])
def test_a_mistake_gets_its_hint(n, answer, hint, capsys):
    assert not px.exercises.check("multihead", n, answer)
    out = capsys.readouterr().out
    assert out.startswith("Not yet: ") and hint in out, out


@pytest.mark.parametrize("n, answer, hint", WRONG,
                         ids=[w[1].__name__ for w in WRONG])
def test_no_hint_gives_the_answer_away(n, answer, hint):
    text = (ex.CHECKS[n](answer) or "").lower()
    # the numbers of exercise 1's answer, the slicing of 2, the mean of 3
    for secret in ("74,898", "74898", "37,449", "599,186", "h * d_head",
                   "h*d_head", ".mean(", "reshape(", "np.float16)"):
        assert secret not in text, (secret, text)


def test_no_answer_yet(capsys):
    for n in RIGHT:
        assert not px.exercises.check("multihead", n, None)
    assert capsys.readouterr().out.count("Not yet: no answer yet") == 3


def test_a_check_does_not_change_the_layers_it_shares():
    """Exercise 2 runs the reader's function on a layer of its own; a
    reader's in-place mistake must not leak into the next check."""
    px.exercises.check("multihead", 2, prune_in_place)
    assert ex.prune_head(prune_right) is None
