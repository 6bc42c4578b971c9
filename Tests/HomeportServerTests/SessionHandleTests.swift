import Foundation
import HomeportTestSupport
import Testing

@testable import HomeportServer

/// A session's handle is derived once and kept, and is the same whether kept or derived again.
@Suite("Session handles: kept per session, the same digest as ever, bounded", .tags(.process))
struct SessionHandleTests {
    /// The handle as `sha256sum` derives it, independently of the server's code.
    static func derived(_ keyHash: String) throws -> String {
        let run = try ServerProcess.runProgram(
            "/bin/sh", ["-c", #"printf 'homeport-session-handle\000%s' "$1" | sha256sum"#, "sh", keyHash])
        return String(run.output.prefix(32))
    }

    @Test("a kept handle is the digest; another session's differs; past the capacity all go, and come back the same")
    func keptAndBounded() throws {
        let first = String(repeating: "a1", count: 32)
        let second = String(repeating: "b2", count: 32)
        let handle = SessionHandles.handle(forKeyHash: first)
        #expect(handle == (try Self.derived(first)))
        #expect(SessionHandles.handle(forKeyHash: first) == handle, "kept")
        #expect(SessionHandles.handle(forKeyHash: second) == (try Self.derived(second)))
        #expect(SessionHandles.handle(forKeyHash: second) != handle)

        // A flood of sessions never keeps more than the capacity, and nothing changes for the first.
        for index in 0..<(SessionHandles.capacity + 10) {
            _ = SessionHandles.handle(forKeyHash: String(format: "%064x", index))
            if index % 10_000 == 0 { #expect(SessionHandles.count <= SessionHandles.capacity) }
        }
        #expect(SessionHandles.count <= SessionHandles.capacity)
        #expect(SessionHandles.handle(forKeyHash: first) == handle)
    }
}
