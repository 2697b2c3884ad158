#!/bin/sh
# No function in the product code longer than 100 lines (docs/conventions.md):
# finds each top-level C function definition in src/, rt/, sim/, kernels/ and
# calib/ by brace matching (comments, strings, character literals and
# preprocessor lines masked first) and prints file:line name length for each
# one over the limit; its length counts from the line of its name to its
# closing brace. Tables are not functions, and generated code lives in build/,
# so neither is counted. Usage: tests/func_length.sh [LIMIT [FILE...]]
set -u
exec /usr/bin/python3 - "$@" <<'EOF_PY'
import glob, re, sys
limit = int(sys.argv[1]) if len(sys.argv) > 1 else 100
files = sys.argv[2:] or sorted(f for d in ("src", "rt", "sim", "kernels", "calib")
                               for f in glob.glob(d + "/**/*.[ch]", recursive=True))

def mask(text):
    """text with comments, string and character literals and preprocessor
    lines replaced by blanks, newlines kept, so offsets and line numbers hold."""
    out, i, n, bol = [], 0, len(text), True
    while i < n:
        c = text[i]
        if bol and c == "#" or (bol and c in " \t" and text[i:].lstrip(" \t").startswith("#")):
            j = i
            while j < n and text[j] != "\n":  # a directive, with its continuations
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    out.append(" \n")
                    j += 2
                    continue
                if text.startswith("/*", j):  # a comment may run past the line
                    k = text.find("*/", j + 2)
                    k = n if k < 0 else k + 2
                    out.append(re.sub(r"[^\n]", " ", text[j:k]))
                    j = k
                    continue
                out.append(" ")
                j += 1
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            out.append(c)
            bol = c == "\n" or (bol and c in " \t")
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        bol = False
        i = j
    return "".join(out)

def functions(path, text):
    """(line, name, length) of each top-level function definition in text."""
    src = mask(text)
    found, depth, head_start, name = [], 0, 0, None
    for m in re.finditer(r"[{};]", src):
        c, i = m.group(), m.start()
        if depth == 0 and c == "{":
            head = src[head_start:i]
            # a definition's head ends with its name and parameter list (and
            # has no '='), unlike struct/enum/union bodies, initialisers and
            # the macro calls before it
            sig = re.search(r"([A-Za-z_]\w*)\s*\((?:[^(){}]|\([^(){}]*\))*\)\s*$", head)
            open_at = i
            name = sig.group(1) if sig and "=" not in head and sig.group(1) not in (
                "if", "while", "for", "switch", "sizeof") else None
            name_at = head_start + sig.start(1) if name else i
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if name:
                    first = src.count("\n", 0, name_at) + 1
                    last = src.count("\n", 0, i) + 1
                    found.append((first, name, last - first + 1))
                name = None
                head_start = i + 1
        elif depth == 0:
            head_start = i + 1
        if depth < 0:
            sys.exit(f"func_length: {path}: unbalanced braces near offset {i}")
    return found

# the scanner on what would fool it, so that a broken one fails, not passes
probe = """#define M(x) { x }
struct s { int a; };
static const int t[] = { 1, 2 };
M(3)
__attribute__((unused)) static int f(int (*g)(int), const char *s)
{
    /* } */ char c = '}'; const char *u = "{\\"}";
    return g(c) + (s == u);  // }
}
int
h(void) { return 0; }
"""
got = functions("probe", probe)
if got != [(5, "f", 5), (11, "h", 1)]:
    sys.exit(f"func_length: the scanner is broken: {got}")

bad, n = [], 0
for f in files:
    for line, fn, length in functions(f, open(f, encoding="utf-8", errors="replace").read()):
        n += 1
        if length > limit:
            bad.append(f"{f}:{line} {fn} {length}")
for b in bad:
    print("FAIL " + b)
print(f"func_length: {n - len(bad)} passed, {len(bad)} failed, 0 skipped "
      f"({n} functions in {len(files)} files, limit {limit} lines)")
sys.exit(1 if bad else 0)
EOF_PY
