import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A parsed HTTP/1.1 response read off a raw socket.
public struct RawResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields in order.
    public var headers: [(name: String, value: String)]
    /// The body bytes.
    public var body: Data

    /// The first value of a header, case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object, or `nil`.
    public var jsonObject: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    }
}

/// Errors of the raw client.
public struct RawHTTPError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// Creates an error with a message.
    public init(_ description: String) { self.description = description }
}

/// A deliberately small HTTP/1.1 client on POSIX sockets: it sends exactly the bytes a test
/// gives it (garbage included) and keeps no state, cookie or cache between requests.
public enum RawHTTP {
    /// Opens a TCP connection, from the local address `source` when given (`127.0.0.2` makes
    /// another client on loopback); reads time out after `timeout` seconds.
    public static func connect(host: String = "127.0.0.1", port: Int, source: String? = nil, timeout: Double = 10)
        throws -> Int32
    {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &results) == 0, let first = results else {
            throw RawHTTPError("cannot resolve \(host)")
        }
        defer { freeaddrinfo(results) }
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        var lastError: Int32 = 0
        while let info = candidate {
            candidate = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            var interval = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
            if let source, !bind(fd, to: source) {
                close(fd)
                throw RawHTTPError("cannot bind to \(source)")
            }
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
            lastError = errno
            close(fd)
        }
        throw RawHTTPError("cannot connect to \(host):\(port): \(String(cString: strerror(lastError)))")
    }

    private static func bind(_ fd: Int32, to source: String) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        guard inet_pton(AF_INET, source, &address.sin_addr) == 1 else { return false }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Sends all of `bytes`; returns false if the peer closed or the send failed.
    @discardableResult
    public static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Sends `text` as UTF-8.
    @discardableResult
    public static func send(_ fd: Int32, _ text: String) -> Bool { send(fd, Array(text.utf8)) }

    /// Reads one response (up to its Content-Length, or to EOF).
    public static func readResponse(_ fd: Int32) throws -> RawResponse {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let response = parse(buffer) { return response }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0 { throw RawHTTPError("read failed: \(String(cString: strerror(errno)))") }
            if count == 0 {
                if let response = parse(buffer, atEOF: true) { return response }
                throw RawHTTPError("connection closed after \(buffer.count) bytes without a complete response")
            }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }

    /// Reads until the peer closes the connection (or a read times out).
    public static func readToEnd(_ fd: Int32) throws -> [UInt8] {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0 { throw RawHTTPError("read failed: \(String(cString: strerror(errno)))") }
            if count == 0 { return buffer }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }

    /// Whether the server has closed the connection (reads EOF or a reset within `timeout`).
    public static func isClosedByPeer(_ fd: Int32, timeout: Double) -> Bool {
        var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pollfd, 1, Int32(timeout * 1000)) == 1 else { return false }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK)) <= 0
    }

    /// Connects, sends `request`, reads one response, closes.
    public static func exchange(host: String = "127.0.0.1", port: Int, _ request: [UInt8], timeout: Double = 10)
        throws -> RawResponse
    {
        let fd = try connect(host: host, port: port, timeout: timeout)
        defer { close(fd) }
        send(fd, request)
        return try readResponse(fd)
    }

    /// A request with `Connection: close` and the given extra headers and body.
    public static func request(
        host: String = "127.0.0.1", port: Int, method: String = "GET", path: String,
        headers: [(String, String)] = [], body: Data? = nil, timeout: Double = 10
    ) throws -> RawResponse {
        var text =
            "\(method) \(path) HTTP/1.1\r\nHost: \(host.contains(":") ? "[\(host)]" : host):\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if let body { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return try exchange(host: host, port: port, Array(text.utf8) + Array(body ?? Data()), timeout: timeout)
    }

    private static func parse(_ buffer: [UInt8], atEOF: Bool = false) -> RawResponse? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = buffer.firstRange(of: separator) else { return nil }
        let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let bodyBytes = buffer[end.upperBound...]
        if let length = headers.first(where: { $0.name.lowercased() == "content-length" }).flatMap({ Int($0.value) }) {
            guard bodyBytes.count >= length else { return nil }
            return RawResponse(status: status, headers: headers, body: Data(bodyBytes.prefix(length)))
        }
        guard atEOF else { return nil }
        return RawResponse(status: status, headers: headers, body: Data(bodyBytes))
    }
}
