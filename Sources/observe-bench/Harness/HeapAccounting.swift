#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// How many bytes the process's heap has in use, for the memory scenarios.
///
/// On Linux/x86-64 with glibc: `mallinfo2()`, as `uordblks + hblkhd` — bytes in allocated
/// chunks of the main arena plus bytes in mmap-ed chunks. These are malloc's own books: the
/// bytes of every live allocation including malloc's per-chunk overhead and alignment, and
/// nothing freed. (Only the main arena is reported by glibc, so measure on the main thread.)
///
/// `mallinfo2` is declared in `<malloc.h>`, which Swift's Glibc module does not import, so it is
/// found with `dlsym` and called through its C ABI: on x86-64 System V, a function returning a
/// struct that large (10 × size_t) is called with the address of the result in the first
/// integer argument register and returns that address — exactly
/// `void *mallinfo2(void *result)`. Elsewhere the fallback is the resident set size from
/// `/proc/self/statm`, which counts pages, not bytes allocated: much coarser.
enum HeapAccounting {
    private typealias MallInfo2Function = @convention(c) (UnsafeMutableRawPointer) -> UnsafeMutableRawPointer?

    private static let _mallinfo2: MallInfo2Function? = {
        #if os(Linux) && arch(x86_64) && canImport(Glibc)
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "mallinfo2") else { return nil }
        return unsafeBitCast(symbol, to: MallInfo2Function.self)
        #else
        return nil
        #endif
    }()

    /// What `bytesInUse()` counts, for the output.
    static var method: String {
        _mallinfo2 != nil
            ? "malloc accounting: glibc mallinfo2() uordblks+hblkhd (bytes malloc has handed out, incl. chunk overhead)"
            : "resident set size from /proc/self/statm (page granularity; coarse)"
    }

    static func bytesInUse() -> Int {
        if let mallinfo2 = _mallinfo2 {
            // struct mallinfo2 { size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks,
            //                    uordblks, fordblks, keepcost; }
            var fields: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &fields) { _ = mallinfo2($0.baseAddress!) }
            return fields.7 + fields.4
        }
        return residentBytes()
    }

    private static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let parts = text.split(separator: " ")
        guard parts.count > 1, let pages = Int(parts[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
