/// Every scenario the CLI knows, by name.
///
/// The array scenarios (`array.setup`, `array.element-change`, `array.element-change-10`,
/// `array.element-change-repeated`, `array.insert-front`, `array.append-10k`, `array.remove-10k`, `array.batch-100`,
/// the unobserved ones and the `array.ops-scaling.*` rows) run at every size of `--elements`
/// (default 1k / 10k / 100k): one `Scenario` instance per size, sharing the name and a chart
/// family over "elements (N)" (the scaling rows draw none). `array.ops-scaling` names all nine
/// `array.ops-scaling.<operation>` rows. The `register.same-key.*` rows run at every size of
/// `--registrations` (default 2k / 8k / 32k registrations on one key); `register.same-key` names
/// all three.
enum ScenarioCatalog {
    static let arrayScenarioNames = [
        "array.setup", "array.element-change", "array.element-change-10", "array.element-change-repeated",
        "array.insert-front", "array.append-10k", "array.remove-10k", "array.batch-100",
        "array.unobserved-append", "array.unobserved-insert-middle", "array.unobserved-subscript-set", "array.iterate",
        "array.unobserved-sort", "array.unobserved-reverse",
        "replication.batch-100",
        ArrayOpsScalingScenario.family,
    ]

    /// The default suite: set.N for each N in `observerCounts`, then the rest (the same-key rows
    /// at each size in `registrationCounts`), then the array scenarios at each size in `elementCounts`.
    static func defaultScenarios(observerCounts: [Int], elementCounts: [Int],
                                 registrationCounts: [Int] = SameKeyScenario.defaultCounts) -> [any Scenario] {
        var scenarios: [any Scenario] = observerCounts.map { SetScenario(n: $0) }
        scenarios.append(SetScenario(n: 1, macroDeclared: true))
        scenarios.append(RegisterRemoveScenario())
        scenarios.append(contentsOf: sameKeyScenarios(registrationCounts))
        scenarios.append(RegisterMemoryScenario())
        scenarios.append(ThreadsScenario())
        scenarios.append(ThreadsSameObjectScenario())
        scenarios.append(ThreadsObserveChurnScenario())
        scenarios.append(contentsOf: capabilityScenarios)
        for name in arrayScenarioNames {
            scenarios.append(contentsOf: try! parse(name, elementCounts: elementCounts))
        }
        // The service-shaped mix runs at one size in the default suite (its target is stated at
        // 50k; a --quick or --elements run with smaller arrays runs it at their largest size).
        scenarios.append(ArrayMixedScenario(n: min(ArrayMixedScenario.defaultCount, elementCounts.max() ?? 0)))
        scenarios.append(ServiceChurnScenario())
        return scenarios
    }

    /// Issue 11's capability rows, in table order.
    static var capabilityScenarios: [any Scenario] {
        ChainLeafSetScenario.depths.map { ChainLeafSetScenario(depth: $0) } as [any Scenario]
            + [ChainRelinkScenario(), DependentSetScenario(), StreamEndToEndScenario()]
            + BindingScenario.Shape.allCases.map { BindingScenario(shape: $0) } + [PostScenario()]
            + [TransactionSetsScenario(inTransaction: false), TransactionSetsScenario(inTransaction: true)]
    }

    /// The `register.same-key.*` rows, each at every size in `counts`, in table order.
    static func sameKeyScenarios(_ counts: [Int], shapes: [SameKeyShape] = SameKeyShape.allCases) -> [any Scenario] {
        shapes.flatMap { shape in counts.map { SameKeyScenario(shape: shape, n: $0) } }
    }

    enum ParseError: Error, CustomStringConvertible {
        case unknown(String)

        var description: String {
            switch self {
            case .unknown(let name):
                return "unknown scenario '\(name)'; known: set.N (any N >= 0), set.N-macro, register.remove, register.memory, "
                    + SameKeyShape.allCases.map(\.name).joined(separator: ", ") + " (or \(SameKeyScenario.family): all three), "
                    + "threads.2-distinct, threads.2-same-object, threads.2-observe-churn, "
                    + ScenarioCatalog.capabilityScenarios.map(\.name).joined(separator: ", ")
                    + " (chain.leaf-set: both depths), " + ScenarioCatalog.arrayScenarioNames.joined(separator: ", ")
                    + " (or one of its rows, " + ScalingOperation.allCases.map { "\(ArrayOpsScalingScenario.family).\($0.rawValue)" }
                        .joined(separator: ", ") + "), array.mixed, service.churn"
            }
        }
    }

    /// Parses one name: `set.N`, `register.remove`, `register.memory`, a `register.same-key.*` row
    /// (one instance per size in `registrationCounts`; `register.same-key` names all three), a
    /// `threads.2-*` row, a capability row (`chain.leaf-set` names both depths), or an array
    /// scenario (one instance per size in `elementCounts`).
    static func parse(_ name: String, elementCounts: [Int],
                      registrationCounts: [Int] = SameKeyScenario.defaultCounts) throws -> [any Scenario] {
        if name.hasPrefix("set."), let n = Int(name.dropFirst(4)), n >= 0 { return [SetScenario(n: n)] }
        if name.hasPrefix("set."), name.hasSuffix("-macro"), let n = Int(name.dropFirst(4).dropLast(6)), n >= 0 {
            return [SetScenario(n: n, macroDeclared: true)]
        }
        switch name {
        case "register.remove": return [RegisterRemoveScenario()]
        case "register.memory": return [RegisterMemoryScenario()]
        case SameKeyScenario.family: return sameKeyScenarios(registrationCounts)
        case let name where SameKeyShape.allCases.contains(where: { $0.name == name }):
            return sameKeyScenarios(registrationCounts, shapes: SameKeyShape.allCases.filter { $0.name == name })
        case "threads.2-distinct": return [ThreadsScenario()]
        case "threads.2-same-object": return [ThreadsSameObjectScenario()]
        case "threads.2-observe-churn": return [ThreadsObserveChurnScenario()]
        case "service.churn": return [ServiceChurnScenario()]
        case "chain.leaf-set": return ChainLeafSetScenario.depths.map { ChainLeafSetScenario(depth: $0) }
        case let name where capabilityScenarios.contains(where: { $0.name == name }):
            return capabilityScenarios.filter { $0.name == name }
        case "array.setup": return elementCounts.map { ArraySetupScenario(n: $0) }
        case "array.element-change": return elementCounts.map { ArrayElementChangeScenario(n: $0) }
        case "array.element-change-10": return elementCounts.map { ArrayElementChangeTenScenario(n: $0) }
        case "array.element-change-repeated": return elementCounts.map { ArrayElementChangeRepeatedScenario(n: $0) }
        case "array.insert-front": return elementCounts.map { ArrayInsertFrontScenario(n: $0) }
        case "array.append-10k": return elementCounts.map { ArrayAppendScenario(n: $0) }
        case "array.remove-10k": return elementCounts.map { ArrayAppendScenario(n: $0, removes: true) }
        case "array.batch-100": return elementCounts.map { ArrayBatchScenario(n: $0) }
        case "array.mixed": return elementCounts.map { ArrayMixedScenario(n: $0) }
        case "replication.batch-100": return elementCounts.map { ReplicationScenario(n: $0) }
        case ArrayOpsScalingScenario.family:
            return ScalingOperation.allCases.flatMap { operation in
                elementCounts.map { ArrayOpsScalingScenario(operation: operation, n: $0) }
            }
        case let name where name.hasPrefix(ArrayOpsScalingScenario.family + "."):
            let suffix = String(name.dropFirst(ArrayOpsScalingScenario.family.count + 1))
            guard let operation = ScalingOperation(rawValue: suffix) else { throw ParseError.unknown(name) }
            return elementCounts.map { ArrayOpsScalingScenario(operation: operation, n: $0) }
        case let name where ArrayUnobservedScenario.Operation(rawValue: name) != nil:
            return elementCounts.map { ArrayUnobservedScenario(operation: .init(rawValue: name)!, n: $0) }
        default: throw ParseError.unknown(name)
        }
    }
}
