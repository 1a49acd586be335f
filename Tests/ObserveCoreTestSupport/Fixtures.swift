import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Values, observers, locks and threads the test suites share: fixtures that do not depend on how
// a suite's models are declared (both ObserveCoreTests and ObserveCoreMacroFormTests use them).

/// A value type with value equality, for typed-change tests.
package struct Point: Equatable, CustomStringConvertible {
    package var x: Int, y: Int
    package init(x: Int, y: Int) { self.x = x; self.y = y }
    package var description: String { "(\(x), \(y))" }
}

/// A value type without `Equatable`.
package struct Blob {
    package var bytes: [UInt8]
    package init(bytes: [UInt8]) { self.bytes = bytes }
}

/// A plain observer class with no registrar.
package final class Watcher {
    package var seen: [String] = []
    package var count = 0
    package init() {}
}

/// Records events from handlers (handlers may run on other threads in some tests).
package final class Log<Event>: @unchecked Sendable {
    package init() {}
    private let lock = TestLock()
    private var _events: [Event] = []
    package func append(_ event: Event) { lock.locked { _events.append(event) } }
    package var events: [Event] { lock.locked { _events } }
    package var count: Int { lock.locked { _events.count } }
}

/// A pthread mutex for test bookkeeping. (Synchronization.Mutex's lock lives in an
/// uninstrumented library, so ThreadSanitizer cannot see it order accesses; pthread calls it can.)
package final class TestLock: @unchecked Sendable {
    package init() {}
    private let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        m.initialize(to: pthread_mutex_t())
        pthread_mutex_init(m, nil)
        return m
    }()
    deinit { pthread_mutex_destroy(mutex); mutex.deallocate() }
    package func locked<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Stores `newValue` in `object[keyPath: storage]` under the lock; returns what it held (the
    /// old value a lock-guarded setter announces after unlocking). A key path, not an `inout`
    /// argument: an inout access to the property would begin before the lock is taken, and two
    /// threads' overlapping modify accesses are an exclusivity violation (ThreadSanitizer reports
    /// it as a Swift access race).
    package func exchange<Root: AnyObject, T>(_ object: Root, _ storage: ReferenceWritableKeyPath<Root, T>, _ newValue: T) -> T {
        locked {
            let old = object[keyPath: storage]
            object[keyPath: storage] = newValue
            return old
        }
    }
}

/// A value type without `Equatable`, for binding cycles that cannot compare values.
package struct Opaque {
    package var value: Int
    package init(value: Int) { self.value = value }
}

/// A counter that handlers on several threads may bump.
package final class AtomicCounter: Sendable {
    package init() {}
    private let _value = Atomic<Int>(0)
    package func increment() { _value.add(1, ordering: .relaxed) }
    package var value: Int { _value.load(ordering: .relaxed) }
}

/// Runs `body` on a new thread (never this one, as `DispatchQueue.sync` may) and waits for it.
package func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        body()
        done.signal()
    }
    thread.start()
    done.wait()
}
