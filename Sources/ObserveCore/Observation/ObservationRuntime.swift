import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Process-wide settings and introspection of ObserveCore.
///
/// ```swift
/// print(ObservationRuntime.liveRegistrationCount)   // 0 once every observed object died
/// print(ObservationRuntime.debugListing())           // every registration, one per line
/// ```
public enum ObservationRuntime {
    /// The backend of registrars created with `KeyValueRegistrar()` (tests and benchmark).
    ///
    /// Read once from the environment variable `OBSERVECORE_BACKEND` (`c` or `swift`) and `c`
    /// otherwise. An unknown value stops the program with a message naming the valid ones.
    @_spi(Testing)
    public static let defaultBackend: ObservationBackend = {
        guard let raw = getenv("OBSERVECORE_BACKEND") else { return .c }
        let value = String(cString: raw)
        guard let backend = ObservationBackend(rawValue: value) else {
            fatalError("ObserveCore: OBSERVECORE_BACKEND=\(value) is not a backend; use `c` or `swift`")
        }
        return backend
    }()

    private static let _settingsLock = _Lock()
    @usableFromInline static let _maximumDepth = Atomic<UInt32>(64)
    nonisolated(unsafe) private static var _recursionHandler: @Sendable (String) -> Void = { message in
        fatalError(message)
    }

    /// How deep notifications may nest (a handler that sets an observed property notifies its
    /// observers from inside the first notification). A delivery on a queue counts one level
    /// deeper than the change that queued it, so a handler that re-triggers itself through a
    /// queue is caught too. Beyond it ObserveCore reports runaway recursion through
    /// ``runawayRecursionHandler``. Default 64.
    public static var maximumNotificationDepth: UInt32 {
        get { _maximumDepth.load(ordering: .relaxed) }
        set {
            _require(newValue > 0, "ObserveCore: maximumNotificationDepth must be at least 1")
            _maximumDepth.store(newValue, ordering: .relaxed)
        }
    }

    /// Called with a message naming the key path when notifications nest deeper than
    /// ``maximumNotificationDepth`` — an observer that keeps re-triggering itself. The default
    /// stops the program with that message (instead of a stack overflow); a handler that returns
    /// lets the program go on, with the too-deep notification dropped.
    public static var runawayRecursionHandler: @Sendable (String) -> Void {
        get { _settingsLock.withLock { _recursionHandler } }
        set { _settingsLock.withLock { _recursionHandler = newValue } }
    }

    static func _reportRunawayRecursion(_ message: String) {
        runawayRecursionHandler(message)
    }

    /// The number of live registrations, in both backends.
    ///
    /// Registrations whose observer died are removed first: an observer that is itself
    /// ``KeyValueObservable`` loses its registrations the moment it deinitialises; any other
    /// observer's registrations go when a change next finds the observer gone, or here.
    /// - Complexity: O(registrations) because of that sweep.
    public static var liveRegistrationCount: Int {
        var total = 0
        for backend in ObservationBackend.allCases {
            let registry = _Registry.shared(backend)
            registry.purgeDeadObservers()
            total += registry.liveCount
        }
        return total
    }

    /// The key paths `observer` observes, each with the identity of the object it is observed on.
    /// - Complexity: O(registrations).
    public static func observations(of observer: AnyObject) -> [(object: ObjectIdentifier, keyPath: AnyKeyPath)] {
        let address = UInt(bitPattern: ObjectIdentifier(observer))
        var result: [(object: ObjectIdentifier, keyPath: AnyKeyPath)] = []
        for backend in ObservationBackend.allCases {
            for registration in _Registry.shared(backend).allRegistrations()
            where registration.observerAddress == address && registration._observer === observer {
                let object = unsafeBitCast(registration.objectAddress, to: ObjectIdentifier.self)
                result.append((object, registration.keyPath))
            }
        }
        return result
    }

    /// A readable listing of every live registration, one line each: the observed object, key
    /// path, observer (or `token`), context, options and delivery.
    public static func debugListing() -> String {
        var lines: [String] = []
        for backend in ObservationBackend.allCases {
            for registration in _Registry.shared(backend).allRegistrations() {
                lines.append("[\(backend.rawValue)] " + registration._debugLine)
            }
        }
        return lines.isEmpty ? "(no registrations)" : lines.sorted().joined(separator: "\n")
    }

    /// Traps with a description if any registry's internal invariants are broken (for tests).
    @_spi(Testing)
    public static func _checkInvariants() {
        for backend in ObservationBackend.allCases { _Registry.shared(backend).checkInvariants() }
    }
}

extension _AnyRegistration {
    var _debugLine: String {
        let root = type(of: keyPath).rootType
        var line = "\(root)@0x\(String(objectAddress, radix: 16)) \(_KeyTable.shared.displayName(for: keyPath)) <- "
        if hasObserver {
            if let observer = _observer {
                line += "\(type(of: observer))@0x\(String(observerAddress, radix: 16))"
            } else {
                line += "(dead observer)"
            }
        } else {
            line += "token"
        }
        if context != ObservationContext.none.rawValue { line += " context=\(context)" }
        line += " options=\(options)"
        if _queue != nil { line += " delivery=queue" }
        return line
    }
}
