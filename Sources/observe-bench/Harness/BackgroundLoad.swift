import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How much CPU *other* processes (and the hypervisor, as steal time) took while we measured.
///
/// Read from `/proc/stat` (all CPUs' busy time, steal included) minus this process's own CPU time
/// (`/proc/self/stat`), both in clock ticks (usually 10 ms: figures over short intervals are
/// coarse). A benchmark on a shared machine cannot stop a build next door, but it can say that one
/// was running, which is what a noisy row needs to be read correctly.
struct BackgroundLoad {
    private var busyTicks: Int
    private var ownTicks: Int
    private var wallNs: UInt64

    /// nil where /proc is unavailable.
    static func snapshot() -> BackgroundLoad? {
        guard let busy = Self.machineBusyTicks(), let own = Self.processTicks() else { return nil }
        return BackgroundLoad(busyTicks: busy, ownTicks: own, wallNs: monotonicNanoseconds())
    }

    /// Average number of cores used by others since `self`; nil over less than 100 ms, where
    /// the clock-tick granularity makes the figure meaningless.
    func coresUsedByOthers(until later: BackgroundLoad) -> Double? {
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let wallSeconds = Double(later.wallNs - wallNs) / 1e9
        guard wallSeconds >= 0.1, ticksPerSecond > 0 else { return nil }
        let others = Double((later.busyTicks - busyTicks) - (later.ownTicks - ownTicks)) / ticksPerSecond
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        return min(cores, max(0, others / wallSeconds))
    }

    private static func machineBusyTicks() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        // user nice system idle iowait irq softirq steal guest guest_nice (guest time is inside user)
        let fields = line.split(separator: " ").dropFirst().compactMap { Int($0) }
        guard fields.count >= 8 else { return nil }
        return fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
    }

    private static func processTicks() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)": state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let utime = Int(fields[11]), let stime = Int(fields[12]) else { return nil }
        return utime + stime
    }
}
