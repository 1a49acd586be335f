#!/usr/bin/env bash
# Compiles the C core with a small C test driver (fuzz/c_smoke_test.c, which also runs
# fuzz/c_smoke_arrays.c for the array core) under AddressSanitizer and
# UndefinedBehaviorSanitizer, in a debug configuration (COBS_INTERNAL_CHECKS: the invariant
# checker runs after every mutation), a release one (-O2 -DNDEBUG, deterministic hashing) and one
# with the read sections' membarrier ordering (COBS_READ_MEMBARRIER=1), and runs all three.
# Any sanitizer report, leak, failed check or compiler warning makes the script fail.
#
#   scripts/c-sanitizers.sh
#
# Needs clang (or CC) and libbsd-dev. Works from any directory; writes only under
# .build/c-sanitizers/ (git-ignored). With COBS_VALGRIND=1 and valgrind installed, also runs an
# unsanitized build under valgrind's memcheck.
set -euo pipefail

cd "$(dirname "$0")/.."
cc="${CC:-clang}"
out=.build/c-sanitizers
mkdir -p "$out"

command -v "$cc" >/dev/null || { echo "c-sanitizers.sh: $cc not found (set CC)" >&2; exit 1; }
if ! echo '#include <bsd/stdlib.h>' | "$cc" -x c -fsyntax-only - 2>/dev/null; then
    echo "c-sanitizers.sh: <bsd/stdlib.h> not found; install libbsd-dev (apt-get install libbsd-dev)" >&2
    exit 1
fi
ld_flags=()
if echo 'int main(void){return 0;}' | "$cc" -x c - -fuse-ld=lld -o "$out/.ld-probe" 2>/dev/null; then
    ld_flags=(-fuse-ld=lld)
fi
rm -f "$out/.ld-probe"

# Warnings are errors: the C core is kept clean under -Wall -Wextra -Wpedantic. The one exception
# is Clang's -Wnullability-extension, which -Wpedantic raises for every _Nonnull/_Nullable in the
# public headers: those annotations are deliberate (they shape the Swift import).
common=(-std=c11 -g -Wall -Wextra -Wpedantic -Wno-nullability-extension -Werror
    -Iinclude -ISources/CObserveCore)
sanitize=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
sources=(Sources/CObserveCore/*.c fuzz/c_smoke_test.c fuzz/c_smoke_arrays.c)
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

build_and_run() {
    local name=$1
    shift
    echo "== $name: building"
    "$cc" "${common[@]}" "$@" "${sources[@]}" ${ld_flags[@]+"${ld_flags[@]}"} -lbsd -pthread -o "$out/smoke-$name"
    echo "== $name: running"
    # The corruption tests print expected COBS_CORRUPT reports; keep them out of the way.
    "$out/smoke-$name" 2>"$out/smoke-$name.stderr" || {
        cat "$out/smoke-$name.stderr" >&2
        echo "c-sanitizers.sh: $name FAILED" >&2
        exit 1
    }
}

build_and_run debug -O1 "${sanitize[@]}" -DCOBS_INTERNAL_CHECKS
build_and_run release -O2 "${sanitize[@]}" -DNDEBUG -DCOBS_DETERMINISTIC_HASHING
# The read sections' other ordering (readers leave the store-load order to the reclaimer's
# membarrier; off by default, see read_sections.c): built and run so that it does not rot.
build_and_run membarrier -O1 "${sanitize[@]}" -DCOBS_READ_MEMBARRIER=1

if [ "${COBS_VALGRIND:-0}" = 1 ] && command -v valgrind >/dev/null; then
    echo "== valgrind: building and running"
    # DWARF 4: older valgrind releases cannot read the DWARF 5 that recent clang emits by default.
    "$cc" "${common[@]}" -gdwarf-4 -O1 -DCOBS_INTERNAL_CHECKS "${sources[@]}" ${ld_flags[@]+"${ld_flags[@]}"} -lbsd -pthread \
        -o "$out/smoke-valgrind"
    valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=all \
        "$out/smoke-valgrind" 2>"$out/smoke-valgrind.stderr" >/dev/null || {
        grep -v '^cobs_registry 0x' "$out/smoke-valgrind.stderr" >&2
        echo "c-sanitizers.sh: valgrind FAILED" >&2
        exit 1
    }
fi

echo "c-sanitizers.sh: all configurations passed"
