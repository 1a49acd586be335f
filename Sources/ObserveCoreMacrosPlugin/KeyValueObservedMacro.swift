import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@KeyValueObserved` on a stored `var` of a class (added by `@KeyValueObservable`, or written
/// by hand): the `willSet` and `didSet` that announce the property's changes with its key, the
/// class's `static let` of the property's name. The property stays stored.
///
/// ```swift
/// willSet { kvoRegistrar.willSet(Person.name, of: self, from: self.name) }
/// didSet { kvoRegistrar.didSet(Person.name, of: self, from: oldValue, to: self.name) }
/// ```
public struct KeyValueObservedMacro: AccessorMacro {
    public static func expansion(of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [AccessorDeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: ObserveCoreDiagnostic.observedNotAVar))
            return []
        }
        guard let property = ObservableProperty(variable, in: context) else {
            if variable.bindingSpecifier.tokenKind == .keyword(.let) {
                context.diagnose(Diagnostic(node: variable.bindingSpecifier, message: ObserveCoreDiagnostic.observedLet,
                                            fixIt: FixIt(message: ObserveCoreFixIt.makeVar,
                                                         changes: [.replace(oldNode: Syntax(variable.bindingSpecifier),
                                                                            newNode: Syntax(TokenSyntax.keyword(.var, trailingTrivia: .space)))])))
            }
            return []
        }
        // The class that declares the key: the enclosing type, named as the key was (`Self` would
        // also compile, but names the dynamic type in a non-final class's messages).
        let owner = context.lexicalContext.lazy.compactMap { $0.as(ClassDeclSyntax.self)?.name.text }.first ?? "Self"
        let key = "\(owner).\(property.name)"
        return [
            "willSet { kvoRegistrar.willSet(\(raw: key), of: self, from: self.\(raw: property.name)) }",
            "didSet { kvoRegistrar.didSet(\(raw: key), of: self, from: oldValue, to: self.\(raw: property.name)) }",
        ]
    }
}

/// `@KeyValueIgnored` marks a stored `var` of a `@KeyValueObservable` class that must not be
/// observable (a cache, say): it gets no key and no announcing accessors. It expands to nothing.
public struct KeyValueIgnoredMacro: PeerMacro {
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        []
    }
}

/// `@KeyValueDependent(on: …)`: a marker read by `@KeyValueObservable`, which declares the key.
/// Its own expansion only diagnoses what it cannot apply to.
public struct KeyValueDependentMacro: PeerMacro {
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self), DependentProperty.isComputed(variable) else {
            context.diagnose(Diagnostic(node: node, message: ObserveCoreDiagnostic.dependentNotComputed))
            return []
        }
        if case .argumentList(let arguments)? = node.arguments, !arguments.isEmpty { return [] }
        context.diagnose(Diagnostic(node: node, message: ObserveCoreDiagnostic.dependentWithoutKeyPaths))
        return []
    }
}
