import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A one-shot listener on 127.0.0.1 for a browser sign-in's way back (RFC 8252 §7.3): the
/// browser is sent to `http://127.0.0.1:PORT/callback?code=…&state=…`, as `gh auth login --web`
/// does. Other requests (a favicon) are answered 404 and the wait goes on.
final class LoopbackCallback {
    private let socket: Int32
    /// The port the system gave.
    let port: Int
    /// The address to hand the server as the way back.
    var redirect: String { "http://127.0.0.1:\(port)/callback" }

    init() throws {
        #if canImport(Glibc)
            let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw CallbackError("cannot open a socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 4) == 0 else {
            close(descriptor)
            throw CallbackError("cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        socket = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socket) }

    struct CallbackError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Waits up to `seconds` for the browser to come to the callback path; returns the full
    /// URL it came to, after answering it with a page saying where to look now.
    func wait(seconds: Int) throws -> String {
        let deadline = Date().addingTimeInterval(TimeInterval(seconds))
        while Date() < deadline {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let left = Int32(max(0, min(1000, deadline.timeIntervalSinceNow * 1000)))
            guard poll(&poller, 1, left) > 0 else { continue }
            let client = accept(socket, nil, nil)
            guard client >= 0 else { continue }
            defer { close(client) }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var request: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while request.count < 16 * 1024, !request.contains(UInt8(ascii: "\n")) {
                let count = read(client, &buffer, buffer.count)
                guard count > 0 else { break }
                request += buffer[0..<count]
            }
            let line = String(
                decoding: request.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[0] == "GET", parts[1].hasPrefix("/callback?") else {
                answer(client, status: "404 Not Found", text: "Not here.")
                continue
            }
            answer(
                client, status: "200 OK",
                text: "The sign-in came back to the homeport command. You can close this window.")
            return "http://127.0.0.1:\(port)" + parts[1]
        }
        throw CallbackError("the browser did not come back within \(seconds / 60) minutes")
    }

    private func answer(_ client: Int32, status: String, text: String) {
        let body = "<!doctype html><meta charset=utf-8><title>homeport</title><p>\(text)</p>"
        let response =
            "HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Cache-Control: no-store\r\nConnection: close\r\n\r\n" + body
        _ = Array(response.utf8).withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
    }
}
