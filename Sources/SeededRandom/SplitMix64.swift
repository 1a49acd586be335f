/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny seeded generator, so that every random test
/// replays exactly from the seed it prints, and every implementation the benchmark compares sees
/// the same edits. Not for anything that needs unpredictability.
///
/// ```swift
/// var random = SplitMix64(seed: 42)
/// let index = random.below(10)            // 0..<10
/// let coin = Bool.random(using: &random)  // any RandomNumberGenerator API
/// ```
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's whole state: the next output depends only on it.
    public var state: UInt64

    /// A generator whose outputs are determined by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n` (`n > 0`; the modulo's bias is irrelevant at test sizes).
    public mutating func below(_ n: Int) -> Int {
        precondition(n > 0, "SplitMix64.below(_:) needs a positive bound, got \(n)")
        return Int(next() % UInt64(n))
    }
}
