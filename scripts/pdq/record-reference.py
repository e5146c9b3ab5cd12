#!/usr/bin/env python3
"""Records reference PDQ hashes for mod's tests, with PyPI's pdqhash (Python bindings of Meta's C++ PDQ).

Reads the raw RGB pixels written by scripts/pdq/export-pixels.ts (the pixels mod decodes), hashes them,
with their eight dihedral variants, and writes test/lib/signals/pdq/reference.json. For photo files it
also records the hash of the file as Pillow decodes it, so that the test can report how far two decoders
move the hash.

    pip install pdqhash numpy pillow
    npx tsx scripts/pdq/export-pixels.ts /tmp/pdq-pixels
    python3 scripts/pdq/record-reference.py /tmp/pdq-pixels test/lib/signals/pdq/reference.json
"""
import hashlib
import json
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pdqhash
from PIL import Image, ImageOps

DIHEDRAL = ["original", "rotate90", "rotate180", "rotate270", "flipX", "flipY", "flipPlus1", "flipMinus1"]


def hex_of(bits):
    """pdqhash gives 256 bits, most significant first: the order of the 64-digit hex form."""
    return np.packbits(np.asarray(bits, dtype=np.uint8)).tobytes().hex()


def main(folder, out):
    folder = Path(folder)
    images = []
    for entry in json.loads((folder / "manifest.json").read_text()):
        raw = (folder / entry["raw"]).read_bytes()
        pixels = np.frombuffer(raw, dtype=np.uint8).reshape(entry["height"], entry["width"], 3)
        bits, quality = pdqhash.compute(pixels)
        variants, dihedral_quality = pdqhash.compute_dihedral(pixels)
        assert quality == dihedral_quality
        record = {
            "name": entry["name"],
            "width": entry["width"],
            "height": entry["height"],
            "pixels_sha256": hashlib.sha256(raw).hexdigest(),
            "hash": hex_of(bits),
            "quality": int(quality),
            "dihedral": {d: hex_of(v) for d, v in zip(DIHEDRAL, variants)},
        }
        if entry.get("file"):
            decoded = np.asarray(ImageOps.exif_transpose(Image.open(entry["file"])).convert("RGB"))
            pil_bits, pil_quality = pdqhash.compute(decoded)
            record["pillow"] = {"hash": hex_of(pil_bits), "quality": int(pil_quality)}
        images.append(record)
    doc = {
        "reference": f"pdqhash {version('pdqhash')}, Pillow {version('pillow')}, numpy {version('numpy')}",
        "images": images,
    }
    Path(out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(images)} images -> {out}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: record-reference.py <pixels folder> <out.json>")
    main(sys.argv[1], sys.argv[2])
