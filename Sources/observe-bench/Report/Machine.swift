import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the run ran on, for the table header and the JSON `machine` section.
struct MachineInfo {
    var hostname: String
    var cores: Int
    var cpu: String?
    var os: String
    var swift: String
    var build: String
    var date: String

    static func current() -> MachineInfo {
        var name = [CChar](repeating: 0, count: 256)
        let hostname = gethostname(&name, name.count) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return MachineInfo(
            hostname: hostname,
            cores: ProcessInfo.processInfo.activeProcessorCount,
            cpu: cpuModel(),
            os: operatingSystem(),
            swift: compilerVersion,
            build: buildConfiguration,
            date: formatter.string(from: Date()))
    }

    /// `PRETTY_NAME` from /etc/os-release and the kernel release.
    private static func operatingSystem() -> String {
        var parts: [String] = []
        if let release = try? String(contentsOfFile: "/etc/os-release", encoding: .utf8),
           let line = release.split(separator: "\n").first(where: { $0.hasPrefix("PRETTY_NAME=") }) {
            parts.append(line.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        }
        var uts = utsname()
        if uname(&uts) == 0 {
            let sysname = withUnsafeBytes(of: &uts.sysname) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let release = withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let machine = withUnsafeBytes(of: &uts.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            parts.append("\(sysname) \(release) \(machine)")
        }
        return parts.isEmpty ? ProcessInfo.processInfo.operatingSystemVersionString : parts.joined(separator: ", ")
    }

    private static func cpuModel() -> String? {
        guard let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
              let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
              let colon = line.firstIndex(of: ":") else { return nil }
        return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }

    /// The compiler that built this binary (checked at compile time, so free at run time).
    static var compilerVersion: String {
        #if compiler(>=6.5)
        return "Swift compiler >= 6.5"
        #elseif compiler(>=6.4)
        return "Swift compiler 6.4.x"
        #elseif compiler(>=6.3.1)
        return "Swift compiler 6.3.1 or later 6.3.x"
        #elseif compiler(>=6.3)
        return "Swift compiler 6.3.0"
        #elseif compiler(>=6.2)
        return "Swift compiler 6.2.x"
        #else
        return "Swift compiler < 6.2"
        #endif
    }

    static var buildConfiguration: String {
        #if DEBUG
        return "debug"
        #else
        return "release"
        #endif
    }
}
