#!/usr/bin/env python3
"""Golden dequantization of GGUF k-quant blocks (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)
and of the IQ4 formats (IQ4_NL, IQ4_XS), the oracle for core/dtype.cpp's
reading of those formats.

Output: tests/golden/kquant/<type>.blocks  raw super-blocks as a GGUF file stores them
        tests/golden/kquant/<type>.f32     their values, float32, as gguf-py dequantizes them

The blocks are random bytes (every code, grid index, 4- and 6-bit scale and
min, high bit or bit pair and int8 scale occurs), except the f16 scales,
which are drawn from normal finite values (a random f16 may be inf or NaN,
which no quantizer writes). The oracle is gguf-py's `gguf.quants.dequantize`,
written from llama.cpp's reference dequantizers (dequantize_row_q4_K and
the others of ggml-quants.c). Each type has 6144 values (24 super-blocks,
or 192 blocks of 32 for IQ4_NL); q4_k and q6_k come first, so adding types
after them left their files unchanged.

Regenerate (from the repository root):

    python3 -m venv .venv-golden
    .venv-golden/bin/pip install gguf numpy
    .venv-golden/bin/python scripts/golden/make_kquant_goldens.py

Written with gguf 0.19.0, numpy 2.x.
"""

from pathlib import Path

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, quants

OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "kquant"
NUM_BLOCKS = 24

# (type, bytes per block, byte offsets of its f16 scales)
TYPES = [
    ("q4_k", GGMLQuantizationType.Q4_K, 144, [0, 2]),  # d, dmin
    ("q6_k", GGMLQuantizationType.Q6_K, 210, [208]),  # d
    ("q5_k", GGMLQuantizationType.Q5_K, 176, [0, 2]),  # d, dmin
    ("q3_k", GGMLQuantizationType.Q3_K, 110, [108]),  # d
    ("q2_k", GGMLQuantizationType.Q2_K, 84, [80, 82]),  # d, dmin
    ("iq4_xs", GGMLQuantizationType.IQ4_XS, 136, [0]),  # d
    ("iq4_nl", GGMLQuantizationType.IQ4_NL, 18, [0]),  # d
]
NUM_VALUES = 256 * NUM_BLOCKS


def main():
    rng = np.random.default_rng(20261201)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, qtype, size, scale_offsets in TYPES:
        block_values, block_bytes = GGML_QUANT_SIZES[qtype]
        assert block_bytes == size
        count = NUM_VALUES // block_values
        blocks = rng.integers(0, 256, size=(count, size), dtype=np.uint8)
        for off in scale_offsets:
            scales = (rng.standard_normal(count) * 0.01).astype(np.float16)
            blocks[:, off:off + 2] = scales.view(np.uint8).reshape(count, 2)
        values = quants.dequantize(blocks.reshape(1, -1), qtype).astype(np.float32).reshape(-1)
        assert values.size == NUM_VALUES and np.isfinite(values).all()
        (OUT / f"{name}.blocks").write_bytes(blocks.tobytes())
        (OUT / f"{name}.f32").write_bytes(values.tobytes())
        print(f"{name}: {count} blocks, max |value| {np.abs(values).max():.4g}")


if __name__ == "__main__":
    main()
