import ObserveCoreMacrosPlugin
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
import XCTest

/// What the macros write, and what they refuse, checked as source text.
final class MacroExpansionTests: XCTestCase {
    /// With the conformances the library's declaration names, so that the extension role expands.
    private let macros: [String: MacroSpec] = [
        "KeyValueObservable": MacroSpec(type: KeyValueObservableMacro.self,
                                        conformances: ["KeyValueObservable", "ObservableKeyListing"]),
        "KeyValueObserved": MacroSpec(type: KeyValueObservedMacro.self),
        "KeyValueIgnored": MacroSpec(type: KeyValueIgnoredMacro.self),
        "KeyValueDependent": MacroSpec(type: KeyValueDependentMacro.self),
    ]

    func testAClassGetsARegistrarKeysAccessorsAndConformances() {
        assertMacroExpansion(
            """
            @KeyValueObservable
            final class Person {
                var name = ""
                private(set) var age: Int = 0
                @KeyValueIgnored var cache = 0
                let id = 1
                var greeting: String { name }
            }
            """,
            expandedSource: """
            final class Person {
                var name = "" {
                    willSet {
                        kvoRegistrar.willSet(Person.name, of: self, from: self.name)
                    }
                    didSet {
                        kvoRegistrar.didSet(Person.name, of: self, from: oldValue, to: self.name)
                    }
                }
                private(set) var age: Int = 0 {
                    willSet {
                        kvoRegistrar.willSet(Person.age, of: self, from: self.age)
                    }
                    didSet {
                        kvoRegistrar.didSet(Person.age, of: self, from: oldValue, to: self.age)
                    }
                }
                var cache = 0
                let id = 1
                var greeting: String { name }

                let kvoRegistrar = KeyValueRegistrar()

                static let name = ObservableKey(\\Person.name, name: "name")

                static let age = ObservableKey(\\Person.age, name: "age")

                static let observableKeys: [any ObservableKeyProtocol] = [Person.name, Person.age]

                static let observableKeysAreComplete = true
            }

            extension Person: KeyValueObservable, ObservableKeyListing {
            }
            """,
            macroSpecs: macros)
    }

    func testAPublicClassGetsPublicMembersAndKeepsItsOwnRegistrarAndKeys() {
        assertMacroExpansion(
            """
            @KeyValueObservable
            public final class Order {
                public let kvoRegistrar = KeyValueRegistrar(backend: .swift)
                public var total = 0
                var summary: String { "\\(total)" }
                static let summary = ObservableKey(\\Order.summary, dependsOn: \\.total)
            }
            """,
            expandedSource: """
            public final class Order {
                public let kvoRegistrar = KeyValueRegistrar(backend: .swift)
                public var total = 0 {
                    willSet {
                        kvoRegistrar.willSet(Order.total, of: self, from: self.total)
                    }
                    didSet {
                        kvoRegistrar.didSet(Order.total, of: self, from: oldValue, to: self.total)
                    }
                }
                var summary: String { "\\(total)" }
                static let summary = ObservableKey(\\Order.summary, dependsOn: \\.total)

                public static let total = ObservableKey(\\Order.total, name: "total")

                public static let observableKeys: [any ObservableKeyProtocol] = [Order.total, Order.summary]

                public static let observableKeysAreComplete = true
            }

            extension Order: KeyValueObservable, ObservableKeyListing {
            }
            """,
            macroSpecs: macros)
    }

    func testAStructIsRefused() {
        assertMacroExpansion(
            """
            @KeyValueObservable
            struct Point {
                var x = 0
            }
            """,
            expandedSource: """
            struct Point {
                var x = 0
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "@KeyValueObservable applies to a class: observers are registered on an "
                               + "object's identity, which a struct or an enum does not have", line: 1, column: 1),
            ],
            macroSpecs: macros)
    }

    func testAGenericClassIsRefused() {
        assertMacroExpansion(
            """
            @KeyValueObservable
            final class Box<T> {
                var value: T? = nil
            }
            """,
            expandedSource: """
            final class Box<T> {
                var value: T? = nil
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "@KeyValueObservable cannot declare keys for a generic class (Swift has no "
                               + "static stored properties in generic types); declare its keys and accessors by hand "
                               + "(README, 'Declaring by hand')", line: 2, column: 16),
            ],
            macroSpecs: macros)
    }

    func testOwnObserversAndPropertyWrappersAreDiagnosed() {
        assertMacroExpansion(
            """
            @KeyValueObservable
            final class Model {
                var count = 0 {
                    didSet { print(count) }
                }
                @Clamped var level = 0
            }
            """,
            expandedSource: """
            final class Model {
                var count = 0 {
                    didSet { print(count) }
                }
                @Clamped var level = 0

                let kvoRegistrar = KeyValueRegistrar()

                static let observableKeys: [any ObservableKeyProtocol] = []

                static let observableKeysAreComplete = true
            }

            extension Model: KeyValueObservable, ObservableKeyListing {
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "'count' has its own willSet/didSet, so @KeyValueObservable cannot add the ones "
                               + "that announce its changes; announce them by hand (kvoRegistrar.willSet/didSet) or "
                               + "mark it @KeyValueIgnored", line: 3, column: 19),
                DiagnosticSpec(message: "'level' is under a property wrapper, whose storage ObserveCore cannot announce; "
                               + "it is not observable (mark it @KeyValueIgnored to say so)", line: 6, column: 5,
                               severity: .warning),
            ],
            macroSpecs: macros)
    }

    func testObservedOnALetOffersVar() {
        assertMacroExpansion(
            """
            final class Fixed {
                @KeyValueObserved let value = 0
            }
            """,
            expandedSource: """
            final class Fixed {
                let value = 0
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "a 'let' never changes, so there is nothing to observe", line: 2, column: 23,
                               fixIts: [FixItSpec(message: "make it a 'var'")]),
            ],
            macroSpecs: macros)
    }

    func testAComputedPropertyMarkedDependentGetsADependentKey() {
        assertMacroExpansion(
            """
            @KeyValueObservable
            final class Person {
                var first = ""
                @KeyValueDependent(on: \\Person.first, \\Person.address?.city)
                var label: String { first }
            }
            """,
            expandedSource: """
            final class Person {
                var first = "" {
                    willSet {
                        kvoRegistrar.willSet(Person.first, of: self, from: self.first)
                    }
                    didSet {
                        kvoRegistrar.didSet(Person.first, of: self, from: oldValue, to: self.first)
                    }
                }
                var label: String { first }

                let kvoRegistrar = KeyValueRegistrar()

                static let first = ObservableKey(\\Person.first, name: "first")

                static let label = ObservableKey(\\Person.label, name: "label", dependsOn: [\\Person.first, \\Person.address?.city], read: {
                        $0.label
                    })

                static let observableKeys: [any ObservableKeyProtocol] = [Person.first, Person.label]

                static let observableKeysAreComplete = true
            }

            extension Person: KeyValueObservable, ObservableKeyListing {
            }
            """,
            macroSpecs: macros)
    }

    func testDependentOnAStoredPropertyOrWithoutKeyPathsIsRefused() {
        assertMacroExpansion(
            """
            final class Person {
                @KeyValueDependent(on: \\Person.first) var stored = 0
                @KeyValueDependent() var label: String { "" }
            }
            """,
            expandedSource: """
            final class Person {
                var stored = 0
                var label: String { "" }
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "@KeyValueDependent applies to a computed 'var' (a getter); a stored property is "
                               + "observed directly, and @KeyValueObservable already announces its changes",
                               line: 2, column: 5),
                DiagnosticSpec(message: "@KeyValueDependent needs the key paths the property depends on, e.g. "
                               + "@KeyValueDependent(on: \\Person.firstName, \\Person.lastName)",
                               line: 3, column: 5),
            ],
            macroSpecs: macros)
    }
}
