"""Records NudeNet's own detections on the parity images, for test/lib/signals/nudenet/parity.test.ts.

Runs the nudenet package (its _read_image, the ONNX model and _postprocess, exactly as NudeDetector.detect does)
on every image of test/fixtures/photos and test/fixtures/nudenet, and writes test/fixtures/nudenet-reference.json:
per image, the detections with their class, score and box [x, y, w, h] in original-image pixels, and a sample of
the model's input (the blob _read_image makes: per channel plane, its mean and the values at a few fixed
pixels), so that a parity failure tells preprocessing (size, padding, channel order) from decoding.

    python3 -m venv /tmp/nnvenv
    /tmp/nnvenv/bin/pip install nudenet==3.4.2 onnxruntime opencv-python-headless
    /tmp/nnvenv/bin/python scripts/nudenet/record-reference.py

Python is needed for this script only: mod itself never runs it.
"""
import hashlib
import json
import os
import sys

import cv2
import nudenet
import onnxruntime
from nudenet.nudenet import NudeDetector, _read_image

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FOLDERS = ["test/fixtures/photos", "test/fixtures/nudenet"]
OUT = os.path.join(ROOT, "test/fixtures/nudenet-reference.json")
# Pixels (y, x) of the 320 x 320 input sampled in every channel plane.
SAMPLES = [(0, 0), (10, 300), (80, 160), (160, 40), (160, 160), (200, 250), (250, 90), (319, 319)]
SHA256 = "c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f"


def main():
    model = os.path.join(os.path.dirname(nudenet.__file__), "320n.onnx")
    with open(model, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != SHA256:
        sys.exit(f"{model} has sha256 {digest}, expected {SHA256}")
    detector = NudeDetector()
    images = {}
    for folder in FOLDERS:
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if not name.lower().endswith((".jpg", ".jpeg", ".png")):
                continue
            path = os.path.join(ROOT, folder, name)
            mat = cv2.imread(path)
            detections = detector.detect(path)
            blob = _read_image(path, 320)[0][0]
            images[f"{folder}/{name}"] = {
                "width": int(mat.shape[1]),
                "height": int(mat.shape[0]),
                "input": [
                    {"mean": round(float(plane.mean()), 6), "samples": [round(float(plane[y, x]), 6) for y, x in SAMPLES]}
                    for plane in blob
                ],
                "detections": [
                    {"label": d["class"], "score": round(d["score"], 6), "box": d["box"]} for d in detections
                ],
            }
    record = {
        "generator": "scripts/nudenet/record-reference.py",
        "nudenet": "3.4.2",
        "opencv": cv2.__version__,
        "onnxruntime": onnxruntime.__version__,
        "model_sha256": SHA256,
        "input_samples": SAMPLES,
        "images": images,
    }
    with open(OUT, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    found = sum(len(v["detections"]) for v in images.values())
    print(f"{len(images)} images, {found} detections -> {OUT}")


if __name__ == "__main__":
    main()
