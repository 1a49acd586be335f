/// Traps whose message survives optimised builds.
///
/// `precondition` and `preconditionFailure` drop their message under -O: a release build says only
/// "precondition failure", and users deploy release builds. Every check in ObserveCore that a
/// caller can trip (misuse, a limit reached) or that reports an internal error goes through these
/// instead, as the standard library keeps "Index out of range". The check itself costs what a
/// precondition costs; the message is built only on failure.

/// Traps with `message` unless `condition` holds: a `precondition` whose message survives -O
/// builds, for misuse a caller must be able to read about.
@inlinable @inline(__always)
internal func _require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if _slowPath(!condition) { _misuse(message()) }
}

@usableFromInline @inline(never)
internal func _misuse(_ message: String) -> Never {
    fatalError(message)
}
