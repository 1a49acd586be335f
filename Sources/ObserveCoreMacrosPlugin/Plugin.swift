// The compiler plug-in that expands ObserveCore's macros (declared in the ObserveCoreMacros
// library). Only code that imports ObserveCoreMacros builds it, and with it swift-syntax.

import SwiftCompilerPlugin
import SwiftSyntaxMacros

@main
struct ObserveCoreMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        KeyValueObservableMacro.self,
        KeyValueObservedMacro.self,
        KeyValueIgnoredMacro.self,
        KeyValueDependentMacro.self,
    ]
}
