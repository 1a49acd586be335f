import Foundation

/// The human-readable report printed on stdout.
struct TableReport {
    var machine: MachineInfo
    var config: RunConfig
    var scenarios: [any Scenario]
    var rows: [ResultRow]
    var targets: [Target]
    var elapsedSeconds: Double
    var backgroundCores: Double?

    func render() -> String {
        var out: [String] = []
        out.append("observe-bench — ObserveCore against its peers, one process, one run")
        out.append("machine: \(machine.hostname), \(machine.cores) cores\(machine.cpu.map { ", " + $0 } ?? ""); \(machine.os)")
        out.append("built with \(machine.swift), \(machine.build) build; \(machine.date); run took "
                   + String(format: "%.1f s", elapsedSeconds))
        if let backgroundCores {
            let quiet = backgroundCores < Runner.disturbedCores
            out.append(String(format: "other processes used %.2f of %d cores on average during the run", backgroundCores,
                              machine.cores) + (quiet ? " (quiet)" : " — NOT QUIET: figures are disturbed, see the notes"))
        }
        if machine.build != "release" {
            out.append("WARNING: a debug build; its figures say nothing about release performance")
        }
        out.append("")
        out.append("How it is measured: every operation is one call through an @inline(never) function (plain's")
        out.append("stored-property set too, so the ratio to it is fair); observers add the new value to a counter.")
        out.append("Samples are batches of `batch` ops timed with clock_gettime(CLOCK_MONOTONIC); ns/op figures are")
        out.append("per-batch means. median = median over \(config.repetitions) repetitions of each repetition's median;")
        out.append("spread = min-max of those repetition medians; p50/p99/p999 = percentiles of all per-batch means")
        out.append("(an HDR histogram), not of single operations. Repetitions interleave the impls.")
        if AllocationCounter.isCounting {
            out.append("allocs/op: heap allocations per op (malloc & co. counted in-process), from untimed batches (>= 256")
            out.append("ops or 1 ms) after each repetition's timed ones (median); an op is the row's op (a whole setup, append")
            out.append("or batch where the row says so).")
        } else {
            out.append("allocs/op: " + AllocationCounter.method)
        }
        out.append("")

        var printed: [String] = []
        for scenario in scenarios where !printed.contains(scenario.name) {
            printed.append(scenario.name)
            let sized = scenario.sizeLabel != nil
            // Rows of every size of the family, sizes ascending, impls in scenario order.
            let mine = rows.enumerated().filter { $0.element.scenario == scenario.name }
                .sorted { ($0.element.n, $0.offset) < ($1.element.n, $1.offset) }.map(\.element)
            guard !mine.isEmpty || !scenario.unsupported.isEmpty else { continue }
            out.append("\(scenario.name) — \(scenario.summary)")
            switch scenario.kind {
            case .latency: out.append(contentsOf: latencyTable(scenario, mine))
            case .memory: out.append(contentsOf: memoryTable(scenario, mine))
            case .threads: out.append(contentsOf: threadsTable(scenario, mine))
            }
            for (impl, reason) in scenario.unsupported {
                out.append("  (\(impl.rawValue): not measured — \(reason))")
            }
            for note in scenario.notes { out.append(contentsOf: wrap(note, indent: "  ")) }
            if sized {
                for n in Set(mine.map(\.n)).sorted() {
                    if let line = comparisonLine(scenario, mine.filter { $0.n == n }) {
                        out.append("  N=\(groupThousands(n)):" + line.dropFirst(1))
                    }
                }
            } else if let line = comparisonLine(scenario, mine) {
                out.append(line)
            }
            if let line = referenceLine(scenario, mine) { out.append(line) }
            let wide = mine.compactMap { row -> String? in
                guard let spread = row.relativeSpread, spread > 0.25 else { return nil }
                return "\(row.impl.rawValue)\(sized ? "@" + groupThousands(row.n) : "") \(Int((spread * 100).rounded()))%"
            }
            if !wide.isEmpty {
                let rerun = "--scenarios \(scenario.name)" + (sized ? " " + scenario.sizeOption : "")
                out.append("  note: wide spread (max-min of repetition \(scenario.kind == .threads ? "speedups" : "medians") "
                           + "over 25% of the median): \(wide.joined(separator: ", ")); rerun with \(rerun)")
            }
            let disturbed = mine.reduce(0) { $0 + $1.disturbedRepetitions }
            if disturbed > 0 {
                let measured = mine.reduce(0) { $0 + $1.backgroundMeasured }
                let most = mine.compactMap(\.backgroundCoresMax).max() ?? 0
                out.append("  note: other processes used >= \(Runner.disturbedCores) cores during \(disturbed) of \(measured) "
                           + "measurements here (up to " + String(format: "%.1f", most) + " cores)"
                           + (scenario.kind == .threads ? "; two threads could not both run then, so speedups are understated" : ""))
            }
            for row in mine {
                for warning in row.warnings { out.append("  WARNING: \(warning)") }
            }
            out.append("")
        }

        out.append("Targets (ObserveCore's C path, ratios of the medians above)"
                   + (config.isQuick ? " — INDICATIVE ONLY: a --quick run is too short to judge; run the default workload" : ""))
        let width = max(44, targets.map(\.label.count).max() ?? 0) + 2
        for target in targets {
            var line = "  " + target.label.padded(width)
            if let measured = target.measured {
                let figure = target.isRatio ? ratioString(measured)
                    : target.usesAllocations ? formatAllocations(measured) + " allocs"
                    : target.usesBytes ? String(format: "%.1f B", measured) : formatDuration(measured)
                line += ("measured " + figure).padded(19) + " "
                line += config.isQuick ? (target.met == true ? "met (indicative)" : "missed (indicative)")
                    : target.met == true ? "met" : "MISSED"
            } else {
                line += target.status
            }
            out.append(line)
        }
        // What the missed ones would take, once per note.
        var explained: [String] = []
        for target in targets where target.met == false {
            guard let note = target.whenMissed, !explained.contains(note) else { continue }
            explained.append(note)
            let missed = targets.filter { $0.met == false && $0.whenMissed == note }.map(\.label)
            out.append("  why missed (\(missed.joined(separator: "; "))):")
            out.append(contentsOf: wrap(note, indent: "    "))
        }
        let missed = targets.filter { $0.met == false }
        if !missed.isEmpty && !config.isQuick {
            out.append("  \(missed.count) target\(missed.count == 1 ? "" : "s") MISSED in this run: "
                       + missed.map(\.label).joined(separator: "; "))
        }
        return out.joined(separator: "\n")
    }

    // MARK: Tables

    private func latencyTable(_ scenario: any Scenario, _ rows: [ResultRow]) -> [String] {
        let sized = scenario.sizeLabel != nil
        let withBytes = rows.contains { $0.bytesPerItem != nil }
        let withIndex = rows.contains { $0.indexBytesPerItem != nil }
        let withAllocations = rows.contains { $0.allocationsPerOp != nil }
        let unit = scenario.unit.replacingOccurrences(of: "ns per ", with: "ns/")
        let peerHeader = scenario.peer.map { "vs \($0.rawValue)" } ?? ""
        var header: [String] = sized ? ["impl", "N"] : ["impl"]
        header += ["median " + unit, "spread", "p50", "p99", "p999", "batch", "samples"]
        if withBytes { header.append("bytes/item") }
        if withIndex { header.append("index B/item") }
        if withAllocations { header.append("allocs/op") }
        header.append(peerHeader)
        var table: [[String]] = [header]
        var previousN: Int?
        for row in rows {
            if sized, let previousN, previousN != row.n { table.append(header.map { _ in "" }) }
            previousN = row.n
            let peerRow = scenario.peer.flatMap { peer in rows.first { $0.impl == peer && $0.n == row.n } }
            var cells: [String] = [row.implLabel]
            if sized { cells.append(groupThousands(row.n)) }
            cells.append(row.median.map(formatNs) ?? "-")
            cells.append(row.spread.map { formatNs($0.min) + "–" + formatNs($0.max) } ?? "-")
            cells.append(row.p50.map(formatNs) ?? "-")
            cells.append(row.p99.map(formatNs) ?? "-")
            cells.append(row.p999.map(formatNs) ?? "-")
            cells.append(row.batch.map(String.init) ?? "-")
            cells.append(groupThousands(row.samples))
            if withBytes { cells.append(row.bytesPerItem.map { String(format: "%.1f", $0) } ?? "") }
            if withIndex { cells.append(row.indexBytesPerItem.map { String(format: "%.2f", $0) } ?? "") }
            if withAllocations { cells.append(row.allocationsPerOp.map(formatAllocations) ?? "") }
            var ratio = ratioCell(scenario, row, peerRow)
            if withBytes, let peerRow, row.impl != peerRow.impl, let mine = row.bytesPerItem, let theirs = peerRow.bytesPerItem,
               mine > 0, theirs > 0 {
                ratio += (ratio.isEmpty ? "" : "; ")
                    + (mine <= theirs ? ratioString(theirs / mine) + " smaller" : ratioString(mine / theirs) + " larger")
            }
            cells.append(ratio)
            table.append(cells)
        }
        let offset = sized ? 1 : 0
        var right = Set<Int>()
        for column in [1, 3, 4, 5, 6, 7] { right.insert(column + offset) }
        if sized { right.insert(1) }
        if withBytes { right.insert(8 + offset) }
        if withIndex { right.insert(8 + offset + (withBytes ? 1 : 0)) }
        if withAllocations { right.insert(8 + offset + (withBytes ? 1 : 0) + (withIndex ? 1 : 0)) }
        return layout(table, rightAligned: right)
    }

    /// `text` as lines of at most `width` columns, each starting with `indent`.
    private func wrap(_ text: String, indent: String, width: Int = 110) -> [String] {
        var lines: [String] = []
        var line = indent
        for word in text.split(separator: " ") {
            if line.count > indent.count && line.count + 1 + word.count > width {
                lines.append(line)
                line = indent + "  "
            }
            line += (line.count > indent.count && !line.hasSuffix("  ") ? " " : "") + word
        }
        if line.count > indent.count { lines.append(line) }
        return lines
    }

    private func memoryTable(_ scenario: any Scenario, _ rows: [ResultRow]) -> [String] {
        var lines: [String] = []
        if let row = rows.first(where: { $0.memoryMethod != nil }) {
            lines.append("  (\(groupThousands(row.memoryItems ?? 0)) registrations per measurement; \(row.memoryMethod!))")
        }
        let peerHeader = scenario.peer.map { "vs \($0.rawValue)" } ?? ""
        var table: [[String]] = [["impl", "bytes/registration", "spread", peerHeader]]
        let peerRow = scenario.peer.flatMap { peer in rows.first { $0.impl == peer } }
        for row in rows {
            var ratio = ""
            if let peerRow, row.impl != peerRow.impl, let mine = row.bytesPerItem, let theirs = peerRow.bytesPerItem, mine > 0 {
                ratio = mine <= theirs ? ratioString(theirs / mine) + " smaller" : ratioString(mine / theirs) + " larger"
            }
            table.append([
                row.impl.rawValue,
                row.bytesPerItem.map { String(format: "%.1f", $0) } ?? "-",
                row.bytesSpread.map { String(format: "%.1f–%.1f", $0.min, $0.max) } ?? "-",
                ratio,
            ])
        }
        return lines + layout(table, rightAligned: [1, 2])
    }

    private func threadsTable(_ scenario: any Scenario, _ rows: [ResultRow]) -> [String] {
        var lines: [String] = []
        if let ops = rows.compactMap(\.opsPerThread).first {
            lines.append("  (ns/op of wall time = 1 / throughput; each thread does M sets (1 thread: 2M), M per impl, e.g. "
                         + "\(groupThousands(ops)) for \(rows.first { $0.opsPerThread == ops }!.impl.rawValue); "
                         + "p50/p99/p999: per-batch means seen by each thread in the 2-thread run)")
        }
        var table: [[String]] = [["impl", "1 thread ns/op", "2 threads ns/op", "speedup", "spread", "p50", "p99", "p999", "batch"]]
        for row in rows {
            table.append([
                row.implLabel,
                row.oneThreadOpsPerSecond.map { formatNs(1e9 / $0) } ?? "-",
                row.twoThreadsOpsPerSecond.map { formatNs(1e9 / $0) } ?? "-",
                row.speedup.map { String(format: "%.2f×", $0) } ?? "-",
                row.speedupSpread.map { String(format: "%.2f–%.2f", $0.min, $0.max) } ?? "-",
                row.p50.map(formatNs) ?? "-",
                row.p99.map(formatNs) ?? "-",
                row.p999.map(formatNs) ?? "-",
                row.batch.map(String.init) ?? "-",
            ])
        }
        return lines + layout(table, rightAligned: [1, 2, 3, 5, 6, 7, 8])
    }

    /// "c is 1.3× faster than swift, 9.8× faster than naive, ..." for each scenario.
    private func comparisonLine(_ scenario: any Scenario, _ rows: [ResultRow]) -> String? {
        guard let c = rows.first(where: { $0.impl == .c }) else { return nil }
        var parts: [String] = []
        for row in rows where row.impl != .c {
            if c.sameCodeAs == row.impl {
                // Identical code: say so rather than rank them; a gap is the machine, not the impl.
                let a = scenario.kind == .threads ? c.speedup : c.median
                let b = scenario.kind == .threads ? row.speedup : row.median
                if let a, let b, a > 0, b > 0 {
                    parts.append("the same code as \(row.impl.rawValue) (measured " + ratioString(max(a, b) / min(a, b))
                                 + " apart)")
                }
                continue
            }
            switch scenario.kind {
            case .latency:
                guard let a = c.median, let b = row.median, a > 0, b > 0 else { continue }
                if row.impl == .plain {
                    parts.append(ratioString(a / b) + " the cost of plain")
                } else {
                    parts.append(b >= a ? ratioString(b / a) + " faster than \(row.impl.rawValue)"
                                        : ratioString(a / b) + " slower than \(row.impl.rawValue)")
                }
            case .memory:
                guard let a = c.bytesPerItem, let b = row.bytesPerItem, a > 0, b > 0 else { continue }
                parts.append(b >= a ? ratioString(b / a) + " smaller than \(row.impl.rawValue)"
                                    : ratioString(a / b) + " larger than \(row.impl.rawValue)")
            case .threads:
                guard let a = c.twoThreadsOpsPerSecond, let b = row.twoThreadsOpsPerSecond, a > 0, b > 0 else { continue }
                parts.append(ratioString(a / b) + " the 2-thread throughput of \(row.impl.rawValue)")
            }
        }
        return parts.isEmpty ? nil : "  c is " + parts.joined(separator: ", ")
    }

    /// "cost relative to set.1 of the same impl: c 2.31×, swift 2.40×", when the reference ran.
    private func referenceLine(_ scenario: any Scenario, _ mine: [ResultRow]) -> String? {
        guard let reference = scenario.referenceScenario else { return nil }
        let parts = mine.compactMap { row -> String? in
            guard let theirs = rows.first(where: { $0.scenario == reference && $0.impl == row.impl })?.median,
                  let a = row.median, theirs > 0 else { return nil }
            return "\(row.impl.rawValue) " + ratioString(a / theirs)
        }
        return parts.isEmpty ? nil : "  cost relative to \(reference) of the same impl: " + parts.joined(separator: ", ")
    }

    private func ratioCell(_ scenario: any Scenario, _ row: ResultRow, _ peerRow: ResultRow?) -> String {
        guard let peerRow, let mine = row.median, let theirs = peerRow.median, mine > 0, theirs > 0 else { return "" }
        if row.impl == peerRow.impl { return "1×" }
        switch scenario.ratioStyle {
        case .costRelativeToPeer:
            return ratioString(mine / theirs)
        case .speedupOverPeer:
            return theirs >= mine ? ratioString(theirs / mine) + " faster" : ratioString(mine / theirs) + " slower"
        }
    }

    private func layout(_ table: [[String]], rightAligned: Set<Int>) -> [String] {
        let columns = table.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in table { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return table.map { row in
            var line = "  "
            for (i, cell) in row.enumerated() {
                let padded = rightAligned.contains(i) ? cell.leftPadded(widths[i]) : cell.padded(widths[i])
                line += padded + (i == row.count - 1 ? "" : "  ")
            }
            while line.hasSuffix(" ") { line.removeLast() }
            return line
        }
    }
}

/// 1.07×, 9.8×, 123×.
func ratioString(_ x: Double) -> String {
    if x.isNaN || x.isInfinite { return "-" }
    if x < 10 { return String(format: "%.2f×", x) }
    if x < 100 { return String(format: "%.1f×", x) }
    return groupThousands(Int(x.rounded())) + "×"
}

/// 388 ns, 1.56 µs, 53.3 ms.
func formatDuration(_ ns: Double) -> String {
    if ns < 1_000 { return formatNs(ns) + " ns" }
    if ns < 1_000_000 { return String(format: ns < 10_000 ? "%.2f µs" : "%.1f µs", ns / 1e3) }
    if ns < 1_000_000_000 { return String(format: ns < 10_000_000 ? "%.2f ms" : "%.1f ms", ns / 1e6) }
    return String(format: "%.2f s", ns / 1e9)
}
