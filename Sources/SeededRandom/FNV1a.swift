/// FNV-1a (64-bit) over integers' little-endian bytes: a checksum two processes compute alike
/// (Swift's `Hasher` is seeded per process), for comparing a replica with its source.
///
/// ```swift
/// let sum = fnv1a([1, 2, 3])
/// ```
public func fnv1a(_ values: some Sequence<Int>) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for value in values {
        withUnsafeBytes(of: value.littleEndian) { bytes in
            for byte in bytes {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01b3
            }
        }
    }
    return hash
}
