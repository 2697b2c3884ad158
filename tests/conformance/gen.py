"""Generates the ONNX backend node tests with Debian's python3-onnx and converts
their TensorProto inputs/outputs to .npy for npuref.

    /usr/bin/python3 tests/conformance/gen.py OUTDIR

OUTDIR/node/CASE/ then holds model.onnx, test_data_set_N/{input,output}_K.npy
(next to the .pb files) and case.json; OUTDIR/index.json lists every case.
input_K.npy is the K-th graph input of model.onnx after freezing (see
freeze_inputs); the .pb files keep the generator's numbering.
OUTDIR/stamp records the onnx/numpy versions and this script's format version:
a matching stamp means the data is current and nothing is done.
"""
import json
import os
import shutil
import sys
import warnings

import numpy as np

# python3-onnx 1.12's test generators use aliases that numpy 1.24 removed.
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)
for _name, _value in (("float", float), ("int", int), ("bool", bool), ("object", object),
                      ("str", str), ("complex", complex), ("long", int), ("unicode", str)):
    if not hasattr(np, _name):
        setattr(np, _name, _value)

import onnx  # noqa: E402  (after the aliases)
from onnx import numpy_helper  # noqa: E402
from onnx.backend.test import cmd_tools  # noqa: E402
import onnx.backend.test.case.node as node_cases  # noqa: E402

FORMAT = 3          # bump when the layout of OUTDIR changes
MIN_OPSET = 11      # the importer's lowest default-domain opset (issue 2)
DEFAULT_DOMAINS = ("", "ai.onnx")

# Inputs that set an output's shape (ONNX moved these from attributes to
# inputs). npucc compiles static shapes, so in a real model they are constants;
# the node tests feed them as graph inputs. op -> input positions.
SHAPE_INPUTS = {
    "Reshape": (1,), "Slice": (1, 2, 3, 4), "Squeeze": (1,), "Unsqueeze": (1,),
    "Pad": (1, 3), "Resize": (1, 2, 3), "Upsample": (1,), "Tile": (1,), "Expand": (1,),
    "Split": (1,), "ReduceSum": (1,), "ReduceMean": (1,), "ReduceMax": (1,), "ReduceMin": (1,),
    "ConstantOfShape": (0,), "Range": (0, 1, 2),
}


def stamp_text():
    return f"onnx {onnx.__version__} numpy {np.__version__} format {FORMAT}\n"


def default_opset(model):
    for o in model.opset_import:
        if o.domain in DEFAULT_DOMAINS:
            return o.version
    return None


def raise_opset(model):
    """Node tests are stamped with their op's since_version, so ops unchanged
    since opset 1-10 (GlobalAveragePool, Not, HardSigmoid, ...) come at opsets
    the importer rejects. When every node has the same schema at MIN_OPSET the
    model means the same there: declare MIN_OPSET. Returns the old opset or None."""
    v = default_opset(model)
    if v is None or v >= MIN_OPSET:
        return None
    for n in model.graph.node:
        if n.domain not in DEFAULT_DOMAINS:
            return None
        try:
            if (onnx.defs.get_schema(n.op_type, MIN_OPSET).since_version
                    != onnx.defs.get_schema(n.op_type, v).since_version):
                return None
        except onnx.defs.SchemaError:
            return None
    for o in model.opset_import:
        if o.domain in DEFAULT_DOMAINS:
            o.version = MIN_OPSET
    model.ir_version = max(model.ir_version, onnx.helper.find_min_ir_version_for(list(model.opset_import)))
    onnx.checker.check_model(model)
    return v


def freeze_inputs(case_dir, model):
    """Turns the graph inputs in SHAPE_INPUTS positions into initializers
    holding the test data's values. Returns their original indices."""
    g = model.graph
    names = [v.name for v in g.input]
    frozen = sorted({names.index(n.input[k]) for n in g.node if n.domain in DEFAULT_DOMAINS
                     for k in SHAPE_INPUTS.get(n.op_type, ()) if k < len(n.input) and n.input[k] in names})
    data_sets = sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_"))
    if not frozen or len(data_sets) != 1:  # one constant needs one value
        return []
    for j in frozen:
        t = onnx.TensorProto()
        with open(os.path.join(case_dir, data_sets[0], f"input_{j}.pb"), "rb") as fh:
            t.ParseFromString(fh.read())
        t.name = names[j]
        g.initializer.append(t)
    keep = [v for j, v in enumerate(g.input) if j not in frozen]
    del g.input[:]
    g.input.extend(keep)
    onnx.checker.check_model(model)
    return frozen


def value_info(vi):
    t = vi.type
    if not t.HasField("tensor_type"):
        return {"name": vi.name, "kind": t.WhichOneof("value")}
    tt = t.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim]
    return {"name": vi.name, "kind": "tensor",
            "dtype": onnx.TensorProto.DataType.Name(tt.elem_type).lower(), "shape": dims}


def convert_case(case_dir):
    """Writes .npy next to every .pb of a node case; returns its case.json dict."""
    name = os.path.basename(case_dir)
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    raised = raise_opset(model)
    orig_inputs = [v.name for v in model.graph.input]
    frozen = freeze_inputs(case_dir, model)
    if raised is not None or frozen:
        onnx.save(model, os.path.join(case_dir, "model.onnx"))
    g = model.graph
    ops = sorted({(n.op_type if n.domain in DEFAULT_DOMAINS else f"{n.domain}:{n.op_type}") for n in g.node})
    info = {"name": name, "ops": ops, "opset": default_opset(model), "opset_raised_from": raised,
            "frozen_inputs": [orig_inputs[j] for j in frozen],
            "inputs": [value_info(v) for v in g.input], "outputs": [value_info(v) for v in g.output],
            "rtol": 1e-3, "atol": 1e-7, "data_sets": 0, "unconvertible": None}
    problems = [f"{'input' if v in g.input else 'output'} '{v.name}' is a {value_info(v)['kind']}"
                for v in list(g.input) + list(g.output) if not v.type.HasField("tensor_type")]
    ds_names = sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_"))
    info["data_sets"] = len(ds_names)
    for ds in ds_names if not problems else []:
        ds_dir = os.path.join(case_dir, ds)
        runtime = [j for j in range(len(orig_inputs)) if j not in frozen]
        pbs = [(f"input_{j}.pb", f"input_{k}.npy") for k, j in enumerate(runtime)]
        pbs += [(f, f[:-3] + ".npy") for f in sorted(os.listdir(ds_dir)) if f.startswith("output_") and f.endswith(".pb")]
        for f, npy in pbs:
            t = onnx.TensorProto()
            with open(os.path.join(ds_dir, f), "rb") as fh:
                t.ParseFromString(fh.read())
            arr = numpy_helper.to_array(t)
            if arr.dtype.kind in "OUS":
                problems.append(f"{f} holds strings")
                break
            np.save(os.path.join(ds_dir, npy), arr, allow_pickle=False)
    info["unconvertible"] = "; ".join(problems) or None
    return info


def main_op(name, info, by_name):
    """The op a case tests: the single node's, or for a function body expanded
    by the generator (test_X_expanded), the op of test_X."""
    if name.endswith("_expanded") and name[: -len("_expanded")] in by_name:
        return by_name[name[: -len("_expanded")]]["ops"][0]
    return info["ops"][0] if len(info["ops"]) == 1 else "+".join(info["ops"])


def tolerances():
    """rtol/atol each generated case carries (the backend runner's values)."""
    return {c.name: (c.rtol, c.atol) for c in node_cases.collect_testcases(None)}


def generate(out):
    stamp = os.path.join(out, "stamp")
    if os.path.exists(stamp) and open(stamp).read() == stamp_text():
        return
    tmp = out.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    sys.argv = ["backend-test-tools", "generate-data", "-o", tmp]
    cmd_tools.main()
    tol = tolerances()
    node_dir = os.path.join(tmp, "node")
    by_name = {}
    for name in sorted(os.listdir(node_dir)):
        info = convert_case(os.path.join(node_dir, name))
        if name in tol:
            info["rtol"], info["atol"] = tol[name]
        by_name[name] = info
    for name, info in by_name.items():
        info["op"] = main_op(name, info, by_name)
        with open(os.path.join(node_dir, name, "case.json"), "w") as fh:
            json.dump(info, fh, indent=1, sort_keys=True)
    with open(os.path.join(tmp, "index.json"), "w") as fh:
        json.dump(by_name, fh, indent=0, sort_keys=True)
    with open(os.path.join(tmp, "stamp"), "w") as fh:
        fh.write(stamp_text())
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    print(f"conformance: generated {len(by_name)} node tests with onnx {onnx.__version__} into {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen.py OUTDIR")
    generate(sys.argv[1])
