#!/bin/sh
# The include graph against the layering of docs/architecture.md ("Layering"):
# every #include "M/..." in src/, rt/, sim/, kernels/ and calib/ must name the
# file's own module or one its row allows; the known exceptions listed there
# (file and header) pass until they are fixed, and one that no longer exists
# must be struck from the list. No raw malloc/calloc/realloc outside the
# allocator. Usage: tests/layering.sh
set -u
exec /usr/bin/python3 - "$@" <<'EOF_PY'
import glob, os, re, sys
doc = open("docs/architecture.md").read()
sec = re.search(r"^## Layering\n(.*?)(?=^## |\Z)", doc, re.M | re.S)
if not sec:
    sys.exit("layering: docs/architecture.md has no '## Layering' section")
allowed, known = {}, set()
for row in re.findall(r"^\|(.*)\|$", sec.group(1), re.M):
    cells = [c.strip() for c in row.split("|")]
    names = re.findall(r"`([^`]+)`", cells[0])
    if len(cells) == 2 and len(names) == 1 and "/" not in names[0]:
        allowed[names[0]] = {"*"} if "every module" in cells[1] else set(re.findall(r"`([^`]+)`", cells[1]))
    elif len(cells) >= 2 and len(names) == 1 and "/" in names[0]:
        known |= {(names[0], h) for h in re.findall(r"`([^`]+)`", cells[1])}
def module(path):
    parts = path.split("/")
    return parts[1] if parts[0] == "src" else parts[0]
files = [f for d in ("src/*", "rt", "sim", "kernels", "calib") for f in glob.glob(d + "/*.[ch]")]
bad, seen, n = [], set(), 0
for f in sorted(files):
    m = module(f)
    if m not in allowed:
        bad.append(f"{f}: module '{m}' has no row in docs/architecture.md's layering table")
        continue
    for line_no, line in enumerate(open(f), 1):
        inc = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if not inc or "/" not in inc.group(1):
            continue
        n += 1
        h = inc.group(1)
        to = h.split("/")[0]
        if to == m or "*" in allowed[m] or to in allowed[m]:
            continue
        if (f, h) in known:
            seen.add((f, h))
            continue
        bad.append(f"{f}:{line_no}: {m} includes {h}: '{to}' is not below '{m}' (docs/architecture.md, Layering)")
bad += [f"{f}: no longer includes {h}: strike it from the exceptions in docs/architecture.md"
        for f, h in sorted(known - seen)]
# every allocation goes through the hook (src/common/alloc.c), so that
# NPUCC_FAIL_ALLOC and the fault-injection tests reach it (issue 19 item 6);
# free() stays for what libc allocates itself (open_memstream, scandir)
raw = re.compile(r"(^|[^_\w.>])(malloc|calloc|realloc|strdup|strndup|aligned_alloc|posix_memalign)\s*\(")
for f in sorted(files + glob.glob("tools/*/*.c")):
    if f == "src/common/alloc.c":
        continue
    for line_no, line in enumerate(open(f), 1):
        code = line.split("//")[0]
        if raw.search(code) and not code.lstrip().startswith(("*", "/*")):
            bad.append(f"{f}:{line_no}: a raw allocation; use npu_malloc and friends (src/common/alloc.h)")
for b in bad:
    print("FAIL " + b)
print(f"layering: {n - len(bad)} passed, {len(bad)} failed, 0 skipped ({n} includes, {len(seen)} known exceptions)")
sys.exit(1 if bad else 0)
EOF_PY
