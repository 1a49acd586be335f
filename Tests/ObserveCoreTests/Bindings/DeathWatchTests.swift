@_spi(Testing) @testable import ObserveCore
import Testing

/// `_DeathWatch` counts watched addresses, and the registry's death hook skips its lookup while
/// the count is zero: an address counted twice would keep every later death paying for it.
@Suite("Death watch", .serialized)
struct DeathWatchTests {
    /// A watcher that does not unwatch when it goes away: what a real watcher looks like in the
    /// moment between its last release (its weak entries read nil) and its deinit's unwatch.
    private final class LateWatcher: _DeathWatcher {
        func watchedObjectDidDie(_ address: UInt) {}
    }

    @Test("watching an address whose only watcher died counts it once", arguments: ObservationBackend.allCases)
    func addressWithDeadWatcherIsCountedOnce(backend: ObservationBackend) {
        let before = _DeathWatch.shared.count.load(ordering: .relaxed)
        let person = Person(backend)
        let address = UInt(bitPattern: ObjectIdentifier(person))
        do { _DeathWatch.shared.watch(person, by: LateWatcher()) }   // its entry now reads nil
        #expect(_DeathWatch.shared.count.load(ordering: .relaxed) == before + 1)
        let watcher = LateWatcher()
        _DeathWatch.shared.watch(person, by: watcher)
        #expect(_DeathWatch.shared.count.load(ordering: .relaxed) == before + 1, "the address was counted twice")
        _DeathWatch.shared.unwatch(address, by: watcher)
        #expect(_DeathWatch.shared.count.load(ordering: .relaxed) == before, "the count did not return to zero")
    }
}
