#!/bin/sh
# tests/fuzz/run.sh MODE BUILD_DIR NAME...: the libFuzzer harnesses built by
# `make fuzz-build` in BUILD_DIR (fz/NAME, replay/NAME).
#   test: each harness for FUZZ_RUNS executions (default 2000, mutation seed
#         FUZZ_SEED, default 1, so that the stage is repeatable) over its seeds
#         (tests/fuzz/corpus/NAME and the fixtures tests/fuzz/seeds.txt
#         names), then every saved crash in
#         tests/fuzz/crashes/NAME/ replayed: each must now pass (files listed
#         in tests/fuzz/known.txt are skipped, naming the open issue item).
#   fuzz: each harness for FUZZ_TIME seconds (default 600) at nice 19, one at
#         a time, growing BUILD_DIR/corpus/NAME; new crashes land in
#         BUILD_DIR/crashes/NAME/; prints the executions of each harness
#         (libFuzzer's stat::number_of_executed_units) and appends them to
#         BUILD_DIR/execs.tsv. FUZZ_MAX_RUNS stops a harness after that many
#         executions, FUZZ_NICE sets its niceness.
set -u
mode=$1 B=$2
shift 2
T=tests/fuzz
. tests/summary.sh
pass=0 fail=0 skip=0

seeds_of() { # the committed corpus and the fixture directories of tests/fuzz/seeds.txt
    for d in $T/corpus/$1 $(sed -n "s/^$1 //p" $T/seeds.txt); do [ -d $d ] && echo $d; done
}

dict_of() { [ -f $T/dict/$1.dict ] && echo "-dict=$T/dict/$1.dict"; }

known() { # harness/file -> 0 when listed
    [ -f $T/known.txt ] && grep -q "^$1 " $T/known.txt
}

test_one() {
    n=$1 work=$(mktemp -d) runs=${FUZZ_RUNS:-2000}
    # "NAME/-" in known.txt: mutants of NAME still reach a known bug; run its seeds only
    if known $n/-; then
        echo "known $n/-: $(grep "^$n/- " $T/known.txt | cut -d' ' -f2-)"; runs=0
    fi
    # new units go to the first (scratch) directory, never into the seeds
    if out=$(timeout 120 $B/fz/$n -runs=$runs -seed=${FUZZ_SEED:-1} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
            -artifact_prefix=$work/ $(dict_of $n) $work $(seeds_of $n) 2>&1); then
        execs=$(echo "$out" | sed -n 's/^stat::number_of_executed_units: *//p')
        echo "ok   $n: $execs executions"
        pass=$((pass + 1))
    else
        echo "FAIL $n: fuzzing the corpus failed:"; echo "$out" | tail -40
        fail=$((fail + 1))
    fi
    rm -rf $work
    for f in $T/crashes/$n/*; do
        [ -f "$f" ] || continue
        rel=$n/$(basename "$f")
        if known $rel; then
            # not a skip (which fails make test): owned by another change, listed with its issue item
            echo "known $rel: $(grep "^$rel " $T/known.txt | cut -d' ' -f2-)"; continue
        fi
        if out=$(timeout 30 $B/replay/$n "$f" 2>&1); then
            pass=$((pass + 1))
        else
            echo "FAIL $rel: the saved crash still fails:"; echo "$out" | tail -30
            fail=$((fail + 1))
        fi
    done
}

fuzz_one() {
    n=$1
    mkdir -p $B/corpus/$n $B/crashes/$n $B/log
    log=$B/log/$n.log
    # a small quarantine and short malloc stacks double the executions of the
    # allocation-heavy harnesses (isa, target); replay/NAME gives full stacks
    ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=1:malloc_context_size=2} \
    nice -n ${FUZZ_NICE:-19} $B/fz/$n -max_total_time=${FUZZ_TIME:-600} -runs=${FUZZ_MAX_RUNS:--1} \
        -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=$B/crashes/$n/ $(dict_of $n) $B/corpus/$n $(seeds_of $n) >$log 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' $log | tail -1)
    secs=$(sed -n 's/^stat::.*\(time\|total_time\)[a-z_]*: *//p' $log | tail -1)
    printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" $n "${execs:-0}" "${FUZZ_TIME:-600}" $rc >>$B/execs.tsv
    if [ $rc -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $n: see $log and $B/crashes/$n/"; fi
    echo "$n ${execs:-0}" >>$B/summary.$$
}

for n in "$@"; do
    case $mode in
    test) test_one $n ;;
    fuzz) fuzz_one $n ;;
    esac
done
if [ $mode = fuzz ]; then
    echo "executions per harness (${FUZZ_TIME:-600} s each):"
    awk '{ printf "  %-8s %12d\n", $1, $2 }' $B/summary.$$
    rm -f $B/summary.$$
fi
summary fuzz-$mode
