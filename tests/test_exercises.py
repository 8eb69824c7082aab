"""px.exercises.check: the reader's check of an exercise, and its doors.

Each chapter's own checks are tested in tests/test_exercises_<chapter>.py:
the solution's answer is right, and the mistakes a reader makes get a hint.
"""

import pytest

import pyxis_nb as px


def test_every_chapter_module_has_numbered_checks():
    assert px.exercises.chapters(), "no chapter has checks"
    for chapter in px.exercises.chapters():
        checks = __import__(f"pyxis_nb.exercises.{chapter}",
                            fromlist=["CHECKS"]).CHECKS
        assert sorted(checks) == list(range(1, len(checks) + 1)), chapter
        assert all(callable(f) for f in checks.values()), chapter


def test_no_answer_yet_is_not_yet(capsys):
    chapter = px.exercises.chapters()[0]
    assert not px.exercises.check(chapter, 1, None)
    assert capsys.readouterr().out.startswith("Not yet: no answer yet")


def test_an_answer_that_breaks_the_check_is_not_yet(capsys):
    chapter = px.exercises.chapters()[0]

    class Broken:  # an answer whose every use raises
        def __getattr__(self, name):
            raise RuntimeError("my bug")

        def __float__(self):
            raise RuntimeError("my bug")

        def __call__(self, *args, **kwargs):
            raise RuntimeError("my bug")

        def __array__(self, *args, **kwargs):
            raise RuntimeError("my bug")
    assert not px.exercises.check(chapter, 1, Broken())
    assert "my bug" in capsys.readouterr().out


@pytest.mark.parametrize("chapter, exercise, match", [
    ("no_such_chapter", 1, "chapter must be one of"),
    (None, 1, "chapter must be one of"),
])
def test_an_unknown_chapter_is_a_clear_error(chapter, exercise, match):
    with pytest.raises(ValueError, match=match):
        px.exercises.check(chapter, exercise, 1.0)


@pytest.mark.parametrize("exercise", [0, 99, True, "1"])
def test_an_unknown_exercise_is_a_clear_error(exercise):
    chapter = px.exercises.chapters()[0]
    with pytest.raises(ValueError, match="exercise must be one of"):
        px.exercises.check(chapter, exercise, 1.0)
