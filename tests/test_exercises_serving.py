"""The reader's checks of book/serving.ipynb's exercises: the right answer
passes, the usual mistakes get a hint, and no hint gives the answer away.

Fast: no model is loaded; both checks run on pools and batches they make."""

import numpy as np
import pytest

import pyxis_nb as px


def check(n, answer, capsys):
    right = bool(px.exercises.check("serving", n, answer))
    return right, capsys.readouterr().out


def read_table(pool, table, n):
    return pool[table].reshape(-1, *pool.shape[2:])[:n]


def document_mask(q_req, q_pos, k_req, k_pos):
    return (q_req[:, None] == k_req) & (k_pos <= q_pos[:, None])


def test_1_right(capsys):
    right, out = check(1, read_table, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (lambda pool, table, n: read_table(pool, sorted(table), n),
     "the table's order"),
    (lambda pool, table, n: read_table(pool, table, n + 1), "cut to n"),
    (lambda pool, table, n: pool[table][:n], "one row a token"),
    (lambda pool, table, n: read_table(pool, table[::-1], n),
     "t // block_size"),
    (lambda pool, table, n: None, "returned None"),
])
def test_1_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(1, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out


def test_2_right(capsys):
    right, out = check(2, document_mask, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (lambda qr, qp, kr, kp: kp <= qp[:, None], "other requests"),
    (lambda qr, qp, kr, kp: qr[:, None] == kr, "later keys"),
    (lambda qr, qp, kr, kp: (qr[:, None] == kr) & (kp < qp[:, None]),
     "<=, not <"),
    (lambda qr, qp, kr, kp: document_mask(qr, qp, kr, kp).T,
     "one row a query"),
    (lambda qr, qp, kr, kp: document_mask(qr, qp, kr, kp).astype(int),
     "boolean"),
    (lambda qr, qp, kr, kp: ~document_mask(qr, qp, kr, kp), "same request"),
])
def test_2_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(2, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out


def test_no_hint_gives_the_answer_away(capsys):
    for n, wrong in ((1, lambda pool, table, n: pool[:0]),
                     (2, lambda qr, qp, kr, kp: np.zeros((1, 1), bool))):
        check(n, wrong, capsys)
    # a hint names the rule, never the reader's expression
    assert "reshape" not in capsys.readouterr().out
