import Foundation
import ObserveCoreMacrosPlugin
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
import XCTest

/// observe-bench's `set.1-macro` row measures a class that carries `@KeyValueObservable`'s
/// expansion as source (the bench does not depend on swift-syntax). This test expands the
/// declaration quoted in that file with the macro and checks the file holds exactly the result,
/// so the row cannot drift from what the macro writes.
final class BenchSubjectExpansionTests: XCTestCase {
    func testTheBenchsMacroSubjectIsTheMacrosExpansion() throws {
        let path = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/observe-bench/Peers/MacroExpandedSubject.swift")
        let text = try String(contentsOf: path, encoding: .utf8)
        let lines = text.components(separatedBy: "\n")

        // The quoted declaration: the comment lines indented by "//     ", in order.
        let declaration = lines.filter { $0.hasPrefix("//     ") }.map { String($0.dropFirst(7)) }
        XCTAssertTrue(declaration.first == "@KeyValueObservable", "the file quotes no declaration")

        guard let begin = lines.firstIndex(of: "// BEGIN EXPANSION"),
              let end = lines.firstIndex(of: "// END EXPANSION"), begin < end else {
            return XCTFail("MacroExpandedSubject.swift has no BEGIN/END EXPANSION markers")
        }
        let expansion = lines[(begin + 1)..<end].joined(separator: "\n")

        assertMacroExpansion(
            declaration.joined(separator: "\n"),
            expandedSource: expansion,
            macroSpecs: [
                "KeyValueObservable": MacroSpec(type: KeyValueObservableMacro.self,
                                                conformances: ["KeyValueObservable", "ObservableKeyListing"]),
                "KeyValueObserved": MacroSpec(type: KeyValueObservedMacro.self),
            ])
    }
}
