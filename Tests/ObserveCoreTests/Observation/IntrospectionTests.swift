@_spi(Testing) import ObserveCore
import Testing

@Suite("Introspection")
struct IntrospectionTests {
    @Test("observed key paths, observers of a key path, and key paths of an observer", arguments: ObservationBackend.allCases)
    func introspection(backend: ObservationBackend) {
        let person = Person(backend)
        let w1 = Watcher(), w2 = Watcher()
        #expect(person.observedKeyPaths.isEmpty)
        let token = person.observe(\.score) { _, _ in }
        person.addObserver(w1, for: \.age) { _, _, _ in }
        person.addObserver(w2, for: \.age, context: 9) { _, _, _ in }
        person.addObserver(w1, for: \.name) { _, _, _ in }

        let observed = Set(person.observedKeyPaths.map { $0 as AnyKeyPath })
        #expect(observed == [\Person.score, \Person.age, \Person.name] as Set<AnyKeyPath>)
        let ageObservers = person.observers(for: \.age).map(ObjectIdentifier.init)
        #expect(Set(ageObservers) == [ObjectIdentifier(w1), ObjectIdentifier(w2)])
        #expect(person.observers(for: \.score).isEmpty, "token registrations have no observer")
        #expect(person.observers(for: \.blob).isEmpty)

        let ofW1 = ObservationRuntime.observations(of: w1)
        #expect(ofW1.count == 2)
        #expect(ofW1.allSatisfy { $0.object == ObjectIdentifier(person) })
        #expect(Set(ofW1.map(\.keyPath)) == [\Person.age, \Person.name] as Set<AnyKeyPath>)

        let description = person.observationDebugDescription
        #expect(description.split(separator: "\n").count == 4)
        #expect(description.contains("token"))
        #expect(description.contains("Watcher@0x"))
        #expect(description.contains("context=9"))
        let listing = ObservationRuntime.debugListing()
        #expect(listing.contains("[\(backend.rawValue)] Person@0x\(String(UInt(bitPattern: ObjectIdentifier(person)), radix: 16))"))
        token.cancel()
        person.removeAllObservers()
        #expect(person.observationDebugDescription == "Person: no registrations")
    }

    /// An observer that dies leaves its registrations in place until a change finds them; the
    /// introspection must already ignore them, or what it lists would depend on when (and, once
    /// the dead observer's address is reused, whether) that happens. The differential test
    /// found the two backends disagreeing through exactly this.
    @Test("an observer that died is not listed by observedKeyPaths, observers or observationCount", arguments: ObservationBackend.allCases)
    func deadObserverIsNotListed(backend: ObservationBackend) {
        let person = Person(backend)
        var watcher: Watcher? = Watcher()
        let survivor = Watcher()
        person.addObserver(watcher!, for: [\.nickname, \.isActive] as [PartialKeyPath<Person>]) { _, _, _, _ in }
        person.addObserver(survivor, for: \.age) { _, _, _ in }
        #expect(Set(person.observedKeyPaths.map { $0 as AnyKeyPath }) == [\Person.nickname, \Person.isActive, \Person.age] as Set<AnyKeyPath>)
        watcher = nil
        #expect(person.observationDebugDescription.contains("dead observer"), "the registrations wait for a change to remove them")
        #expect(person.observedKeyPaths.map { $0 as AnyKeyPath } == [\Person.age])
        #expect(person.observers(for: \.isActive).isEmpty)
        #expect(person.observationCount == 1)
        person.isActive.toggle()   // finds the dead observer and removes its isActive registration
        #expect(person.observedKeyPaths.map { $0 as AnyKeyPath } == [\Person.age])
        person.removeAllObservers()
    }

    /// A key declared with its property's name prints as `\Root.name` in listings, where Swift
    /// prints a stored property with observers as `\Root.<computed 0x…>` on Linux.
    @Test("a named key prints as \\Root.property in listings", arguments: ObservationBackend.allCases)
    func namedKeyPrints(backend: ObservationBackend) {
        final class Gauge: KeyValueObservable {
            let kvoRegistrar: KeyValueRegistrar
            init(_ backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }
            static let level = ObservableKey(\Gauge.level, name: "level")
            var level = 0 {
                willSet { kvoRegistrar.willSet(Gauge.level, of: self, from: level) }
                didSet { kvoRegistrar.didSet(Gauge.level, of: self, from: oldValue, to: level) }
            }
        }
        let gauge = Gauge(backend)
        let token = gauge.observe(\.level) { _, _ in }
        _ = Gauge.level
        #expect(gauge.observationDebugDescription.contains("\\Gauge.level"), "\(gauge.observationDebugDescription)")
        #expect(ObservationRuntime.debugListing().contains("\\Gauge.level"))
        token.cancel()
    }
}
