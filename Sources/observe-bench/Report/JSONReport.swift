import Foundation

/// A JSON value with ordered keys (the file reads in the order it is written) and explicit nulls.
indirect enum JSON {
    case null
    case bool(Bool)
    case number(Double)
    case int(Int)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    static func num(_ x: Double?, places: Int = 3) -> JSON {
        guard let x, x.isFinite else { return .null }
        let scale = pow(10.0, Double(places))
        return .number((x * scale).rounded() / scale)
    }

    func render(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent)
        let inner = String(repeating: "  ", count: indent + 1)
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .number(let x):
            if x == x.rounded() && abs(x) < 1e15 { return String(Int(x)) }
            return "\(x)"
        case .string(let s): return JSON.quote(s)
        case .array(let items):
            if items.isEmpty { return "[]" }
            return "[\n" + items.map { inner + $0.render(indent: indent + 1) }.joined(separator: ",\n") + "\n" + pad + "]"
        case .object(let pairs):
            if pairs.isEmpty { return "{}" }
            return "{\n" + pairs.map { inner + JSON.quote($0.0) + ": " + $0.1.render(indent: indent + 1) }
                .joined(separator: ",\n") + "\n" + pad + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

/// The `--json FILE` document: `machine`, `config`, `results` (one per scenario × impl) and `targets`.
struct JSONReport {
    var machine: MachineInfo
    var config: RunConfig
    var rows: [ResultRow]
    var targets: [Target]
    var elapsedSeconds: Double
    var backgroundCores: Double?

    func render() -> String {
        let document: JSON = .object([
            ("machine", .object([
                ("hostname", .string(machine.hostname)),
                ("cores", .int(machine.cores)),
                ("cpu", machine.cpu.map(JSON.string) ?? .null),
                ("os", .string(machine.os)),
                ("swift", .string(machine.swift)),
                ("build", .string(machine.build)),
                ("date", .string(machine.date)),
                ("background_cores_average", .num(backgroundCores, places: 2)),
            ])),
            ("config", .object([
                ("repetitions", .int(config.repetitions)),
                ("measure_ms_per_repetition", .num(Double(config.measureNs) / 1e6)),
                ("warmup_ms_per_repetition", .num(Double(config.warmupNs) / 1e6)),
                ("batch_target_ns", .int(Int(config.targetBatchNs))),
                ("fixed_batch", config.fixedBatch.map(JSON.int) ?? .null),
                ("fixed_iterations", config.fixedIterations.map(JSON.int) ?? .null),
                ("memory_items", .int(config.memoryItems)),
                ("run_seconds", .num(elapsedSeconds, places: 1)),
                ("method", .string(
                    "Each op is one call through an @inline(never) function (plain too). Samples are batches of `batch` "
                    + "ops timed with clock_gettime(CLOCK_MONOTONIC). ns_per_op_median: median over repetitions of each "
                    + "repetition's median per-batch mean; ns_per_op_p50/p99/p999: percentiles of all per-batch means "
                    + "(HDR histogram, 3 significant digits), not of single operations. threads.2-distinct: "
                    + "ns_per_op_median is wall time per op with 2 threads (1/throughput), percentiles are per-batch means "
                    + "seen by each thread, speedup = throughput(2 threads) / throughput(1 thread doing the same total work). "
                    + "array.*: n is the number of elements; figures are per `unit` (array.setup, array.append-10k and "
                    + "array.remove-10k: per element, one op being the whole setup / append / removal; array.batch-100: per batch of 100 edits); untimed "
                    + "preparation (building the array to observe, generating the edits) runs outside the clock; "
                    + "array.setup bytes_per_item = heap growth across the setup call / n (malloc accounting), "
                    + "index_bytes_per_item = ObserveCore's element-position index alone (_elementIndexBytes / n). "
                    + "allocations_per_op (latency rows): heap allocations made by the measuring thread per op (per whole "
                    + "op, not per item), counted in untimed batches after each repetition's timed ones; median and "
                    + "min/max over repetitions; null when the counter is not in effect (see allocation_method).")),
                ("allocation_method", .string(AllocationCounter.method)),
                ("element_counts", .array(config.elementCounts.map(JSON.int))),
                ("array_measure_ms_per_repetition", .num(Double(config.arrayMeasureNs) / 1e6)),
            ])),
            // true for a --quick run: its `met` verdicts are indicative only.
            ("targets_indicative", .bool(config.isQuick)),
            ("results", .array(rows.map(result))),
            ("targets", .array(targets.map(target))),
        ])
        return document.render() + "\n"
    }

    private func result(_ row: ResultRow) -> JSON {
        var pairs: [(String, JSON)] = [
            ("scenario", .string(row.scenario)),
            ("impl", .string(row.impl.rawValue)),
            ("same_code_as", row.sameCodeAs.map { .string($0.rawValue) } ?? .null),
            ("n", .int(row.n)),
            ("ns_per_op_p50", .num(row.p50)),
            ("ns_per_op_p99", .num(row.p99)),
            ("ns_per_op_p999", .num(row.p999)),
            ("bytes_per_item", .num(row.bytesPerItem, places: 1)),
            ("ns_per_op_median", .num(row.median)),
            ("ns_per_op_spread_min", .num(row.spread?.min)),
            ("ns_per_op_spread_max", .num(row.spread?.max)),
            ("batch", row.batch.map(JSON.int) ?? .null),
            ("samples", .int(row.samples)),
            ("repetitions", .int(row.repetitions)),
            ("unit", .string(row.unit)),
        ]
        if row.kind == .latency {
            pairs.append(("allocations_per_op", .num(row.allocationsPerOp)))
            pairs.append(("allocations_per_op_min", .num(row.allocationsSpread?.min)))
            pairs.append(("allocations_per_op_max", .num(row.allocationsSpread?.max)))
        }
        if row.kind == .latency && (row.bytesPerItem != nil || row.scenario == "array.setup") {
            pairs.append(("bytes_spread_min", .num(row.bytesSpread?.min, places: 1)))
            pairs.append(("bytes_spread_max", .num(row.bytesSpread?.max, places: 1)))
            pairs.append(("index_bytes_per_item", .num(row.indexBytesPerItem, places: 2)))
            pairs.append(("memory_method", row.memoryMethod.map(JSON.string) ?? .null))
        }
        if row.kind == .memory {
            pairs.append(("bytes_spread_min", .num(row.bytesSpread?.min, places: 1)))
            pairs.append(("bytes_spread_max", .num(row.bytesSpread?.max, places: 1)))
            pairs.append(("memory_items", row.memoryItems.map(JSON.int) ?? .null))
            pairs.append(("memory_method", row.memoryMethod.map(JSON.string) ?? .null))
        }
        if row.kind == .threads {
            pairs.append(("speedup", .num(row.speedup)))
            pairs.append(("speedup_spread_min", .num(row.speedupSpread?.min)))
            pairs.append(("speedup_spread_max", .num(row.speedupSpread?.max)))
            pairs.append(("ops_per_second_1_thread", .num(row.oneThreadOpsPerSecond, places: 0)))
            pairs.append(("ops_per_second_2_threads", .num(row.twoThreadsOpsPerSecond, places: 0)))
            pairs.append(("ops_per_thread", row.opsPerThread.map(JSON.int) ?? .null))
        }
        pairs.append(("background_cores_max", .num(row.backgroundCoresMax, places: 2)))
        pairs.append(("disturbed_repetitions", .int(row.disturbedRepetitions)))
        if !row.warnings.isEmpty {
            pairs.append(("warnings", .array(row.warnings.map(JSON.string))))
        }
        return .object(pairs)
    }

    private func target(_ target: Target) -> JSON {
        .object([
            ("target", .string(target.label)),
            ("scenario", .string(target.scenario)),
            ("n", target.n.map(JSON.int) ?? .null),
            ("impl", .string(target.impl.rawValue)),
            ("peer", .string(target.peer?.rawValue ?? target.impl.rawValue)),
            ("peer_scenario", .string(target.peerScenario ?? target.scenario)),
            ("rule", .string(target.comparison + " " + String(target.limit))),
            ("ratio", .string(target.ratioDefinition)),
            ("measured_ratio", target.isRatio ? .num(target.measured) : .null),
            ("measured_value", target.isRatio ? .null : .num(target.measured)),
            ("met", target.met.map(JSON.bool) ?? .null),
            ("status", .string(target.status)),
            ("source", .string(target.source)),
            ("when_missed", target.met == false ? (target.whenMissed.map(JSON.string) ?? .null) : .null),
        ])
    }
}
