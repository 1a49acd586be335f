import Dispatch
import Foundation
@_spi(Testing) @testable import ObserveCore
import Synchronization
import Testing

/// `_UnownedReference`: what an element tracker and an element-key registration hold of their
/// array instead of a `weak` reference (`Concurrency/_UnownedReference.swift`). It must answer
/// like `weak` — the object while it lives, nil from the moment its deinit begins — without
/// keeping the object alive.
@Suite("UnownedReference")
struct UnownedReferenceTests {
    /// What a probe's deinit saw.
    final class Seen { var loadedInDeinit: Bool? }

    /// Records what a reference to itself loads while it is being deinitialized.
    final class Probe {
        var reference: _UnownedReference<Probe>?
        let seen: Seen
        init(_ seen: Seen) { self.seen = seen }
        deinit { seen.loadedInDeinit = reference?.load() != nil }
    }

    @Test("loads the object while it lives, nil from its deinit on, and never keeps it alive")
    func loadsLikeWeak() {
        let seen = Seen()
        var probe: Probe? = Probe(seen)
        let reference = _UnownedReference(probe!)
        probe!.reference = reference
        #expect(reference.load() === probe, "the live object")
        #expect(!reference.isDead)
        #expect(reference.refers(to: probe!) && !reference.refers(to: Probe(Seen())))
        probe = nil                                          // the only strong reference
        #expect(seen.loadedInDeinit == false, "the deinit ran (no load kept the object), and saw nil")
        #expect(reference.load() == nil, "a dead object loads as nil (its memory is still allocated)")
        #expect(reference.isDead)
    }

    /// An object whose deinit marks it, so that a load of a dead one would show.
    final class Box: @unchecked Sendable {
        var value = 7
        deinit { value = -1 }
    }

    @Test("a load racing with the last release on another thread answers the object or nil, never a dead one")
    func loadRacesLastRelease() {
        let rounds = 500
        let nils = Atomic<Int>(0), objects = Atomic<Int>(0), dead = Atomic<Int>(0)
        for _ in 0..<rounds {
            var box: Box? = Box()
            let reference = _UnownedReference(box!)
            let loading = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
            Thread {
                var signalled = false
                // Loads until the object is gone: the release below lands somewhere in this loop
                // (bounded, so that a load that never answers nil fails instead of hanging).
                for _ in 0..<10_000_000 {
                    if let loaded = reference.load() {
                        if loaded.value != 7 { dead.add(1, ordering: .relaxed) }
                        objects.add(1, ordering: .relaxed)
                    } else {
                        nils.add(1, ordering: .relaxed)
                        break
                    }
                    if !signalled { signalled = true; loading.signal() }
                }
                if !signalled { loading.signal() }
                done.signal()
            }.start()
            loading.wait()                  // the other thread is loading
            box = nil                       // the last release, racing with its loads
            done.wait()
            #expect(reference.load() == nil)
        }
        #expect(dead.load(ordering: .relaxed) == 0, "a load answered an object whose deinit had run")
        #expect(objects.load(ordering: .relaxed) >= rounds, "every round loaded the live object at least once")
        #expect(nils.load(ordering: .relaxed) == rounds, "every round ended with a nil load")
    }
}
