import Foundation
@_spi(Testing) import ObserveCore
import Testing

@Suite("ObservableArray: literals, equality, hashing, coding, mirror")
struct ObservableArrayConformanceTests {
    @Test("an array literal makes an observable array")
    func arrayLiteral() {
        let array: ObservableArray<String> = ["a", "b"]
        var heard = 0
        let token = array.observe { _, _ in heard += 1 }
        array.append("c")
        #expect(Array(array) == ["a", "b", "c"])
        #expect(heard == 1)
        token.cancel()
    }

    @Test("equality and hashing go by contents, like Array's", arguments: ObservationBackend.allCases)
    func equalityAndHashing(backend: ObservationBackend) {
        let a = ObservableArray([1, 2, 3], backend: backend), b = ObservableArray([1, 2, 3], backend: .swift)
        #expect(a == b && a !== b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        b.insert(0, at: 0)   // a different ring layout; then back to the same contents
        _ = b.removeFirst()
        #expect(a == b)
        b[1] = 5
        #expect(a != b)
        b.removeLast()
        #expect(a != b, "a prefix is not equal")
        #expect(ObservableArray<Int>() == ObservableArray<Int>())
    }

    @Test("codes exactly as [Element] does", arguments: ObservationBackend.allCases)
    func coding(backend: ObservationBackend) throws {
        let array = ObservableArray(["x", "y"], backend: backend)
        array.insert("w", at: 0)
        let data = try JSONEncoder().encode(array)
        #expect(String(decoding: data, as: UTF8.self) == #"["w","x","y"]"#)
        let decoded = try JSONDecoder().decode(ObservableArray<String>.self, from: data)
        #expect(decoded == array)
        #expect(try JSONDecoder().decode([String].self, from: data) == ["w", "x", "y"])
    }

    @Test("dump shows the elements, not the lock and storage")
    func mirrorShowsElements() {
        let array: ObservableArray<Int> = [7, 8]
        var text = ""
        dump(array, to: &text)
        #expect(text.contains("- 7") && text.contains("- 8"), "\(text)")
        #expect(!text.contains("_storage") && !text.contains("kvoRegistrar"), "\(text)")
        #expect(Mirror(reflecting: array).displayStyle == .collection)
    }
}
