/// Emptying the scratch arrays the registry and the arrays reuse on hot paths.
extension RangeReplaceableCollection where Self: BidirectionalCollection {
    /// Removes every element and keeps the storage. For the few elements a scratch array usually
    /// holds, one `removeLast()` each: `removeAll(keepingCapacity: true)` goes through the generic
    /// `replaceSubrange`, 60 to 180 instructions whatever the count (callgrind), which showed in
    /// every dispatch-cache fill and every element change.
    @inline(__always)
    mutating func _removeAllKeepingCapacity() {
        if count <= 4 {
            while !isEmpty { removeLast() }
        } else {
            removeAll(keepingCapacity: true)
        }
    }
}
