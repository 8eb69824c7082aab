"""What transformers computes from SmolLM2's GGUF file: the reference
that tests/test_gguf.py compares pyxis_nb with.

Run as a script, in a fresh interpreter that imports neither pyxis_nb nor
the tests (``python tests/smollm2_reference.py FILE.gguf OUT.npz``): it
loads the file with transformers' own GGUF loader as a user does (no
patch, no option but float32 and eager attention) and writes to OUT:

- ``logits``: the logits of IDS, (1, len(IDS), V);
- ``greedy``: ``generate`` of PROMPT, NEW_TOKENS greedy tokens, prompt
  included;
- ``record``: JSON of the state dict (name -> shape, dtype, sha256 of the
  float32 bytes: equal hashes are equal tensors, without keeping 540 MB),
  the tokenizer's ids and decoded text of each of TEXTS, and the chat
  template rendered for each of CHATS, without and with the generation
  prompt.

The test keeps OUT in the cache folder, keyed by the file's sha256, this
script's text and the versions of the packages that compute it, so the
model is loaded once, not once per run (about 25 s on this machine).
"""

import hashlib
import json
import sys

import numpy as np

IDS = [504, 3575, 282, 4649, 314, 1345, 30, 216, 49_151]
PROMPT = [504, 3575, 282, 4649, 314]  # The capital of France is
NEW_TOKENS = 8
TEXTS = {
    "english": "The quick brown fox jumps over the lazy dog.",
    "code": "def f(x):\n    return x ** 2  # square\n\tif x != 0: pass",
    "unicode": "naïve café — “quotes”, emoji 🙂, ½ ∑ ∞, Ελληνικά",
    "japanese": "今日は良い天気ですね。東京へ行きます。",
    "special": "<|im_start|>user\nHi<|im_end|>\n",
}
CHAT = [{"role": "user", "content": "What is the capital of France?"}]
CHATS = [CHAT, [{"role": "system", "content": "Be brief."}, *CHAT,
                {"role": "assistant", "content": "Paris."},
                {"role": "user", "content": "And of Japan?"}]]
PACKAGES = ("torch", "transformers", "accelerate", "gguf", "tokenizers",
            "numpy", "jinja2")


def tensor_record(array: np.ndarray) -> list:
    """[shape, dtype, sha256 of the C-ordered bytes] of ``array``."""
    array = np.ascontiguousarray(array)
    return [list(array.shape), str(array.dtype),
            hashlib.sha256(memoryview(array).cast("B")).hexdigest()]


def compute(file: str) -> dict:
    """The reference of the GGUF file ``file`` (see the module docstring)."""
    import pathlib

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = pathlib.Path(file)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32,
        attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(path.parent,
                                              gguf_file=path.name)
    with torch.no_grad():
        logits = model(torch.tensor([IDS])).logits.numpy()
        greedy = model.generate(torch.tensor([PROMPT]),
                                max_new_tokens=NEW_TOKENS,
                                do_sample=False).numpy()[0]
    tokens = {}
    for kind, text in TEXTS.items():
        ids = tokenizer(text)["input_ids"]
        tokens[kind] = {"ids": ids, "decoded": tokenizer.decode(ids)}
    chats = [[tokenizer.apply_chat_template(
        chat, tokenize=False, add_generation_prompt=prompt)
        for prompt in (False, True)] for chat in CHATS]
    state = {name: tensor_record(t.numpy())
             for name, t in model.state_dict().items()}
    return {"logits": logits, "greedy": greedy,
            "record": {"state": state, "tokens": tokens, "chats": chats}}


def main(file: str, out: str) -> None:
    ref = compute(file)
    np.savez(out, logits=ref["logits"], greedy=ref["greedy"],
             record=np.array(json.dumps(ref["record"])))


if __name__ == "__main__":
    main(*sys.argv[1:])
