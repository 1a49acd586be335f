@_spi(Testing) import ObserveCore

// `transaction.10-sets` against `sets.10-plain`: ten sets of one observed property (one
// observer that adds the new value to a counter), inside `ObservationRuntime.transaction` — the
// observer is told once, old value from before the first set, new from the last — and the same
// ten sets without one (told ten times). One op is the ten sets (and, in the transaction, its
// end, which delivers). c and swift only: no peer has transactions.

struct TransactionSetsScenario: Scenario {
    /// Whether the ten sets run inside a transaction (`transaction.10-sets`) or not (`sets.10-plain`).
    let inTransaction: Bool
    static let setsPerOp = 10

    var name: String { inTransaction ? "transaction.10-sets" : "sets.10-plain" }
    var n: Int { Self.setsPerOp }
    var kind: ScenarioKind { .latency }
    var summary: String {
        inTransaction ? "10 sets of one key inside ObservationRuntime.transaction { }: one delivery per op"
                      : "the same 10 sets without a transaction: 10 deliveries per op"
    }
    var impls: [Impl] { [.c, .swift] }
    var referenceScenario: String? { inTransaction ? "sets.10-plain" : nil }
    var notes: [String] {
        ["one op = 10 sets of one observed Int (one observer adding the new value to a counter)"
         + (inTransaction ? ", inside a transaction, and the transaction's end, which delivers one change (the last "
            + "value). Verified at tear-down: one delivery per op, with the last value set." : ", each delivered.")]
    }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let label = "\(name)/\(impl.rawValue)"
        let counter = KVOCounter(backend: impl == .c ? .c : .swift)
        let sink = Sink()
        let token = observeKVO(counter, sink)
        var base = runtimeSeed
        var expectedCalls = 0, expectedTotal = 0
        let sets = Self.setsPerOp, inTransaction = self.inTransaction
        return Fixture(runBatch: { count in
            for op in 0..<count {
                let first = base &+ op &* sets
                if inTransaction {
                    ObservationRuntime.transaction {
                        for i in 0..<sets { set(counter, first &+ i) }
                    }
                    expectedCalls += 1
                    expectedTotal &+= first &+ (sets - 1)
                } else {
                    for i in 0..<sets { set(counter, first &+ i) }
                    expectedCalls += sets
                    expectedTotal &+= wrappingSum(from: first, count: sets)
                }
            }
            base &+= count &* sets
        }, tearDown: {
            token.cancel()
            sink.consume()
            return mismatch("\(label) deliveries", sink.calls, expectedCalls)
                ?? mismatch("\(label) sum of delivered values", sink.total, expectedTotal)
        })
    }
}
