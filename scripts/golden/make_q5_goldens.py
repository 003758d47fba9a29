#!/usr/bin/env python3
"""Golden GGUF Q5_0 / Q5_1 blocks, the oracle for core/dtype.cpp's reading of
those formats and for kernels/cpu/quantize.cpp's writing of them.

Output, per type (q5_0, q5_1) in tests/golden/q5/:
  <type>.blocks     24 random blocks as a GGUF file stores them
  <type>.f32        their 768 values, float32, as gguf-py dequantizes them
  <type>.input.f32  16 blocks of f32 weights (512 values)
  <type>.quantized  those weights as gguf-py quantizes them

The random blocks are random bytes (every 5-bit code and high-bit pattern
occurs), except the f16 scale d (and Q5_1's min m), drawn from finite normal
values (a random f16 may be inf or NaN, which no quantizer writes). The
weights are normal values of varied magnitude per block, with an all-zero
block and a constant block (d = 0 for Q5_1) among them. The oracle is
gguf-py's `gguf.quants`, whose Q5_0 / Q5_1 are written from llama.cpp's
reference code (dequantize_row_q5_0 / _q5_1 and quantize_row_q5_0_ref /
_q5_1_ref): both compute in f32 with one rounding per operation, so the
engine must match them bit for bit.

Regenerate (from the repository root):

    python3 -m venv .venv-golden
    .venv-golden/bin/pip install gguf numpy
    .venv-golden/bin/python scripts/golden/make_q5_goldens.py

Written with gguf 0.19.0, numpy 2.x.
"""

from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, quants

OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "q5"
NUM_RANDOM_BLOCKS = 24
NUM_INPUT_BLOCKS = 16

# (name, type, bytes per 32-value block, byte offsets of its f16 scales)
TYPES = [
    ("q5_0", GGMLQuantizationType.Q5_0, 22, [0]),  # d
    ("q5_1", GGMLQuantizationType.Q5_1, 24, [0, 2]),  # d, m
]


def weights(rng):
    scale = np.exp(rng.uniform(np.log(1e-3), np.log(10.0), size=(NUM_INPUT_BLOCKS, 1)))
    x = (rng.standard_normal((NUM_INPUT_BLOCKS, 32)) * scale).astype(np.float32)
    x[3] = 0.0  # all zero: d = 0
    x[7] = np.float32(0.375)  # constant: Q5_0 codes all 0, Q5_1 d = 0
    x[11] += np.float32(2.0)  # all positive: Q5_1's min above zero
    return x.reshape(-1)


def main():
    rng = np.random.default_rng(20261203)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, qtype, size, scale_offsets in TYPES:
        blocks = rng.integers(0, 256, size=(NUM_RANDOM_BLOCKS, size), dtype=np.uint8)
        for off in scale_offsets:
            scales = (rng.standard_normal(NUM_RANDOM_BLOCKS) * 0.01).astype(np.float16)
            blocks[:, off:off + 2] = scales.view(np.uint8).reshape(NUM_RANDOM_BLOCKS, 2)
        values = quants.dequantize(blocks.reshape(1, -1), qtype).astype(np.float32).reshape(-1)
        assert values.dtype == np.float32 and values.size == 32 * NUM_RANDOM_BLOCKS
        assert np.isfinite(values).all()
        x = weights(rng)
        q = quants.quantize(x.reshape(1, -1), qtype).reshape(-1)
        assert q.dtype == np.uint8 and q.size == size * NUM_INPUT_BLOCKS
        (OUT / f"{name}.blocks").write_bytes(blocks.tobytes())
        (OUT / f"{name}.f32").write_bytes(values.tobytes())
        (OUT / f"{name}.input.f32").write_bytes(x.tobytes())
        (OUT / f"{name}.quantized").write_bytes(q.tobytes())
        print(f"{name}: {NUM_RANDOM_BLOCKS} random blocks, max |value| {np.abs(values).max():.4g}; "
              f"{NUM_INPUT_BLOCKS} quantized blocks")


if __name__ == "__main__":
    main()
