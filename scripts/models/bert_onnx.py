"""Exports a BERT-family sentence-transformers model directory to ONNX, for ONNX Runtime.

    bert_onnx.py MODEL_DIR

writes MODEL_DIR/onnx/model.onnx (float32) and MODEL_DIR/onnx/model_qint8.onnx (int8 weights,
per channel, dynamic activations), the layout of Hugging Face's ONNX exports: inputs
input_ids, attention_mask, token_type_ids (int64, batch x sequence), output last_hidden_state.

The graph is written node by node from config.json and model.safetensors (no PyTorch), in
the shape PyTorch's exporter gives BERT, so that ONNX Runtime's transformer optimizer fuses
it (EmbedLayerNormalization, Attention, SkipLayerNormalization, BiasGelu) before it is
quantized. Each file is checked against a NumPy forward pass of the same weights before it
is kept: float32 must agree to cosine 0.99999, int8 to 0.98, on mean-pooled vectors.
"""
import json
import os
import struct
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        arr = np.frombuffer(data[start:end], dtype=DTYPES[meta["dtype"]]).reshape(meta["shape"])
        key = name[len("bert."):] if name.startswith("bert.") else name
        out[key] = arr.astype(np.float32) if arr.dtype == np.float16 else arr
    return out


def build(model_dir, out_path):
    """The unfused float32 graph."""
    cfg = json.load(open(f"{model_dir}/config.json"))
    w = read_safetensors(f"{model_dir}/model.safetensors")
    hidden = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    head_dim = hidden // heads
    eps = cfg.get("layer_norm_eps", 1e-12)
    if cfg.get("hidden_act", "gelu") != "gelu":
        sys.exit(f"{model_dir}: hidden_act {cfg.get('hidden_act')}: only erf GELU is exported")

    inits = []
    nodes = []
    seen = set()

    def const(name, arr):
        if name not in seen:
            seen.add(name)
            inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    counter = [0]

    def node(op, inputs, **attrs):
        counter[0] += 1
        out = f"{op.lower()}_{counter[0]}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def linear(x, prefix):
        wt = const(f"{prefix}.weight_t", w[f"{prefix}.weight"].T.copy())
        b = const(f"{prefix}.bias", w[f"{prefix}.bias"])
        return node("Add", [node("MatMul", [x, wt]), b])

    def layer_norm(x, prefix):
        g = const(f"{prefix}.weight", w[f"{prefix}.weight"])
        b = const(f"{prefix}.bias", w[f"{prefix}.bias"])
        return node("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)

    def gelu(x):
        """BERT's erf GELU, 0.5 * x * (1 + erf(x / sqrt(2))), as the optimizer's BiasGelu."""
        inner = node("Erf", [node("Div", [x, const("sqrt2", np.array(np.sqrt(2.0), np.float32))])])
        one = const("one", np.array(1.0, np.float32))
        return node("Mul", [node("Mul", [x, node("Add", [inner, one])]),
                            const("half", np.array(0.5, np.float32))])

    # embeddings
    seq_len = node("Gather", [node("Shape", ["input_ids"]), const("idx1", np.array(1, np.int64))], axis=0)
    positions = node("Unsqueeze", [node("Range", [const("zero_i", np.array(0, np.int64)), seq_len,
                                                  const("one_i", np.array(1, np.int64))]),
                                   const("axes0", np.array([0], np.int64))])
    emb = node("Add", [
        node("Add", [
            node("Gather", [const("word", w["embeddings.word_embeddings.weight"]), "input_ids"], axis=0),
            node("Gather", [const("pos", w["embeddings.position_embeddings.weight"]), positions], axis=0),
        ]),
        node("Gather", [const("type", w["embeddings.token_type_embeddings.weight"]), "token_type_ids"], axis=0),
    ])
    x = layer_norm(emb, "embeddings.LayerNorm")

    # additive attention mask (B,1,1,S)
    mask4 = node("Unsqueeze", [node("Unsqueeze", ["attention_mask", const("axes1", np.array([1], np.int64))]),
                               const("axes2", np.array([2], np.int64))])
    mask_f = node("Cast", [mask4], to=TensorProto.FLOAT)
    mask_bias = node("Mul", [node("Sub", [const("one_f", np.array(1.0, np.float32)), mask_f]),
                             const("neg", np.array(-10000.0, np.float32))])

    split_shape = const("split_shape", np.array([0, 0, heads, head_dim], np.int64))
    merge_shape = const("merge_shape", np.array([0, 0, hidden], np.int64))
    scale = const("scale", np.array(np.sqrt(head_dim), np.float32))

    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q = node("Transpose", [node("Reshape", [linear(x, f"{p}.attention.self.query"), split_shape])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [linear(x, f"{p}.attention.self.key"), split_shape])], perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [linear(x, f"{p}.attention.self.value"), split_shape])], perm=[0, 2, 1, 3])
        scores = node("Add", [node("Div", [node("MatMul", [q, k]), scale]), mask_bias])
        probs = node("Softmax", [scores], axis=-1)
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_shape])
        attn = linear(ctx, f"{p}.attention.output.dense")
        x = layer_norm(node("Add", [attn, x]), f"{p}.attention.output.LayerNorm")
        ff = linear(gelu(linear(x, f"{p}.intermediate.dense")), f"{p}.output.dense")
        x = layer_norm(node("Add", [ff, x]), f"{p}.output.LayerNorm")

    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    ints = lambda name: helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
    graph = helper.make_graph(
        nodes, "bert",
        [ints("input_ids"), ints("attention_mask"), ints("token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out_path)


def reference(model_dir, ids, mask):
    """Mean-pooled, normalised vectors of a NumPy forward pass (erf GELU only)."""
    from math import erf

    cfg = json.load(open(f"{model_dir}/config.json"))
    w = read_safetensors(f"{model_dir}/model.safetensors")
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    eps = cfg.get("layer_norm_eps", 1e-12)
    verf = np.vectorize(erf)

    def ln(x, p):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + eps) * w[p + ".weight"] + w[p + ".bias"]

    def lin(x, p):
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    b, s = ids.shape
    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][:s][None]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = ln(x, "embeddings.LayerNorm")
    bias = (1 - mask[:, None, None, :]) * -10000.0
    d = hidden // heads
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        split = lambda t: t.reshape(b, s, heads, d).transpose(0, 2, 1, 3)
        q = split(lin(x, p + ".attention.self.query"))
        k = split(lin(x, p + ".attention.self.key"))
        v = split(lin(x, p + ".attention.self.value"))
        a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + bias
        a = np.exp(a - a.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        c = (a @ v).transpose(0, 2, 1, 3).reshape(b, s, hidden)
        x = ln(lin(c, p + ".attention.output.dense") + x, p + ".attention.output.LayerNorm")
        h = lin(x, p + ".intermediate.dense")
        h = 0.5 * h * (1 + verf(h / np.sqrt(2)))
        x = ln(lin(h, p + ".output.dense") + x, p + ".output.LayerNorm")
    return pool(x, mask)


def pool(states, mask):
    m = mask[..., None].astype(np.float32)
    v = (states * m).sum(1) / m.sum(1)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def check(path, model_dir, min_cosine):
    import onnxruntime as ort

    rng = np.random.default_rng(7)
    ids = rng.integers(1000, 29000, (3, 16))
    ids[:, 0], ids[:, -1] = 101, 102
    mask = np.ones_like(ids)
    ids[2, 9:], mask[2, 9:], ids[2, 8] = 0, 0, 102
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = session.run(None, {"input_ids": ids, "attention_mask": mask,
                             "token_type_ids": np.zeros_like(ids)})[0]
    cosine = (pool(out, mask) * reference(model_dir, ids, mask)).sum(1).min()
    if cosine < min_cosine:
        sys.exit(f"{path}: cosine {cosine:.6f} to the NumPy forward pass, below {min_cosine}")
    return cosine


def export(model_dir):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    cfg = json.load(open(f"{model_dir}/config.json"))
    out_dir = os.path.join(model_dir, "onnx")
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        raw = os.path.join(tmp, "raw.onnx")
        build(model_dir, raw)
        fused = optimizer.optimize_model(raw, model_type="bert", num_heads=cfg["num_attention_heads"],
                                         hidden_size=cfg["hidden_size"], opt_level=0)
        f32 = os.path.join(tmp, "model.onnx")
        fused.save_model_to_file(f32)
        int8 = os.path.join(tmp, "model_qint8.onnx")
        quantize_dynamic(f32, int8, weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"DefaultTensorType": TensorProto.FLOAT})
        print("float32: cosine %.6f, int8: cosine %.6f to the NumPy forward pass"
              % (check(f32, model_dir, 0.99999), check(int8, model_dir, 0.98)), file=sys.stderr)
        for name in ("model.onnx", "model_qint8.onnx"):
            os.replace(os.path.join(tmp, name), os.path.join(out_dir, name))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    export(sys.argv[1])
