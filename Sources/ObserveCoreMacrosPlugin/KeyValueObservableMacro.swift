import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@KeyValueObservable` on a class: the registrar, one `ObservableKey` per stored `var`, the
/// key listing that chains and dependent keys read, `@KeyValueObserved` on each of those
/// properties (which adds the `willSet`/`didSet` that announce changes), and the conformances.
///
/// What it generates for `final class Person { var name = "" }`:
///
/// ```swift
/// let kvoRegistrar = KeyValueRegistrar()
/// static let name = ObservableKey(\Person.name, name: "name")
/// static let observableKeys: [any ObservableKeyProtocol] = [Person.name]
/// @KeyValueObserved var name = ""       // willSet/didSet announcing Person.name
/// extension Person: KeyValueObservable, ObservableKeyListing {}
/// ```
public struct KeyValueObservableMacro: MemberMacro, MemberAttributeMacro, ExtensionMacro {
    // MARK: Members

    public static func expansion(of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
                                 conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext)
    throws -> [DeclSyntax] {
        guard let type = ObservableClass(declaration, attribute: node, in: context) else { return [] }
        var members: [DeclSyntax] = []
        let access = type.accessPrefix
        if !type.declaresMember("kvoRegistrar") {
            members.append("\(raw: access)let kvoRegistrar = KeyValueRegistrar()")
        }
        var listed: [String] = []
        for property in type.observableProperties(in: context) {
            listed.append(property.name)
            if type.declaresStaticMember(property.name) { continue }   // the user declared this key by hand
            members.append("""
                \(raw: property.accessPrefix)static let \(raw: property.name) = \
                ObservableKey(\\\(raw: type.name).\(raw: property.name), name: "\(raw: property.name)")
                """)
        }
        // Computed properties marked @KeyValueDependent get a dependent key.
        for property in type.dependentProperties {
            listed.append(property.name)
            if type.declaresStaticMember(property.name) { continue }
            members.append("""
                \(raw: property.accessPrefix)static let \(raw: property.name) = \
                ObservableKey(\\\(raw: type.name).\(raw: property.name), name: "\(raw: property.name)", \
                dependsOn: [\(raw: property.dependencies.joined(separator: ", "))], read: { $0.\(raw: property.name) })
                """)
        }
        // Keys the class declares by hand (dependent keys of computed properties, say) are listed too.
        for name in type.handDeclaredKeys where !listed.contains(name) { listed.append(name) }
        if !type.declaresStaticMember("observableKeys") {
            let keys = listed.map { "\(type.name).\($0)" }.joined(separator: ", ")
            members.append("\(raw: access)static let observableKeys: [any ObservableKeyProtocol] = [\(raw: keys)]")
            // Complete for this class only: a subclass inherits the listing but may declare keys
            // of its own by hand, which the listing does not name.
            if type.isFinal {
                members.append("\(raw: access)static let observableKeysAreComplete = true")
            } else {
                members.append("\(raw: access)static var observableKeysAreComplete: Bool { self == \(raw: type.name).self }")
            }
        }
        return members
    }

    // MARK: Attributes on the stored properties

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingAttributesFor member: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [AttributeSyntax] {
        // Diagnostics are reported once, by the member expansion; this one stays silent.
        guard ObservableClass(declaration, attribute: node, in: nil) != nil,
              let variable = member.as(VariableDeclSyntax.self),
              ObservableProperty(variable, in: nil) != nil
        else { return [] }
        return ["@KeyValueObserved"]
    }

    // MARK: Conformances

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
                                 in context: some MacroExpansionContext) throws -> [ExtensionDeclSyntax] {
        // Nothing for what the member role refused (it said why): a conformance without the
        // registrar would only add errors.
        guard let declaration = declaration.as(ClassDeclSyntax.self), declaration.genericParameterClause == nil,
              !protocols.isEmpty else { return [] }
        let list = protocols.map(\.trimmedDescription).joined(separator: ", ")
        return [try ExtensionDeclSyntax("extension \(type.trimmed): \(raw: list) {}")]
    }
}

/// The class a `@KeyValueObservable` is attached to, or nil (with a diagnostic when `context`
/// is given) for what the macro cannot support.
struct ObservableClass {
    let declaration: ClassDeclSyntax
    var name: String { declaration.name.text }

    init?(_ group: some DeclGroupSyntax, attribute: AttributeSyntax, in context: (any MacroExpansionContext)?) {
        guard let declaration = group.as(ClassDeclSyntax.self) else {
            context?.diagnose(Diagnostic(node: attribute, message: ObserveCoreDiagnostic.notAClass))
            return nil
        }
        if let generics = declaration.genericParameterClause {
            context?.diagnose(Diagnostic(node: generics, message: ObserveCoreDiagnostic.genericClass))
            return nil
        }
        self.declaration = declaration
    }

    /// Whether the class is `final` (no subclass can add keys the listing does not name).
    var isFinal: Bool { declaration.modifiers.contains { $0.name.text == "final" } }

    /// `public ` for a public or open class (its registrar and key listing must be as visible as
    /// the conformance), else nothing.
    var accessPrefix: String {
        declaration.modifiers.contains { ["public", "open"].contains($0.name.text) } ? "public " : ""
    }

    private var variables: [VariableDeclSyntax] {
        declaration.memberBlock.members.compactMap { $0.decl.as(VariableDeclSyntax.self) }
    }

    private func isStatic(_ variable: VariableDeclSyntax) -> Bool {
        variable.modifiers.contains { ["static", "class"].contains($0.name.text) }
    }

    private func names(_ variable: VariableDeclSyntax) -> [String] {
        variable.bindings.compactMap { $0.pattern.as(IdentifierPatternSyntax.self)?.identifier.text }
    }

    func declaresMember(_ name: String) -> Bool {
        variables.contains { !isStatic($0) && names($0).contains(name) }
    }

    func declaresStaticMember(_ name: String) -> Bool {
        variables.contains { isStatic($0) && names($0).contains(name) }
    }

    /// Static members initialised with `ObservableKey(…)`: keys the class declares by hand.
    var handDeclaredKeys: [String] {
        variables.filter(isStatic).flatMap { variable in
            variable.bindings.compactMap { binding -> String? in
                guard let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.text,
                      let call = binding.initializer?.value.as(FunctionCallExprSyntax.self),
                      call.calledExpression.trimmedDescription == "ObservableKey" else { return nil }
                return name
            }
        }
    }

    /// The computed instance `var`s marked `@KeyValueDependent(on: …)` with at least one key
    /// path (the attribute's own expansion diagnoses the rest), in declaration order.
    var dependentProperties: [DependentProperty] {
        variables.filter { !isStatic($0) }.compactMap { DependentProperty($0) }
    }

    /// The stored instance `var`s that get a key and the announcing accessors, in declaration
    /// order; what is skipped is diagnosed through `context`.
    func observableProperties(in context: some MacroExpansionContext) -> [ObservableProperty] {
        variables.filter { !isStatic($0) }.compactMap { ObservableProperty($0, in: context) }
    }
}

/// One stored instance `var` that `@KeyValueObservable` makes observable.
struct ObservableProperty {
    let name: String
    /// The property's own access modifier (its key is exactly as visible), or nothing.
    let accessPrefix: String

    /// Nil for what is not made observable: a `let`, a computed property, a `lazy` one, one
    /// marked `@KeyValueIgnored`, one under a property wrapper, one with its own observers.
    /// The last three are diagnosed (when `context` is given); a `let` or a computed property
    /// is simply not a stored variable to observe.
    init?(_ variable: VariableDeclSyntax, in context: (any MacroExpansionContext)?) {
        guard variable.bindingSpecifier.tokenKind == .keyword(.var) else { return nil }
        if variable.modifiers.contains(where: { ["static", "class", "lazy"].contains($0.name.text) }) { return nil }
        let attributes = variable.attributes.compactMap { $0.as(AttributeSyntax.self) }
        let attributeNames = attributes.map { $0.attributeName.trimmedDescription }
        // Ignored, or a dependent (computed) property: `@KeyValueDependent` diagnoses a stored one.
        if attributeNames.contains("KeyValueIgnored") || attributeNames.contains("KeyValueDependent") { return nil }
        guard variable.bindings.count == 1, let binding = variable.bindings.first,
              let identifier = binding.pattern.as(IdentifierPatternSyntax.self) else {
            context?.diagnose(Diagnostic(node: variable, message: ObserveCoreDiagnostic.severalBindings))
            return nil
        }
        if let accessors = binding.accessorBlock {
            switch accessors.accessors {
            case .getter:
                return nil   // computed
            case .accessors(let list):
                let kinds = list.map(\.accessorSpecifier.tokenKind)
                if kinds.contains(where: { $0 != .keyword(.willSet) && $0 != .keyword(.didSet) }) { return nil }
                context?.diagnose(Diagnostic(node: accessors, message: ObserveCoreDiagnostic.ownObservers(identifier.identifier.text)))
                return nil
            }
        }
        // An uppercase attribute other than a global actor is a property wrapper (or a macro):
        // its storage is not this property's, so observers here would announce the wrapper's.
        if let wrapper = attributes.first(where: { attribute in
            let name = attribute.attributeName.trimmedDescription
            return name.first?.isUppercase == true && !["KeyValueObserved", "MainActor"].contains(name)
        }) {
            context?.diagnose(Diagnostic(node: wrapper, message: ObserveCoreDiagnostic.propertyWrapper(identifier.identifier.text)))
            return nil
        }
        name = identifier.identifier.text
        let access = variable.modifiers.first {
            ["public", "open", "package", "internal", "fileprivate", "private"].contains($0.name.text) && $0.detail == nil
        }
        accessPrefix = access.map { ($0.name.text == "open" ? "public" : $0.name.text) + " " } ?? ""
    }
}

/// A computed instance `var` marked `@KeyValueDependent(on: …)`: its key is a dependent key.
struct DependentProperty {
    let name: String
    let accessPrefix: String
    /// The attribute's key path arguments, as written.
    let dependencies: [String]

    init?(_ variable: VariableDeclSyntax) {
        guard let attribute = variable.attributes.compactMap({ $0.as(AttributeSyntax.self) })
            .first(where: { $0.attributeName.trimmedDescription == "KeyValueDependent" }),
              Self.isComputed(variable),
              let identifier = variable.bindings.first?.pattern.as(IdentifierPatternSyntax.self),
              case .argumentList(let arguments)? = attribute.arguments, !arguments.isEmpty
        else { return nil }
        name = identifier.identifier.text
        dependencies = arguments.map { $0.expression.trimmedDescription }
        let access = variable.modifiers.first {
            ["public", "open", "package", "internal", "fileprivate", "private"].contains($0.name.text) && $0.detail == nil
        }
        accessPrefix = access.map { ($0.name.text == "open" ? "public" : $0.name.text) + " " } ?? ""
    }

    /// Whether `variable` is one computed instance `var` (a getter, or `get` without `set`).
    static func isComputed(_ variable: VariableDeclSyntax) -> Bool {
        guard variable.bindingSpecifier.tokenKind == .keyword(.var), variable.bindings.count == 1,
              let accessors = variable.bindings.first?.accessorBlock else { return false }
        switch accessors.accessors {
        case .getter: return true
        case .accessors(let list): return list.contains { $0.accessorSpecifier.tokenKind == .keyword(.get) }
        }
    }
}
