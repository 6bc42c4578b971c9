import Foundation
import Testing

@Suite("docs/embedding.md shows the sample product's code as it is", .tags(.docs))
struct EmbeddingDocTests {
    /// The ```swift blocks of the guide.
    private func swiftBlocks() throws -> [String] {
        let text = try String(contentsOfFile: repositoryFile("docs/embedding.md"), encoding: .utf8)
        var blocks: [String] = []
        var current: [String]?
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("```") {
                if let open = current {
                    blocks.append(open.joined(separator: "\n"))
                    current = nil
                } else if line == "```swift" {
                    current = []
                }
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

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
        let blocks = try swiftBlocks()
        #expect(blocks.count >= 6)
        let sample = try sampleText()
        #expect(sample.contains("ServerCommandLine.main(product: .bookOrbit)"))
        for block in blocks {
            #expect(sample.contains(block), "not in Examples/BookOrbit:\n\(block)")
        }
    }
}
