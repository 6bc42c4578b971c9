import Foundation
import HomeportTestSupport
import Testing

@Suite("The iOS article's Swift blocks are the ones HomeportClientSnippets compiles", .tags(.docs))
struct ClientArticleSnippetTests {
    private static let article = "Sources/HomeportClient/HomeportClient.docc/IntegratingInAnIOSApp.md"

    /// Lines without their indentation: a block wrapped in a function stands there indented.
    private func normalized(_ lines: [String]) -> [String] {
        lines.map { $0.trimmingCharacters(in: .whitespaces) }
    }

    @Test("every block of the article, and of docs/client.md, stands in the target as written; its imports too")
    func blocksAreCompiled() throws {
        let folder = repositoryFile("Tests/HomeportClientSnippets")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".swift") }
        let compiled = try files.map { try String(contentsOfFile: folder + "/" + $0, encoding: .utf8) }
        let compiledLines = compiled.map { normalized($0.components(separatedBy: "\n")) }
        let all = try swiftBlocks(inMarkdown: Self.article) + swiftBlocks(inMarkdown: "docs/client.md")
        #expect(all.count >= 12, "the article's blocks were found")
        for block in all {
            let imports = block.filter { $0.hasPrefix("import ") }
            let code = normalized(block.filter { !$0.hasPrefix("import ") })
            let found = compiledLines.contains { lines in
                lines.indices.contains { start in
                    start + code.count <= lines.count && Array(lines[start..<(start + code.count)]) == code
                }
            }
            #expect(found, "not compiled as written:\n\(block.joined(separator: "\n"))")
            for line in imports {
                #expect(compiled.contains { $0.contains(line) }, "\(line) is not imported where the block stands")
            }
        }
    }
}
