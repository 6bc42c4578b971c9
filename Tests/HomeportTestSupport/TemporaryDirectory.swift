import Foundation

/// A fresh directory under the system temporary directory, removed by ``remove()``.
public struct TemporaryDirectory: Sendable {
    /// Its path.
    public let path: String

    /// Creates the directory.
    public init() throws {
        path = NSTemporaryDirectory() + "homeport-test-" + UUID().uuidString.lowercased()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A path inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Deletes the directory and everything in it.
    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
