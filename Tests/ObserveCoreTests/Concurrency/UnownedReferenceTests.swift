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
        #expect(reference.load() === probe, "loading twice leaves no extra reference behind")
        probe = nil                                          // the only strong reference
        #expect(seen.loadedInDeinit == false, "the deinit ran, and saw nil")
        #expect(reference.load() == nil, "a dead object loads as nil (its memory is still allocated)")
    }

    @Test("a load racing with the last release on another thread answers the object or nil, never a dead one")
    func loadRacesLastRelease() {
        let rounds = 2_000
        let nils = Atomic<Int>(0), objects = Atomic<Int>(0), wrong = Atomic<Int>(0)
        for _ in 0..<rounds {
            final class Box: @unchecked Sendable { var value = 7 }
            var box: Box? = Box()
            let reference = _UnownedReference(box!)
            let start = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
            Thread {
                start.wait()
                for _ in 0..<8 {
                    if let loaded = reference.load() {
                        if loaded.value != 7 { wrong.add(1, ordering: .relaxed) }
                        objects.add(1, ordering: .relaxed)
                    } else {
                        nils.add(1, ordering: .relaxed)
                    }
                }
                done.signal()
            }.start()
            start.signal()
            box = nil
            done.wait()
            #expect(reference.load() == nil)
        }
        #expect(wrong.load(ordering: .relaxed) == 0, "a loaded object was read after its deinit")
        #expect(nils.load(ordering: .relaxed) + objects.load(ordering: .relaxed) == rounds * 8)
    }
}
