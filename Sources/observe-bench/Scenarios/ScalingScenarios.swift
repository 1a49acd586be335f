@_spi(Testing) import ObserveCore
import SeededRandom

// `array.ops-scaling.*`: one row per structural operation of an observed array, each at every
// `--elements` size, so that an operation whose cost grows with N shows it as a ratio between
// sizes (targets: cost at 100k <= 3x cost at 1k). One op = the operation, then one element
// property set on a random element: the set makes the element tracker answer "at which index?"
// right after the mutation, so a position index the mutation left to rebuild is paid here, not
// hidden in a later row. The array (`backend: .c`) has one observer with one element key path;
// its length is N at the start of every batch.

/// The structural operations `array.ops-scaling` measures, one row each.
enum ScalingOperation: String, CaseIterable {
    case insertMiddle = "insert-middle"
    case removeMiddle = "remove-middle"
    case moveAdjacent = "move-adjacent"
    case moveFar = "move-far"
    case moveOffsets = "move-offsets"
    case replaceMiddle = "replace-10"
    case swap = "swap"
    case appendRemoveLast = "append-removeLast"
    case insertFirstRemoveFirst = "insert-0-removeFirst"

    /// What one op does before the element change, for the table.
    var summary: String {
        switch self {
        case .insertMiddle: return "insert(x, at: count / 2)"
        case .removeMiddle: return "remove(at: count / 2)"
        case .moveAdjacent: return "move(from: i, to: i + 1), i random"
        case .moveFar: return "move(from: i, to: j), i in the first N/16, j in the last N/16 (random)"
        case .moveOffsets: return "move(fromOffsets: [i, i + 2], toOffset: i + 5), i random"
        case .replaceMiddle: return "replaceSubrange(N/2 - 5 ..< N/2 + 5, with: 10 other elements)"
        case .swap: return "swapAt(i, j), i != j random"
        case .appendRemoveLast: return "append(x) + removeLast()"
        case .insertFirstRemoveFirst: return "insert(x, at: 0) + removeFirst()"
        }
    }

    /// Structural changes delivered per op.
    var changesPerOp: Int { self == .appendRemoveLast || self == .insertFirstRemoveFirst ? 2 : 1 }
}

/// One `array.ops-scaling.<operation>` row at one size.
struct ArrayOpsScalingScenario: ArrayScenario {
    static let family = "array.ops-scaling"
    let operation: ScalingOperation
    let n: Int
    var name: String { "\(Self.family).\(operation.rawValue)" }
    var summary: String {
        "\(operation.summary), then one random element's property set, on an observed array of N (backend: .c)"
    }
    var impls: [Impl] { [.c] }
    var notes: [String] {
        var notes = ["one op = the operation, then one property set on the element at a random index, reported with "
                     + "its index to the array's one observer (element key path grade): so a position index the "
                     + "operation left behind is brought up to date inside the op. Batches are of min(256, N/8) ops, "
                     + "so each batch's mean includes the index's periodic log folds (amortized cost). The target compares "
                     + "the op at N=100,000 with N=1,000."]
        switch operation {
        case .insertMiddle:
            notes.append("N is restored after each batch, untimed: removeSubrange of the batch's insertions (one "
                         + "mutation, observed).")
        case .removeMiddle:
            notes.append("N is restored after each batch, untimed: insert(contentsOf:) of the batch's removals at "
                         + "their place (one mutation, observed).")
        case .replaceMiddle:
            notes.append("the 10 elements alternate between the originals and 10 others, so every replacement "
                         + "changes the array.")
        default:
            break
        }
        notes.append("verified at tear-down: every element change reported once with its index, every structural "
                     + "change delivered, the contents equal a plain array replaying the same operations.")
        return notes
    }

    /// Operations per timed batch: enough that every batch spans several of the position index's
    /// periodic log folds (one per 32 to 128 bulk moves: log_limit in CObserveCore's positions.c), so
    /// that a batch's mean is the amortized cost. With small batches most batches miss the fold
    /// and the median of batch means shows only the cheap ops. At most N/8, so that a batch of
    /// insertions or removals keeps the length within 12.5% of N.
    static func batch(n: Int) -> Int { min(256, n / 8) }

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling {
        var sampling = cheapSampling(config)
        sampling.fixedBatch = config.fixedBatch ?? Self.batch(n: n)
        return sampling
    }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        precondition(impl == .c, "\(impl) does not apply to \(name)")
        let n = self.n, operation = self.operation, label = "\(name)/c"
        let pool = StudentPool.kvoStudents(.c)
        let spares = Array(pool[StudentPool.spareBase..<(StudentPool.spareBase + StudentPool.spareCount)])
        let array = ObservableArray(pool[0..<n], backend: .c)
        let sink = Sink()
        var structuralChanges = 0
        let token = observeArray(array) { change in
            if change.kind == .elementChanged { readElementChange(change, sink) } else { structuralChanges += 1 }
        }

        // Seeded draws, the same in every repetition: which element is set (a 32-bit fraction of
        // the current length), and the operation's indices.
        let length = 4096, mask = length - 1
        let operationNumber = UInt64(ScalingOperation.allCases.firstIndex(of: operation)!)
        var generator = SplitMix64(seed: 0x5CA1_E0B5 &+ UInt64(n) &* 31 &+ operationNumber)
        let changeDraws = (0..<length).map { _ in UInt32.random(in: .min ... .max, using: &generator) }
        let pairs: [(Int, Int)] = (0..<length).map { _ in
            switch operation {
            case .moveAdjacent:
                return (Int.random(in: 0..<(n - 1), using: &generator), 0)
            case .moveOffsets:
                return (Int.random(in: 0..<(n - 5), using: &generator), 0)
            case .moveFar:
                let front = Int.random(in: 0..<(n / 16), using: &generator)
                let back = n - 1 - Int.random(in: 0..<(n / 16), using: &generator)
                return (front, back)
            case .swap:
                let i = Int.random(in: 0..<n, using: &generator)
                var j = Int.random(in: 0..<(n - 1), using: &generator)
                if j >= i { j += 1 }
                return (i, j)
            default:
                return (0, 0)
            }
        }
        let middle = n / 2
        let originals = Array(pool[(middle - 5)..<(middle + 5)])
        let replacements = Array(spares[0..<10])

        var base = runtimeSeed
        var ops = 0
        var indexSum = 0
        var restores = 0

        /// Runs `count` ops: `body(k, j)` performs op k (the j-th of the batch) and returns the
        /// array's length after it; then the element at a random index is set.
        @inline(__always)
        func run(_ count: Int, _ body: (Int, Int) -> Int) {
            var k = ops
            for j in 0..<count {
                let length = body(k, j)
                let index = Int((UInt64(changeDraws[k & mask]) &* UInt64(length)) >> 32)
                setGrade(array[index], base &+ k)
                indexSum &+= index
                k &+= 1
            }
            ops = k
            base &+= count
        }

        let runBatch: (Int) -> Void
        var finishBatch: ((Int) -> Void)? = nil
        switch operation {
        case .insertMiddle:
            runBatch = { count in
                precondition(count <= spares.count, "\(label): a batch of \(count) inserts more than the spares")
                run(count) { _, j in
                    array.insert(spares[j], at: (n + j) / 2)
                    return n + j + 1
                }
            }
            // Inserting at count / 2 each time leaves the batch's elements at n/2 ..< n/2 + count.
            finishBatch = { count in
                array.removeSubrange(middle..<(middle + count))
                restores += 1
            }
        case .removeMiddle:
            runBatch = { count in
                precondition(count <= n / 2, "\(label): a batch of \(count) would remove more than half the array")
                run(count) { _, j in
                    blackHole(array.remove(at: (n - j) / 2).id)
                    return n - j - 1
                }
            }
            // Removing at count / 2 each time takes the originals at lo ..< lo + count, lo = (n - count + 1) / 2.
            finishBatch = { count in
                let low = (n - count + 1) / 2
                array.insert(contentsOf: pool[low..<(low + count)], at: low)
                restores += 1
            }
        case .moveAdjacent:
            runBatch = { count in
                run(count) { k, _ in
                    let i = pairs[k & mask].0
                    array.move(from: i, to: i + 1)
                    return n
                }
            }
        case .moveFar:
            runBatch = { count in
                run(count) { k, _ in
                    let (from, to) = pairs[k & mask]
                    array.move(from: from, to: to)
                    return n
                }
            }
        case .moveOffsets:
            runBatch = { count in
                run(count) { k, _ in
                    let i = pairs[k & mask].0
                    array.move(fromOffsets: [i, i + 2], toOffset: i + 5)
                    return n
                }
            }
        case .replaceMiddle:
            runBatch = { count in
                run(count) { k, _ in
                    array.replaceSubrange((middle - 5)..<(middle + 5), with: k & 1 == 0 ? replacements : originals)
                    return n
                }
            }
        case .swap:
            runBatch = { count in
                run(count) { k, _ in
                    let (i, j) = pairs[k & mask]
                    array.swapAt(i, j)
                    return n
                }
            }
        case .appendRemoveLast:
            let spare = spares[0]
            runBatch = { count in
                run(count) { _, _ in
                    array.append(spare)
                    blackHole(array.removeLast().id)
                    return n
                }
            }
        case .insertFirstRemoveFirst:
            let spare = spares[0]
            runBatch = { count in
                run(count) { _, _ in
                    array.insert(spare, at: 0)
                    blackHole(array.removeFirst().id)
                    return n
                }
            }
        }

        /// The contents after `ops` operations, replayed on a plain array of ids.
        func expectedIDs() -> [Int] {
            var ids = Array(0..<n)
            switch operation {
            case .moveAdjacent:
                for k in 0..<ops { let i = pairs[k & mask].0; ids.swapAt(i, i + 1) }
            case .moveFar:
                for k in 0..<ops { let (from, to) = pairs[k & mask]; ids.insert(ids.remove(at: from), at: to) }
            case .moveOffsets:
                // SwiftUI's move of [i, i + 2] before i + 5: i + 1, i + 3, i + 4 close up, then i, i + 2.
                for k in 0..<ops {
                    let i = pairs[k & mask].0
                    ids.replaceSubrange(i..<(i + 5), with: [ids[i + 1], ids[i + 3], ids[i + 4], ids[i], ids[i + 2]])
                }
            case .swap:
                for k in 0..<ops { let (i, j) = pairs[k & mask]; ids.swapAt(i, j) }
            case .replaceMiddle:
                if ops & 1 == 1 { ids.replaceSubrange((middle - 5)..<(middle + 5), with: replacements.map(\.id)) }
            case .insertMiddle, .removeMiddle, .appendRemoveLast, .insertFirstRemoveFirst:
                break
            }
            return ids
        }

        return Fixture(runBatch: runBatch, tearDown: {
            token.cancel()
            array._checkInvariants()
            sink.consume()
            if array.map(\.id) != expectedIDs() { return "\(label): contents differ from the replayed operations'" }
            return mismatch("\(label) element changes", sink.calls, ops)
                ?? mismatch("\(label) sum of element indices", sink.total, indexSum)
                ?? mismatch("\(label) structural changes", structuralChanges, ops * operation.changesPerOp + restores)
        }, finishBatch: finishBatch)
    }
}
