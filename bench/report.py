#!/usr/bin/env python3
"""Turns bench/run's results.tsv into docs/performance.md and its plot.

Medians and min-max over rounds; ratios are taken within a round (each
case against the curve25519 `ssh true` floor of the same round, which
shares the machine's load at that moment) and then the median of those.
The plot is a hand-written SVG (no plotting library needed): median wall
time against the number of hosts, both axes logarithmic.
"""
import argparse
import csv
import math
import os
import platform
import statistics
import subprocess
from collections import defaultdict

FLOOR = "ssh true (curve25519)"
CASE_ORDER = [
    "ssh true (default KEX)",
    "ssh true (curve25519)",
    "facts",
    "plan",
    "ansible setup default",
    "ansible setup tuned",
    "ansible setup tuned min",
]
LABEL = {
    "facts": "gpuexpand facts",
    "plan": "gpuexpand plan",
    "ansible setup default": "Ansible `-m setup`, default (forks 5)",
    "ansible setup tuned": "Ansible `-m setup`, tuned (forks 50, pipelining, ControlPersist, warm)",
    "ansible setup tuned min": "Ansible tuned, `gather_subset=min`",
    "ssh true (default KEX)": "OpenSSH `ssh true`, default KEX",
    "ssh true (curve25519)": "OpenSSH `ssh true`, `curve25519-sha256`",
}
COLOURS = ["#888888", "#222222", "#1f77b4", "#2ca02c", "#d62728", "#ff7f0e", "#9467bd"]


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def fmt_s(v):
    return f"{v:.2f} s" if v < 100 else f"{v:.0f} s"


def command_output(*argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def machine_line():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    debian = open("/etc/debian_version").read().strip() if os.path.exists("/etc/debian_version") else "?"
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, Debian {debian}, kernel {platform.release()}"


def summarise(rows):
    """(fleet, hosts, case) -> dict of walls, rss, cpu, ratios."""
    by_round = defaultdict(dict)
    for r in rows:
        by_round[(r["fleet"], int(r["hosts"]), r["round"])][r["case"]] = r
    groups = defaultdict(lambda: {"wall": [], "rss": [], "cpu": [], "ratio": [], "fleet_cpu": [], "bound": []})
    for (fleet, hosts, _), cases in by_round.items():
        floor = cases.get(FLOOR)
        for case, r in cases.items():
            g = groups[(fleet, hosts, case)]
            wall = float(r["wall_s"])
            g["wall"].append(wall)
            if r["peak_rss_kb"]:
                g["rss"].append(int(r["peak_rss_kb"]) / 1024)
            if r["cpu_s"]:
                g["cpu"].append(float(r["cpu_s"]))
            # Results written before the hosts' CPU was measured have none.
            if r.get("fleet_cpu_s"):
                g["fleet_cpu"].append(float(r["fleet_cpu_s"]) / hosts)
                if r["cpu_s"]:
                    g["bound"].append((float(r["cpu_s"]) + float(r["fleet_cpu_s"])) / (os.cpu_count() or 1))
            if floor:
                g["ratio"].append(wall / float(floor["wall_s"]))
    return groups


def svg_plot(groups, fleet, path):
    w, h, left, right, top, bottom = 720, 420, 70, 260, 20, 50
    series = defaultdict(list)
    for (f, hosts, case), g in groups.items():
        if f == fleet:
            series[case].append((hosts, statistics.median(g["wall"])))
    xs = sorted({x for pts in series.values() for x, _ in pts})
    ys = [y for pts in series.values() for _, y in pts]
    if not xs or not ys:
        return
    x_lo, x_hi = math.log10(min(xs)) - 0.1, math.log10(max(xs)) + 0.1
    y_lo, y_hi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    if y_hi == y_lo:
        y_hi += 1

    def px(x):
        return left + (math.log10(x) - x_lo) / (x_hi - x_lo) * (w - left - right)

    def py(y):
        return top + (y_hi - math.log10(y)) / (y_hi - y_lo) * (h - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>']
    for e in range(y_lo, y_hi + 1):
        y = py(10**e)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{10**e:g} s</text>')
    for x in xs:
        out.append(f'<line x1="{px(x):.1f}" y1="{top}" x2="{px(x):.1f}" y2="{h - bottom}" stroke="#eee"/>')
        out.append(f'<text x="{px(x):.1f}" y="{h - bottom + 16}" text-anchor="middle">{x}</text>')
    out.append(f'<text x="{(left + w - right) / 2:.0f}" y="{h - 12}" text-anchor="middle">hosts ({fleet} fleet, log scale)</text>')
    out.append(f'<text x="14" y="{(top + h - bottom) / 2:.0f}" transform="rotate(-90 14 {(top + h - bottom) / 2:.0f})" '
               f'text-anchor="middle">median wall time (log scale)</text>')
    legend_y = top + 10
    for i, case in enumerate(c for c in CASE_ORDER if c in series):
        pts = sorted(series[case])
        colour = COLOURS[CASE_ORDER.index(case) % len(COLOURS)]
        dash = ' stroke-dasharray="5,4"' if case.startswith("ssh") else ""
        path_d = " ".join(f"{'M' if k == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for k, (x, y) in enumerate(pts))
        out.append(f'<path d="{path_d}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')
        ly = legend_y + i * 18
        out.append(f'<line x1="{w - right + 12}" y1="{ly}" x2="{w - right + 36}" y2="{ly}" stroke="{colour}" '
                   f'stroke-width="2"{dash}/>')
        label = LABEL.get(case, case).replace("`", "")
        if len(label) > 34:
            label = label[:33] + "…"
        out.append(f'<text x="{w - right + 42}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def table(groups, fleet):
    lines = []
    hosts_list = sorted({h for f, h, _ in groups if f == fleet})
    for hosts in hosts_list:
        lines.append(f"\n**{hosts} hosts**\n")
        lines.append("| case | median | min–max | × curve25519 floor | peak RSS | controller CPU "
                     "| hosts' CPU per host | all CPU ÷ cores |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for case in CASE_ORDER:
            g = groups.get((fleet, hosts, case))
            if not g:
                continue
            walls = g["wall"]
            ratio = f"{statistics.median(g['ratio']):.2f}×" if g["ratio"] else ""
            rss = f"{statistics.median(g['rss']):.0f} MB" if g["rss"] else ""
            cpu = f"{statistics.median(g['cpu']):.2f} s" if g["cpu"] else ""
            per_host = f"{statistics.median(g['fleet_cpu']) * 1000:.0f} ms" if g["fleet_cpu"] else ""
            bound = fmt_s(statistics.median(g["bound"])) if g["bound"] else ""
            lines.append(f"| {LABEL.get(case, case)} | {fmt_s(statistics.median(walls))} | "
                         f"{fmt_s(min(walls))}–{fmt_s(max(walls))} ({len(walls)} runs) | {ratio} | {rss} | {cpu} "
                         f"| {per_host} | {bound} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--doc", required=True)
    ap.add_argument("--svg-prefix", required=True, help="PREFIX: writes PREFIX-<fleet>.svg")
    ap.add_argument("--gpuexpand", default="gpuexpand")
    ap.add_argument("--command", default="bench/run")
    ap.add_argument("--note", default="", help="a paragraph after the commands (e.g. which build gave which rows)")
    args = ap.parse_args()
    rows = read(args.results)
    groups = summarise(rows)
    order = ["bare-python", "bare", "converged", "host"]
    fleets = sorted({f for f, _, _ in groups}, key=lambda f: (order.index(f) if f in order else 99, f))
    for fleet in fleets:
        svg_plot(groups, fleet, f"{args.svg_prefix}-{fleet}.svg")
    versions = [
        "gpuexpand " + command_output(args.gpuexpand, "--version"),
        command_output("ssh", "-V") or command_output("sh", "-c", "ssh -V 2>&1"),
        command_output("sh", "-c", "ansible --version 2>/dev/null | head -1") or "ansible: not installed",
    ]
    doc = [
        "# Performance at fleet scale",
        "",
        "Written by `bench/report.py` from the figures of",
        "",
        f"    {args.command}",
        "",
        *([args.note, ""] if args.note else []),
        f"Machine: {machine_line()}. Versions: {'; '.join(v for v in versions if v)}.",
        "",
        "Every host is this machine: `bench/fleet` starts one sshd per host on a",
        "loopback address (its own listen socket, backlog and process, sshd's",
        "`MaxStartups` raised), so the figures separate the controller's cost",
        "(peak RSS and CPU of the `gpuexpand` or `ansible` process) from the",
        "machine's, which also does every host's side of every handshake and",
        "probe on the same cores. Within a round each case runs once, one after",
        "another; ratios are taken within a round against that round's",
        "`curve25519-sha256` floor (the key exchange libssh2 uses), then the",
        "median is shown. *Controller CPU* is the `gpuexpand` or `ansible`",
        "process's (for the floor: every `ssh` client's); *hosts' CPU* is every",
        "host's side of the case (its sshd, the login, the probe or Ansible's",
        "Python: `bench/fleet cpu` before and after), per host; *all CPU ÷",
        "cores* is both over this machine's cores, the wall time the case",
        "cannot beat here. On a real fleet each host's share runs on that",
        "host's own cores, so the wall time there is the controller's plus one",
        "host's share, not the sum of all hosts' shares over two cores. A *bare* host's sessions are chrooted into a copy of",
        "a factory-fresh lab node's disk (*bare-python*: the same plus Debian's",
        "python3, which Ansible needs), a *converged* host's into a copy of a",
        "lab node after `apply`, so the probe finds every tool and file a real",
        "node would have; a *host* fleet host is this machine itself.",
        "gpuexpand keeps each host's dpkg and apt answer in the bench's state",
        "store and reuses it while the files those tools read are unchanged",
        "(docs/benchmarks.md): a fleet's first `facts` (round 1) asks the",
        "tools and keeps their answers, every later `facts` and `plan` reuses",
        "them, so with one round `facts` is the first probe and `plan` a",
        "repeated one.",
        "",
        "`apply` itself (a full apply from bare nodes, per phase, and the no-op",
        "re-apply against an equivalent `ansible-playbook`) needs each host's own",
        "files and is measured on the lab's real nodes by `bench/lab-apply`:",
        "[performance-lab.md](performance-lab.md).",
    ]
    titles = {"host": "Host fleet (this machine's own files, its apt and root's shell start-up; with Ansible)",
              "bare-python": "Bare fleet with Python (a fresh lab node's disk plus python3; with Ansible)",
              "bare": "Bare fleet (a factory-fresh lab node's disk)",
              "converged": "Converged fleet (a lab node's disk after apply)"}
    for fleet in fleets:
        svg = f"{args.svg_prefix}-{fleet}.svg"
        doc += ["", f"## {titles.get(fleet, fleet)}"]
        if os.path.exists(svg):
            doc += ["", f"![median wall time against hosts, {fleet} fleet]({os.path.basename(svg)})"]
        doc.append(table(groups, fleet))
    with open(args.doc, "w") as f:
        f.write("\n".join(doc) + "\n")


if __name__ == "__main__":
    main()
