#!/usr/bin/env python3
"""torch_ref.py: the cuBLAS side of kernels/bench (needs torch with CUDA).

  torch_ref.py time --sizes 4096,8192 [--rounds 9] [--warmup 3] --out FILE
      Times torch.mm(A, B.t()) in bf16 (cuBLAS, the same "TN" problem as
      kernels/hopper/gemm.cu) with bench's method: CUDA events around one
      call, L2 flushed by writing a 256 MiB buffer before each call outside the
      events, warm-up calls, median of the rounds. Writes "size median_us"
      lines to FILE (read by bench --cublas) and every round to FILE.json.

  torch_ref.py check --prefix WORK/gemm4096 --size 4096
      Compares all of C from both builds of the GEMM (PREFIX.{a,b}.bf16 and
      PREFIX.c_off.bf16, PREFIX.c_on.bf16, written by `bench run --kernel
      gemm --dump PREFIX` with --build off and --build on; under iket run,
      c_on is a traced launch's output) with torch's fp32 matmul of the same
      inputs (highest precision); tolerance 2^-8*|ref| + 2e-3*sqrt(K) per
      element, the same as bench's fp64 sample check.

Exit codes: 0 pass, 1 a mismatch, 2 an error (no GPU, missing files).
"""
import argparse
import json
import math
import os
import statistics
import sys


def need_torch():
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - report any import failure
        print(f"torch_ref: import torch: {e}", file=sys.stderr)
        sys.exit(2)
    if not torch.cuda.is_available():
        print("torch_ref: torch sees no CUDA device", file=sys.stderr)
        sys.exit(2)
    return torch


def cmd_time(a):
    torch = need_torch()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    lines, full = [], {}
    for n in [int(s) for s in a.sizes.split(",") if s]:
        g = torch.Generator(device="cuda").manual_seed(n)
        A = (torch.rand(n, n, device="cuda", generator=g) * 2 - 1).to(torch.bfloat16)
        B = (torch.rand(n, n, device="cuda", generator=g) * 2 - 1).to(torch.bfloat16)

        def once(tag):
            flush.fill_(tag & 0xFF)
            start.record()
            C = torch.mm(A, B.t())
            stop.record()
            torch.cuda.synchronize()
            del C
            return start.elapsed_time(stop) * 1000.0

        for w in range(a.warmup):
            once(w)
        rounds = [once(r) for r in range(a.rounds)]
        med = statistics.median(rounds)
        tf = 2.0 * n**3 / (med * 1e-6) / 1e12
        print(f"torch.mm bf16 {n}^3: median {med:.1f} us ({tf:.1f} TFLOP/s), "
              f"rounds {', '.join(f'{r:.1f}' for r in rounds)}")
        lines.append(f"{n} {med:.3f}")
        full[str(n)] = {"median_us": med, "rounds_us": rounds, "tflops": tf}
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(a.out + ".json", "w") as f:
        json.dump({"torch": torch.__version__, "method": "cuda events, 256 MiB L2 flush, "
                   f"{a.warmup} warm-up, {a.rounds} rounds", "sizes": full}, f, indent=1)
    return 0


def load_bf16(torch, path, rows, cols):
    want = rows * cols * 2
    if not os.path.exists(path) or os.path.getsize(path) != want:
        have = os.path.getsize(path) if os.path.exists(path) else "no file"
        print(f"torch_ref: {path}: want {want} bytes, have {have}", file=sys.stderr)
        sys.exit(2)
    t = torch.from_file(path, shared=False, size=rows * cols, dtype=torch.bfloat16)
    return t.view(rows, cols).cuda()


def cmd_check(a):
    torch = need_torch()
    n = a.size
    A = load_bf16(torch, a.prefix + ".a.bf16", n, n)
    B = load_bf16(torch, a.prefix + ".b.bf16", n, n)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    ref = torch.mm(A.float(), B.float().t())
    tol = ref.abs() * 2.0**-8 + 2e-3 * math.sqrt(n)
    rc = 0
    # cuBLAS's own bf16 result, for scale: how far the library is from fp32.
    cb = torch.mm(A, B.t()).float()
    print(f"check {n}^3: cuBLAS bf16 vs fp32 reference: max error "
          f"{(cb - ref).abs().max().item():.4g}")
    for build in ("off", "on"):
        C = load_bf16(torch, f"{a.prefix}.c_{build}.bf16", n, n).float()
        err = (C - ref).abs()
        bad = ~(err <= tol)  # NaN counts as bad
        nbad = int(bad.sum().item())
        worst = int(torch.argmax(torch.nan_to_num(err, nan=float("inf"))).item())
        wi, wj = divmod(worst, n)
        name = "uninstrumented" if build == "off" else "instrumented"
        print(f"check {n}^3 {name}: {nbad} of {n * n} elements outside tolerance; "
              f"max error {err.view(-1)[worst].item():.4g} at [{wi}][{wj}] "
              f"(got {C[wi, wj].item():.6g}, fp32 reference {ref[wi, wj].item():.6g})")
        if nbad:
            idx = torch.nonzero(bad)[:5].tolist()
            print(f"  first bad indices: {idx}")
            rc = 1
    print("check: PASS" if rc == 0 else "check: FAIL")
    return rc


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("time")
    t.add_argument("--sizes", default="4096,8192")
    t.add_argument("--rounds", type=int, default=9)
    t.add_argument("--warmup", type=int, default=3)
    t.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("--prefix", required=True)
    c.add_argument("--size", type=int, required=True)
    a = p.parse_args()
    return cmd_time(a) if a.cmd == "time" else cmd_check(a)


if __name__ == "__main__":
    sys.exit(main())
