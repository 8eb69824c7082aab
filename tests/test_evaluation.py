"""Bits per byte: from the bytes of the very tokens scored."""

import math

import numpy as np
import pytest

import pyxis_nb as px


def test_bits_per_byte_is_total_bits_over_total_bytes():
    token_bytes = np.array([0, 1, 2, 5])                      # (V,)
    labels = np.array([[1, 2], [3, 3]])                       # (B, T)
    loss = 1.5                                                # nats a token
    want = 1.5 * 4 / math.log(2) / (1 + 2 + 5 + 5)
    assert px.evaluation.bits_per_byte(loss, labels, token_bytes) == pytest.approx(want)
    # the same tokens in any shape give the same number
    assert px.evaluation.bits_per_byte(loss, labels.ravel(), token_bytes) == \
        pytest.approx(want)


def test_one_nat_per_byte_long_tokens():
    # a token of 1 byte at ln 2 nats is one bit per byte, whatever V is
    assert px.evaluation.bits_per_byte(np.log(2), np.zeros(7, int), np.ones(3, int)) \
        == pytest.approx(1.0)


def test_bytes_are_those_of_the_tokens_scored_not_of_other_text():
    token_bytes = np.array([1, 4])
    short, long_ = np.zeros(8, int), np.ones(8, int)
    assert px.evaluation.bits_per_byte(2.0, short, token_bytes) == pytest.approx(
        4 * px.evaluation.bits_per_byte(2.0, long_, token_bytes))


def test_token_byte_lengths_add_up_to_the_decoded_text():
    pytest.importorskip("tokenizers")
    tok = px.load_tokenizer(px.SHAKESPEARE_CHECKPOINT)
    lengths = px.evaluation.token_byte_lengths(tok)
    assert lengths.shape == (tok.get_vocab_size(),)
    assert lengths[tok.token_to_id("<|endoftext|>")] == 0  # special
    text = (px.SHAKESPEARE_CHECKPOINT / "heldout.txt").read_text()
    ids = np.array(tok.encode(text).ids)
    assert lengths[ids].sum() == len(tok.decode(ids.tolist()).encode())
    # a cut of the ids (ASCII text here): the bytes of just those tokens
    part = ids[1000:1257]
    assert lengths[part].sum() == len(tok.decode(part.tolist()).encode())


class _WordTokenizer:
    """Not byte-level: a vocabulary of whole words with spaces in them."""

    def get_added_tokens_decoder(self):
        return {}

    def get_vocab_size(self):
        return 2

    def id_to_token(self, i):
        return ["ab", "a b"][i]


def test_a_tokenizer_that_is_not_byte_level_is_refused():
    with pytest.raises(ValueError, match=r"tokenizer needs a byte-level BPE "
                       r"vocabulary: token 1 'a b' has characters outside"):
        px.evaluation.token_byte_lengths(_WordTokenizer())


def _training_script():
    """tools/train_qwen3.py as a module (it needs torch and transformers)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "tools" / "train_qwen3.py"
    spec = importlib.util.spec_from_file_location("train_qwen3", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_training_scripts_kneser_ney_trigram_is_a_distribution():
    tq = _training_script()
    V = tq.VOCAB_SIZE
    train = np.random.default_rng(0).integers(0, 40, 5_000)
    train[::7] = 3                       # some structure to count
    every = np.arange(V)
    for u, v in [(3, 5), (-1, 5), (1_000, 2_000), (train[10], train[11])]:
        p = tq.kneser_ney_trigram_probs(train, np.full(V, u), np.full(V, v),
                                        every)           # P(w | u v), (V,)
        assert p.min() > 0 and p.sum() == pytest.approx(1.0)


def test_the_training_script_scores_every_baseline_on_the_same_blocks():
    tq = _training_script()
    val = np.arange(3 * tq.BLOCK + 7) % 50
    inputs, labels = tq.scored_blocks(val)
    assert inputs.shape == labels.shape == (3, tq.BLOCK)
    np.testing.assert_array_equal(labels.ravel(), val[1:3 * tq.BLOCK + 1])
