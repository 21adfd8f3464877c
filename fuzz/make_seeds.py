#!/usr/bin/python3
"""Writes the seed corpora of fuzz/corpus/<target>/ from the repository's own inputs (configs,
fixtures' config.json, eval sets) plus small hand-made files. Run from the repository root with
/usr/bin/python3; the output is committed, so this runs only when the seeds should change."""
import gzip, json, os, struct, zlib

try:
    import zstandard  # not in Debian's base python; fall back to the zstd binary
except ImportError:
    zstandard = None
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def zstd(data):
    return subprocess.run(["zstd", "-q", "-c", "-1"], input=data, check=True,
                          stdout=subprocess.PIPE).stdout


def safetensors(tensors, metadata=None, pad=True):
    header, blobs, off = {}, [], 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


# safetensors: one file per dtype, a scalar, an empty tensor, metadata, and a multi-tensor file.
f32 = struct.pack("<4f", 1.0, -2.5, 3.25, 0.0)
put("safetensors", "f32", safetensors([("w", "F32", [2, 2], f32)], {"format": "pt"}))
put("safetensors", "bf16", safetensors([("w", "BF16", [3], b"\x80\x3f\x00\x40\x00\xc0")]))
put("safetensors", "f16", safetensors([("w", "F16", [1, 2], b"\x00\x3c\x00\xc0")]))
put("safetensors", "f64_scalar", safetensors([("loss", "F64", [], struct.pack("<d", 6.25))]))
put("safetensors", "i64_i32", safetensors([("ids", "I64", [2], struct.pack("<2q", 1, -100)),
                                             ("n", "I32", [1], struct.pack("<i", 7))]))
put("safetensors", "empty_tensor", safetensors([("e", "F32", [0, 4], b"")]))
put("safetensors", "multi", safetensors([("a", "F32", [1], struct.pack("<f", 1)),
                                           ("b.weight", "F32", [2], struct.pack("<2f", 2, 3)),
                                           ("c", "U8", [1], b"\x01")], {"format": "pt", "x": "y"},
                                          pad=False))

# config.json: the fixtures' and the 7B preset.
for case in ["tiny-mha", "tiny-gqa", "tiny-yarn"]:
    with open(os.path.join(ROOT, "tests/data/olmo3", case, "config.json"), "rb") as f:
        put("hf_config", case, f.read())
with open(os.path.join(ROOT, "configs/olmo3-7b.json"), "rb") as f:
    put("hf_config", "olmo3-7b", f.read())

# run configs: the presets, one with overrides after "#--set".
for name in sorted(os.listdir(os.path.join(ROOT, "configs"))):
    if name.endswith(".yaml"):
        with open(os.path.join(ROOT, "configs", name), "rb") as f:
            put("run_config", name[:-5], f.read())
with open(os.path.join(ROOT, "configs/demo.yaml"), "rb") as f:
    put("run_config", "demo-with-set", f.read() + b"\n#--set\noptim.lr=3e-4\ntrain.max_steps=5\n")

# eval sets: the first lines of each bundled set, in every container (first byte = container).
for name in ["sotu_cloze", "sotu_heldout_ppl", "canary_registered"]:
    with open(os.path.join(ROOT, "data/eval", name + ".jsonl"), "rb") as f:
        lines = f.read().split(b"\n")[:3]
    text = b"\n".join(lines) + b"\n"
    put("eval_jsonl", name + ".plain", b"\x00" + text)
    put("eval_jsonl", name + ".gz-of", b"\x01" + text)
    put("eval_jsonl", name + ".zst-of", b"\x02" + text)
    put("eval_jsonl", name + ".gz-raw", b"\x03" + gzip.compress(text))
    put("eval_jsonl", name + ".zst-raw", b"\x04" + zstd(text))
put("eval_jsonl", "pretokenized", b'\x00{"id": 1, "tokens": [5, 6, 7]}\n\n{"id": "b", "tokens": [9]}\n')

# token files: first byte = dtype | seq_len | vocab (see token_file_fuzz.cc).
put("token_file", "u32_seq4_v256", bytes([0b01110110]) + struct.pack("<9I", *range(1, 10)))
put("token_file", "u16_seq2_v64", bytes([0b01010011]) + struct.pack("<7H", 3, 1, 4, 1, 5, 9, 2))
put("token_file", "u32_bad_id", bytes([0b00000000]) + struct.pack("<3I", 0, 1, 70000))
put("token_file", "u32_ragged", bytes([0b01110110]) + b"\x01\x00\x00\x00\x02\x00")

# tokenizer input: even first byte = text, odd = a file read by TextReader.
texts = {
    "english": "The quick brown fox jumps over the lazy dog.\nIt's 2026; numbers 12345 and   spaces.\n",
    "unicode": "naïve café — 日本語のテキスト 🙂 \u00a0nbsp\r\nZeile zwei\n",
    "code": "def f(x):\n    return x**2  # comment\n\n\tTabs\t<|endoftext|> after\n",
}
for name, t in texts.items():
    put("tokenizer", name + ".text", b"\x00" + t.encode())
    put("tokenizer", name + ".file", b"\x01" + t.encode())
put("tokenizer", "english.gz-file", b"\x01" + gzip.compress(texts["english"].encode()))
put("tokenizer", "unicode.zst-file", b"\x01" + zstd(texts["unicode"].encode()))
put("tokenizer", "invalid-utf8", b"\x00abc\xff\xfe\xc3(")
