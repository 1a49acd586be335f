#!/usr/bin/env bash
# Builds every libFuzzer target of the C core and runs each for the given number of seconds
# (default 30), then prints how many inputs each one executed.
#
#   scripts/fuzz.sh [seconds-per-target]
#
# Needs clang with libFuzzer (the Swift toolchain's clang has it) and libbsd-dev. Works from any
# directory; writes only under fuzz/out/ (git-ignored): binaries, the growing corpus, logs, and
# crash-* / leak-* / timeout-* inputs if a target fails. The seed corpus fuzz/corpus/<name>/ is
# read, never written. Exits non-zero if any target fails.
#
# Environment: CC (default clang), FUZZ_FLAGS (extra libFuzzer flags, e.g. "-jobs=4"; they come
# after the defaults below and override them).
set -euo pipefail

cd "$(dirname "$0")/.."
seconds="${1:-30}"
cc="${CC:-clang}"
out=fuzz/out

# One line per target: "<name> <source files beyond the C core>". Adding a target is one line;
# its seed corpus, if any, goes in fuzz/corpus/<name>/.
targets=(
    "registry fuzz/registry_fuzz.c"
    "changes fuzz/changes_fuzz.c"
    "positions fuzz/positions_fuzz.c"
    "wire fuzz/wire_fuzz.c"
)

if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
    echo "usage: $0 [seconds-per-target > 0]" >&2
    exit 2
fi
command -v "$cc" >/dev/null || { echo "fuzz.sh: $cc not found (set CC to a clang with libFuzzer)" >&2; exit 1; }
mkdir -p "$out"

# The toolchain's clang links with the system linker by default; lld, when present, is quieter
# (gold prints a warning per sanitizer symbol) and faster.
ld_flags=()
if echo 'int main(void){return 0;}' | "$cc" -x c - -fuse-ld=lld -o "$out/.ld-probe" 2>/dev/null; then
    ld_flags=(-fuse-ld=lld)
fi
rm -f "$out/.ld-probe"
if ! echo '#include <bsd/stdlib.h>' | "$cc" -x c -fsyntax-only - 2>/dev/null; then
    echo "fuzz.sh: <bsd/stdlib.h> not found; install libbsd-dev (apt-get install libbsd-dev)" >&2
    exit 1
fi

status=0
summary=()
for target in "${targets[@]}"; do
    read -r name sources <<<"$target"
    binary="$out/${name}_fuzz"
    echo "== building $name"
    # shellcheck disable=SC2086 # $sources is a list of paths
    # Warnings are shown but do not stop fuzzing (scripts/c-sanitizers.sh enforces them).
    "$cc" -std=c11 -g -O1 -Wall -Wextra -Wpedantic -Wno-nullability-extension \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
        -Iinclude -ISources/CObserveCore -DFOLD_CELLS_LOG2=3 \
        Sources/CObserveCore/*.c $sources \
        ${ld_flags[@]+"${ld_flags[@]}"} -lbsd -o "$binary"

    corpus="$out/corpus/$name"
    mkdir -p "$corpus"
    seeds=()
    [ -d "fuzz/corpus/$name" ] && seeds=("fuzz/corpus/$name")

    echo "== running $name for ${seconds}s"
    log="$out/$name.log"
    set +e
    # shellcheck disable=SC2086 # FUZZ_FLAGS is a list of flags
    # -max_len=1024: a few hundred operations reach every state of the targets' small alphabets;
    # longer inputs mostly cost executions per second.
    "$binary" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/$name-" \
        -max_len=1024 ${FUZZ_FLAGS:-} "$corpus" ${seeds[@]+"${seeds[@]}"} >"$log" 2>&1
    rc=$?
    set -e

    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    units=$(find "$corpus" -type f | wc -l | tr -d ' ')
    if [ "$rc" -eq 0 ]; then
        summary+=("$name: ${runs:-?} executions in ${seconds}s (${rate:-?}/s), corpus $units inputs")
    else
        status=1
        summary+=("$name: FAILED (exit $rc) after ${runs:-?} executions; see $log and $out/$name-*")
        grep -E "model mismatch|internal error|ERROR|SUMMARY" "$log" | head -n 5 >&2 || true
    fi
done

echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
exit "$status"
