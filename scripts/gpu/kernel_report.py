#!/usr/bin/env python3
"""Tables for scripts/gpu/kernel_report.sh.

  kernel_report.py ptxas FILE.ptxas...    registers, spills and shared memory per kernel
  kernel_report.py sass REGEX FILE.sass   instruction mix of the loops of matching kernels
"""
import collections
import re
import subprocess
import sys

REGS_PER_SM = 65536
MAX_WARPS_PER_SM = 64


def demangle(names):
    if not names:
        return {}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    return dict(zip(names, out.splitlines()))


def warps_by_registers(regs):
    """Warps one multiprocessor holds at this register count (sm_90: 256-register units per warp)."""
    per_warp = -(-regs * 32 // 256) * 256
    return min(MAX_WARPS_PER_SM, REGS_PER_SM // per_warp)


def ptxas_table(paths):
    rows = []
    for path in paths:
        name, spill = None, (0, 0, 0)
        for line in open(path, encoding="utf-8", errors="replace"):
            m = re.search(r"Compiling entry function '([^']+)'", line)
            if m:
                name = m.group(1)
                continue
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m:
                spill = tuple(int(g) for g in m.groups())
                continue
            m = re.search(r"Used (\d+) registers", line)
            if m and name:
                smem = re.search(r"(\d+) bytes smem", line)
                rows.append((name, int(m.group(1)), spill, int(smem.group(1)) if smem else 0))
                name, spill = None, (0, 0, 0)
    names = demangle([r[0] for r in rows])
    print(f"{'regs':>4} {'warps/SM':>8} {'stack':>5} {'spill st/ld':>11} {'static smem':>11}  kernel")
    for mangled, regs, (stack, st, ld), smem in sorted(rows, key=lambda r: names[r[0]]):
        print(f"{regs:>4} {warps_by_registers(regs):>8} {stack:>5} {f'{st}/{ld}':>11} {smem:>11}  {names[mangled]}")


def parse_sass(path):
    """{mangled name: [(address, instruction text)]}"""
    funcs, cur = {}, None
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2)))
    return funcs


def opcode(text):
    words = text.split()
    op = words[1] if words[0].startswith("@") else words[0]
    return op.split(".")[0]


def loops(ins):
    """(first index, last index) of every loop, smallest first: a backward branch's span, unless
    the span holds an unconditional EXIT (then the branch returns from code placed out of line,
    such as a barrier's retry, and the span is not a loop body). Single-thread issue loops
    (BRA.U.ANY) are left out."""
    index = {a: i for i, (a, _) in enumerate(ins)}
    exits = [i for i, (_, text) in enumerate(ins) if text.split()[0] == "EXIT"]
    spans = []
    for i, (_, text) in enumerate(ins):
        m = re.search(r"\bBRA(?:\.\S+)?\s+(?:!?P\d,\s*)?(?:!?UP\d,\s*)?0x([0-9a-f]+)", text)
        if m and opcode(text) == "BRA" and ".U.ANY" not in text:
            target = int(m.group(1), 16)
            if target in index and index[target] < i and not any(index[target] <= e <= i for e in exits):
                spans.append((index[target], i))
    return sorted(set(spans), key=lambda s: s[1] - s[0])


def sass_table(pattern, path):
    funcs = parse_sass(path)
    names = demangle(list(funcs))
    for mangled, ins in funcs.items():
        if not re.search(pattern, names[mangled]):
            continue
        print(f"\n{names[mangled]}: {len(ins)} instructions")
        for lo, hi in loops(ins):
            if hi - lo + 1 < 40:
                continue
            mix = collections.Counter(opcode(t) for _, t in ins[lo:hi + 1])
            top = ", ".join(f"{op} {n}" for op, n in mix.most_common(12))
            print(f"  loop {ins[lo][0]:#x}..{ins[hi][0]:#x}: {hi - lo + 1} instructions: {top}")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "ptxas":
        ptxas_table(sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "sass":
        sass_table(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
