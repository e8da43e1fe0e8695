#!/usr/bin/env bash
# Instructions per event of each adapter pipeline and of its serialise-only baseline, counted
# by callgrind (deterministic, unlike wall-clock figures on a shared machine).
#   bash benches/icount.sh            # builds the example with the bench profile, then counts
#   SKIP_BUILD=1 bash benches/icount.sh   # counts with the example already built
#   E2E=0 bash benches/icount.sh          # adapters only, no end-to-end pipelines
#   ICOUNT_BIN=/tmp/icount-old SKIP_BUILD=1 bash benches/icount.sh   # another build of the example
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "icount.sh: valgrind is not installed (apt-get install -y valgrind)" >&2; exit 1; }
[ -n "${SKIP_BUILD:-}" ] || cargo build -q --profile bench -p benches --example icount
bin=${ICOUNT_BIN:-target/release/examples/icount}
N=${ICOUNT_TIMES:-10}
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
printf '%-10s %-6s %14s %12s\n' pipeline load "instr/run" "instr/event"
for w in text mixed; do
  events=$("$bin" clone "$w" 1 | cut -d' ' -f1)
  c0=$(count clone "$w" 0); c1=$(count clone "$w" "$N")
  for p in zero zero-base rpc rpc-base; do
    a=$(count "$p" "$w" 0); b=$(count "$p" "$w" "$N")
    case $p in *-base) per=$(( (b - a) / N ));; *) per=$(( (b - a - (c1 - c0)) / N ));; esac
    printf '%-10s %-6s %14d %12d\n' "$p" "$w" "$per" $(( per / events ))
  done
done
[ "${E2E:-1}" = 0 ] && exit 0
# End to end, per text delta: the difference between two run sizes, so the fixed costs of a
# run (runtime, sessions, script) cancel out.
small=${E2E_SMALL:-2000} large=${E2E_LARGE:-12000}
printf '\n%-10s %14s\n' pipeline "instr/delta"
for p in e2e-drain e2e-exec e2e-rpc e2e-zcode e2e-acp; do
  a=$(count "$p" - "$small"); b=$(count "$p" - "$large")
  printf '%-10s %14d\n' "$p" $(( (b - a) / (large - small) ))
done
