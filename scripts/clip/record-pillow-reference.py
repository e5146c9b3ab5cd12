"""Records how OpenAI CLIP's own preprocessing resizes the comparison images, for test/lib/image/clip-pillow.test.ts.

OpenAI CLIP's `_transform` (openai/CLIP clip/clip.py, commit 0848ed71e5bb5b4eaaa4048364001877630345dc) is
torchvision's Resize(n_px, interpolation=BICUBIC), CenterCrop(n_px), ToTensor and Normalize on a PIL image. For a PIL
image, torchvision's resize (pytorch/vision torchvision/transforms/functional.py, commit
01175db1c2b1ced3515f9aeeb4cf7dc4f001e78d) gives the shorter side n_px and the longer int(n_px * long / short), and
calls Pillow's `img.resize((w, h), BICUBIC)` with no reducing_gap: one separable convolution whose kernel widens with
the reduction (python-pillow/Pillow src/libImaging/Resample.c, precompute_coeffs, commit
d374015504df2c7f0316154deade1bc1fa5075df), so it filters before it samples. Hugging Face's CLIPImageProcessor does
the same resize with Pillow (huggingface/transformers src/transformers/image_transforms.py). This script does that resize, with Pillow itself, on the pixels mod decodes
(scripts/clip/export-pixels.ts writes them as PNG, so that no JPEG decoder differs), and crops the centre as mod
does (offset floor((size - crop) / 2), as Hugging Face's center_crop; torchvision's CenterCrop rounds a half
pixel up instead). /255 and the mean/std are exact arithmetic on 8-bit levels, so the record is the 8-bit crop:
per image its per-channel mean and the levels on a grid of every STRIDE-th pixel (base64, row-major RGB), with
BICUBIC for every image and BILINEAR (what a manifest with resample "bilinear" asks for) for some.

    python3 -m venv /tmp/clipvenv
    /tmp/clipvenv/bin/pip install pillow numpy
    npx tsx scripts/clip/export-pixels.ts /tmp/clip-pixels
    /tmp/clipvenv/bin/python scripts/clip/record-pillow-reference.py /tmp/clip-pixels

Python is needed for this script only: mod itself never runs it.
"""
import base64
import hashlib
import json
import os
import sys
from importlib.metadata import version

import numpy as np
from PIL import Image

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "test/fixtures/clip-pillow-reference.json")
SIZE = 224
CROP = 224
# The grid of crop pixels recorded: x and y in range(START, CROP, STRIDE).
START = 2
STRIDE = 4
BILINEAR_TOO = ("photo/astronaut.jpg", "mosaic-3072x1536", "zone-plate-1600x1200", "stripes-1000x600", "chelsea-crop-120x90")


def resized_size(width, height):
    """torchvision's Resize(int) for a PIL image: the shorter side to SIZE, the longer int(SIZE * long / short)."""
    if width <= height:
        return SIZE, int(SIZE * height / width)
    return int(SIZE * width / height), SIZE


def record(image, size, resample):
    resized = image.resize(size, resample) if size != image.size else image
    left = (size[0] - CROP) // 2
    top = (size[1] - CROP) // 2
    crop = np.asarray(resized.crop((left, top, left + CROP, top + CROP)))
    grid = crop[START::STRIDE, START::STRIDE, :]
    return {
        "mean": [round(float(crop[:, :, c].mean()), 4) for c in range(3)],
        "grid": base64.b64encode(np.ascontiguousarray(grid).tobytes()).decode("ascii"),
    }


def main(folder):
    with open(os.path.join(folder, "manifest.json")) as f:
        manifest = json.load(f)
    images = []
    for entry in manifest:
        image = Image.open(os.path.join(folder, entry["png"]))
        if image.mode != "RGB":
            sys.exit(f"{entry['png']}: mode {image.mode}, expected RGB")
        digest = hashlib.sha256(np.asarray(image).tobytes()).hexdigest()
        if digest != entry["sha256"] or image.size != (entry["width"], entry["height"]):
            sys.exit(f"{entry['png']} does not hold the pixels the manifest names for {entry['name']}")
        size = resized_size(*image.size)
        item = {
            "name": entry["name"],
            "width": entry["width"],
            "height": entry["height"],
            "pixels_sha256": digest,
            "resized": list(size),
            "bicubic": record(image, size, Image.BICUBIC),
        }
        if entry["name"] in BILINEAR_TOO:
            item["bilinear"] = record(image, size, Image.BILINEAR)
        images.append(item)
    doc = {
        "generator": "scripts/clip/record-pillow-reference.py",
        "reference": f"Pillow {version('pillow')}, numpy {version('numpy')}",
        "size": SIZE,
        "crop": CROP,
        "grid": {"start": START, "stride": STRIDE},
        "images": images,
    }
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{len(images)} images -> {OUT}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: record-pillow-reference.py <folder written by scripts/clip/export-pixels.ts>")
    main(sys.argv[1])
