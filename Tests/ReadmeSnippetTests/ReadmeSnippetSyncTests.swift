import Foundation
import Testing

/// README.md's Swift blocks against their compiled copies in ReadmeSnippets.swift.
@Suite("README snippets compile as written")
struct ReadmeSnippetSyncTests {
    /// The lines that are compared: no `import` lines, no blank lines, no trailing blanks, each
    /// region without the indentation its context adds.
    static func comparable(_ lines: some Sequence<Substring>) -> [String] {
        let kept = lines.map { String($0.reversed().drop { $0 == " " }.reversed()) }.filter { !$0.isEmpty }
        let indent = kept.map { $0.prefix { $0 == " " }.count }.min() ?? 0
        return kept.map { String($0.dropFirst(indent)) }.filter { !$0.hasPrefix("import ") }
    }

    /// The ```swift blocks of `markdown`, in order.
    static func blocks(of markdown: String) -> [[String]] {
        var blocks: [[String]] = [], current: [Substring]? = nil
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(comparable(current!))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// Snippet N of `source`: its marked regions in order, each dedented, joined.
    static func regions(of source: String) -> [Int: [String]] {
        var snippets: [Int: [String]] = [:], open: (number: Int, lines: [Substring])? = nil
        for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("// README snippet "), let n = Int(text.dropFirst("// README snippet ".count)) {
                open = (n, [])
            } else if text.hasPrefix("// end README snippet "), let (n, lines) = open {
                #expect(text == "// end README snippet \(n)", "region \(n) ends with '\(text)'")
                snippets[n, default: []] += comparable(lines)
                open = nil
            } else {
                open?.lines.append(line)
            }
        }
        #expect(open == nil, "region \(open?.number ?? 0) is never closed")
        return snippets
    }

    @Test("every ```swift block of the README is, line for line, a compiled region of ReadmeSnippets.swift")
    func readmeMatchesCompiledSnippets() throws {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let root = here.deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: here.appendingPathComponent("ReadmeSnippets.swift"), encoding: .utf8)
        let blocks = Self.blocks(of: readme), compiled = Self.regions(of: source)
        #expect(blocks.count >= 10, "the README's Swift blocks were not found")
        #expect(Set(compiled.keys) == Set(1...blocks.count),
                "ReadmeSnippets.swift has regions \(compiled.keys.sorted()); the README has \(blocks.count) blocks")
        for (index, block) in blocks.enumerated() {
            let number = index + 1
            guard let copy = compiled[number] else { continue }
            if copy != block {
                let line = Array(zip(copy, block)).firstIndex { $0 != $1 } ?? min(copy.count, block.count)
                Issue.record("""
                    README block \(number) differs from its compiled copy at line \(line + 1):
                      README:   \(line < block.count ? block[line] : "(ends)")
                      compiled: \(line < copy.count ? copy[line] : "(ends)")
                    """)
            }
        }
    }

    @Test("the comparison sees a change: a README block edited by one character no longer matches")
    func comparisonIsStrict() {
        let source = """
            enum S {
                // README snippet 1
                let a = 1

                // end README snippet 1
            }
            """
        #expect(Self.regions(of: source)[1] == Self.blocks(of: "```swift\nimport X\nlet a = 1\n```")[0])
        #expect(Self.regions(of: source)[1] != Self.blocks(of: "```swift\nlet a = 2\n```")[0])
    }
}
