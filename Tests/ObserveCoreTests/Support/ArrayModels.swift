@_spi(Testing) import ObserveCore

final class Student: KeyValueObservable, CustomStringConvertible {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend, _ name: String) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.name = name
    }

    static let name = ObservableKey(\Student.name)
    var name: String {
        willSet { kvoRegistrar.willSet(Student.name, of: self, from: name) }
        didSet { kvoRegistrar.didSet(Student.name, of: self, from: oldValue, to: name) }
    }

    static let grade = ObservableKey(\Student.grade)
    var grade = 0 {
        willSet { kvoRegistrar.willSet(Student.grade, of: self, from: grade) }
        didSet { kvoRegistrar.didSet(Student.grade, of: self, from: oldValue, to: grade) }
    }

    var description: String { name }
}

final class Teacher: KeyValueObservable {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend, students: [Student] = []) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.students = ObservableArray(students, backend: backend)
    }

    static let students = ObservableKey(\Teacher.students)
    var students: ObservableArray<Student> {
        willSet { kvoRegistrar.willSet(Teacher.students, of: self, from: students) }
        didSet { kvoRegistrar.didSet(Teacher.students, of: self, from: oldValue, to: students) }
    }
}
