#!/usr/bin/env python3
"""Writes the binary seed inputs of the fuzzers (GGUF, safetensors and shm
request records) into OUT/<target>/, for bench/fuzz.sh. Text seeds (JSON
bodies, templates, tokenizer.json) live in fuzz/seeds/ as files.

    python3 fuzz/make_seeds.py OUT
"""
import json
import struct
import sys
from pathlib import Path

# GGUF value types (gguf.h / llama.cpp's gguf spec).
U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(kind, value):
    if kind == STRING:
        return gguf_string(value)
    if kind == ARRAY:
        item_kind, items = value
        body = b"".join(gguf_value(item_kind, v) for v in items)
        return struct.pack("<IQ", item_kind, len(items)) + body
    return struct.pack({U32: "<I", I32: "<i", F32: "<f", BOOL: "<?"}[kind], value)


def gguf(metadata, tensors, alignment=32):
    """metadata: [(key, kind, value)]; tensors: [(name, shape ne[], ggml type, bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for key, kind, value in metadata:
        out += gguf_string(key) + struct.pack("<I", kind) + gguf_value(kind, value)
    offset = 0
    for name, ne, ggml_type, data in tensors:
        out += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", ggml_type, offset)
        offset += (len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * (-len(out) % alignment)
    for _, _, _, data in tensors:
        out += data + b"\0" * (-len(data) % alignment)
    return out


def llama_gguf(vocab_model):
    n_embd, n_ff, n_vocab = 8, 16, 6
    if vocab_model == "gpt2":
        tokens = ["<s>", "</s>", "a", "b", "Ġ", "Ġa"]
    else:
        tokens = ["<s>", "</s>", "▁a", "b", "<0x41>", "▁"]
    meta = [
        ("general.architecture", STRING, "llama"),
        ("llama.context_length", U32, 64),
        ("llama.embedding_length", U32, n_embd),
        ("llama.block_count", U32, 1),
        ("llama.feed_forward_length", U32, n_ff),
        ("llama.attention.head_count", U32, 2),
        ("llama.attention.head_count_kv", U32, 1),
        ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("llama.rope.freq_base", F32, 10000.0),
        ("tokenizer.ggml.model", STRING, vocab_model),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
        ("tokenizer.ggml.token_type", ARRAY, (I32, [3, 3, 1, 1, 1, 1])),
        ("tokenizer.ggml.bos_token_id", U32, 0),
        ("tokenizer.ggml.eos_token_id", U32, 1),
        ("tokenizer.chat_template", STRING, "{% for m in messages %}{{ m.content }}{% endfor %}"),
    ]
    if vocab_model == "gpt2":
        meta.append(("tokenizer.ggml.merges", ARRAY, (STRING, ["Ġ a"])))
    else:
        meta.append(("tokenizer.ggml.scores", ARRAY, (F32, [0.0, 0.0, -1.0, -2.0, -3.0, -4.0])))
    f32 = lambda n: struct.pack(f"<{n}f", *[0.01 * i for i in range(n)])
    kv = n_embd // 2
    tensors = [("token_embd.weight", [n_embd, n_vocab], 0, f32(n_embd * n_vocab)),
               ("output_norm.weight", [n_embd], 0, f32(n_embd)),
               ("blk.0.attn_norm.weight", [n_embd], 0, f32(n_embd)),
               ("blk.0.attn_q.weight", [n_embd, n_embd], 0, f32(n_embd * n_embd)),
               ("blk.0.attn_k.weight", [n_embd, kv], 0, f32(n_embd * kv)),
               ("blk.0.attn_v.weight", [n_embd, kv], 0, f32(n_embd * kv)),
               ("blk.0.attn_output.weight", [n_embd, n_embd], 1, struct.pack(f"<{n_embd * n_embd}e",
                                                                             *[0.5] * (n_embd * n_embd))),
               ("blk.0.ffn_norm.weight", [n_embd], 0, f32(n_embd)),
               ("blk.0.ffn_gate.weight", [n_embd, n_ff], 0, f32(n_embd * n_ff)),
               ("blk.0.ffn_up.weight", [n_embd, n_ff], 0, f32(n_embd * n_ff)),
               ("blk.0.ffn_down.weight", [n_ff, n_embd], 0, f32(n_embd * n_ff))]
    return gguf(meta, tensors)


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)]."""
    header, offset, data = {}, 0, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def shm_record(prompt_kind, prompt, stops=(), stop_ids=(), salt=b"", temperature=0.0, head=b""):
    """One byte of head length, the head (PROMPT_PART bytes), then a zl_shm_request
    (offsets as include/zerolayer/shm_protocol.h lays it out; 256 fixed bytes)."""
    payload = prompt + b"".join(struct.pack("<i", i) for i in stop_ids) + b"".join(stops) + salt
    whole = head + prompt
    r = bytearray(256)
    struct.pack_into("<IIQQQII", r, 0, 1, 0, 7, 0, 0, prompt_kind, len(whole) // 4 if prompt_kind == 1 else len(whole))
    # zl_shm_sampling: temperature, top_k, top_p, min_p, repetition, presence, frequency, has_seed, seed,
    # num_top_logprobs, reserved.
    struct.pack_into("<fifffffIQiI", r, 40, temperature, 0, 1.0, 0.0, 1.0, 0.0, 0.0, 1, 42, 2, 0)
    struct.pack_into("<iifIII", r, 88, 8, 0, 0.0, 0, len(stops), len(stop_ids))  # max_new_tokens .. num_stop_token_ids
    for i, stop in enumerate(stops):
        struct.pack_into("<I", r, 112 + 4 * i, len(stop))
    struct.pack_into("<II", r, 176, len(salt), 0)  # cache_salt_bytes, has_signature
    struct.pack_into("<II", r, 200, len(payload), len(head))  # payload_bytes, prompt_bytes_in_parts
    return bytes([len(head)]) + head + bytes(r) + payload


def chat_payload(messages):
    return b"".join(struct.pack("<II", role, len(text)) + text for role, text in messages)


def main():
    out = Path(sys.argv[1])
    seeds = {
        "gguf_fuzz": {"llama_gpt2.gguf": llama_gguf("gpt2"), "llama_spm.gguf": llama_gguf("llama")},
        "safetensors_fuzz": {
            "two.safetensors": safetensors([("w", "F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
                                            ("b", "BF16", [2], b"\x80\x3f\x00\x40")], {"format": "pt"}),
            "f16.safetensors": safetensors([("x", "F16", [3], struct.pack("<3e", 0.5, -1, 2))]),
        },
        "shm_record_fuzz": {
            "tokens.bin": shm_record(1, struct.pack("<4i", 1, 17, 42, 99), stop_ids=[5]),
            "text.bin": shm_record(2, b"Once upon a time", stops=[b"\n", b"END"], salt=b"tenant-1", temperature=0.8),
            "chat.bin": shm_record(3, chat_payload([(0, b"Be brief."), (1, b"Hi!")])),
            "parts.bin": shm_record(2, b" tail", head=b"a long head "),
        },
    }
    for target, files in seeds.items():
        (out / target).mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (out / target / name).write_bytes(data)


if __name__ == "__main__":
    main()
