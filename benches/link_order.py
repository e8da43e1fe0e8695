#!/usr/bin/env python3
"""Turns the code a run executed into a linker symbol-ordering file (benches/link-order.sh).

    link_order.py MAP TRACE... > ORDER
    link_order.py --check ORDER MAP    # how much of an ordering file a build still has

MAP is the link map of the binary that was traced (lld's `-Map`, written when the build
script sees AGENT_SDK_LINK_MAP). Each TRACE is valgrind lackey's `--trace-superblocks=yes`
log of one run of that binary: a line `SB <address>` per superblock executed. The output
names, once each, the function sections that hold an executed address, in the order the
runs first reached them (the first trace's first, then what later traces added). lld places
those sections first in `.text`, in that order, so the code one prompt runs sits together
and the kernel's fault-around maps it in a few windows instead of across the whole file.
"""
import bisect
import re
import sys

# An input section line of lld's map: VMA, LMA, size, alignment, then `file:(section)`.
INPUT = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+\S.*:\((\.text\.[^)]+)\)$")
# Section-name prefixes LLVM puts before a function's symbol (hot/cold splitting, startup).
PREFIXES = (".text.unlikely.", ".text.hot.", ".text.startup.", ".text.exit.", ".text.split.", ".text.")


def sections(map_path):
    """Sorted (start, end, symbol) of every function section in `.text`."""
    out = []
    with open(map_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = INPUT.match(line)
            if not m:
                continue
            start, size, name = int(m.group(1), 16), int(m.group(2), 16), m.group(3)
            if size == 0:
                continue
            for p in PREFIXES:
                if name.startswith(p):
                    out.append((start, start + size, name[len(p):]))
                    break
    out.sort()
    return out


def check(order_path, map_path):
    """Prints how many of ORDER's names the build of MAP still has. The names carry the hashes
    of the crates' metadata, which change with the dependencies, the toolchain and the profile;
    a name the build lacks is skipped by lld (the file goes stale, the link does not fail)."""
    present = {symbol for _, _, symbol in sections(map_path)}
    with open(order_path, encoding="utf-8") as f:
        names = [line.strip() for line in f if line.strip()]
    found = sum(1 for n in names if n in present)
    share = found / len(names) if names else 0.0
    print(f"{order_path}: {found} of {len(names)} names in the build ({share:.0%})")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        return check(sys.argv[2], sys.argv[3])
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    table = sections(sys.argv[1])
    starts = [s for s, _, _ in table]
    seen, order = set(), []
    for trace in sys.argv[2:]:
        with open(trace, encoding="ascii", errors="replace") as f:
            for line in f:
                if not line.startswith("SB "):
                    continue
                addr = int(line[3:].strip(), 16)
                i = bisect.bisect_right(starts, addr) - 1
                if i < 0:
                    continue
                start, end, symbol = table[i]
                if addr < end and symbol not in seen:
                    seen.add(symbol)
                    order.append(symbol)
    sys.stdout.write("".join(s + "\n" for s in order))
    print(f"link_order.py: {len(order)} of {len(table)} function sections executed", file=sys.stderr)


if __name__ == "__main__":
    main()
