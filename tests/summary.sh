# Sourced by the test scripts, which count pass, fail and skip.
# `summary NAME` prints "NAME: N passed, N failed, N skipped" and returns the
# script's status: 1 on a failure, and on a skip too, because `make deps`
# installs everything a test needs; NPUCC_ALLOW_SKIP=1 lets skips pass (a
# machine without onnxruntime-node, say). SKIPPED (exit 77) is what a script
# returns when it skipped as a whole, so the caller can count it as a skip.
SKIPPED=77
summary() {
    echo "$1: ${pass:-0} passed, ${fail:-0} failed, ${skip:-0} skipped"
    [ "${fail:-0}" -eq 0 ] || return 1
    if [ "${skip:-0}" -ne 0 ] && [ "${NPUCC_ALLOW_SKIP:-0}" != 1 ]; then
        echo "$1: a skip fails the run (make deps installs what the tests need; NPUCC_ALLOW_SKIP=1 allows it)"
        return 1
    fi
    return 0
}
