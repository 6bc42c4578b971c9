import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a long response (server-sent events) off a raw socket as it comes, keeping everything.
public final class StreamReader {
    /// The socket.
    public let fd: Int32
    /// Everything received so far, as text (chunk sizes included: it is the raw wire).
    public private(set) var text = ""
    /// Whether the peer closed the connection.
    public private(set) var closed = false

    /// Reads from `fd`.
    public init(fd: Int32) {
        self.fd = fd
    }

    /// Reads until `needle` is in ``text`` (counting from `from`), the peer closes, or `timeout` passes.
    @discardableResult
    public func wait(for needle: String, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !text.contains(needle) && !closed && Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) >= 0 else { break }
            guard poller.revents != 0 else { continue }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 {
                closed = true
                break
            }
            text += String(decoding: chunk[0..<count], as: UTF8.self)
        }
        return text.contains(needle)
    }

    /// Reads until the peer closes the connection or `timeout` passes; true when it closed.
    public func waitForClose(timeout: Double = 10) -> Bool {
        _ = wait(for: "\u{0}never\u{0}", timeout: timeout)
        return closed
    }

    /// How often `needle` occurs in what was received.
    public func count(of needle: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }
}
