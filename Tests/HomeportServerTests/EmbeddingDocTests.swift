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
}
