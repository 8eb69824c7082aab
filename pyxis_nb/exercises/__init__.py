"""The reader's checks for the chapters' exercises: right, or a hint.

    px.exercises.check("qkv", 1, answer)

Each chapter with exercises has a module here, named as its notebook
(``exercises/qkv.py`` for ``book/qkv.ipynb``), whose ``CHECKS`` maps an
exercise's number to a function of the reader's answer. That function
returns ``None`` when the answer is right, or a hint: what is off, and where
to look, without the solution. An answer may be a number, an array or a
function the reader wrote; a function is run on inputs the check makes, and
compared with the package's own.
"""

from __future__ import annotations

import importlib
import pkgutil

__all__ = ["check", "chapters", "Verdict"]


class Verdict:
    """What :func:`check` said: true when the answer is right.

    ``check`` prints the verdict; in a notebook the cell shows that line
    alone, not the returned value after it.

    Parameters
    ----------
    hint : str or None
        None for a right answer; else what is off, and where to look.
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

    Parameters
    ----------
    chapter : str
        The chapter's notebook name, e.g. ``"qkv"`` for ``book/qkv.ipynb``.
    exercise : int
        The exercise's number in the chapter.
    answer : object
        The reader's answer: what the exercise asks for.

    Returns
    -------
    Verdict
        True (as a bool) when the answer is right. Prints "Right." or "Not
        yet:" with a hint.
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
