"""The first page's picture (book/images/first_page.png) is what the package
draws today: tools/first_page_figure.py draws it again and compares bytes."""

import importlib.util
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent / "tools" / "first_page_figure.py"


def test_first_page_picture_is_up_to_date():
    spec = importlib.util.spec_from_file_location("first_page_figure", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main(["--check"]) == 0, (
        "book/images/first_page.png is stale: run "
        ".venv/bin/python tools/first_page_figure.py")
