"""Conformance selection and comparison (driven by tests/conformance/run.sh).

    compare.py select DATA [--all] [PATTERN...]   case names to run, one a line
    compare.py report DATA RESULTS [--all] [PATTERN...]
                                                  compares, prints the table,
                                                  exits 1 if a case failed

Selection: the default set is tests/conformance/supported.txt. --all takes
every generated node test whose ops are all in src/ir/ops.def (the candidates)
and, after the run, writes DATA/../conformance-candidates.txt (passing cases,
grouped by op: a draft supported.txt) and ...-failing.txt (a draft excluded.txt).

Comparison follows onnx.backend.test.runner: same dtype, same shape, and for
floats numpy's allclose with the case's rtol/atol (1e-3/1e-7 for every node
test in onnx 1.12) and NaN equal to NaN; integers and bools must be equal.
"""
import fnmatch
import json
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def read_list(path):
    """Names (first word of each line) of a list file; '#' starts a comment.
    Returns {name: rest-of-line}."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, rest = line.partition(" ")
            if name in out:
                raise SystemExit(f"{path}:{lineno}: '{name}' listed twice")
            out[name] = rest.strip()
    return out


def onnx_ops():
    """ONNX op names the IR knows (src/ir/ops.def, without npucc's npu.* ops)."""
    with open(os.path.join(ROOT, "src", "ir", "ops.def")) as fh:
        return set(re.findall(r'IR_OP\(\s*\w+\s*,\s*"([A-Za-z]\w*)"\s*\)', fh.read()))


def load_index(data):
    with open(os.path.join(data, "index.json")) as fh:
        return json.load(fh)


def match(name, patterns):
    return not patterns or any(fnmatch.fnmatchcase(name, p) or p == name for p in patterns)


def candidates(index):
    ops = onnx_ops()
    return sorted(n for n, c in index.items() if all(op in ops for op in c["ops"]))


def selection(data, all_mode, patterns):
    """(names to run, notes to print). Unknown names in the lists are errors."""
    index = load_index(data)
    sup = read_list(os.path.join(HERE, "supported.txt"))
    exc = read_list(os.path.join(HERE, "excluded.txt"))
    errors = [f"supported.txt: '{n}' is not a generated node test" for n in sup if n not in index]
    errors += [f"excluded.txt: '{n}' is not a generated node test" for n in exc if n not in index]
    errors += [f"'{n}' is in both supported.txt and excluded.txt" for n in sup if n in exc]
    errors += [f"excluded.txt: '{n}' has no reason" for n, why in exc.items() if not why]
    if errors:
        raise SystemExit("conformance: " + "\n conformance: ".join(errors))
    notes = []
    if all_mode:
        names = candidates(index)
    else:
        names = sorted(sup)
        unlisted = [n for n in candidates(index) if n not in sup and n not in exc]
        if unlisted:
            notes.append(f"{len(unlisted)} case(s) of ops in ops.def are in neither supported.txt nor "
                         f"excluded.txt (run.sh BUILD --all): {' '.join(unlisted[:12])}"
                         + (" ..." if len(unlisted) > 12 else ""))
    return [n for n in names if match(n, patterns)], notes


def compare_arrays(got, exp, rtol, atol):
    """None if got matches exp, else a one-line reason."""
    if got.dtype != exp.dtype:
        return f"dtype {got.dtype}, expected {exp.dtype}"
    if got.shape != exp.shape:
        return f"shape {got.shape}, expected {exp.shape}"
    if exp.dtype.kind in "fc":
        g, e = got.astype(np.float64), exp.astype(np.float64)
        ok = np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
        if ok.all():
            return None
        bad = np.flatnonzero(~ok.ravel())
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(g - e).ravel()[bad]
        fin = err[np.isfinite(err)]
        worst = f"{fin.max():.3g}" if fin.size else "-"
        if fin.size < err.size:
            worst += f" ({err.size - fin.size} NaN/inf mismatch)"
        i = bad[0]
        return (f"{bad.size}/{e.size} values off (rtol {rtol:g} atol {atol:g}), max |err| "
                f"{worst}; first at "
                f"{np.unravel_index(i, e.shape)}: got {g.ravel()[i]:.7g}, expected {e.ravel()[i]:.7g}")
    ok = got == exp
    if ok.all():
        return None
    bad = np.flatnonzero(~ok.ravel())
    i = bad[0]
    return (f"{bad.size}/{exp.size} values differ; first at {np.unravel_index(i, exp.shape)}: "
            f"got {got.ravel()[i]}, expected {exp.ravel()[i]}")


def first_line(path):
    try:
        with open(path, errors="replace") as fh:
            lines = [ln.strip() for ln in fh if ln.strip()]
    except OSError:
        return ""
    return lines[0][:300] if lines else ""


def check_case(data, results, name, case):
    """None if every data set of the case passed, else the first reason."""
    if case.get("unconvertible"):
        return f"not runnable: {case['unconvertible']}"
    case_dir = os.path.join(data, "node", name)
    res_dir = os.path.join(results, name)
    for k in range(case["data_sets"]):
        ds = f"test_data_set_{k}"
        rc_path = os.path.join(res_dir, ds + ".rc")
        if not os.path.exists(rc_path):
            return "not run"
        rc = open(rc_path).read().strip()
        if rc != "0":
            msg = first_line(os.path.join(res_dir, ds + ".err"))
            what = "timed out" if rc == "124" else f"npuref exit {rc}"
            return f"{what}: {msg}" if msg else what
        for j in range(len(case["outputs"])):
            exp = np.load(os.path.join(case_dir, ds, f"output_{j}.npy"))
            got_path = os.path.join(res_dir, ds, f"output_{j}.npy")
            try:
                with open(got_path, "rb") as fh:
                    if fh.read(6) != b"\x93NUMPY":
                        return f"output {j}: {os.path.basename(got_path)} is not a .npy file"
                got = np.load(got_path, allow_pickle=False)
            except Exception as e:  # a bad file from npuref is a failure, not a crash
                return f"output {j}: cannot read {os.path.basename(got_path)}: {e}"
            why = compare_arrays(got, exp, case["rtol"], case["atol"])
            if why:
                return f"output {j} ('{case['outputs'][j]['name']}'): {why}"
    return None


def report(data, results, all_mode, patterns):
    index = load_index(data)
    names, notes = selection(data, all_mode, patterns)
    per_op = {}
    failures = []
    for name in names:
        why = check_case(data, results, name, index[name])
        row = per_op.setdefault(index[name]["op"], [0, 0, []])
        if why is None:
            row[0] += 1
        else:
            row[1] += 1
            row[2].append(name)
            failures.append((name, why))
        if all_mode:
            print(f"{'PASS' if why is None else 'FAIL'} {name}{'' if why is None else '  ' + why}")
    if failures and not all_mode:
        print("failed cases:")
        for name, why in failures:
            print(f"  FAIL {name}: {why}")
    width = max([len(op) for op in per_op] + [2])
    print(f"\n{'op':<{width}}  pass  fail")
    for op in sorted(per_op):
        p, f, _ = per_op[op]
        print(f"{op:<{width}}  {p:4d}  {f:4d}{'  <-' if f else ''}")
    for n in notes:
        print(f"note: {n}")
    passed = sum(r[0] for r in per_op.values())
    if all_mode:
        write_drafts(data, index, names, dict(failures))
    print(f"conformance: {passed} passed, {len(failures)} failed, 0 skipped")
    return 1 if failures and not all_mode else 0


def write_drafts(data, index, names, failures):
    """Draft lists for supported.txt / excluded.txt from an --all run."""
    base = data.rstrip("/") + "-"
    by_op = {}
    for n in names:
        by_op.setdefault(index[n]["op"], []).append(n)
    with open(base + "candidates.txt", "w") as fh:
        fh.write("# passing node tests from 'run.sh BUILD --all', grouped by op\n")
        for op in sorted(by_op):
            ok = [n for n in by_op[op] if n not in failures]
            if ok:
                fh.write(f"\n# {op}\n" + "".join(f"{n}\n" for n in ok))
    with open(base + "failing.txt", "w") as fh:
        fh.write("# failing node tests from 'run.sh BUILD --all': name, then why\n")
        for n in names:
            if n in failures:
                fh.write(f"{n}  {failures[n]}\n")
    print(f"wrote {base}candidates.txt and {base}failing.txt")


def selftest():
    """The comparator's own cases: (got, expected, should pass)."""
    f, i = np.float32, np.int64
    nan, inf = np.nan, np.inf
    cases = [
        (np.array([1, 2], f), np.array([1, 2], f), True),
        (np.array([1.0009], f), np.array([1], f), True),           # within rtol 1e-3
        (np.array([1.0012], f), np.array([1], f), False),
        (np.array([5e-8], f), np.array([0], f), True),             # within atol 1e-7
        (np.array([2e-7], f), np.array([0], f), False),
        (np.array([nan, 1], f), np.array([nan, 1], f), True),      # NaN matches NaN
        (np.array([0], f), np.array([nan], f), False),
        (np.array([inf, -inf], f), np.array([inf, -inf], f), True),
        (np.array([inf], f), np.array([-inf], f), False),
        (np.array([1e30], f), np.array([inf], f), False),
        (np.array([1, 2], f), np.array([[1, 2]], f), False),       # shape
        (np.array([1, 2], np.float64), np.array([1, 2], f), False),  # dtype
        (np.array([1000], i), np.array([1001], i), False),         # ints are exact
        (np.array([3, -4], i), np.array([3, -4], i), True),
        (np.array([True, False]), np.array([True, False]), True),
        (np.array([True, True]), np.array([True, False]), False),
        (np.array([1, 0], np.uint8), np.array([True, False]), False),
        (np.zeros((0, 3), f), np.zeros((0, 3), f), True),
        (np.array(2.0, f), np.array(2.0, f), True),                # 0-d
    ]
    bad = [k for k, (g, e, ok) in enumerate(cases) if (compare_arrays(g, e, 1e-3, 1e-7) is None) != ok]
    if bad:
        raise SystemExit(f"compare.py selftest: cases {bad} wrong")


def main(argv):
    if argv == ["selftest"]:
        selftest()
        return 0
    if len(argv) < 2 or argv[0] not in ("select", "report"):
        raise SystemExit(__doc__)
    all_mode = "--all" in argv
    args = [a for a in argv[1:] if a != "--all"]
    if argv[0] == "select":
        names, _ = selection(args[0], all_mode, args[1:])
        sys.stdout.write("".join(n + "\n" for n in names))
        return 0
    if len(args) < 2:
        raise SystemExit(__doc__)
    return report(args[0], args[1], all_mode, args[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
