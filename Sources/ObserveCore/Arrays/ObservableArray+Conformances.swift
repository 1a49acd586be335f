// The standard conformances users reach for: literals, equality and hashing by contents,
// coding as a plain array, and a mirror that shows the elements.

extension ObservableArray: ExpressibleByArrayLiteral {
    /// An array holding the literal's elements, on the default backend.
    ///
    /// ```swift
    /// let queue: ObservableArray<String> = ["a", "b"]
    /// ```
    public convenience init(arrayLiteral elements: Element...) {
        self.init(elements)
    }
}

extension ObservableArray: Equatable where Element: Equatable {
    /// Whether the two arrays hold equal elements in the same order (their observers and
    /// backends do not take part). Each side is read as one consistent state.
    ///
    /// ```swift
    /// let a: ObservableArray = [1, 2], b: ObservableArray = [1, 2]
    /// a == b   // true, although a !== b
    /// ```
    ///
    /// Inlinable: the elements' `==` is specialised at the call site, over two contiguous
    /// snapshots (comparing 100k `Int`s took 13x `Array`'s time through the generic subscript).
    @inlinable
    public static func == (lhs: ObservableArray<Element>, rhs: ObservableArray<Element>) -> Bool {
        if lhs === rhs { return true }
        // Snapshots, taken one lock at a time: comparing never holds two arrays' locks.
        return lhs._withSnapshotBuffer { left in
            rhs._withSnapshotBuffer { right in left.count == right.count && left.elementsEqual(right) }
        }
    }
}

extension ObservableArray: Hashable where Element: Hashable {
    /// Hashes the contents, as `Array` does. The array is a mutable class: mutating one that is
    /// a `Set` member or a `Dictionary` key breaks that collection, as it would for any key
    /// whose hash changes.
    public func hash(into hasher: inout Hasher) {
        let snapshot = _snapshot()
        defer { snapshot.readerDone() }
        hasher.combine(snapshot.count)
        for i in 0..<snapshot.count { hasher.combine(snapshot[i]) }
    }
}

extension ObservableArray: Encodable where Element: Encodable {
    /// Encodes the contents as an unkeyed container, exactly as `[Element]` encodes.
    ///
    /// ```swift
    /// let data = try JSONEncoder().encode(ObservableArray([1, 2]))   // "[1,2]"
    /// ```
    public func encode(to encoder: any Encoder) throws {
        let snapshot = _snapshot()
        defer { snapshot.readerDone() }
        var container = encoder.unkeyedContainer()
        for i in 0..<snapshot.count { try container.encode(snapshot[i]) }
    }
}

extension ObservableArray: Decodable where Element: Decodable {
    /// Decodes what `[Element]` decodes, into a new array on the default backend.
    public convenience init(from decoder: any Decoder) throws {
        self.init(try [Element](from: decoder))
    }
}

extension ObservableArray: CustomReflectable {
    /// Shows the elements, as an `Array`'s mirror does (not the lock, registrar and storage):
    /// what `dump(array)` and debuggers display.
    public var customMirror: Mirror {
        Mirror(self, unlabeledChildren: elements, displayStyle: .collection)
    }
}
