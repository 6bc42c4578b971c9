import Foundation
import HomeportTestSupport
import Testing

@Suite("docs/embedding.md shows the sample product's code as it is", .tags(.docs))
struct EmbeddingDocTests {
    /// Every Swift file of Examples/BookOrbit (its manifest, sources and tests), joined.
    private func sampleText() throws -> String {
        let root = repositoryFile("Examples/BookOrbit")
        let files =
            FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasPrefix(".build") }.sorted() ?? []
        return try files.map { try String(contentsOfFile: root + "/" + $0, encoding: .utf8) }.joined(separator: "\n")
    }

    @Test("every Swift block is in the sample, which scripts/test builds (so the block compiles)")
    func blocksAreTheSample() throws {
        let blocks = try swiftBlocks(inMarkdown: "docs/embedding.md").map { $0.joined(separator: "\n") }
        #expect(blocks.count >= 6)
        let sample = try sampleText()
        #expect(sample.contains("ServerCommandLine.main(product: .bookOrbit)"))
        for block in blocks {
            #expect(sample.contains(block), "not in Examples/BookOrbit:\n\(block)")
        }
    }

    @Test("the number of names the page says `import HomeportServer` gives is the reviewed surface's")
    func surfaceCount() throws {
        let page = try String(contentsOfFile: repositoryFile("docs/embedding.md"), encoding: .utf8)
            .replacingOccurrences(of: "\n", with: " ")
        let said = try #require(
            page.firstMatch(of: /gives a product (\d+) names/).flatMap { Int($0.1) }, "the page states the number")
        let snapshot = try String(contentsOfFile: repositoryFile("api/HomeportServer.txt"), encoding: .utf8)
        let names = Set(
            snapshot.split(separator: "\n").compactMap { $0.split(separator: " ").first }.filter { !$0.contains(".") })
        #expect(said == names.count, "top-level names in api/HomeportServer.txt: \(names.sorted())")
    }
}
