"""px.Table: a table of results as HTML (the website stacks it on a phone)
and as aligned text (what nbval compares)."""

from __future__ import annotations

import re

import pytest

import pyxis_nb as px


def test_text_is_aligned_and_numbers_are_grouped():
    t = px.Table(["model", "H", "KiB"], [["Qwen3-1.7B", 16, 112.0],
                                         ["DeepSeek-V3", 128, 68.625]],
                 formats={"KiB": "{:.1f}"})
    assert repr(t).splitlines() == [
        "model          H    KiB",
        "Qwen3-1.7B    16  112.0",
        "DeepSeek-V3  128   68.6"]
    assert "131,072" in repr(px.Table(["T"], [[131_072]]))
    assert repr(px.Table(["window"], [[None]])).splitlines()[1] == "-"


def test_html_is_a_table_the_website_styles():
    t = px.Table(["model", "H"], [["<b>", 16]])
    page = t._repr_html_()
    assert page.startswith('<table class="table"><thead>')
    assert page.count('<th class="head">') == 2
    assert "&lt;b&gt;" in page and "<b>" not in page  # text, escaped
    assert re.search(r'<td style="text-align: right">16</td>', page)


def test_bad_rows_and_formats_say_what_they_want():
    with pytest.raises(ValueError, match=r"rows\[1\] needs 2 values"):
        px.Table(["a", "b"], [[1, 2], [3]])
    with pytest.raises(ValueError, match="formats needs columns"):
        px.Table(["a"], [[1]], formats={"b": "{:.1f}"})
