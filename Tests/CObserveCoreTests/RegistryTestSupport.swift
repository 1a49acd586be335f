// Helpers shared by the CObserveCore tests: an owning wrapper around one `cobs_registry`, a key
// constructor, a status assertion that prints status names, a counting allocator that fails on
// demand, and a seeded random number generator so that every random test is reproducible.

import CObserveCore
import Foundation
import Synchronization
import Testing

/// Builds a registration key (`reserved_` is always 0 here; tests that need it set build the
/// struct by hand).
func makeKey(_ object: UInt, _ key: UInt32, _ context: UInt = 0) -> cobs_key {
    cobs_key(object: object, context: context, key: key, reserved_: 0)
}

/// Asserts a status, naming both statuses in the failure message, and returns whether it held.
/// When it holds this is one comparison, so loops may call it thousands of times.
@discardableResult
func assertStatus(
    _ actual: cobs_status, _ expected: cobs_status, _ message: @autoclosure () -> String = "",
    sourceLocation: SourceLocation = #_sourceLocation
) -> Bool {
    guard actual != expected else { return true }
    Issue.record(
        Comment(
            rawValue: "got \(String(cString: cobs_status_name(actual))), expected "
                + "\(String(cString: cobs_status_name(expected))) \(message())"),
        sourceLocation: sourceLocation)
    return false
}

/// `#expect(actual == expected)` for loops that check tens of thousands of times: when the values
/// agree this is one comparison; only a mismatch builds a message and records an issue.
func expectEqual<T: Equatable>(
    _ actual: T, _ expected: T, _ context: @autoclosure () -> String = "",
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard actual != expected else { return }
    let context = context()
    let prefix = context.isEmpty ? "" : "\(context): "
    Issue.record(Comment(rawValue: "\(prefix)\(actual) != \(expected)"), sourceLocation: sourceLocation)
}

/// Owns one `cobs_registry` for the length of a test and wraps its calls in Swift shapes. Every
/// method returns the C status unchanged, so tests can assert on it.
final class TestRegistry {
    let raw: OpaquePointer
    /// The registry calls into this allocator until it is destroyed, so it must outlive `raw`:
    /// holding it here makes that so (Swift may otherwise end the test's reference early).
    private let allocator: CountingAllocator?

    /// Creates a registry with a fixed seed (reproducible layouts) unless `seed` is nil, in which
    /// case `cobs_registry_create` picks one.
    init(
        seed: UInt64? = 0x5EED_5EED_5EED_5EED, capacityHint: Int = 0,
        allocator: CountingAllocator? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        self.allocator = allocator
        var out: OpaquePointer?
        let status: cobs_status
        if let seed {
            if var cAllocator = allocator?.cAllocator {
                status = cobs_registry_create_with(capacityHint, seed, &cAllocator, &out)
            } else {
                status = cobs_registry_create_with(capacityHint, seed, nil, &out)
            }
        } else {
            status = cobs_registry_create(capacityHint, &out)
        }
        assertStatus(status, COBS_OK, "creating a test registry", sourceLocation: sourceLocation)
        raw = out!
    }

    deinit { cobs_registry_destroy(raw) }

    var count: Int { cobs_registry_count(raw) }

    var stats: cobs_registry_stats {
        var stats = cobs_registry_stats()
        assertStatus(cobs_registry_stats_get(raw, &stats), COBS_OK)
        return stats
    }

    var capacity: Int { stats.capacity }

    @discardableResult
    func insert(_ key: cobs_key, _ slot: cobs_slot) -> cobs_status {
        cobs_registry_insert(raw, key, slot, nil)
    }

    func find(_ key: cobs_key, sourceLocation: SourceLocation = #_sourceLocation) -> cobs_slot? {
        var slot: cobs_slot = 0
        let status = cobs_registry_find(raw, key, &slot)
        if status != COBS_OK && status != COBS_NOT_FOUND {
            Issue.record("find: unexpected status \(String(cString: cobs_status_name(status)))", sourceLocation: sourceLocation)
        }
        return status == COBS_OK ? slot : nil
    }

    @discardableResult
    func remove(_ key: cobs_key, sourceLocation: SourceLocation = #_sourceLocation) -> cobs_slot? {
        var slot: cobs_slot = 0
        let status = cobs_registry_remove(raw, key, &slot)
        if status != COBS_OK && status != COBS_NOT_FOUND {
            Issue.record("remove: unexpected status \(String(cString: cobs_status_name(status)))", sourceLocation: sourceLocation)
        }
        return status == COBS_OK ? slot : nil
    }

    /// `cobs_registry_lookup` into a buffer of `capacity` slots; returns the status, the reported
    /// count and the slots actually written (min(count, capacity) of them).
    func lookup(_ object: UInt, _ key: UInt32, capacity: Int = 1024)
        -> (status: cobs_status, count: Int, slots: [cobs_slot])
    {
        var buffer = [cobs_slot](repeating: .max, count: capacity)
        var count = 0
        let status = buffer.withUnsafeMutableBufferPointer {
            cobs_registry_lookup(raw, object, key, $0.baseAddress, capacity, &count)
        }
        return (status, count, Array(buffer.prefix(min(count, capacity))))
    }

    func objectEntries(_ object: UInt, capacity: Int = 4096)
        -> (status: cobs_status, count: Int, keys: [cobs_key], slots: [cobs_slot])
    {
        var keys = [cobs_key](repeating: cobs_key(), count: capacity)
        var slots = [cobs_slot](repeating: .max, count: capacity)
        var count = 0
        let status = keys.withUnsafeMutableBufferPointer { k in
            slots.withUnsafeMutableBufferPointer { s in
                cobs_registry_object_entries(raw, object, k.baseAddress, s.baseAddress, capacity, &count)
            }
        }
        let written = min(count, capacity)
        return (status, count, Array(keys.prefix(written)), Array(slots.prefix(written)))
    }

    func removeObject(_ object: UInt, capacity: Int = 4096)
        -> (status: cobs_status, count: Int, slots: [cobs_slot])
    {
        var buffer = [cobs_slot](repeating: .max, count: capacity)
        var count = 0
        let status = buffer.withUnsafeMutableBufferPointer {
            cobs_registry_remove_object(raw, object, $0.baseAddress, capacity, &count)
        }
        return (status, count, status == COBS_OK ? Array(buffer.prefix(count)) : [])
    }

    func assertInvariants(sourceLocation: SourceLocation = #_sourceLocation) {
        assertStatus(
            cobs_registry_check_invariants(raw), COBS_OK, "check_invariants", sourceLocation: sourceLocation)
    }
}

/// A malloc-backed allocator that counts what it hands out and fails while `failing` is set (or
/// once `failAfter` more allocations have succeeded).
///
/// Lifetime: `cAllocator` refers to the instance without retaining it, and a C structure made
/// with it calls back until it is destroyed — often after the test's last Swift use of the
/// allocator, which is where an optimised build may end the allocator's lifetime (a release run
/// crashed on exactly that). So every instance is kept for the rest of the process by
/// `_everyAllocator`; they are a few dozen small objects.
final class CountingAllocator: @unchecked Sendable {   // used from one test thread at a time
    private static let _everyAllocator = Mutex<[CountingAllocator]>([])

    init() {
        Self._everyAllocator.withLock { $0.append(self) }
    }

    var failing = false
    /// When non-nil, the allocation after this many more successful ones fails (and sets
    /// `failing`).
    var failAfter: Int?
    private(set) var allocations = 0
    private(set) var deallocations = 0
    private(set) var failures = 0
    private(set) var liveBytes = 0

    var cAllocator: cobs_allocator {
        cobs_allocator(
            allocate: { user, size in
                let me = Unmanaged<CountingAllocator>.fromOpaque(user!).takeUnretainedValue()
                return me.allocate(size)
            },
            deallocate: { user, pointer, size in
                let me = Unmanaged<CountingAllocator>.fromOpaque(user!).takeUnretainedValue()
                me.deallocate(pointer, size)
            },
            user: Unmanaged.passUnretained(self).toOpaque())
    }

    private func allocate(_ size: Int) -> UnsafeMutableRawPointer? {
        if let remaining = failAfter {
            if remaining == 0 {
                failing = true
                failAfter = nil
            } else {
                failAfter = remaining - 1
            }
        }
        if failing {
            failures += 1
            return nil
        }
        guard let pointer = malloc(size) else { return nil }
        allocations += 1
        liveBytes += size
        return pointer
    }

    private func deallocate(_ pointer: UnsafeMutableRawPointer?, _ size: Int) {
        guard let pointer else { return }
        deallocations += 1
        liveBytes -= size
        free(pointer)
    }
}

/// A `cobs_key` as a dictionary key for model-based tests.
struct ModelKey: Hashable {
    var object: UInt
    var key: UInt32
    var context: UInt
    var cKey: cobs_key { makeKey(object, key, context) }
}

/// Runs `body` with a temporary `FILE *` and returns what it wrote (for `cobs_registry_dump`).
func dumpText(_ body: (UnsafeMutablePointer<FILE>) -> Void) throws -> String {
    let file = try #require(tmpfile())
    defer { fclose(file) }
    body(file)
    fflush(file)
    rewind(file)
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&chunk, 1, chunk.count, file)
        if n == 0 { break }
        bytes += chunk.prefix(n)
    }
    return String(decoding: bytes, as: UTF8.self)
}
