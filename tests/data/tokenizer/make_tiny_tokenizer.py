#!/usr/bin/env python3
"""Writes tiny_bytelevel_bpe.tokenizer.json: a minimal Hugging Face byte-level BPE tokenizer.

Vocabulary: the 256 single bytes (id = byte value), spelled in GPT-2's byte-level alphabet, then
the merged tokens 256..262, then two added tokens. Standard library only.
"""
import json
import os


def bytes_to_unicode():
    # GPT-2 encoder.py: printable bytes map to themselves, the rest to 256, 257, ... in byte order.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


B = bytes_to_unicode()


def spell(raw: bytes) -> str:
    return "".join(B[b] for b in raw)


merges = [(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b"hell", b"o"), (b" ", b"w"),
          (b"o", b"r"), (b" w", b"or")]
vocab = {spell(bytes([b])): b for b in range(256)}
for i, (a, b) in enumerate(merges):
    vocab[spell(a + b)] = 256 + i
doc = {
    "version": "1.0",
    "truncation": None,
    "padding": None,
    "added_tokens": [
        {"id": 263, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True},
        {"id": 264, "content": "<pad>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
    ],
    "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                      "use_regex": True},
    "post_processor": None,
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
              "ignore_merges": False, "vocab": vocab,
              "merges": [spell(a) + " " + spell(b) for a, b in merges]},
}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny_bytelevel_bpe.tokenizer.json")
with open(out, "w", encoding="utf-8") as f:
    json.dump(doc, f, ensure_ascii=False, indent=1)
    f.write("\n")
