#!/usr/bin/env python3
"""sass_count.py: instructions of one iket event, from `cuobjdump -sass`.

  sass_count.py EVENTCOST_ON.sass [OTHER.sass ...]

EVENTCOST_ON.sass is the disassembly of the instrumented build of
kernels/bench/eventcost.cu, whose kernels ev_sass1 .. ev_sass5 differ only in
holding 1 .. 5 marks (ev_sass3 at least). The differences of their instruction
counts are the instructions of one event (the average over the 2nd to the
last event is the figure; single differences move by one or two with how
the scheduler interleaves neighbouring events); the opcodes that the 3rd
event adds are listed, with the fences among them (there should be none) and the bytes it
stores to global memory. Further files are summarised per kernel (instruction
totals), e.g. the uninstrumented and instrumented builds of a kernel.

Counted: every instruction up to the kernel's last EXIT or self-branch, NOPs
inside the body included (they are issued), the alignment NOPs after it not.
Exit codes: 0 done and the event is fence-free, 1 an event holds a fence or
the counts disagree, 2 bad input.
"""
import collections
import re
import sys

FUNC = re.compile(r"Function\s*:\s*(\S+)")
INSN = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\*")
FENCES = ("MEMBAR", "FENCE", "ERRBAR", "CCTL")


def parse(path):
    """Returns {kernel: [(address, text)]}, the body without its padding.

    An older cuobjdump prints some sm_90 instructions (VIMNMX) as an encoding
    line with no address or text; such slots are kept as (address, "?") by
    filling the gaps of the 16-byte address sequence."""
    funcs = collections.OrderedDict()
    cur = None
    with open(path) as f:
        for line in f:
            m = FUNC.search(line)
            if m:
                cur = m.group(1)
                funcs[cur] = []
                continue
            m = INSN.match(line)
            if m and cur is not None:
                text = m.group(2).strip().rstrip(";").strip()
                funcs[cur].append((int(m.group(1), 16), text))
    out = {}
    for name, ins in funcs.items():
        full = []
        for addr, text in ins:
            while full and full[-1][0] + 16 < addr:
                full.append((full[-1][0] + 16, "?"))
            full.append((addr, text))
        end = len(full)
        # Drop the trailing self-branch and alignment NOPs.
        while end > 0 and (full[end - 1][1].startswith("NOP") or
                           re.match(r"BRA\s+0x[0-9a-f]+$", full[end - 1][1])):
            end -= 1
        out[name] = [t for _, t in full[:end]]
    return out


def loop_body(ins, holds="FFMA"):
    """The instructions of the last loop whose body holds an instruction
    starting with holds (ev_loop's dependent FMA; the anchor spin loops hold
    none): from the backward branch's target to the branch, or None."""
    for i in range(len(ins) - 1, -1, -1):
        m = re.search(r"BRA\s+(?:\w+,\s*)?0x([0-9a-f]+)$", ins[i])
        if m:
            target = int(m.group(1), 16) // 16
            body = ins[target:i + 1]
            if target <= i and any(opcode(t).startswith(holds) for t in body):
                return body
    return None


def opcode(text):
    t = re.sub(r"^@!?U?P\w+\s+", "", text)
    return t.split()[0] if t else ""


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    funcs = parse(argv[1])
    need = ["ev_sass1", "ev_sass2", "ev_sass3"]
    missing = [n for n in need if n not in funcs]
    if missing:
        print(f"sass_count: {argv[1]}: no kernel(s) {missing}; found {list(funcs)}",
              file=sys.stderr)
        return 2
    for k in ("ev_sass4", "ev_sass5"):
        if k in funcs:
            need.append(k)
    n = [len(funcs[k]) for k in need]
    diffs = [n[i + 1] - n[i] for i in range(len(n) - 1)]
    rc = 0
    print("SASS instructions: " + ", ".join(f"{k} {v}" for k, v in zip(need, n)))
    print(f"instructions per event: {(n[-1] - n[0]) / (len(n) - 1):.1f} on average "
          f"(differences {diffs} for the 2nd .. {len(n)}th event: the scheduler "
          "interleaves neighbouring events)")
    extra = collections.Counter(map(opcode, funcs["ev_sass3"])) - \
        collections.Counter(map(opcode, funcs["ev_sass2"]))
    unnamed = sum(t == "?" for t in funcs["ev_sass3"])
    if unnamed:
        print(f"note: {unnamed} instruction(s) in ev_sass3 not named by this cuobjdump "
              "(shown as ?; counted)")
    print("opcodes the 3rd event adds: " +
          ", ".join(f"{k} x{v}" if v > 1 else k for k, v in sorted(extra.items())))
    fences = [k for k in extra if k.startswith(FENCES)]
    stores = [k for k in extra if k.startswith(("STG", "ST.", "ST "))]
    nbytes = 0
    for k in stores:
        w = re.search(r"\.(64|128|U8|S8|U16|S16)\b", k)
        nbytes += extra[k] * ({"64": 8, "128": 16, "U8": 1, "S8": 1,
                               "U16": 2, "S16": 2}[w.group(1)] if w else 4)
    nstores = sum(extra[k] for k in stores)
    print(f"global store instructions per event: {nstores} "
          f"({', '.join(f'{k} x{extra[k]}' for k in stores) or 'no store'}), {nbytes} bytes "
          "if every one stores (a predicated store counts as stored)")
    print(f"fences per event: {len(fences)}" + (f" ({fences})" if fences else ""))
    if fences:
        rc = 1
    if "ev_next1" in funcs and "ev_next2" in funcs:
        nn = len(funcs["ev_next2"]) - len(funcs["ev_next1"])
        print(f"range_next (one NEXT record: a pop and a push at one instant): {nn} instructions "
              f"(ev_next2 {len(funcs['ev_next2'])} - ev_next1 {len(funcs['ev_next1'])})")
    if "ev_pair1" in funcs and "ev_pair2" in funcs:
        nn = len(funcs["ev_pair2"]) - len(funcs["ev_pair1"])
        print(f"range_next_pair (stamp + two NEXT records, two 8-byte stores): {nn} "
              f"instructions, {nn / 2:.1f} per event "
              f"(ev_pair2 {len(funcs['ev_pair2'])} - ev_pair1 {len(funcs['ev_pair1'])})")
    offs = {}
    if len(argv) > 2 and "eventcost_off" in argv[2]:
        offs = parse(argv[2])
        argv = argv[:2] + argv[3:]
    for probe, what in (("ev_loop", "a 32-bit payload (the loop counter)"),
                        ("ev_stage", "a stage payload (i % 4)")):
        if probe not in funcs:
            continue
        on = loop_body(funcs[probe])
        off = loop_body(offs[probe]) if probe in offs else None
        if on:
            line = f"{probe} body (one mark per iteration, {what}): {len(on)} instructions"
            if off:
                line += (f", {len(off)} without the mark: {len(on) - len(off)} "
                         "instructions per event in a loop")
            print(line)
            for t in on:
                print("   ", t)
    print("\nev_sass3 body (the events sit between the two STG of p[0] and p[2]):")
    for t in funcs["ev_sass3"]:
        print("   ", t)
    for path in argv[2:]:
        print(f"\n{path}:")
        for name, ins in parse(path).items():
            c = collections.Counter(map(opcode, ins))
            st = sum(v for k, v in c.items() if k.startswith(("STG", "ST.")))
            print(f"  {name}: {len(ins)} instructions, {st} global/generic stores")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
