"""The reader's checks of book/padding.ipynb's exercises: the solution's
answer is right, the mistakes a reader makes get a hint, and no hint gives
the answer away."""

import numpy as np
import pytest

import pyxis_nb as px


def right_fraction(lengths, batch_size):
    slots = pads = 0
    for i in range(0, len(lengths), batch_size):
        group = lengths[i:i + batch_size]
        slots += len(group) * max(group)
        pads += len(group) * max(group) - sum(group)
    return pads / slots


def right_unpad(rows, lengths, side):
    T = rows.shape[1]
    return [rows[b, :n] if side == "right" else rows[b, T - n:]
            for b, n in enumerate(lengths)]


def right_unpad_by_mask(rows, lengths, side):
    real = px.padding_mask(lengths, rows.shape[1], side=side)[:, 0, 0]
    return [r[m] for r, m in zip(rows, real)]


def _padded(model, token_lists, side="right", use_mask=True):
    ids, lengths = px.batching.pad_sequences(token_lists, side=side)
    mask = (px.padding_mask(lengths, ids.shape[1], side=side)
            if use_mask else None)
    return model(ids, attn_mask=mask), lengths


def right_batch(model, token_lists):
    logits, lengths = _padded(model, token_lists)
    return [logits[b, :n] for b, n in enumerate(lengths)]


def right_batch_without_mask(model, token_lists):
    """Right padding: the causal mask alone hides every PAD key from the
    real queries, so this is right too."""
    logits, lengths = _padded(model, token_lists, use_mask=False)
    return [logits[b, :n] for b, n in enumerate(lengths)]


@pytest.mark.parametrize("exercise, answer", [
    (1, right_fraction),
    (2, right_unpad),
    (2, right_unpad_by_mask),
    (3, right_batch),
    (3, right_batch_without_mask),
])
def test_the_solution_is_right(exercise, answer, capsys):
    assert px.exercises.check("padding", exercise, answer)
    assert capsys.readouterr().out == "Right.\n"


def test_the_chapters_numbers():
    """Exercise 1's comparison, as the chapter prints it."""
    lens = [3, 5, 1, 7, 2, 6]
    assert right_fraction(lens, 2) == pytest.approx(1 / 3)
    assert right_fraction(sorted(lens), 2) == pytest.approx(1 / 7)


def left_batch(model, token_lists):
    logits, lengths = _padded(model, token_lists, side="left")
    T = logits.shape[-2]
    return [logits[b, T - n:] for b, n in enumerate(lengths)]


def one_by_one(model, token_lists):
    return [model(np.array(s)) for s in token_lists]


def every_row(model, token_lists):
    return list(_padded(model, token_lists)[0])


def _global_longest(lengths, batch_size):
    return (max(lengths) * len(lengths) - sum(lengths)) / (
        max(lengths) * len(lengths))


def _full_batches_only(lengths, batch_size):
    return right_fraction(lengths[:len(lengths) - len(lengths) % batch_size]
                          or lengths, batch_size)


def _per_real_token(lengths, batch_size):
    f = right_fraction(lengths, batch_size)
    return f / (1 - f)


MISTAKES = [
    (1, _global_longest, "its own longest"),
    (1, _full_batches_only, "last batch"),
    (1, _per_real_token, "per real token"),
    (1, lambda lengths, size: 0.5, "count, batch by batch"),
    (1, lambda lengths, size: None, "no answer yet"),
    # left padding read as right: the first n rows
    (2, lambda rows, lengths, side: [r[:n] for r, n in zip(rows, lengths)],
     "at the end of the row"),
    (2, lambda rows, lengths, side: list(rows), "has shape"),
    (2, lambda rows, lengths, side: [rows[0]], "one array per sentence"),
    (2, lambda rows, lengths, side: None, "no answer yet"),
    (3, one_by_one, "run it once"),
    (3, left_batch, "differ from the sentence run alone"),
    (3, every_row, "should have shape"),
    (3, lambda model, token_lists: None, "no answer yet"),
]


@pytest.mark.parametrize("exercise, answer, hint", MISTAKES)
def test_a_mistake_gets_a_hint(exercise, answer, hint, capsys):
    assert not px.exercises.check("padding", exercise, answer)
    out = capsys.readouterr().out
    assert out.startswith("Not yet: ") and hint in out, out


@pytest.mark.parametrize("exercise, answer, hint", MISTAKES)
def test_no_hint_gives_the_answer(exercise, answer, hint, capsys):
    px.exercises.check("padding", exercise, answer)
    out = capsys.readouterr().out
    for solution in ("T - n", "[:n]", "pad_sequences", "padding_mask(",
                     "pads / slots", "0.333", "1/3"):
        assert solution not in out, out


def test_a_broken_answer_is_not_yet(capsys):
    def broken(*args):
        raise IndexError("my bug")
    for exercise in (1, 2, 3):
        assert not px.exercises.check("padding", exercise, broken)
        assert "my bug" in capsys.readouterr().out
