#!/bin/sh
# The command lines against their documentation: every option a tool's parser
# accepts (the option literals of its parser source, not a hand-kept list) is
# in its --help and in its section of docs/cli.md; --help has the man page's
# sections; a usage error still prints the usage lines; the man pages build;
# an unknown target lists the targets that exist. Usage: tests/e2e/cli.sh [BUILD]
set -u
B=${1:-build}
PY=/usr/bin/python3
. tests/summary.sh
fail=0 pass=0 skip=0
W=$B/e2e/cli
mkdir -p $W
for spec in npucc:src/driver/options.c npusim:sim/npusim_main.c npuref:src/driver/npuref_main.c \
            npudis:src/driver/npudis_main.c; do
    tool=${spec%%:*} src=${spec#*:}
    if ! $B/$tool --help >$W/$tool.help 2>&1; then
        echo "FAIL $tool --help: exit status $?"; fail=$((fail + 1)); continue
    fi
    if msg=$($PY - $tool $src $W/$tool.help docs/cli.md 2>&1 <<'PYEOF'
import re, sys
tool, src, helpf, doc = sys.argv[1:]
code = open(src).read()
# the option names the parser compares against: whole string literals "-x" / "--name"
opts = sorted(set(re.findall(r'"(--?[a-z][a-z0-9-]*)"', code)))
if len(opts) < 3:
    sys.exit(f"found only {opts} in {src}: has the parser changed shape?")
help_text = open(helpf).read()
text = open(doc).read()
m = re.search(rf"^## {tool}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
if not m:
    sys.exit(f"docs/cli.md has no '## {tool}' section")
section = m.group(1)
# where an option is explained: the tags of OPTIONS (a table's first column;
# in --help the lines indented 7 under the OPTIONS heading)
doc_opts = re.search(r"^### OPTIONS\n(.*?)(?=^### |\Z)", section, re.M | re.S)
doc_tags = " ".join(re.findall(r"^\| *([^|]*(?:\\\|[^|]*)*)\|", doc_opts.group(1), re.M)) if doc_opts else ""
help_opts = re.search(r"^OPTIONS\n(.*?)(?=^[A-Z]|\Z)", help_text, re.M | re.S)
help_tags = " ".join(re.findall(r"^ {7}(\S.*)$", help_opts.group(1), re.M)) if help_opts else ""
word = lambda o: re.compile(rf"(?<![\w-]){re.escape(o)}(?![\w-])")
bad = [f"{o} not explained in --help OPTIONS" for o in opts if not word(o).search(help_tags)]
bad += [f"{o} not in the OPTIONS of docs/cli.md '## {tool}'" for o in opts if not word(o).search(doc_tags)]
for s in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES"):
    if not re.search(rf"^{s}$", help_text, re.M):
        bad.append(f"--help has no {s} section")
if bad:
    sys.exit("; ".join(bad))
print(f"{len(opts)} options ({' '.join(opts)}) in --help and docs/cli.md")
PYEOF
    ); then echo "ok   $tool: $msg"; pass=$((pass + 1)); else echo "FAIL $tool: $msg"; fail=$((fail + 1)); fi
    # a usage error: the message, then the usage lines, exit 2
    msg=$($B/$tool --no-such-option x 2>&1); rc=$?
    if [ $rc -eq 2 ] && echo "$msg" | grep -q "^usage: $tool"; then pass=$((pass + 1))
    else echo "FAIL $tool --no-such-option: exit $rc, no usage line: $msg"; fail=$((fail + 1)); fi
    if [ -f $B/man/$tool.1 ] && head -n 1 $B/man/$tool.1 | grep -q "^\.TH $(echo $tool | tr a-z A-Z) 1" &&
       grep -q "^\.SH OPTIONS" $B/man/$tool.1; then pass=$((pass + 1))
    else echo "FAIL $tool: no man page $B/man/$tool.1 (make man)"; fail=$((fail + 1)); fi
done
# an unknown target names every target under targets/ and where it looked
msg=$($B/npucc --target edge-v2 $W/none.onnx 2>&1); rc=$?
want=$(ls targets/*.yaml | sed 's|targets/||; s|\.yaml$||' | sort | tr '\n' ' ')
ok=1
for t in $want; do echo "$msg" | grep -q "[ ,:]$t[,)]" || ok=0; done
if [ $rc -eq 1 ] && [ $ok = 1 ] && echo "$msg" | grep -q "expected edge-v2.yaml in one of: .*targets/edge-v2.yaml"; then
    pass=$((pass + 1))
else echo "FAIL unknown target: exit $rc, expected the targets $want and the search path: $msg"; fail=$((fail + 1)); fi
summary cli
