"""The reader's checks for the chapters' exercises: right, or a hint.

    px.exercises.check("qkv", 1, answer)

Each chapter's module here (``exercises/qkv.py`` for ``book/qkv.ipynb``)
maps in ``CHECKS`` an exercise's number to a function of the reader's
answer: None when it is right, else a hint (what is off, where to look,
not the solution). An answer may be a number, an array or a function, run
on inputs the check makes and compared with the package's own.
"""

from __future__ import annotations

import importlib
import pkgutil

__all__ = ["check", "chapters", "Verdict"]


class Verdict:
    """What :func:`check` said: true when the answer is right.

    ``check`` prints it, so a notebook cell shows that line alone.

    Parameters
    ----------
    hint : str or None, None for a right answer, else what is off
    """

    def __init__(self, hint: str | None):
        self.hint = hint

    def __bool__(self) -> bool:
        return self.hint is None

    def __repr__(self) -> str:
        return "Right." if self.hint is None else f"Not yet: {self.hint}"

    def _ipython_display_(self) -> None:
        """Nothing more to show: ``check`` printed it."""


def chapters() -> list[str]:
    """The chapters that have checks, by notebook name."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__))


def check(chapter: str, exercise: int, answer) -> Verdict:
    """Say whether ``answer`` solves exercise ``exercise`` of ``chapter``.

    Prints "Right." or "Not yet:" with a hint; the :class:`Verdict` is true
    when the answer is right.

    Parameters
    ----------
    chapter : str, the notebook's name, e.g. ``"qkv"`` for ``book/qkv.ipynb``
    exercise : int, the exercise's number in the chapter
    answer : the reader's answer: what the exercise asks for
    """
    if chapter not in chapters():
        raise ValueError(f"chapter must be one of {chapters()}, "
                         f"got {chapter!r}")
    checks = importlib.import_module(f"{__name__}.{chapter}").CHECKS
    if isinstance(exercise, bool) or exercise not in checks:
        raise ValueError(f"exercise must be one of {sorted(checks)} for "
                         f"{chapter!r}, got {exercise!r}")
    if answer is None:
        hint = "no answer yet: put yours in place of None and run the cell"
    else:
        try:
            hint = checks[exercise](answer)
        except Exception as error:  # the reader's code, or a wrong type
            hint = (f"checking it raised {type(error).__name__}: {error}")
    verdict = Verdict(hint)
    print(repr(verdict))
    return verdict
