import Foundation
import Testing

/// Runs the benchmark's smallest configuration to prove it works end to end — every scenario,
/// the table, the JSON and the chart — not to time anything (a test build is a debug build).
///
/// `swift test` builds every target of the package, so the `observe-bench` executable sits next
/// to the test bundle; the test runs it as a separate process and reads what it wrote.
@Suite("observe-bench smoke run")
struct BenchSmokeTests {
    @Test("the quick configuration runs every scenario and writes the table, JSON and chart",
          .timeLimit(.minutes(3)))
    func quickRunWritesEveryFigure() throws {
        let bench = try #require(Self.benchExecutable(),
                                 "observe-bench was not found next to the test bundle; build the package first")
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("observe-bench-smoke-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let json = directory.appendingPathComponent("bench.json")
        let chart = directory.appendingPathComponent("bench.svg")
        let stdoutFile = directory.appendingPathComponent("stdout.txt")
        let stderrFile = directory.appendingPathComponent("stderr.txt")
        try Data().write(to: stdoutFile)
        try Data().write(to: stderrFile)

        let process = Process()
        process.executableURL = bench
        process.arguments = ["--quick", "--json", json.path, "--chart", chart.path]
        process.standardOutput = try FileHandle(forWritingTo: stdoutFile)
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        try process.run()
        process.waitUntilExit()

        let table = try String(contentsOf: stdoutFile, encoding: .utf8)
        let progress = try String(contentsOf: stderrFile, encoding: .utf8)
        try #require(process.terminationStatus == 0, "observe-bench --quick failed:\n\(progress)")

        // The table: every scenario and the targets, with a verdict for each measured target.
        for heading in ["set.0 —", "set.1 —", "set.10 —", "set.1-macro —", "register.remove —", "register.same-key.tokens —",
                        "register.same-key.observers —", "register.same-key.contexts —", "register.memory —",
                        "threads.2-distinct —", "array.setup —", "array.element-change —", "array.insert-front —",
                        "array.append-10k —", "array.remove-10k —", "array.batch-100 —", "Targets"] {
            #expect(table.contains(heading), "the table has no section \(heading)")
        }
        #expect(progress.contains("rep 1/2"), "progress lines go to stderr")

        // The JSON: machine, results in the documented schema, targets.
        let data = try Data(contentsOf: json)
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let machine = try #require(document["machine"] as? [String: Any])
        #expect(machine["cores"] as? Int ?? 0 >= 1)
        #expect(machine["hostname"] is String && machine["date"] is String)
        let results = try #require(document["results"] as? [[String: Any]])
        func row(_ scenario: String, _ impl: String) -> [String: Any]? {
            results.first { $0["scenario"] as? String == scenario && $0["impl"] as? String == impl }
        }
        for result in results {
            for key in ["scenario", "impl", "n", "ns_per_op_p50", "ns_per_op_p99", "ns_per_op_p999", "bytes_per_item"] {
                #expect(result.keys.contains(key), "a result lacks \(key): \(result)")
            }
        }
        let expected: [(String, [String])] = [
            ("set.0", ["plain", "c", "swift", "naive", "observation", "opencombine"]),
            ("set.1", ["c", "swift", "naive", "observation", "opencombine"]),
            ("set.10", ["c", "swift", "naive", "observation", "opencombine"]),
            ("set.1-macro", ["c", "swift"]),
            ("register.remove", ["c", "swift", "naive", "opencombine"]),
        ]
        for (scenario, impls) in expected {
            for impl in impls {
                let result = try #require(row(scenario, impl), "no result for \(scenario)/\(impl)")
                #expect((result["ns_per_op_p50"] as? Double ?? 0) > 0, "\(scenario)/\(impl) has no p50")
                #expect((result["ns_per_op_p999"] as? Double ?? 0) >= (result["ns_per_op_p50"] as? Double ?? 0))
                #expect(result["bytes_per_item"] is NSNull, "\(scenario) measures no memory")
            }
        }
        for impl in ["c", "swift", "naive", "observation", "opencombine"] {
            let memory = try #require(row("register.memory", impl), "no memory result for \(impl)")
            #expect((memory["bytes_per_item"] as? Double ?? 0) > 0, "\(impl) has no bytes per registration")
        }
        for impl in ["plain", "c", "swift", "naive", "observation", "opencombine"] {
            let threads = try #require(row("threads.2-distinct", impl), "no threads result for \(impl)")
            #expect((threads["speedup"] as? Double ?? 0) > 0, "\(impl) has no speedup")
        }
        // The array scenarios, at --quick's sizes (100 and 1,000 elements): every impl measured, and
        // no warning — each fixture checks that its observers were called once per change with
        // the right indices (and the batch contents against the edit script), so a warning here
        // means an impl reported something wrong.
        let arrays: [(String, [String])] = [
            ("array.setup", ["c", "swift", "per-element-naive", "observation", "opencombine"]),
            ("array.element-change", ["c", "swift", "per-element-naive", "scan", "observation"]),
            ("array.insert-front", ["c", "swift", "per-element-naive", "plain"]),
            ("array.append-10k", ["c", "swift", "per-element-naive", "plain"]),
            ("array.remove-10k", ["c", "swift", "per-element-naive", "plain"]),
            ("array.batch-100", ["c", "swift", "diff", "plain"]),
        ]
        for (scenario, impls) in arrays {
            for impl in impls {
                for n in [100, 1_000] {
                    let result = try #require(results.first {
                        $0["scenario"] as? String == scenario && $0["impl"] as? String == impl && $0["n"] as? Int == n
                    }, "no result for \(scenario)/\(impl) at n=\(n)")
                    #expect((result["ns_per_op_p50"] as? Double ?? 0) > 0, "\(scenario)/\(impl)@\(n) has no p50")
                    #expect(result["warnings"] == nil, "\(scenario)/\(impl)@\(n): \(result["warnings"] ?? "")")
                    if scenario == "array.setup" {
                        #expect((result["bytes_per_item"] as? Double ?? 0) > 0, "\(impl)@\(n) has no bytes per element")
                        if impl == "c" || impl == "swift" {
                            #expect((result["index_bytes_per_item"] as? Double ?? 0) > 0,
                                    "\(impl)@\(n) has no position-index bytes")
                        }
                    }
                }
            }
        }

        // The same-key rows, at --quick's sizes (250 and 1,000 registrations on one key): every impl
        // measured, and no warning — each fixture checks that every op left the registry as it found
        // it, and once that N registrations are N distinct ones and removing half leaves the other half.
        let sameKey: [(String, [String])] = [
            ("register.same-key.tokens", ["c", "swift", "naive"]),
            ("register.same-key.observers", ["c", "swift"]),
            ("register.same-key.contexts", ["c", "swift"]),
        ]
        for (scenario, impls) in sameKey {
            for impl in impls {
                for n in [250, 1_000] {
                    let result = try #require(results.first {
                        $0["scenario"] as? String == scenario && $0["impl"] as? String == impl && $0["n"] as? Int == n
                    }, "no result for \(scenario)/\(impl) at n=\(n)")
                    #expect((result["ns_per_op_p50"] as? Double ?? 0) > 0, "\(scenario)/\(impl)@\(n) has no p50")
                    #expect(result["warnings"] == nil, "\(scenario)/\(impl)@\(n): \(result["warnings"] ?? "")")
                }
            }
        }

        #expect(document["targets_indicative"] as? Bool == true, "a --quick run marks its verdicts indicative")
        let targets = try #require(document["targets"] as? [[String: Any]])
        let measuredTargets = targets.filter { $0["met"] is Bool }
        #expect(measuredTargets.count >= 5, "the five property targets are evaluated")
        #expect(targets.contains { $0["scenario"] as? String == "array.batch-100" }, "the array targets are listed")
        for scenario in sameKey.map(\.0) {
            #expect(targets.contains { $0["scenario"] as? String == scenario }, "no target for \(scenario)")
        }

        // The chart: an SVG with a line per impl for set.N and for each array scenario.
        let svg = try String(contentsOf: chart, encoding: .utf8)
        #expect(svg.hasPrefix("<svg"))
        // set.N: 5 lines; array.setup: 5 (time) + 5 (bytes); element-change: 5; insert-front,
        // append-10k, remove-10k, batch-100: 4 each.
        #expect(svg.components(separatedBy: "<polyline").count - 1 >= 5 + 5 + 5 + 5 + 4 + 4 + 4 + 4)
        for title in ["array.setup —", "array.element-change —", "array.insert-front —", "array.append-10k —",
                      "array.remove-10k —", "array.batch-100 —"] {
            #expect(svg.contains(title), "the chart has no panel \(title)")
        }
    }

    /// `observe-bench` in the products directory the tests were built into.
    static func benchExecutable() -> URL? {
        var directories: [URL] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            directories.append(URL(fileURLWithPath: executable).deletingLastPathComponent())
        }
        directories.append(Bundle.main.bundleURL.deletingLastPathComponent())   // macOS: the .xctest bundle's folder
        directories.append(Bundle.main.bundleURL)
        for directory in directories {
            let candidate = directory.appendingPathComponent("observe-bench")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }
}
