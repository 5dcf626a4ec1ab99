#!/usr/bin/env python3
"""opbox beside PyTorch, from one gpu-check run: prints one markdown table.

Reads the output of opbox's `dispatch` bench (criterion), of its `launch` bench (the line
`opbox cuda_launch raw_us=... builder_us=... stub_us=... op_us=...`) and of benches/peers/run.sh
(`peer torch ...` lines). Any of them may be missing or broken: the cells say so and the rest of
the table is still printed. Always exits 0 on bad input; scripts/gpu-check runs it.

    benches/peers/table.py --dispatch LOG --launch LOG --peers LOG [--peers-rc N]
"""

import argparse
import math
import re
import sys

UNITS = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}

# criterion's group names in benches/dispatch.rs, and the names in the peer's lines.
OPS = [
    ("tensor_op", "(Tensor, Tensor, float) -> Tensor"),
    ("int_op", "(int, int) -> int"),
]
FORMS = ["direct", "typed", "boxed"]
BOXED_GOAL_NS = 25.0
BOXED_RATIO_GOAL = 3.0
LAUNCH_VS_BUILDER_GOAL = 1.00
LAUNCH_VS_RAW_GOAL = 1.05


def read(path):
    if not path:
        return None, "no log given"
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(), None
    except OSError as e:
        return None, "cannot read %s: %s" % (path, e.strerror or e)


def to_ns(value, unit):
    return float(value) * UNITS[unit]


TIME = re.compile(
    r"time:\s*\[\s*([0-9.]+)\s*(ps|ns|µs|us|ms|s)\s+([0-9.]+)\s*(ps|ns|µs|us|ms|s)\s+"
    r"([0-9.]+)\s*(ps|ns|µs|us|ms|s)\s*\]"
)


def parse_criterion(text):
    """{(op, form): ns} from criterion's output: "<group>/<function>" then (on the same line or
    the next) "time: [low estimate high]"; the estimate is taken."""
    out = {}
    last_id = None
    for line in text.splitlines():
        m = TIME.search(line)
        if m:
            head = line[: m.start()].strip()
            bench_id = head or last_id
            last_id = None
            if not bench_id or "/" not in bench_id:
                continue
            group, function = bench_id.rsplit("/", 1)
            for op, name in OPS:
                if group.strip() == name:
                    for form in FORMS:
                        if function.strip().startswith(form):
                            out[(op, form)] = to_ns(m.group(3), m.group(4))
            continue
        s = line.strip()
        if s and not re.match(
            r"(Benchmarking|Found|[0-9]+ \(|Warning|change:|thrpt:|No change|Performance|"
            r"Change within|Gnuplot|Plotting)",
            s,
        ):
            last_id = s
    return out


KV = re.compile(r"([a-z0-9_]+)=(\S+)")


def parse_kv(line):
    return {k: v for k, v in KV.findall(line)}


def num(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def parse_peers(text):
    """What the peer said: figures per part, and why a part has none."""
    peer = {"figures": {}, "why": {}, "build": [], "errors": [], "info": {}, "version": None}
    for line in text.splitlines():
        if not line.startswith("peer torch "):
            continue
        rest = line[len("peer torch "):]
        word, _, tail = rest.partition(" ")
        if word == "info":
            peer["info"] = parse_kv(tail)
        elif word == "build" and tail.startswith("torch="):
            peer["version"] = tail[len("torch="):].split(" torch_cuda=")[0]
            peer["build"].append(rest)
        elif word in ("build", "note", "run", "unavailable:"):
            peer["build"].append(rest)
        elif word == "error:":
            peer["errors"].append(tail)
        elif word in ("tensor_op", "int_op", "cuda_launch"):
            if tail.startswith(("unavailable:", "failed:")):
                peer["why"][word] = tail
            else:
                peer["figures"][word] = {k: num(v) for k, v in parse_kv(tail).items()}
    return peer


def fmt(x, unit, digits=2):
    return "%.*f %s" % (digits, x, unit) if x is not None else "—"


def with_over(x, o):
    """ "104.08 ns (+78.69)": a figure and its overhead over the direct call, where known."""
    return fmt(x, "ns") + (" (+%.2f)" % o if o is not None else "")


def over(x, base):
    return x - base if x is not None and base is not None else None


def verdict(ok):
    return "met" if ok else "MISSED"


class NoData:
    """ "no data: <why>" for a cell, the reasons in full the first time and "as above" after, so
    that one missing log does not fill the table with the same sentence."""

    def __init__(self):
        self.said = set()

    def __call__(self, *whys):
        whys = [w for w in whys if w]
        fresh = [w for w in whys if w not in self.said]
        self.said.update(whys)
        if not fresh:
            return "no data (as above)"
        return "no data: " + "; ".join(fresh)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dispatch")
    ap.add_argument("--launch")
    ap.add_argument("--peers")
    ap.add_argument("--peers-rc", type=int, default=None)
    args = ap.parse_args()

    rows = []
    nodata = NoData()

    # ---- opbox, dispatch -----------------------------------------------------------------
    text, err = read(args.dispatch)
    opbox = parse_criterion(text) if text is not None else {}
    opbox_why = None
    if text is None:
        opbox_why = "opbox dispatch bench: " + err
    elif not opbox:
        opbox_why = "opbox dispatch bench: no criterion figures in its output"

    # ---- PyTorch --------------------------------------------------------------------------
    ptext, perr = read(args.peers)
    peer = parse_peers(ptext) if ptext is not None else parse_peers("")
    peer_why = None
    if ptext is None:
        peer_why = "PyTorch peer: " + perr
    elif not peer["figures"]:
        said = [b for b in peer["build"] if b.startswith(("build failed", "unavailable", "run failed"))]
        peer_why = "PyTorch peer: " + (said[0] if said else "no figures in its output")
        if args.peers_rc not in (None, 0):
            peer_why += " (run.sh exit %d)" % args.peers_rc

    for op, name in OPS:
        ob = {f: opbox.get((op, f)) for f in FORMS}
        pt_fig = peer["figures"].get(op, {})
        pt = {f: pt_fig.get(f + "_ns") for f in FORMS}
        pt_missing = ("PyTorch peer: %s %s" % (op, peer["why"][op]) if op in peer["why"]
                      else peer_why or "PyTorch peer printed no %s line" % op)
        ob_missing = opbox_why or "opbox dispatch bench: no %s figures" % op
        label = "`%s`" % name

        rows.append([label, "direct", fmt(ob["direct"], "ns"), fmt(pt["direct"], "ns"), "", "", ""])

        ob_t, pt_t = over(ob["typed"], ob["direct"]), over(pt["typed"], pt["direct"])
        if ob_t is not None and pt_t is not None:
            ratio = "%.2f" % (ob_t / pt_t) if pt_t > 0 else "n/a (PyTorch overhead ≤ 0)"
            rows.append([
                "", "typed", with_over(ob["typed"], ob_t), with_over(pt["typed"], pt_t),
                "opbox/PyTorch overhead = " + ratio,
                "opbox overhead ≤ PyTorch's", verdict(ob_t <= pt_t),
            ])
        else:
            rows.append([
                "", "typed", with_over(ob["typed"], ob_t), with_over(pt["typed"], pt_t), "",
                "opbox overhead ≤ PyTorch's",
                nodata(ob_missing if ob_t is None else None, pt_missing if pt_t is None else None),
            ])

        ob_b, pt_b = over(ob["boxed"], ob["direct"]), over(pt["boxed"], pt["direct"])
        if ob_b is not None and pt_b is not None:
            if ob_b > 0:
                r = pt_b / ob_b
                ratio, ok = "%.2f" % r, r >= BOXED_RATIO_GOAL
            else:
                ratio, ok = "∞ (opbox overhead ≤ 0)", pt_b > 0
            rows.append([
                "", "boxed", with_over(ob["boxed"], ob_b), with_over(pt["boxed"], pt_b),
                "PyTorch/opbox overhead = " + ratio,
                "≥ %g×" % BOXED_RATIO_GOAL, verdict(ok),
            ])
        else:
            rows.append([
                "", "boxed", with_over(ob["boxed"], ob_b), with_over(pt["boxed"], pt_b), "",
                "PyTorch/opbox overhead ≥ %g×" % BOXED_RATIO_GOAL,
                nodata(ob_missing if ob_b is None else None, pt_missing if pt_b is None else None),
            ])
        rows.append([
            "", "boxed over direct", "+%.2f ns" % ob_b if ob_b is not None else "—",
            "+%.2f ns" % pt_b if pt_b is not None else "—", "",
            "opbox ≤ %g ns" % BOXED_GOAL_NS,
            verdict(ob_b <= BOXED_GOAL_NS) if ob_b is not None else nodata(ob_missing),
        ])

    # ---- CUDA launch ----------------------------------------------------------------------
    ltext, lerr = read(args.launch)
    launch = {}
    submit = {}
    launch_why = None
    if ltext is None:
        launch_why = "opbox launch bench: " + lerr
    else:
        for line in ltext.splitlines():
            if line.startswith("opbox cuda_launch "):
                launch = {k: num(v) for k, v in parse_kv(line).items()}
            if line.startswith("opbox cuda_submit "):
                submit = {k: num(v) for k, v in parse_kv(line).items()}
        if not launch:
            said = [l for l in ltext.splitlines() if l.startswith(("skipped", "launch bench failed"))]
            launch_why = "opbox launch bench: " + (said[0] if said else "no `opbox cuda_launch` line")
    cl = peer["figures"].get("cuda_launch", {})
    cl_why = ("PyTorch peer: cuda_launch " + peer["why"]["cuda_launch"] if "cuda_launch" in peer["why"]
              else peer_why or "PyTorch peer printed no cuda_launch line")
    c, a, a0 = launch.get("op_us"), launch.get("builder_us"), launch.get("raw_us")
    p_op, p_raw = cl.get("op_us"), cl.get("raw_us")
    label = "op → CUDA, empty kernel (1 pointer), per launch"
    p_ratio = "PyTorch/opbox = %.3f" % (p_op / c) if c and p_op else ""
    rows.append([
        label, "op call", fmt(c, "µs", 3), fmt(p_op, "µs", 3), p_ratio, "",
        "" if c is not None and p_op is not None
        else nodata(launch_why if c is None else None, cl_why if p_op is None else None),
    ])
    rows.append([
        "", "vs cudarc launch builder (a)",
        "(a) %s" % fmt(a, "µs", 3), "", "(c)/(a) = %.3f" % (c / a) if c and a else "",
        "≤ %.2f" % LAUNCH_VS_BUILDER_GOAL,
        verdict(c / a <= LAUNCH_VS_BUILDER_GOAL) if c and a else nodata(launch_why),
    ])
    rows.append([
        "", "vs raw launch in the same binary (a0)",
        "cuLaunchKernel %s" % fmt(a0, "µs", 3), "cudaLaunchKernel %s" % fmt(p_raw, "µs", 3),
        "; ".join(x for x in [
            "opbox (c)/(a0) = %.3f (+%.3f µs)" % (c / a0, c - a0) if c and a0 else "",
            "PyTorch op/raw = %.3f (+%.3f µs)" % (p_op / p_raw, p_op - p_raw) if p_op and p_raw else "",
        ] if x),
        "opbox ≤ %.2f" % LAUNCH_VS_RAW_GOAL,
        verdict(c / a0 <= LAUNCH_VS_RAW_GOAL) if c and a0 else nodata(launch_why),
    ])
    # The same launches timed as submission cost (launch calls alone, queue never full).
    sc, sa, sa0 = submit.get("op_us"), submit.get("builder_us"), submit.get("raw_us")
    rows.append([
        "", "submission cost: vs (a) builder",
        "%s vs (a) %s" % (fmt(sc, "µs", 3), fmt(sa, "µs", 3)), "",
        "(c)/(a) = %.3f" % (sc / sa) if sc and sa else "",
        "≤ %.2f" % LAUNCH_VS_BUILDER_GOAL,
        verdict(sc / sa <= LAUNCH_VS_BUILDER_GOAL) if sc and sa else nodata(launch_why or "no `opbox cuda_submit` line"),
    ])
    rows.append([
        "", "submission cost: vs (a0) raw",
        "(a0) %s" % fmt(sa0, "µs", 3), "",
        "(c)/(a0) = %.3f (+%.3f µs)" % (sc / sa0, sc - sa0) if sc and sa0 else "",
        "≤ %.2f" % LAUNCH_VS_RAW_GOAL,
        verdict(sc / sa0 <= LAUNCH_VS_RAW_GOAL) if sc and sa0 else nodata(launch_why or "no `opbox cuda_submit` line"),
    ])

    # ---- Print ----------------------------------------------------------------------------
    version = peer["version"] or "(peer did not run)"
    print("## opbox beside PyTorch %s, same machine, same run" % version)
    print()
    print("| op | call | opbox | PyTorch | ratio | goal | verdict |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |")
    print()
    info = peer["info"]
    print(
        "(+x) = overhead over the same side's direct call. opbox: criterion's estimate (the middle "
        "of `time: [low est high]`); PyTorch: median of %s rounds × %s calls under "
        "c10::InferenceMode. CUDA: median of synchronized rounds (%s × %s launches for PyTorch, "
        "as benches/launch.rs for opbox)."
        % (info.get("rounds", "?"), info.get("calls", "?"),
           info.get("launch_rounds", "?"), info.get("launches", "?"))
    )
    if peer_why or peer["errors"] or any(b.startswith(("build failed", "run failed", "note"))
                                         for b in peer["build"]):
        print()
        print("PyTorch peer (benches/peers/run.sh)%s:" % (
            " exit %d" % args.peers_rc if args.peers_rc not in (None, 0) else ""))
        print()
        print("```")
        for b in peer["build"]:
            print(b)
        for e in peer["errors"][:20]:
            print("  " + e)
        if ptext is not None and not peer["build"] and not peer["figures"]:
            # Not even a build line: show what run.sh did print.
            for line in ptext.splitlines()[:12]:
                print(line)
        print("```")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # the table must never take gpu-check down
        print("peer table failed: %s: %s" % (type(e).__name__, e))
        sys.exit(0)
