"""pyxis_nb/data/attention_configs.json, re-derived from transformers'
config classes (tools/attention_configs.py) and compared."""

import json
import pathlib
import sys

import pytest

import pyxis_nb as px

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))


def test_the_shipped_configs_are_transformers_own():
    pytest.importorskip("transformers", reason="transformers is not "
                        "installed: reference check skipped")
    import attention_configs
    shipped = json.loads(px.memory.ATTENTION_CONFIGS.read_text())
    derived = attention_configs.derive()
    assert shipped.keys() == derived.keys()
    for name in derived:
        assert shipped[name] == derived[name], name
    assert px.memory.ATTENTION_CONFIGS.read_text() == (
        attention_configs.dumps(derived))
