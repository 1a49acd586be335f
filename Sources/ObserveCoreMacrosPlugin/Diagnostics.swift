import SwiftDiagnostics

/// What the macros refuse or warn about, each naming the fix.
enum ObserveCoreDiagnostic: DiagnosticMessage {
    case notAClass
    case genericClass
    case severalBindings
    case ownObservers(String)
    case propertyWrapper(String)
    case observedNotAVar
    case observedLet
    case dependentNotComputed
    case dependentWithoutKeyPaths

    var message: String {
        switch self {
        case .notAClass:
            return "@KeyValueObservable applies to a class: observers are registered on an object's identity, "
                + "which a struct or an enum does not have"
        case .genericClass:
            return "@KeyValueObservable cannot declare keys for a generic class (Swift has no static stored "
                + "properties in generic types); declare its keys and accessors by hand (README, 'Declaring by hand')"
        case .severalBindings:
            return "declare one observable property per 'var' (or mark this declaration @KeyValueIgnored)"
        case .ownObservers(let name):
            return "'\(name)' has its own willSet/didSet, so @KeyValueObservable cannot add the ones that announce "
                + "its changes; announce them by hand (kvoRegistrar.willSet/didSet) or mark it @KeyValueIgnored"
        case .propertyWrapper(let name):
            return "'\(name)' is under a property wrapper, whose storage ObserveCore cannot announce; it is not "
                + "observable (mark it @KeyValueIgnored to say so)"
        case .observedNotAVar:
            return "@KeyValueObserved applies to a stored 'var' of a class"
        case .observedLet:
            return "a 'let' never changes, so there is nothing to observe"
        case .dependentNotComputed:
            return "@KeyValueDependent applies to a computed 'var' (a getter); a stored property is observed "
                + "directly, and @KeyValueObservable already announces its changes"
        case .dependentWithoutKeyPaths:
            return "@KeyValueDependent needs the key paths the property depends on, e.g. "
                + "@KeyValueDependent(on: \\Person.firstName, \\Person.lastName)"
        }
    }

    var diagnosticID: MessageID {
        let id: String
        switch self {
        case .notAClass: id = "notAClass"
        case .genericClass: id = "genericClass"
        case .severalBindings: id = "severalBindings"
        case .ownObservers: id = "ownObservers"
        case .propertyWrapper: id = "propertyWrapper"
        case .observedNotAVar: id = "observedNotAVar"
        case .observedLet: id = "observedLet"
        case .dependentNotComputed: id = "dependentNotComputed"
        case .dependentWithoutKeyPaths: id = "dependentWithoutKeyPaths"
        }
        return MessageID(domain: "ObserveCoreMacros", id: id)
    }

    var severity: DiagnosticSeverity {
        switch self {
        case .propertyWrapper: return .warning
        default: return .error
        }
    }
}

enum ObserveCoreFixIt: FixItMessage {
    case makeVar

    var message: String { "make it a 'var'" }
    var fixItID: MessageID { MessageID(domain: "ObserveCoreMacros", id: "makeVar") }
}
