import Foundation
import HomeportClient
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback server that answers every request with a body that never ends: as fast as it can
/// (`endless`) or a byte every 100 ms (`drip`), up to `ceiling` bytes in all, and counts
/// what it managed to write.
final class EndlessListener: @unchecked Sendable {
    enum Pace: Sendable { case endless, drip }

    private let fd: Int32
    let port: Int
    private let written: LockedBox<Int>
    /// Bytes written to clients so far.
    var bytesWritten: Int { written.value }

    init(pace: Pace, ceiling: Int = 512 << 20) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        let written = LockedBox(0)
        self.written = written
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw RawHTTPError("cannot listen") }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: actual.sin_port))
        let listening = fd
        Thread.detachNewThread {
            while true {
                let client = accept(listening, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread {
                    defer { close(client) }
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    _ = read(client, &buffer, buffer.count)
                    guard RawHTTP.send(client, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n") else {
                        return
                    }
                    let chunk = [UInt8](repeating: UInt8(ascii: " "), count: pace == .endless ? 65536 : 1)
                    while written.value < ceiling {
                        guard RawHTTP.send(client, chunk) else { return }
                        written.mutate { $0 += chunk.count }
                        if pace == .drip { usleep(100_000) }
                    }
                }
            }
        }
    }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}

@Suite("Both transports hold the client's limits: bytes, a total deadline, no proxy from the environment")
struct TransportLimitTests {
    enum Kind: String, CaseIterable, Sendable {
        case curl, urlSession
        var transport: any ClientTransport {
            switch self {
            case .curl: CurlTransport()
            case .urlSession: URLSessionTransport()
            }
        }
    }

    @Test(
        "an answer that never ends is cut at the byte limit: an error, never a truncated body", arguments: Kind.allCases
    )
    func endlessAnswer(kind: Kind) async throws {
        let server = try EndlessListener(pace: .endless)
        let transport = kind.transport
        let request = ClientRequest(
            url: URL(string: "http://127.0.0.1:\(server.port)/api/v1/app-info")!, byteLimit: 1 << 20,
            deadline: .seconds(30))
        await #expect {
            _ = try await transport.send(request)
        } throws: { error in
            if case ClientError.tooLarge(_, let limit) = error { return limit == 1 << 20 }
            return false
        }
        if kind == .curl {
            // libcurl stops reading when told; Foundation's URLSession on Linux may read on in the
            // background until its cancel lands (what it reads is dropped).
            usleep(300_000)
            #expect(server.bytesWritten < 256 << 20, "\(kind) kept reading: \(server.bytesWritten) bytes")
        }
    }

    @Test("a drip-fed answer ends at the total deadline, not at an idle timeout", arguments: Kind.allCases)
    func dripFed(kind: Kind) async throws {
        let server = try EndlessListener(pace: .drip)
        let transport = kind.transport
        let request = ClientRequest(
            url: URL(string: "http://127.0.0.1:\(server.port)/api/v1/app-info")!, byteLimit: 1 << 20,
            deadline: .seconds(2))
        // The drip never ends: only the transport's own deadline can end this call (a watchdog
        // fails the test, rather than hanging it, should it not).
        let call = Task { try await transport.send(request) }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            call.cancel()
        }
        defer { watchdog.cancel() }
        await #expect {
            _ = try await call.value
        } throws: { error in
            guard case ClientError.unreachable(_, let reason) = error else { return false }
            return reason.hasPrefix("no answer within")
        }
    }

    @Test("no proxy is taken from the environment", arguments: Kind.allCases)
    func noProxyFromEnvironment(kind: Kind) async throws {
        let proxy = try RecordingListener(behaviour: .respond(status: 200, headers: Peer.json, body: "{}"))
        let target = try RecordingListener(
            host: "127.0.0.2", behaviour: .respond(status: 200, headers: Peer.json, body: "{}"))
        for name in ["http_proxy", "HTTP_PROXY"] { setenv(name, proxy.url, 1) }
        defer { for name in ["http_proxy", "HTTP_PROXY"] { unsetenv(name) } }
        let transport = kind.transport
        let response = try await transport.send(
            // A deadline long enough for a loaded machine: what is checked is where the request went.
            ClientRequest(
                url: URL(string: target.url + "/api/v1/app-info")!, byteLimit: 1 << 20, deadline: .seconds(30))
        )
        #expect(response.status == 200)
        #expect(proxy.requests.isEmpty, "\(kind) went through the proxy named by the environment")
        #expect(!target.requests.isEmpty)
    }
}
