/// Every scenario the CLI knows, by name.
///
/// The array scenarios of issue 4 (`array.setup`, `array.element-change`, `array.insert-front`,
/// `array.append-10k`, `array.batch-100`, each at 1k / 10k / 100k elements, with impls `c`,
/// `swift`, `per-element-naive`, `diff`, `observation`, `opencombine`) plug in here once
/// ObserveCore has an observable array: one `Scenario` type each with `chartFamily` set to a
/// per-scenario family over "elements (N)", listed in `defaultScenarios` and parsed in `parse`.
enum ScenarioCatalog {
    /// Named in issue 4 but not measurable until the arrays issue lands.
    static let pendingArrayScenarios = [
        "array.setup", "array.element-change", "array.insert-front", "array.append-10k", "array.batch-100",
    ]

    /// The default suite: set.N for each N in `observerCounts`, then the rest.
    static func defaultScenarios(observerCounts: [Int]) -> [any Scenario] {
        var scenarios: [any Scenario] = observerCounts.map { SetScenario(n: $0) }
        scenarios.append(RegisterRemoveScenario())
        scenarios.append(RegisterMemoryScenario())
        scenarios.append(ThreadsScenario())
        return scenarios
    }

    enum ParseError: Error, CustomStringConvertible {
        case unknown(String)
        case pending(String)

        var description: String {
            switch self {
            case .unknown(let name):
                return "unknown scenario '\(name)'; known: set.N (any N >= 0), register.remove, register.memory, "
                    + "threads.2-distinct"
            case .pending(let name):
                return "scenario '\(name)' needs ObservableArray (the arrays issue), which does not exist yet"
            }
        }
    }

    /// Parses one name: `set.N`, `register.remove`, `register.memory`, `threads.2-distinct`.
    static func parse(_ name: String) throws -> any Scenario {
        if name.hasPrefix("set."), let n = Int(name.dropFirst(4)), n >= 0 { return SetScenario(n: n) }
        switch name {
        case "register.remove": return RegisterRemoveScenario()
        case "register.memory": return RegisterMemoryScenario()
        case "threads.2-distinct": return ThreadsScenario()
        default:
            if pendingArrayScenarios.contains(name) { throw ParseError.pending(name) }
            throw ParseError.unknown(name)
        }
    }
}
