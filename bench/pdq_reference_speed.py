#!/usr/bin/env python3
"""PDQ hashing speed of the reference: PyPI pdqhash (Meta's C++) on the files of a folder as Pillow decodes them.

Run by bench/pdq-speed.ts, which compares it with `mod hash` on the same folder. Prints one JSON object per
image ({"source", "hash", "quality"}, as `mod hash --ndjson` does) and, last, {"seconds", "images"}: the wall
time of decoding and hashing every file (EXIF orientation applied, then RGB), start-up and imports excluded.

    python3 -m venv bench/.venv && bench/.venv/bin/pip install pdqhash numpy pillow
    bench/.venv/bin/python bench/pdq_reference_speed.py /work/shared/data/ordinary-photos
"""
import json
import os
import sys
import time

import numpy as np
import pdqhash
from PIL import Image, ImageOps


def main(folder):
    files = sorted(os.path.join(folder, n) for n in os.listdir(folder))
    start = time.perf_counter()
    lines = []
    for path in files:
        try:
            image = Image.open(path)
        except OSError:
            continue
        pixels = np.asarray(ImageOps.exif_transpose(image).convert("RGB"))
        bits, quality = pdqhash.compute(pixels)
        lines.append({"source": path, "hash": np.packbits(bits.astype(np.uint8)).tobytes().hex(), "quality": int(quality)})
    seconds = time.perf_counter() - start
    for line in lines:
        print(json.dumps(line))
    print(json.dumps({"seconds": seconds, "images": len(lines)}))


if __name__ == "__main__":
    main(sys.argv[1])
