#!/usr/bin/env python3
"""Prints the README's benchmark results (the run line, the two tables, the Targets block) from
one default run of observe-bench:

    swift run -c release observe-bench --json bench.json --chart bench.svg > bench.txt
    scripts/readme-results.py bench.json bench.txt COMMIT

and paste the output over the README's results (between the paragraph starting "One run of the
default suite" and "## Layout"). bench.txt is the run's printed output, from which the Targets
block is copied verbatim.
"""
import json
import sys


def fmt_ns(value):
    """ns with 3 significant digits; µs / ms above 10,000 ns, as the README's tables do."""
    if value is None:
        return ""
    if value >= 1e6:
        return f"{value / 1e6:.2f} ms"
    if value >= 1e4:
        return f"{value / 1e3:,.0f} µs"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def main():
    data = json.load(open(sys.argv[1]))
    text = open(sys.argv[2]).read()
    commit = sys.argv[3]
    m, c = data["machine"], data["config"]
    print(f"One run of the default suite (`swift run -c release observe-bench --json bench.json --chart bench.svg`), "
          f"ObserveCore at commit {commit}, on {m['hostname']} ({m['cores']} cores, {m['cpu']}; {m['os']}; "
          f"{m['swift']}, {m['build']} build), {m['date']}; the run took {c['run_seconds']:.0f} s and other "
          f"processes used {m['background_cores_average']:.2f} cores on average (from `/proc/stat`). Ratios are "
          f"of medians measured in the same run, repetitions interleaving the impls.")
    print()
    rows = {}
    for r in data["results"]:
        rows[(r["scenario"], r["n"], r["impl"])] = r
    impls = ["c", "swift", "naive", "observation", "opencombine", "plain"]
    print("| scenario (median ns per op) | " + " | ".join(impls) + " |")
    print("|---|" + "---:|" * len(impls))
    for scenario in ["set.0", "set.1", "set.10", "set.100", "register.remove", "register.memory",
                     "threads.2-distinct", "threads.2-same-object", "threads.2-observe-churn",
                     "chain.leaf-set.2", "chain.leaf-set.3", "chain.relink", "dependent.set", "stream.end-to-end",
                     "binding.propagate", "binding.filter-map", "binding.reduce-2", "post", "service.churn"]:
        if not any(s == scenario for (s, _, _) in rows):
            continue
        cells = []
        for impl in impls:
            r = rows.get((scenario, 0, impl)) or next(
                (v for (s, _, i), v in rows.items() if s == scenario and i == impl), None)
            if r is None:
                cells.append("")
            elif scenario == "register.memory":
                cells.append(f"{r['bytes_per_item']:.0f}" if r.get("bytes_per_item") is not None else "")
            elif scenario in ("threads.2-distinct", "threads.2-same-object"):
                cells.append(f"{r['speedup']:.2f}×" if r.get("speedup") is not None else "")
            else:
                cells.append(fmt_ns(r["ns_per_op_median"]))
        label = {"register.memory": "`register.memory` (bytes per registration)",
                 "threads.2-distinct": "`threads.2-distinct` (speedup, 2 threads / 1)",
                 "threads.2-same-object": "`threads.2-same-object` (speedup, 2 threads / 1)",
                 "threads.2-observe-churn": "`threads.2-observe-churn` (ns per set)",
                 "service.churn": "`service.churn` (per tick)"}.get(scenario, f"`{scenario}`")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()
    array_impls = ["c", "swift", "per-element-naive", "scan", "observation", "opencombine", "diff", "plain"]
    print("| array scenario (median) | N | " + " | ".join(array_impls) + " |")
    print("|---|---:|" + "---:|" * len(array_impls))
    scenarios = [("array.setup", "ns per element"), ("array.setup", "heap bytes per element"),
                 ("array.element-change", "ns per change"),
                 ("array.insert-front", "ns per removeLast + insert(at: 0)"),
                 ("array.append-10k", "ns per appended element"), ("array.remove-10k", "ns per removed element"),
                 ("array.batch-100", "per batch of 100 edits"),
                 ("array.unobserved-append", "ns per append"),
                 ("array.unobserved-insert-middle", "ns per insert + remove at N/2"),
                 ("array.unobserved-subscript-set", "ns per set"),
                 ("array.iterate", "ns per element"),
                 ("array.unobserved-sort", "ns per element, two sorts"),
                 ("array.unobserved-reverse", "ns per element, two reverses"),
                 ("array.element-change-10", "ns per change, 10 observers"),
                 ("array.element-change-repeated", "per change of an element at many indices"),
                 ("array.mixed", "per tick")]
    scenarios += [(s, "ns per op, then one element change")
                  for s in sorted({s for (s, _, _) in rows if s.startswith("array.ops-scaling.")})]
    for scenario, what in scenarios:
        sizes = sorted({n for (s, n, _) in rows if s == scenario})
        for n in sizes:
            cells = []
            for impl in array_impls:
                r = rows.get((scenario, n, impl))
                if r is None:
                    cells.append("")
                elif what.startswith("heap"):
                    b = r.get("bytes_per_item")
                    cells.append(f"{b:,.1f}" if b is not None and b < 100 else (f"{b:,.0f}" if b is not None else ""))
                else:
                    cell = fmt_ns(r["ns_per_op_median"])
                    # Rows in µs / ms: a small figure says its unit too.
                    if what.startswith("per ") and r["ns_per_op_median"] < 1e4:
                        cell += " ns"
                    cells.append(cell)
            print(f"| `{scenario}` {what} | {n:,} | " + " | ".join(cells) + " |")
    print()
    # Heap allocations per op (counted in-process, outside the timed batches) where measured.
    counted = [(s, n, i, r["allocations_per_op"]) for (s, n, i), r in sorted(rows.items())
               if r.get("allocations_per_op") is not None and s in ("array.element-change", "array.element-change-10",
                                                                    "array.append-10k", "array.remove-10k",
                                                                    "array.mixed")]
    if counted:
        print("| heap allocations per op | N | " + " | ".join(array_impls) + " |")
        print("|---|---:|" + "---:|" * len(array_impls))
        for scenario in sorted({s for (s, _, _, _) in counted}):
            for n in sorted({n for (s, n, _, _) in counted if s == scenario}):
                cells = []
                for impl in array_impls:
                    a = next((a for (s, m, i, a) in counted if s == scenario and m == n and i == impl), None)
                    cells.append("" if a is None else f"{a:,.1f}" if a < 10 else f"{a:,.0f}")
                print(f"| `{scenario}` | {n:,} | " + " | ".join(cells) + " |")
        print()
    start = text.index("Targets (ObserveCore's C path")
    print("```")
    print(text[start:].rstrip())
    print("```")


if __name__ == "__main__":
    main()
