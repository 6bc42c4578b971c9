import Foundation
import HomeportHTTP
import HomeportTestSupport
import Testing

@Suite("Trusted proxies name the client; nobody else can", .tags(.process))
struct TrustedProxiesTests {
    private let proxies: TrustedProxies

    init() throws {
        proxies = try TrustedProxies(parsing: "10.0.0.0/8, 127.0.0.1, fd00::/8")
    }

    private func client(_ peer: String, _ headers: [(String, String)]) -> String {
        proxies.clientAddress(peer: peer, headers: headers.map { (name: $0.0, value: $0.1) })
    }

    @Test("address blocks parse, match by prefix, and refuse garbage")
    func ranges() throws {
        let block = try AddressRange(parsing: "192.168.1.0/24")
        #expect(block.contains("192.168.1.200") && !block.contains("192.168.2.1"))
        #expect(block.description == "192.168.1.0/24")
        #expect(try AddressRange(parsing: "fd12:3456::1/16").description == "fd12::/16")
        #expect(try AddressRange(parsing: "2001:db8::7").description == "2001:db8::7/128")
        #expect(try AddressRange(parsing: "::ffff:10.1.2.3").description == "10.1.2.3/32")
        #expect(try AddressRange(parsing: "192.168.1.77/24") == block, "host bits are ignored")
        #expect(try AddressRange(parsing: "::ffff:10.1.2.3").contains("10.1.2.3"), "a mapped IPv4 address is IPv4")
        #expect(try AddressRange(parsing: "fd00::/8").contains("fd12::1") && !proxies.trusts("fe80::1"))
        #expect(try AddressRange(parsing: "0.0.0.0/0").contains("8.8.8.8"))
        for bad in ["", "10.0.0.0/33", "::/129", "10.0.0/8", "example.com", "10.0.0.0/x", "10.0.0.0/8/8"] {
            #expect(throws: AddressRangeError.self, "\(bad)") { try AddressRange(parsing: bad) }
        }
    }

    @Test("from an untrusted peer every forwarding header is ignored")
    func untrustedPeer() {
        #expect(client("203.0.113.9", [("X-Forwarded-For", "1.2.3.4")]) == "203.0.113.9")
        #expect(client("203.0.113.9", [("Forwarded", "for=1.2.3.4")]) == "203.0.113.9")
        #expect(
            TrustedProxies().clientAddress(peer: "10.0.0.1", headers: [("X-Forwarded-For", "1.2.3.4")]) == "10.0.0.1")
    }

    @Test("from a trusted proxy, the rightmost untrusted hop: what the client prepends does not count")
    func rightmostUntrusted() {
        #expect(client("10.0.0.5", [("X-Forwarded-For", "198.51.100.7")]) == "198.51.100.7")
        // The client sent "6.6.6.6" itself; the proxy appended what it saw.
        #expect(client("10.0.0.5", [("X-Forwarded-For", "6.6.6.6, 198.51.100.7")]) == "198.51.100.7")
        // Two proxies in a row: the inner one's address is skipped.
        #expect(client("10.0.0.5", [("X-Forwarded-For", "6.6.6.6, 198.51.100.7, 10.0.0.9")]) == "198.51.100.7")
        // The field sent twice counts as one list, in order.
        #expect(
            client("10.0.0.5", [("X-Forwarded-For", "6.6.6.6"), ("X-Forwarded-For", "198.51.100.7")]) == "198.51.100.7")
        // Every hop a proxy: the leftmost.
        #expect(client("10.0.0.5", [("X-Forwarded-For", "10.1.1.1, 10.2.2.2")]) == "10.1.1.1")
        // No header: the proxy itself.
        #expect(client("10.0.0.5", []) == "10.0.0.5")
    }

    @Test("one header is read, the one the operator named; the other is ignored, whoever sends it")
    func oneHeader() throws {
        // By default X-Forwarded-For: a client's own Forwarded, which nginx and Caddy pass through, is nobody's word.
        #expect(
            client("10.0.0.5", [("Forwarded", "for=6.6.6.6"), ("X-Forwarded-For", "198.51.100.7")]) == "198.51.100.7")
        #expect(client("10.0.0.5", [("Forwarded", "for=6.6.6.6")]) == "10.0.0.5")
        let rfc = try TrustedProxies(parsing: "10.0.0.0/8", header: .forwarded)
        func viaForwarded(_ headers: [(String, String)]) -> String {
            rfc.clientAddress(peer: "10.0.0.5", headers: headers.map { (name: $0.0, value: $0.1) })
        }
        #expect(
            viaForwarded([("Forwarded", "for=198.51.100.7;proto=https"), ("X-Forwarded-For", "6.6.6.6")])
                == "198.51.100.7")
        #expect(viaForwarded([("X-Forwarded-For", "6.6.6.6")]) == "10.0.0.5")
        // Quotes, brackets and ports are taken off.
        #expect(viaForwarded([("Forwarded", #"for="[2001:db8::1]:4711", for=10.0.0.9"#)]) == "2001:db8::1")
        #expect(viaForwarded([("Forwarded", "for=192.0.2.60:8080;by=10.0.0.5")]) == "192.0.2.60")
        #expect(viaForwarded([("Forwarded", "For=\"192.0.2.61\"")]) == "192.0.2.61")
        #expect(viaForwarded([("Forwarded", "for=unknown")]) == "10.0.0.5")
        #expect(viaForwarded([("Forwarded", "proto=https")]) == "10.0.0.5")
        // The rightmost untrusted hop, as for X-Forwarded-For.
        #expect(viaForwarded([("Forwarded", "for=6.6.6.6, for=198.51.100.7")]) == "198.51.100.7")
    }

    @Test("an IPv4 address mapped into IPv6 is that IPv4 address: as a peer, as a hop, and as a trusted proxy")
    func mappedIPv4() {
        #expect(AddressRange.canonical("::ffff:198.51.100.7") == "198.51.100.7")
        #expect(AddressRange.canonical("::FFFF:c633:6407") == "198.51.100.7")
        #expect(AddressRange.canonical("2001:db8::1") == "2001:db8::1")
        #expect(AddressRange.canonical("198.51.100.7") == "198.51.100.7")
        #expect(AddressRange.canonical("garbage") == "garbage")
        #expect(client("::ffff:10.0.0.5", [("X-Forwarded-For", "::ffff:198.51.100.7")]) == "198.51.100.7")
        #expect(client("::ffff:203.0.113.9", []) == "203.0.113.9")
    }

    @Test("a hop that is not an address leaves the proxy's own: a client never picks its address")
    func garbageHops() {
        for value in ["unknown", "_hidden", "garbage", "", "1.2.3.4.5", "[::1", "2001:db8::1:80x"] {
            #expect(client("10.0.0.5", [("X-Forwarded-For", value)]) == "10.0.0.5", "\(value)")
        }
    }

    @Test("hops are read as proxies write them: spaces or tabs around, a port, brackets, any letter case of the name")
    func hopSpellings() {
        #expect(client("10.0.0.5", [("X-Forwarded-For", "6.6.6.6,\t198.51.100.7 \t")]) == "198.51.100.7")
        #expect(client("10.0.0.5", [("x-FORWARDED-for", "6.6.6.6, 198.51.100.7")]) == "198.51.100.7")
        #expect(client("10.0.0.5", [("X-Forwarded-For", "198.51.100.7:4711")]) == "198.51.100.7")
        #expect(client("10.0.0.5", [("X-Forwarded-For", "[2001:db8::7]:4711, 10.0.0.9")]) == "2001:db8::7")
        #expect(client("10.0.0.5", [("X-Forwarded-For", "6.6.6.6,, 198.51.100.7,")]) == "198.51.100.7")
        #expect(client("10.0.0.5", [("X-Forwarded-For", "\"198.51.100.7\"")]) == "198.51.100.7")
        // Only spaces and tabs surround a list element (RFC 9110's OWS): anything else is no address.
        for value in ["\u{00A0}198.51.100.7", "198.51.100.7\u{3000}", " , ", "198.51.100.7\u{301}"] {
            #expect(
                client("10.0.0.5", [("X-Forwarded-For", value)]) == "10.0.0.5", "\(value.unicodeScalars.map(\.value))")
        }
        // A trusted proxy's block, however the hop spells it, is skipped: the client is to its left.
        #expect(
            client("10.0.0.5", [("X-Forwarded-For", "198.51.100.7, ::ffff:10.0.0.9, [fd00::1]:80")]) == "198.51.100.7")
    }

    @Test("a server behind a trusted proxy logs and limits by the forwarded address")
    func endToEnd() throws {
        var router = TestRouter()
        router.get("/who") { request, _ in try .json(["address": request.remoteAddress]) }
        let log = MemoryLogSink()
        let configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, trustedProxies: try TrustedProxies(parsing: "127.0.0.1"))
        try withServer(router, configuration: configuration, log: log) { server in
            let forwarded = try RawHTTP.request(
                port: server.port, path: "/who", headers: [("X-Forwarded-For", "6.6.6.6, 198.51.100.7")])
            #expect(forwarded.jsonObject?["address"] as? String == "198.51.100.7")
            // 127.0.0.2 is not a trusted proxy: its header is its own word, ignored.
            let spoof = try RawHTTP.connect(port: server.port, source: "127.0.0.2")
            defer { close(spoof) }
            RawHTTP.send(
                spoof, "GET /who HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.7\r\nConnection: close\r\n\r\n")
            #expect(try RawHTTP.readResponse(spoof).jsonObject?["address"] as? String == "127.0.0.2")
        }
        #expect(log.lines.contains { $0.contains("198.51.100.7") }, "the access log names the forwarded client")
    }

    @Test(
        "a peer on the server's Unix socket is a proxy only when the server says so; its header then names the client")
    func localSocketPeer() throws {
        let header = [(name: "X-Forwarded-For", value: "6.6.6.6, 198.51.100.7")]
        // The product API's socket: the peer is the product itself, whatever it says.
        #expect(TrustedProxies().clientAddress(peer: TrustedProxies.unixPeer, headers: header) == "unix")
        #expect(proxies.clientAddress(peer: TrustedProxies.unixPeer, headers: header) == "unix")
        var local = TrustedProxies()
        local.trustsLocalSocket = true
        #expect(local.isActive && !TrustedProxies().isActive)
        #expect(local.clientAddress(peer: "unix", headers: header) == "198.51.100.7")
        // The field sent twice counts as one list; no field, or a hop that is no address: the socket.
        #expect(
            local.clientAddress(
                peer: "unix", headers: [("X-Forwarded-For", "198.51.100.7"), ("x-forwarded-for", "203.0.113.1")])
                == "203.0.113.1")
        #expect(local.clientAddress(peer: "unix", headers: []) == "unix")
        #expect(local.clientAddress(peer: "unix", headers: [("X-Forwarded-For", "198.51.100.7, unknown")]) == "unix")
        // Only the named header: Forwarded is ignored when X-Forwarded-For is the one read.
        #expect(local.clientAddress(peer: "unix", headers: [("Forwarded", "for=198.51.100.7")]) == "unix")
        // Trust in the socket is no trust in a TCP peer.
        #expect(local.clientAddress(peer: "127.0.0.1", headers: header) == "127.0.0.1")
        // With proxy blocks too, hops in them are skipped as from any trusted proxy.
        var chain = proxies
        chain.trustsLocalSocket = true
        #expect(
            chain.clientAddress(peer: "unix", headers: [("X-Forwarded-For", "198.51.100.7, 10.0.0.9")])
                == "198.51.100.7")
    }

    @Test("a server on a Unix socket that trusts it logs and limits by the address its proxy names")
    func unixSocketEndToEnd() throws {
        var router = TestRouter()
        router.get("/who") { request, _ in try .json(["address": request.remoteAddress]) }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for trusted in [true, false] {
            let socket = directory.file("h\(trusted).sock")
            var configuration = HTTPServerConfiguration(port: 0, workerThreads: 2)
            configuration.unixSocketPath = socket
            configuration.trustedProxies.trustsLocalSocket = trusted
            let log = MemoryLogSink()
            try withServer(router, configuration: configuration, log: log) { _ in
                func who(_ headers: [String]) throws -> String? {
                    let run = try ServerProcess.runProgram(
                        "/usr/bin/curl",
                        ["-s", "--unix-socket", socket] + headers.flatMap { ["-H", $0] } + ["http://proxy/who"])
                    let object = try? JSONSerialization.jsonObject(with: Data(run.output.utf8))
                    return (object as? [String: Any])?["address"] as? String
                }
                let named = try who(["X-Forwarded-For: 6.6.6.6, 198.51.100.7"])
                #expect(named == (trusted ? "198.51.100.7" : "unix"), "trusted: \(trusted)")
                #expect(try who([]) == "unix")
                #expect(try who(["X-Forwarded-For: garbage"]) == "unix")
            }
            #expect(
                log.lines.contains { $0.contains("198.51.100.7") } == trusted, "the access log names the named client")
        }
    }
}
