import Dispatch
@_spi(Testing) import ObserveCore
import Testing

@Suite("Array change streams", .serialized)
struct ArrayChangeStreamTests {
    @Test("every mutation arrives in order; a replica applying them equals the array", arguments: ObservationBackend.allCases)
    func replicaFollows(backend: ObservationBackend) async {
        let array = ObservableArray([1, 2, 3], backend: backend)
        var replica = Array(array)
        var iterator = array.changes().makeAsyncIterator()
        array.append(4)
        array.insert(0, at: 0)
        _ = array.remove(at: 2)
        array.move(from: 0, to: 3)
        array.performBatchUpdates { $0.append(9); $0.swapAt(0, 1) }
        array.sort()
        var kinds: [ArrayChange<Int>.Kind] = []
        for _ in 0..<6 {
            guard let change = await iterator.next() else { break }
            kinds.append(change.kind)
            replica = change.applying(to: replica)!
        }
        #expect(kinds == [.append, .insert, .remove, .move, .batch, .move])
        #expect(replica == Array(array))
    }

    @Test("element key paths: element changes arrive with their indices; .initial comes first",
          arguments: ObservationBackend.allCases)
    func elementChangesAndInitial(backend: ObservationBackend) async {
        let ada = Student(backend, "Ada"), grace = Student(backend, "Grace")
        let students = ObservableArray([ada, grace, ada], backend: backend)
        var iterator = students.changes(options: [.initial, .new], elementKeyPaths: [\Student.grade]).makeAsyncIterator()
        ada.grade = 3
        let initial = await iterator.next(), element = await iterator.next()
        #expect(initial?.isInitial == true && initial?.applying(to: [])?.map(\.name) == ["Ada", "Grace", "Ada"])
        #expect(element?.kind == .elementChanged)
        #expect(element?.elements.map(\.newIndex) == [0, 2])
        #expect(element?.elementNewValue as? Int == 3)
    }

    @Test(".latest folds what the consumer missed into one change to the newest contents",
          arguments: ObservationBackend.allCases)
    func latestFolds(backend: ObservationBackend) async {
        let array = ObservableArray<Int>(backend: backend)
        var replica: [Int] = []
        var iterator = array.changes(buffering: .latest).makeAsyncIterator()
        array.append(1)
        let first = await iterator.next()!
        #expect(first.kind == .append, "nothing pending: the change itself")
        replica = first.applying(to: replica)!
        for i in 2...500 { array.append(i) }
        array.removeSubrange(0..<100)
        array.reverse()
        let folded = await iterator.next()!
        #expect(folded.kind == .arrayReplaced && folded.oldCount == 1 && folded.newCount == 400)
        replica = folded.applying(to: replica)!
        #expect(replica == Array(array))
        array.append(0)   // the array moved on after the fold: the folded change kept its own contents
        #expect(folded.applying(to: [])?.count == 400)
    }

    @Test("bounded: lossless while another thread mutates; the consumer ends equal to the array",
          arguments: ObservationBackend.allCases)
    func boundedAcrossThreads(backend: ObservationBackend) async {
        let array = ObservableArray<Int>(backend: backend)
        let stream = array.changes(buffering: .bounded(8))
        let mutations = 5_000
        let producer = DispatchQueue(label: "array-stream.producer")
        producer.async {
            for i in 0..<mutations {
                if i % 3 == 2 { _ = array.removeFirst() } else { array.append(i) }
            }
        }
        var replica: [Int] = []
        var received = 0
        for await change in stream {
            replica = change.applying(to: replica)!
            received += 1
            if received == mutations { break }
        }
        producer.sync {}
        #expect(received == mutations)
        #expect(replica == Array(array))
    }

    @Test("an array property's stream follows reassignment, ends with its owner, and cleans up when dropped",
          arguments: ObservationBackend.allCases)
    func arrayPropertyStream(backend: ObservationBackend) async {
        let first = students(backend, "Ada"), second = students(backend, "Grace", "Linus")
        var teacher: Teacher? = Teacher(backend, students: first)
        let oldArray = teacher!.students
        var iterator = teacher!.arrayChanges(for: \.students, elementKeyPaths: [\Student.grade]).makeAsyncIterator()
        var replica = first.map(\.name)
        teacher!.students.append(second[0])
        teacher!.students = ObservableArray(second, backend: backend)
        oldArray.append(second[1])          // no longer the property's array: not reported
        teacher!.students.remove(at: 0)
        second[1].grade = 9                 // an element of the current array
        var kinds: [ArrayChange<Student>.Kind] = []
        for _ in 0..<4 {
            guard let change = await iterator.next() else { break }
            kinds.append(change.kind)
            if change.kind != .elementChanged { replica = change.applying(to: replica.map { Student(backend, $0) })!.map(\.name) }
        }
        #expect(kinds == [.append, .arrayReplaced, .remove, .elementChanged])
        #expect(replica == ["Linus"])
        teacher = nil
        let end = await iterator.next()
        #expect(end == nil, "the owner died: the stream ended")
        #expect(oldArray.observationCount == 0)

        let kept = Teacher(backend, students: first)
        do {
            var other = kept.arrayChanges(for: \.students).makeAsyncIterator()
            kept.students.append(second[0])
            _ = await other.next()
            #expect(kept.observationCount == 1 && kept.students.observationCount == 1)
        }
        #expect(kept.observationCount == 0 && kept.students.observationCount == 0,
                "dropping the stream cancelled both registrations")
    }

    @Test("the stream ends when the array dies; dropping the stream removes its registration",
          arguments: ObservationBackend.allCases)
    func lifetimes(backend: ObservationBackend) async {
        var array: ObservableArray<Int>? = ObservableArray([1], backend: backend)
        var iterator = array!.changes().makeAsyncIterator()
        array!.append(2)
        array = nil
        let buffered = await iterator.next(), end = await iterator.next()
        #expect(buffered?.kind == .append, "what was buffered is still delivered")
        #expect(end == nil, "then the stream ends")

        let kept = ObservableArray([1], backend: backend)
        do {
            var other = kept.changes().makeAsyncIterator()
            kept.append(2)
            _ = await other.next()
            #expect(kept.observationCount == 1)
        }
        #expect(kept.observationCount == 0, "the stream's registration went with its iterator")
    }
}
