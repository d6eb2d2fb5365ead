"""Exports an MPNet sentence-transformers model directory (all-mpnet-base-v2) to ONNX.

    mpnet_onnx.py MODEL_DIR

writes MODEL_DIR/onnx/model.onnx (float32) and MODEL_DIR/onnx/model_qint8.onnx (int8 weights,
per channel, dynamic activations; the feed-forward output layers are kept in float, which
quantize worst). Inputs input_ids, attention_mask (int64, batch x sequence), output
last_hidden_state: MPNet has no token types, so there is no token_type_ids input.

MPNet is not BERT, and the graph is written for it node by node from config.json and
model.safetensors (no PyTorch):
- no token-type embeddings; position ids count the non-padding tokens from padding_idx + 1
  (as RoBERTa's do), padding tokens take padding_idx;
- every layer adds to its attention scores a relative position bias shared by all layers: the
  distance j - i between key and query is put in one of `relative_attention_num_buckets`
  buckets (exact up to 8 each way, logarithmic up to 128, one bucket per direction beyond),
  each bucket holding one learned value per head.
ONNX Runtime's transformer optimizer then fuses what it recognises (layer norms, GELU) before
the graph is quantized. Each file is checked against a NumPy forward pass of the same weights
before it is kept: float32 must agree to cosine 0.99999, int8 to 0.97, on the mean-pooled vectors of a few
English sentences (int8 keeps about 0.98-0.99 on them).
"""
import json
import math
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
        key = name[len("mpnet."):] if name.startswith("mpnet.") else name
        out[key] = arr.astype(np.float32) if arr.dtype == np.float16 else arr
    return out


def load_config(model_dir):
    cfg = json.load(open(f"{model_dir}/config.json"))
    if cfg.get("model_type") != "mpnet":
        sys.exit(f"{model_dir}: model_type {cfg.get('model_type')!r}, not mpnet")
    if cfg.get("hidden_act", "gelu") != "gelu":
        sys.exit(f"{model_dir}: hidden_act {cfg.get('hidden_act')}: only erf GELU is exported")
    return cfg


def relative_bucket(relative, num_buckets=32, max_distance=128):
    """MPNet's (T5's bidirectional) bucket of each key-minus-query distance, in float32 as
    PyTorch computes it."""
    n = -np.asarray(relative, np.int64)
    half = num_buckets // 2
    ret = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    max_exact = half // 2
    with np.errstate(divide="ignore"):
        scaled = (np.log(n.astype(np.float32) / np.float32(max_exact))
                  / np.float32(math.log(max_distance / max_exact))
                  * np.float32(half - max_exact))
    large = max_exact + np.where(n > 0, scaled, 0).astype(np.int64)
    large = np.minimum(large, half - 1)
    return ret + np.where(n < max_exact, n, large)


def build(model_dir, out_path):
    """The unfused float32 graph."""
    cfg = load_config(model_dir)
    w = read_safetensors(f"{model_dir}/model.safetensors")
    hidden = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    head_dim = hidden // heads
    eps = cfg.get("layer_norm_eps", 1e-5)
    pad = cfg.get("pad_token_id", 1)
    max_pos = cfg["max_position_embeddings"]
    buckets = cfg.get("relative_attention_num_buckets", 32)

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
        nodes.append(helper.make_node(op, inputs, [out], name=f"{op}_{counter[0]}", **attrs))
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
        """erf GELU, 0.5 * x * (1 + erf(x / sqrt(2))), as the optimizer's BiasGelu."""
        inner = node("Erf", [node("Div", [x, const("sqrt2", np.array(np.sqrt(2.0), np.float32))])])
        one = const("one", np.array(1.0, np.float32))
        return node("Mul", [node("Mul", [x, node("Add", [inner, one])]),
                            const("half", np.array(0.5, np.float32))])

    # embeddings: words plus positions counted over the non-padding tokens from pad + 1
    real = node("Cast", [node("Not", [node("Equal", ["input_ids", const("pad_id", np.array(pad, np.int64))])])],
                to=TensorProto.INT64)
    positions = node("Add", [node("Mul", [node("CumSum", [real, const("axis1", np.array(1, np.int64))]), real]),
                             const("pad_id", np.array(pad, np.int64))])
    emb = node("Add", [
        node("Gather", [const("word", w["embeddings.word_embeddings.weight"]), "input_ids"], axis=0),
        node("Gather", [const("pos", w["embeddings.position_embeddings.weight"]), positions], axis=0),
    ])
    x = layer_norm(emb, "embeddings.LayerNorm")

    # relative position bias (1, heads, S, S), shared by every layer: key index j minus query
    # index i, looked up in a table of every distance's bucket, then in the learned biases
    seq_len = node("Gather", [node("Shape", ["input_ids"]), const("idx1", np.array(1, np.int64))], axis=0)
    steps = node("Range", [const("zero_i", np.array(0, np.int64)), seq_len, const("one_i", np.array(1, np.int64))])
    rel = node("Sub", [node("Unsqueeze", [steps, const("axes0", np.array([0], np.int64))]),
                       node("Unsqueeze", [steps, const("axes1", np.array([1], np.int64))])])
    table = relative_bucket(np.arange(-(max_pos - 1), max_pos), buckets)
    bucket = node("Gather", [const("bucket_table", table),
                             node("Add", [rel, const("max_distance", np.array(max_pos - 1, np.int64))])], axis=0)
    bias = node("Gather", [const("relative_attention_bias", w["encoder.relative_attention_bias.weight"]), bucket],
                axis=0)
    position_bias = node("Unsqueeze", [node("Transpose", [bias], perm=[2, 0, 1]),
                                       const("axes0", np.array([0], np.int64))])

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
        q = node("Transpose", [node("Reshape", [linear(x, f"{p}.attention.attn.q"), split_shape])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [linear(x, f"{p}.attention.attn.k"), split_shape])], perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [linear(x, f"{p}.attention.attn.v"), split_shape])], perm=[0, 2, 1, 3])
        scores = node("Add", [node("Add", [node("Div", [node("MatMul", [q, k]), scale]), position_bias]), mask_bias])
        probs = node("Softmax", [scores], axis=-1)
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_shape])
        attn = linear(ctx, f"{p}.attention.attn.o")
        x = layer_norm(node("Add", [attn, x]), f"{p}.attention.LayerNorm")
        ff = linear(gelu(linear(x, f"{p}.intermediate.dense")), f"{p}.output.dense")
        x = layer_norm(node("Add", [ff, x]), f"{p}.output.LayerNorm")

    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    ints = lambda name: helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
    graph = helper.make_graph(
        nodes, "mpnet",
        [ints("input_ids"), ints("attention_mask")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out_path)


def reference(model_dir, ids, mask):
    """Mean-pooled, normalised vectors of a NumPy forward pass of MPNet."""
    from math import erf

    cfg = load_config(model_dir)
    w = read_safetensors(f"{model_dir}/model.safetensors")
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    eps = cfg.get("layer_norm_eps", 1e-5)
    pad = cfg.get("pad_token_id", 1)
    verf = np.vectorize(erf)

    def ln(x, p):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + eps) * w[p + ".weight"] + w[p + ".bias"]

    def lin(x, p):
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    b, s = ids.shape
    real = (ids != pad).astype(np.int64)
    positions = np.cumsum(real, axis=1) * real + pad
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions]
    x = ln(x, "embeddings.LayerNorm")
    steps = np.arange(s)
    rel_bucket = relative_bucket(steps[None, :] - steps[:, None], cfg.get("relative_attention_num_buckets", 32))
    position_bias = w["encoder.relative_attention_bias.weight"][rel_bucket].transpose(2, 0, 1)[None]
    bias = (1 - mask[:, None, None, :]) * -10000.0
    d = hidden // heads
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        split = lambda t: t.reshape(b, s, heads, d).transpose(0, 2, 1, 3)
        q = split(lin(x, p + ".attention.attn.q"))
        k = split(lin(x, p + ".attention.attn.k"))
        v = split(lin(x, p + ".attention.attn.v"))
        a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + position_bias + bias
        a = np.exp(a - a.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        c = (a @ v).transpose(0, 2, 1, 3).reshape(b, s, hidden)
        x = ln(lin(c, p + ".attention.attn.o") + x, p + ".attention.LayerNorm")
        h = lin(x, p + ".intermediate.dense")
        h = 0.5 * h * (1 + verf(h / np.sqrt(2)))
        x = ln(lin(h, p + ".output.dense") + x, p + ".output.LayerNorm")
    return pool(x, mask)


def pool(states, mask):
    m = mask[..., None].astype(np.float32)
    v = (states * m).sum(1) / m.sum(1)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


TEXTS = [
    "We chose PostgreSQL over MySQL because of its JSONB support and transactional DDL.",
    "Why did the team pick this database?",
    "Deploys are frozen on Fridays after 3pm; hotfixes need two approvals.",
    "hello world",
]


def wordpiece(model_dir, text):
    """The token ids of `text` by the directory's WordPiece vocabulary (lowercased, split at
    spaces and punctuation: enough for the plain English of TEXTS), between <s> and </s>."""
    import re

    tok = json.load(open(f"{model_dir}/tokenizer.json"))
    vocab = tok["model"]["vocab"]
    ids = [vocab["<s>"]]
    for word in re.findall(r"\w+|[^\w\s]", text.lower()):
        start = 0
        while start < len(word):
            end = len(word)
            while end > start and (word[start:end] if start == 0 else "##" + word[start:end]) not in vocab:
                end -= 1
            if end == start:
                ids.append(vocab["[UNK]"])
                break
            ids.append(vocab[word[start:end] if start == 0 else "##" + word[start:end]])
            start = end
    return ids + [vocab["</s>"]]


def sample(model_dir, pad):
    """TEXTS and, last, all of them five times over (about 150 tokens, so that distances reach
    the logarithmic and the last buckets), padded to the longest."""
    texts = [wordpiece(model_dir, t) for t in TEXTS + [" ".join(TEXTS * 5)]]
    width = max(map(len, texts))
    ids = np.full((len(texts), width), pad, np.int64)
    mask = np.zeros_like(ids)
    for i, t in enumerate(texts):
        ids[i, :len(t)], mask[i, :len(t)] = t, 1
    return ids, mask


def check(path, model_dir, min_cosine):
    import onnxruntime as ort

    ids, mask = sample(model_dir, load_config(model_dir).get("pad_token_id", 1))
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    cosine = (pool(out, mask) * reference(model_dir, ids, mask)).sum(1).min()
    if cosine < min_cosine:
        sys.exit(f"{path}: cosine {cosine:.6f} to the NumPy forward pass, below {min_cosine}")
    return cosine


def feed_forward_outputs(path):
    """The names of the MatMul nodes of the feed-forward output layers (`output.dense`)."""
    model = onnx.load(path, load_external_data=False)
    return [n.name for n in model.graph.node
            if n.op_type == "MatMul" and any(i.endswith(".output.dense.weight_t") for i in n.input)]


def export(model_dir):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    cfg = load_config(model_dir)
    out_dir = os.path.join(model_dir, "onnx")
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        raw = os.path.join(tmp, "raw.onnx")
        build(model_dir, raw)
        fused = optimizer.optimize_model(raw, model_type="bert", num_heads=cfg["num_attention_heads"],
                                         hidden_size=cfg["hidden_size"], opt_level=0)
        print("fused:", fused.get_fused_operator_statistics(), file=sys.stderr)
        f32 = os.path.join(tmp, "model.onnx")
        fused.save_model_to_file(f32)
        keep = feed_forward_outputs(f32)
        if len(keep) != cfg["num_hidden_layers"]:
            sys.exit(f"found {len(keep)} feed-forward output layers, expected {cfg['num_hidden_layers']}")
        int8 = os.path.join(tmp, "model_qint8.onnx")
        # Only the weight matrices (not the embeddings' Gather, nor attention's products of two
        # activations): quantizing those costs MPNet cosine 0.6 on short texts. Weights in 7 bits
        # (reduce_range): on x86 without VNNI, ONNX Runtime's u8s8 kernels saturate full-range
        # weights (int8 cosine 0.07 on an AVX2-only machine; 0.983 with reduce_range).
        quantize_dynamic(f32, int8, weight_type=QuantType.QInt8, per_channel=True, reduce_range=True,
                         nodes_to_exclude=keep,
                         op_types_to_quantize=["MatMul"], extra_options={"DefaultTensorType": TensorProto.FLOAT})
        print("float32: cosine %.6f, int8: cosine %.6f to the NumPy forward pass"
              % (check(f32, model_dir, 0.99999), check(int8, model_dir, 0.97)), file=sys.stderr)
        for name in ("model.onnx", "model_qint8.onnx"):
            os.replace(os.path.join(tmp, name), os.path.join(out_dir, name))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    export(sys.argv[1])
