"""The reader's checks of the RoPE chapter's exercises (book/rope.ipynb).

Each check says Right for the solution's answer, gives the mistakes a
reader makes a hint, and no hint contains the answer.
"""

import re

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb.exercises import rope as checks


def check(n, answer, capsys):
    """(right, printed line) of px.exercises.check("rope", n, answer)."""
    right = bool(px.exercises.check("rope", n, answer))
    return right, capsys.readouterr().out.strip()


# --- 1. rotating by 7, then by 1000, is rotating once by 1007

def test_one_position_right(capsys):
    assert check(1, 1007, capsys) == (True, "Right.")
    assert check(1, np.int64(1007), capsys)[0]


@pytest.mark.parametrize("wrong", [7000, 993, 1000, 7, -1007])
def test_one_position_mistakes_get_a_hint(wrong, capsys):
    right, out = check(1, wrong, capsys)
    assert not right and out.startswith("Not yet: rotating once")
    assert "1007" not in out.replace(f"position {wrong}", "")


def test_one_position_wants_one_number(capsys):
    right, out = check(1, [7, 1000], capsys)
    assert not right and "expected one number" in out


# --- 2. half -> interleaved: the reader reorders each head's rows

def to_interleaved(weight, head_dim):
    """The solution: rows i and i + head_dim/2 of each head move to 2i and
    2i + 1."""
    heads = weight.reshape(-1, head_dim, weight.shape[-1])
    half = head_dim // 2
    order = np.stack([np.arange(half), np.arange(half) + half], 1).ravel()
    return heads[:, order].reshape(weight.shape)


def test_to_interleaved_right(capsys):
    assert check(2, to_interleaved, capsys) == (True, "Right.")
    # the package's own conversion is right too
    def package(w, d):
        return px.permute_qk_proj(w, head_dim=d, inverse=True)
    assert check(2, package, capsys)[0]


def whole_matrix(weight, head_dim):
    return px.permute_qk_proj(weight, head_dim=len(weight), inverse=True)


def off_by_one(weight, head_dim):
    out = to_interleaved(weight, head_dim)
    return out[[1, 0, *range(2, len(out))]]


@pytest.mark.parametrize("wrong, hint", [
    (lambda w, d: None, "no answer yet: your function returns None"),
    (lambda w, d: w, "the rows have not moved"),
    (lambda w, d: px.permute_qk_proj(w, head_dim=d), "the other way"),
    (whole_matrix, "across the whole matrix"),
    (lambda w, d: w[: len(w) // 2], "it should only reorder the rows"),
    (lambda w, d: w[:, px.rope.interleaved_to_half_permutation(d)],
     "IndexError"),  # columns: a weight has 6 columns here
    (off_by_one, "interleaved RoPE on your weights gives scores"),
])
def test_to_interleaved_mistakes_get_a_hint(wrong, hint, capsys):
    right, out = check(2, wrong, capsys)
    assert not right and hint in out, out


# --- 3. the pair whose wavelength is closest to the 40,960-token context

def test_closest_pair_right(capsys):
    assert check(3, 41, capsys) == (True, "Right.")
    assert check(3, 41.0, capsys)[0]


@pytest.mark.parametrize("wrong, hint", [
    (40, "pair 40 has a wavelength of"),
    (42, "another pair is closer"),
    (64, "is not a pair index"),
    (41.5, "is not a pair index"),
    (-1, "is not a pair index"),
])
def test_closest_pair_mistakes_get_a_hint(wrong, hint, capsys):
    right, out = check(3, wrong, capsys)
    assert not right and hint in out
    hint = out.replace(f"{wrong:g}", "")  # less the reader's own number
    assert not re.search(r"(?<![\d,.])41\b", hint)  # the answer


# --- 4. the half layout written with complex numbers

def rope_complex(x, positions):
    """The solution: pair i is x[i] + 1j * x[i + d/2], turned by
    e^(1j * m * omega_i)."""
    half = x.shape[-1] // 2
    z = x[..., :half] + 1j * x[..., half:]
    angles = np.outer(positions, px.rope_frequencies(x.shape[-1]))
    z = z * np.exp(1j * angles)
    return np.concatenate([z.real, z.imag], axis=-1)


def interleaved(x, positions):
    z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * np.exp(1j * np.outer(positions, px.rope_frequencies(x.shape[-1])))
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def test_rope_complex_right(capsys):
    assert check(4, rope_complex, capsys) == (True, "Right.")


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, p: None, "no answer yet: your function returns None"),
    (interleaved, "the interleaved layout"),
    (lambda x, p: rope_complex(x, -np.asarray(p)), "the wrong way round"),
    (lambda x, p: x, "nothing turned"),
    (lambda x, p: rope_complex(x, p)[:, :8] + 0j, "give back a real array"),
    (lambda x, p: rope_complex(x, 2 * np.asarray(p)), "differs from"),
])
def test_rope_complex_mistakes_get_a_hint(wrong, hint, capsys):
    right, out = check(4, wrong, capsys)
    assert not right and hint in out, out


def test_every_exercise_has_a_check():
    assert sorted(checks.CHECKS) == [1, 2, 3, 4]
    assert "rope" in px.exercises.chapters()
