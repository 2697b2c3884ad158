#!/bin/sh
# What a newcomer does: a clean clone of HEAD (committed work only) with
# nothing built, then `make demo` and `make test` in it, each timed.
#   tests/fresh.sh [--no-test] [MAKEFLAGS...]   e.g. tests/fresh.sh -j2
# --no-test: `make demo` only (.ci/run, whose own checkout is the clean clone
# that `make test` then runs in). The clone goes to a temporary directory,
# removed afterwards; a failing step prints the end of its log.
set -u
test=1
[ "${1:-}" = --no-test ] && { test=0; shift; }
root=$(cd "$(dirname "$0")/.." && pwd)
head=$(git -C "$root" rev-parse HEAD) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/npucc-fresh.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
git clone -q --no-checkout "$root" "$tmp/npucc" && git -C "$tmp/npucc" checkout -q --detach "$head" || exit 1
echo "fresh: clone of $(git -C "$root" log -1 --format='%h %s' | cut -c1-70) in $tmp/npucc"
fail=0
step() { # name, make arguments...
    name=$1; shift
    t0=$(date +%s)
    if (cd "$tmp/npucc" && make "$@") >"$tmp/$name.log" 2>&1; then
        echo "fresh: make $name: ok in $(($(date +%s) - t0)) s"
    else
        echo "fresh: make $name: FAILED after $(($(date +%s) - t0)) s; the end of its log:"
        tail -n 40 "$tmp/$name.log"
        fail=1
    fi
}
step demo "$@" demo
[ $fail = 0 ] && [ $test = 1 ] && step test "$@" test
[ $fail = 0 ]
