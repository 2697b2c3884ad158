#!/usr/bin/python3
"""Writes the importer robustness suite: malformed and unsupported ONNX
models and a few well-formed edge cases, plus cases.txt, the table
tests/unit/test_import.c checks them against.

Usage: gen_models.py [OUTDIR]   (default: the folder of this script)

Run with Debian's /usr/bin/python3 and python3-onnx; nothing here needs
../shared. The models are a few hundred bytes each and committed; rerun the
script after changing a case and commit its outputs together.

cases.txt has one case a line, fields separated by " | ":
    FILE | STATUS | INPUT_SHAPE | SUBSTRING | SUBSTRING ...
STATUS is ok or user (NPU_EUSER); INPUT_SHAPE is an --input-shape value or
-; every SUBSTRING must occur in the error message, which must also start
with the file's path. Expected byte offsets are computed here from the
model bytes, not copied from the importer's output."""
import os
import random
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
CASES = []  # (file, status, input_shape, [substrings])


def vi(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


def model(nodes, inputs, outputs, inits=(), opset=OPSET, ir_version=7, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)


def conv_model():
    """x[1,2,4,4] -> Conv(3x3, pad 1, w[3,2,3,3], b[3]) -> Relu -> y: the base of many cases."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.array([0.5, -0.5, 0.0], np.float32), "b")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu1"),
    ]
    return model(nodes, [vi("x", [1, 2, 4, 4])], [vi("y", [1, 3, 4, 4])], [w, b])


def add(out, file, data, status, subs, input_shape="-"):
    if not isinstance(data, bytes):
        data = data.SerializeToString()
    with open(os.path.join(out, file), "wb") as f:
        f.write(data)
    CASES.append((file, status, input_shape, subs))


def err(out, file, data, *subs, input_shape="-"):
    add(out, file, data, "user", list(subs), input_shape)


def ok(out, file, data, input_shape="-"):
    add(out, file, data, "ok", [], input_shape)


def top_level_fields(data):
    """(key offset, field number, end offset) of each top-level field, walking
    the wire format here so the truncation offsets are derived independently."""
    pos, fields = 0, []
    while pos < len(data):
        start = pos
        key, pos = varint(data, pos)
        wt = key & 7
        if wt == 0:
            _, pos = varint(data, pos)
        elif wt == 2:
            n, pos = varint(data, pos)
            pos += n
        elif wt == 1:
            pos += 8
        elif wt == 5:
            pos += 4
        fields.append((start, key >> 3, pos))
    return fields


def varint(data, pos):
    v = shift = 0
    while True:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, pos


def file_cases(out):
    err(out, "empty.onnx", b"", "the file is empty")
    rnd = random.Random(7)
    junk = bytes(rnd.randrange(256) for _ in range(200))
    err(out, "random_bytes.onnx", junk, "not a valid ONNX file")
    err(out, "text.onnx", b"ir_version: 7\ngraph { name: 'g' }\n", "not a valid ONNX file")
    # Valid protobuf, but a GraphProto rather than a ModelProto: no ir_version, no graph.
    err(out, "graph_not_model.onnx", conv_model().graph, "corrupt at byte 0: field 'ir_version' of ModelProto "
        "should be a varint, the file has length-delimited")

    full = conv_model().SerializeToString()
    fields = top_level_fields(full)
    graph = next(f for f in fields if f[1] == 7)
    names = {1: "ir_version", 7: "graph", 8: "opset_import"}
    # Inside the ir_version value (key 0x08, then a varint), inside the
    # graph field's length, in the middle of the graph, one byte short.
    cuts = {"trunc_1.onnx": 1, "trunc_graph_len.onnx": graph[0] + 1,
            "trunc_mid.onnx": (graph[0] + graph[2]) // 2, "trunc_last.onnx": len(full) - 1}
    for file, cut in cuts.items():
        start, num, _ = next(f for f in fields if f[0] < cut < f[2])
        err(out, file, full[:cut], "the file is truncated",
            f"ends at byte {cut}, inside {names[num]} (byte {start})")


def model_cases(out):
    m = conv_model()
    m.ClearField("ir_version")
    err(out, "no_ir_version.onnx", m, "no ir_version")
    m = conv_model()
    m.ir_version = 99
    err(out, "ir_version_99.onnx", m, "ir_version 99 is not supported", "3 to")
    m = conv_model()
    m.ir_version = 2
    err(out, "ir_version_2.onnx", m, "ir_version 2 is not supported")
    m = conv_model()
    del m.opset_import[:]
    err(out, "no_opset.onnx", m, "imports no default-domain opset")
    m = conv_model()
    m.opset_import[0].domain = "com.example"
    err(out, "only_custom_opset.onnx", m, "imports no default-domain opset")
    for v in (10, 18):
        m = conv_model()
        m.opset_import[0].version = v
        err(out, f"opset_{v}.onnx", m, f"opset {v} is not supported", "supported: 11 to 17")
    m = conv_model()
    m.graph.ClearField("output")
    err(out, "no_outputs.onnx", m, "the graph has no outputs")
    m = conv_model()
    m.graph.output[0].name = "nowhere"
    err(out, "output_not_produced.onnx", m, "graph output 'nowhere' is not produced")
    m = conv_model()
    m.graph.output.extend([vi("y", [1, 3, 4, 4])])
    err(out, "output_listed_twice.onnx", m, "graph output 'y' is listed twice")
    m = conv_model()
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.INT64
    err(out, "output_wrong_dtype.onnx", m, "graph output 'y' is declared INT64 but computes FLOAT")
    m = conv_model()
    m.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 5
    err(out, "output_wrong_shape.onnx", m, "graph output 'y' is declared with shape [1,5,4,4], but its inferred "
        "shape is [1,3,4,4]")


def op_cases(out):
    x = [vi("x", [1, 2, 4, 4])]
    y = [vi("y", [1, 2, 4, 4])]
    m = model([helper.make_node("LpNormalization", ["x"], ["y"], name="norm7")], x, y)
    err(out, "unsupported_op.onnx", m, "node 'norm7' (LpNormalization, opset 13)", "unsupported op",
        "supported ops: Abs, Add", "Upsample, Where")
    m = model([helper.make_node("HardSwish", ["x"], ["y"], name="hs")], x, y)
    err(out, "op_needs_newer_opset.onnx", m, "node 'hs' (HardSwish, opset 13)", "needs opset 14")
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.microsoft")], x, y)
    m.opset_import.extend([helper.make_opsetid("com.microsoft", 1)])
    err(out, "custom_domain.onnx", m, "node 'r' (Relu)", "domain 'com.microsoft' is not supported")
    m = model([helper.make_node("", ["x"], ["y"], name="blank")], x, y)
    err(out, "no_op_type.onnx", m, "node 'blank' has no op_type")

    m = conv_model()
    m.graph.node[0].attribute.extend([helper.make_attribute("auto_pad", "WEIRD")])
    err(out, "conv_auto_pad.onnx", m, "node 'conv1' (Conv, opset 13)", "auto_pad = 'WEIRD' is not supported",
        "NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    # every mode and coordinate transformation of Resize-13 but Resize-18's; a name outside them is refused
    # with the list (the importer once spelt tf_half_pixel_for_nn as tf_half_pixel_for_nearest and refused
    # cubic and tf_crop_and_resize, which the kernel had)
    m = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="cubic")], x,
              [vi("y", [1, 2, 8, 8])], [scales])
    ok(out, "resize_cubic.onnx", m)
    m = model([helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="crop", mode="linear",
                                coordinate_transformation_mode="tf_crop_and_resize")], x, [vi("y", [1, 2, 8, 8])],
              [scales, numpy_helper.from_array(np.array([0, 0, 0, 0, 1, 1, 1, 1], np.float32), "roi")])
    ok(out, "resize_tf_crop.onnx", m)
    m = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="nn", mode="nearest",
                                coordinate_transformation_mode="tf_half_pixel_for_nn")], x,
              [vi("y", [1, 2, 8, 8])], [scales])
    ok(out, "resize_tf_half_pixel_for_nn.onnx", m)
    m = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="lanczos")], x,
              [vi("y", [1, 2, 8, 8])], [scales])
    err(out, "resize_mode.onnx", m, "node 'up' (Resize, opset 13)", "mode = 'lanczos' is not supported",
        "nearest, linear, cubic")
    m = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="nn", mode="nearest",
                                coordinate_transformation_mode="tf_half_pixel_for_nearest")], x,
              [vi("y", [1, 2, 8, 8])], [scales])
    err(out, "resize_coord.onnx", m, "node 'nn' (Resize, opset 13)",
        "coordinate_transformation_mode = 'tf_half_pixel_for_nearest' is not supported",
        "asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize")
    m = model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="wrap")], x, [vi("y", [1, 2, 6, 6])],
              [numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")])
    err(out, "pad_wrap.onnx", m, "node 'pad' (Pad, opset 13)", "mode = 'wrap' is not supported")
    m = model([helper.make_node("Cast", ["x"], ["y"], name="cast", to=TensorProto.STRING)], x,
              [vi("y", [1, 2, 4, 4], TensorProto.STRING)])
    err(out, "cast_to_string.onnx", m, "node 'cast' (Cast, opset 13)", "to = 8 (STRING) is not supported")
    m = model([helper.make_node("MaxPool", ["x"], ["y", "idx"], name="mp", kernel_shape=[2, 2])], x,
              [vi("y", [1, 2, 3, 3])])
    err(out, "maxpool_indices.onnx", m, "node 'mp' (MaxPool, opset 13)", "Indices output is not supported")

    m = conv_model()
    del m.graph.node[0].attribute[:]
    m.graph.node[0].attribute.extend([helper.make_attribute("strides", [1.0, 1.0]),
                                      helper.make_attribute("pads", [1, 1, 1, 1])])
    err(out, "attr_wrong_type.onnx", m, "node 'conv1' (Conv, opset 13)",
        "attribute 'strides' must be a list of ints, not a list of floats")
    m = conv_model()
    m.graph.node[0].attribute.extend([helper.make_attribute("group", "two")])
    err(out, "attr_string_for_int.onnx", m, "node 'conv1' (Conv, opset 13)", "attribute 'group' must be an int")
    m = conv_model()
    m.graph.node[1].attribute.extend([helper.make_attribute("alpha", 0.1)])
    err(out, "attr_unknown.onnx", m, "node 'relu1' (Relu, opset 13)", "unknown attribute 'alpha'")
    m = model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat")], x, [vi("y", [2, 2, 4, 4])])
    err(out, "attr_required_missing.onnx", m, "node 'cat' (Concat, opset 13)", "required attribute 'axis'")
    m = model([helper.make_node("Gemm", ["a", "gw"], ["y"], name="fc", transB=1)], [vi("a", [2, 3])],
              [vi("y", [2, 4])], [numpy_helper.from_array(np.zeros((3, 4), np.float32), "gw")])
    err(out, "gemm_transb.onnx", m, "node 'fc' (Gemm")
    m = conv_model()
    m.graph.node[1].attribute.extend([onnx.AttributeProto(name="alpha", ref_attr_name="a",
                                                          type=onnx.AttributeProto.FLOAT)])
    m.graph.node[1].op_type = "LeakyRelu"
    err(out, "attr_ref.onnx", m, "node 'relu1' (LeakyRelu, opset 13)", "attribute 'alpha' refers to a function")
    m = model([helper.make_node("Add", ["x", "x", "x"], ["y"], name="add3")], x, y)
    err(out, "too_many_inputs.onnx", m, "node 'add3' (Add, opset 13)", "has 3 inputs; expected 2")
    m = model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=4)], x, y)
    err(out, "softmax_axis.onnx", m, "node 'sm' (Softmax", "axis")
    m = model([helper.make_node("BatchNormalization", ["x", "s", "s", "s", "s"], ["y"], name="bn", training_mode=1)],
              x, y, [numpy_helper.from_array(np.ones(2, np.float32), "s")], opset=15)
    err(out, "batchnorm_training.onnx", m, "node 'bn' (BatchNormalization, opset 15)", "training_mode = 1")


def graph_cases(out):
    x = [vi("x", [1, 2, 4, 4])]
    y = [vi("y", [1, 2, 4, 4])]
    m = model([helper.make_node("Relu", ["ghost"], ["y"], name="r")], x, y)
    err(out, "dangling_input.onnx", m, "node 'r' (Relu", "input 'ghost' is not produced")
    m = model([helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
               helper.make_node("Relu", ["a"], ["b"], name="n2"),
               helper.make_node("Identity", ["a"], ["y"], name="n3")], x, y)
    err(out, "cycle.onnx", m, "cycle")
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r1"),
               helper.make_node("Sigmoid", ["x"], ["y"], name="r2")], x, y)
    err(out, "duplicate_output.onnx", m, "node 'r2' (Sigmoid)", "output 'y' is produced twice")
    m = model([helper.make_node("Relu", ["x"], ["x"], name="self")], x, [vi("x", [1, 2, 4, 4])])
    err(out, "output_is_input.onnx", m, "node 'self' (Relu)", "output 'x' is produced twice")

    m = conv_model()
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 5
    err(out, "conv_channels.onnx", m, "node 'conv1' (Conv", "channel")
    m = model([helper.make_node("Add", ["x", "z"], ["y"], name="add1")], x + [vi("z", [1, 2, 3, 4])], y)
    err(out, "add_broadcast.onnx", m, "node 'add1' (Add", "broadcast")
    m = model([helper.make_node("MatMul", ["a", "bm"], ["y"], name="mm")], [vi("a", [2, 3])], [vi("y", [2, 5])],
              [numpy_helper.from_array(np.zeros((4, 5), np.float32), "bm")])
    err(out, "matmul_k.onnx", m, "node 'mm' (MatMul")
    m = model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")], x, [vi("y", [5, 7])],
              [numpy_helper.from_array(np.array([5, 7], np.int64), "shape")])
    err(out, "reshape_count.onnx", m, "node 'rs' (Reshape")

    m = conv_model()
    m.graph.initializer[0].raw_data = m.graph.initializer[0].raw_data[:-4]
    err(out, "raw_data_short.onnx", m, "initializer 'w'", "raw_data holds 212 bytes", "need 216")
    m = conv_model()
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    w.float_data.extend([0.0] * 53)
    err(out, "float_data_count.onnx", m, "initializer 'w'", "has 53 values, but its shape needs 54")
    m = conv_model()
    m.graph.initializer[1].float_data.extend([1.0, 2.0, 3.0])
    err(out, "raw_and_typed.onnx", m, "initializer 'b'", "both raw_data and typed values")
    m = conv_model()
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.extend([onnx.StringStringEntryProto(key="location", value="weights.bin"),
                            onnx.StringStringEntryProto(key="offset", value="0")])
    err(out, "external_data.onnx", m, "initializer 'w'", "external file ('weights.bin')")
    m = conv_model()
    m.graph.initializer[1].dims[0] = -3
    err(out, "negative_dim.onnx", m, "initializer 'b'", "dimension 0 is negative (-3)")
    m = conv_model()
    m.graph.initializer.extend([helper.make_tensor("names", TensorProto.STRING, [2], [b"a", b"b"])])
    err(out, "string_tensor.onnx", m, "initializer 'names'", "dtype STRING is not supported")
    m = conv_model()
    m.graph.initializer.extend([numpy_helper.from_array(np.zeros(3, np.float32), "b")])
    err(out, "initializer_twice.onnx", m, "initializer 'b'", "the name 'b' is used twice")
    m = conv_model()
    m.graph.initializer.extend([helper.make_tensor("q", TensorProto.INT8, [2], [5, 300])])
    err(out, "int8_out_of_range.onnx", m, "initializer 'q'", "value 300 at index 1 does not fit INT8")
    sp = helper.make_sparse_tensor(helper.make_tensor("vals", TensorProto.FLOAT, [1], [2.0]),
                                   helper.make_tensor("idx", TensorProto.INT64, [1], [3]), [8])
    m = model([helper.make_node("Constant", [], ["k"], name="k", sparse_value=sp),
               helper.make_node("Identity", ["x"], ["y"], name="id")], x, y)
    err(out, "constant_sparse.onnx", m, "node 'k' (Constant, opset 13)", "sparse_value is not supported")
    m = conv_model()
    m.graph.sparse_initializer.extend([sp])
    err(out, "sparse_initializer.onnx", m, "sparse initializers are not supported")
    m = model([helper.make_node("Constant", [], ["k"], name="k", value_string="hello"),
               helper.make_node("Identity", ["x"], ["y"], name="id")], x, y)
    err(out, "constant_string.onnx", m, "node 'k' (Constant, opset 13)", "value_string is not supported")

    # graph inputs
    m = conv_model()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    err(out, "dynamic_dim.onnx", m, "graph input 'x'", "dimension 0 ('batch') is dynamic",
        "--input-shape (e.g. x=1x2x4x4)")
    CASES.append(("dynamic_dim.onnx", "ok", "x=1x2x4x4", []))
    CASES.append(("dynamic_dim.onnx", "user", "x=1x3x4x4", ["--input-shape for 'x' sets dimension 1 to 3",
                                                             "model fixes it to 2"]))
    CASES.append(("dynamic_dim.onnx", "user", "x=2x4x4", ["--input-shape for 'x' has rank 3"]))
    CASES.append(("dynamic_dim.onnx", "user", "z=1x2x4x4", ["--input-shape names 'z', which is not a graph input",
                                                             "inputs: 'x'"]))
    m = conv_model()
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_value = -1
    err(out, "negative_input_dim.onnx", m, "graph input 'x': dimension 2 (-1) is dynamic")
    m = conv_model()
    m.graph.input[0].type.tensor_type.ClearField("shape")
    err(out, "input_no_shape.onnx", m, "graph input 'x' has no shape", "--input-shape x=DIMS")
    m = conv_model()
    m.graph.input[0].type.tensor_type.elem_type = TensorProto.DOUBLE
    err(out, "input_double.onnx", m, "graph input 'x'", "dtype DOUBLE is not supported")
    m = conv_model()
    m.graph.input[0].CopyFrom(helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4]))
    err(out, "input_sequence.onnx", m, "graph input 'x' is not a tensor")
    m = conv_model()
    m.graph.input.extend([vi("x", [1, 2, 4, 4])])
    err(out, "input_twice.onnx", m, "graph input 'x' is listed twice")


def accepted_cases(out):
    """Well-formed models the importer must take; test_import.c also checks
    what the IR holds for each."""
    m = conv_model()
    w = m.graph.initializer[0]
    vals = numpy_helper.to_array(w).flatten().tolist()
    w.ClearField("raw_data")
    w.float_data.extend(vals)
    m.graph.node[0].input[2] = "b"
    m.graph.initializer[1].CopyFrom(helper.make_tensor("b", TensorProto.FLOAT, [3], [0.5, -0.5, 0.0]))
    # typed int64_data and int32_data (int8) initializers feeding a Reshape and an output
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [3, 16])
    q = helper.make_tensor("q", TensorProto.INT8, [3], [-128, 0, 127])
    m.graph.initializer.extend([shape, q])
    m.graph.node.extend([helper.make_node("Reshape", ["y", "shape"], ["r"], name="rs")])
    m.graph.output.extend([vi("r", [3, 16]), vi("q", [3], TensorProto.INT8)])
    ok(out, "typed_initializers.onnx", m)

    m = conv_model()
    # IR < 4 style: every initializer is also listed as a graph input
    m.graph.input.extend([vi("w", [3, 2, 3, 3]), vi("b", [3])])
    ok(out, "initializer_as_input.onnx", m)

    # ceil_mode: a last window starting past the input is dropped (onnxruntime, PyTorch, ONNX 1.16's
    # reference): 1x1 windows at stride 2 over 5 columns give 3, over 4 rows 2; an output declared with the
    # window kept (ONNX's shape inference before 1.16) keeps it; SAME_UPPER gives ceil(8 / 3) = 3 either way
    x = [vi("x", [1, 1, 4, 5])]
    for file, dims in (("pool_ceil_drop.onnx", None), ("pool_ceil_declared_kept.onnx", [1, 1, 3, 3])):
        ok(out, file, model([helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[1, 1],
                                              strides=[2, 2], ceil_mode=1)], x, [vi("y", dims)]))
    ok(out, "pool_same_ceil.onnx",
       model([helper.make_node("AveragePool", ["x"], ["y"], name="ap", kernel_shape=[1, 1], strides=[3, 3],
                               auto_pad="SAME_UPPER", ceil_mode=1)], [vi("x", [1, 1, 8, 8])], [vi("y", None)]))

    x = [vi("x", [2, 3])]
    nodes = [
        helper.make_node("Constant", [], ["half"], name="c_half", value_float=0.5),
        helper.make_node("Constant", [], ["shape"], name="c_shape", value_ints=[3, 2]),
        helper.make_node("Mul", ["x", "half"], ["m"], name="mul"),
        helper.make_node("Reshape", ["m", "shape"], ["y"], name="rs"),
    ]
    ok(out, "constant_values.onnx", model(nodes, x, [vi("y", [3, 2])]))

    # the fuzz seed of test_import.c: several ops, attributes, typed and raw data
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("Constant", [], ["k"], name="k", value_floats=[0.25, -1.0]),
        helper.make_node("Mul", ["c", "kk"], ["m"], name="mul"),
        helper.make_node("Reshape", ["k", "kshape"], ["kk"], name="rk"),
        helper.make_node("Relu", ["m"], ["r"], name="relu"),
        helper.make_node("Flatten", ["r"], ["f"], name="flat", axis=1),
        helper.make_node("Gemm", ["f", "gw", "gb"], ["y"], name="fc", transB=1),
    ]
    inits = [numpy_helper.from_array(rng.standard_normal((2, 1, 3, 3)).astype(np.float32), "w"),
             helper.make_tensor("kshape", TensorProto.INT64, [4], [1, 2, 1, 1]),
             numpy_helper.from_array(rng.standard_normal((3, 8)).astype(np.float32), "gw"),
             helper.make_tensor("gb", TensorProto.FLOAT, [3], [0.1, 0.2, 0.3])]
    ok(out, "fuzz_seed.onnx", model(nodes, [vi("x", [1, 1, 4, 4])], [vi("y", [1, 3])], inits))
    ok(out, "fuzz_seed_shapes.onnx", shapes_seed())


def shapes_seed():
    """The seed of the structured mutations: many ops whose shapes depend on
    attributes and constant inputs, which the mutations then bend."""
    i64 = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)
    f32 = lambda name, v: helper.make_tensor(name, TensorProto.FLOAT, [len(v)], v)
    N = helper.make_node
    nodes = [
        N("Pad", ["x", "pads"], ["p"], name="pad", mode="reflect"),
        N("MaxPool", ["p"], ["mp"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
        N("AveragePool", ["mp"], ["ap"], name="avgpool", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
          count_include_pad=1),
        N("Transpose", ["ap"], ["t"], name="transpose", perm=[0, 2, 3, 1]),
        N("Slice", ["t", "starts", "ends", "axes", "steps"], ["sl"], name="slice"),
        N("Split", ["mp", "split"], ["s1", "s2"], name="split", axis=1),
        N("Concat", ["s2", "s1"], ["cat"], name="concat", axis=1),
        N("Resize", ["cat", "", "scales"], ["rz"], name="resize", mode="nearest"),
        N("ReduceMean", ["rz"], ["rm"], name="mean", axes=[2, 3], keepdims=1),
        N("Squeeze", ["rm", "sqaxes"], ["sq"], name="squeeze"),
        N("Softmax", ["sq"], ["sm"], name="softmax", axis=1),
        N("Gather", ["sm", "idx"], ["ga"], name="gather", axis=1),
        N("Expand", ["ga", "eshape"], ["ex"], name="expand"),
        N("Unsqueeze", ["ex", "unaxes"], ["un"], name="unsqueeze"),
        N("Tile", ["un", "repeats"], ["ti"], name="tile"),
        N("Shape", ["ti"], ["shp"], name="shape"),
        N("ConstantOfShape", ["shp"], ["cos"], name="cos", value=f32("v", [0.5])),
        N("Add", ["ti", "cos"], ["y0"], name="add"),
        N("Range", ["r0", "r1", "r2"], ["r"], name="range"),
        N("Cast", ["r"], ["rf"], name="cast", to=TensorProto.FLOAT),
        N("Mul", ["y0", "rf"], ["y"], name="mul"),
        N("Clip", ["sl", "lo", "hi"], ["cl"], name="clip"),
    ]
    inits = [i64("pads", [0, 0, 1, 1, 0, 0, 1, 1]), i64("starts", [0, 1]), i64("ends", [1, 3]), i64("axes", [1, 2]),
             i64("steps", [1, 1]), i64("split", [1, 3]), f32("scales", [1, 1, 2, 2]), i64("sqaxes", [2, 3]),
             i64("idx", [3, 0]), i64("eshape", [3, 2]), i64("unaxes", [0]), i64("repeats", [1, 1, 2]),
             helper.make_tensor("r0", TensorProto.INT64, [], [0]), helper.make_tensor("r1", TensorProto.INT64, [], [4]),
             helper.make_tensor("r2", TensorProto.INT64, [], [1]),
             helper.make_tensor("lo", TensorProto.FLOAT, [], [0.0]), helper.make_tensor("hi", TensorProto.FLOAT, [], [6.0])]
    m = model(nodes, [vi("x", [1, 4, 6, 6])], [vi("y", [1, 3, 4]), vi("cl", [1, 1, 2, 4])], inits)
    onnx.checker.check_model(m)
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    assert [d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim] == [1, 3, 4]
    return m


def nesting_case(out):
    """Subgraph attributes nested 60 deep: protobuf-c would recurse without a
    bound; the importer must refuse before unpacking."""
    empty = helper.make_graph([], "empty", [], [])
    inner = empty
    for i in range(60):
        node = helper.make_node("If", ["c"], [], name=f"if{i}", then_branch=inner, else_branch=empty)
        inner = helper.make_graph([node], f"g{i + 1}", [], [])
    m = model(list(inner.node), [vi("c", [], TensorProto.BOOL)], [vi("c", [], TensorProto.BOOL)])
    err(out, "deep_nesting.onnx", m, "nested more than")


def main(out):
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.endswith(".onnx"):
            os.remove(os.path.join(out, f))
    file_cases(out)
    model_cases(out)
    op_cases(out)
    graph_cases(out)
    accepted_cases(out)
    nesting_case(out)
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("# Generated by gen_models.py (see there for the format); do not edit.\n")
        f.write("# FILE | STATUS | INPUT_SHAPE | SUBSTRINGS...\n")
        for file, status, shape, subs in CASES:
            for s in subs:
                assert " | " not in s and "\n" not in s, s
            f.write(" | ".join([file, status, shape] + subs) + "\n")
    print(f"{len(CASES)} cases, {len(set(c[0] for c in CASES))} models in {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
