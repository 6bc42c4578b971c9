import Foundation

/// A file of this repository, by its path from the root.
public func repositoryFile(_ path: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(path).path
}

/// One fenced block of a Markdown file: the words of its info string (```` ```sh deploy ````:
/// language `sh`, label `deploy`) and its lines.
public struct FencedBlock: Sendable {
    /// The first word after the fence (`swift`, `sh`), or empty.
    public var language: String
    /// The second word, or empty.
    public var label: String
    /// The lines between the fences.
    public var lines: [String]

    /// The lines as text, each ended by a newline.
    public var text: String { lines.joined(separator: "\n") + "\n" }
}

/// The fenced blocks of the repository's Markdown file at `path`, in order.
public func fencedBlocks(inMarkdown path: String) throws -> [FencedBlock] {
    let text = try String(contentsOfFile: repositoryFile(path), encoding: .utf8)
    var blocks: [FencedBlock] = []
    var current: FencedBlock?
    for line in text.components(separatedBy: "\n") {
        if line.hasPrefix("```") {
            if let open = current {
                blocks.append(open)
                current = nil
            } else {
                let words = line.dropFirst(3).split(separator: " ").map(String.init)
                current = FencedBlock(language: words.first ?? "", label: words.dropFirst().first ?? "", lines: [])
            }
        } else {
            current?.lines.append(line)
        }
    }
    return blocks
}

/// The ```` ```swift ```` blocks (no label) of the repository's Markdown file at `path`, each as
/// its lines.
public func swiftBlocks(inMarkdown path: String) throws -> [[String]] {
    try fencedBlocks(inMarkdown: path).filter { $0.language == "swift" && $0.label.isEmpty }.map(\.lines)
}
