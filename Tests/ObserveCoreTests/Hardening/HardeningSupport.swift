// Shared pieces of the hardening suites: real threads, observable nodes that several threads may
// set, observers that notice being messaged after death, and thread-safe inboxes for handlers.

@_spi(Testing) import ObserveCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Sizes from the environment

/// Reads a string from the environment.
func environmentString(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

/// Reads a positive integer from the environment, or `fallback`.
func environmentInt(_ name: String, default fallback: Int) -> Int {
    guard let raw = getenv(name), let value = Int(String(cString: raw)), value > 0 else { return fallback }
    return value
}

// MARK: - Threads

/// Runs `body(0..<count)` on `count` real threads (not a pool: `concurrentPerform` on two cores
/// would run only two at a time) released together by a start barrier, and joins them all.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    final class Job {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }
    final class Barrier: Sendable { let waiting: Atomic<Int>; init(_ n: Int) { waiting = Atomic(n) } }
    let barrier = Barrier(count)
    var threads: [pthread_t] = []
    for index in 0..<count {
        let job = Unmanaged.passRetained(Job {
            barrier.waiting.subtract(1, ordering: .sequentiallyConsistent)
            while barrier.waiting.load(ordering: .sequentiallyConsistent) > 0 { sched_yield() }
            body(index)
        }).toOpaque()
        #if canImport(Glibc)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let status = pthread_create(&thread, nil, { argument in
            Unmanaged<Job>.fromOpaque(argument!).takeRetainedValue().run()
            return nil
        }, job)
        precondition(status == 0, "pthread_create failed: \(status)")
        #if canImport(Glibc)
        threads.append(thread)
        #else
        threads.append(thread!)
        #endif
    }
    for thread in threads { pthread_join(thread, nil) }
}

// MARK: - Models

/// An observable node that several threads set at once: its storage is guarded by a pthread
/// lock (visible to ThreadSanitizer) and the change is announced after the lock is released.
/// `id` is fixed at creation; stress tests make it the creating operation's ticket.
final class StressNode: KeyValueObservable, @unchecked Sendable, CustomStringConvertible {
    let kvoRegistrar: KeyValueRegistrar
    let id: Int
    private let lock = TestLock()
    private var _value: Int

    init(_ backend: ObservationBackend, id: Int, value: Int = 0) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.id = id
        _value = value
    }

    static let value = ObservableKey(\StressNode.value)
    var value: Int {
        get { lock.locked { _value } }
        set {
            kvoRegistrar.didSet(StressNode.value, of: self, from: lock.exchange(self, \._value, newValue), to: newValue)
        }
    }

    var description: String { "n\(id)" }
}

/// An observer that remembers it died: a handler handed an observer whose `isDead` is set was
/// given an object that had already deinitialised — the bug "messaging a dead observer".
///
/// `onDeath` runs in `deinit`. An observer dies when its last strong reference goes, which is not
/// necessarily when the test drops its own: a delivery in progress on another thread holds one
/// while it calls the handler, and a change made meanwhile may still reach the observer. Checks of
/// "nothing after the observer died" therefore start from `onDeath`, not from the test's release.
final class MortalObserver: @unchecked Sendable {
    private let _dead = Atomic<Bool>(false)
    private let _lock = TestLock()
    private var _onDeath: (() -> Void)?
    var isDead: Bool { _dead.load(ordering: .acquiring) }
    func onDeath(_ body: @escaping () -> Void) { _lock.locked { _onDeath = body } }
    deinit {
        _dead.store(true, ordering: .releasing)
        _lock.locked { _onDeath }?()
    }
}

/// The same, observable itself: its registrations are removed the moment it deinitialises.
final class MortalObservableObserver: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar: KeyValueRegistrar
    private let _dead = Atomic<Bool>(false)
    private let _lock = TestLock()
    private var _onDeath: (() -> Void)?
    init(_ backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }
    var isDead: Bool { _dead.load(ordering: .acquiring) }
    func onDeath(_ body: @escaping () -> Void) { _lock.locked { _onDeath = body } }
    deinit {
        _dead.store(true, ordering: .releasing)
        _lock.locked { _onDeath }?()
    }
}

// MARK: - Inboxes

/// What one registration received, recorded from any thread, checked after the threads join.
///
/// `removedAt` is the last ticket issued when the registration's removal (cancel, removal call,
/// observer release) had returned: a notification of a change whose ticket is larger started
/// after the removal and must never arrive.
final class Inbox: @unchecked Sendable {
    private let lock = TestLock()
    private var _values: [Int] = []
    private var _removedAt = Int.max

    func record(_ value: Int) { lock.locked { _values.append(value) } }
    func record(contentsOf values: some Sequence<Int>) { lock.locked { _values.append(contentsOf: values) } }
    var values: [Int] { lock.locked { _values } }
    func occurrences(of value: Int) -> Int { lock.locked { _values.reduce(0) { $0 + ($1 == value ? 1 : 0) } } }
    func markRemoved(at ticket: Int) { lock.locked { _removedAt = ticket } }
    var removedAt: Int { lock.locked { _removedAt } }

    /// Problems: a value received twice, or one received although it was issued after removal.
    func problems(_ label: String) -> [String] {
        let (values, removedAt) = lock.locked { (_values, _removedAt) }
        var problems: [String] = []
        var seen = Set<Int>()
        for value in values where !seen.insert(value).inserted { problems.append("\(label): \(value) delivered twice") }
        for value in values where value > removedAt {
            problems.append("\(label): change \(value) delivered although it started after removal (at \(removedAt))")
        }
        return problems
    }
}

/// A thread-safe list of problems found by handlers and checkers (kept short).
final class Violations: @unchecked Sendable {
    private let lock = TestLock()
    private var _list: [String] = []
    private var _count = 0
    func add(_ message: @autoclosure () -> String) {
        lock.locked {
            _count += 1
            if _list.count < 40 { _list.append(message()) }
        }
    }
    func add(contentsOf messages: [String]) { for message in messages { add(message) } }
    var count: Int { lock.locked { _count } }
    var list: [String] { lock.locked { _list } }
}
