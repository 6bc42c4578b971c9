import CCurl
import Foundation
import HomeportCurl
import HomeportTestSupport
import Testing

@testable import HomeportServer

#if canImport(Glibc)
    import Glibc
#endif

/// An IPv4 or IPv6 address as a socket address, for the connect-time check.
private func isPrivate(_ text: String) -> Bool {
    if text.contains(":") {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        #expect(inet_pton(AF_INET6, text, &address.sin6_addr) == 1, "\(text)")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { homeport_private_address($0) != 0 }
        }
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    #expect(inet_pton(AF_INET, text, &address.sin_addr) == 1, "\(text)")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { homeport_private_address($0) != 0 }
    }
}

@Suite("Posting to a stranger's URL: public addresses only, checked as the socket opens", .tags(.process, .interop))
struct PublicOnlyTests {
    @Test(
        "this machine, private, shared, link-local, benchmarking, multicast and reserved networks are refused, in every IPv6 form that carries them",
        arguments: [
            "0.0.0.0", "10.1.2.3", "100.64.0.1", "127.0.0.1", "127.0.1.1", "169.254.169.254", "172.16.0.1",
            "172.31.255.255", "192.168.1.1", "192.0.0.8", "198.18.0.1", "198.19.255.1", "224.0.0.1",
            "255.255.255.255", "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1",
            "2002:c0a8:101::1", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "::127.0.0.1", "64:ff9b:1::a00:1",
            "fec0::1",
        ])
    func refused(address: String) {
        #expect(isPrivate(address))
    }

    @Test(
        "public addresses are taken",
        arguments: [
            "1.1.1.1", "8.8.8.8", "100.128.0.1", "172.32.0.1", "192.169.0.1", "198.20.0.1", "223.255.255.254",
            "2001:4860:4860::8888", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
        ])
    func taken(address: String) {
        #expect(!isPrivate(address))
    }

    @Test(
        "with private endpoints allowed, link-local ones are still refused: a cloud's instance metadata, in every form",
        arguments: [
            ("169.254.169.254", true), ("169.254.0.1", true), ("::ffff:169.254.169.254", true),
            ("64:ff9b::a9fe:a9fe", true), ("64:ff9b:1::a9fe:a9fe", true), ("2002:a9fe:a9fe::1", true),
            ("fe80::1", true), ("febf::1", true),
            ("fd00:ec2::254", true), ("fd00:ec2::253", false), ("169.253.255.255", false), ("169.255.0.1", false),
            ("192.168.1.9", false), ("127.0.0.1", false), ("10.0.0.1", false), ("fec0::1", false), ("::1", false),
            ("2001:db8::1", false), ("8.8.8.8", false),
        ])
    func linkLocal(address: String, refused: Bool) {
        var bytes = [UInt8](repeating: 0, count: address.contains(":") ? 16 : 4)
        #expect(inet_pton(address.contains(":") ? AF_INET6 : AF_INET, address, &bytes) == 1)
        #expect(CurlReach.isLinkLocal(bytes) == refused, "\(address)")
        // Spelled in an endpoint (as inet_aton reads IPv4: 2851995905 is 169.254.169.254).
        let host = address.contains(":") ? "[\(address)]" : address
        #expect((WebPushSubscription.endpointProblem("https://\(host)/x", allowPrivate: true) != nil) == refused)
    }

    @Test("link-local hosts however spelled in an endpoint are refused with private endpoints allowed")
    func linkLocalSpellings() {
        for host in ["2851995905", "0xa9.0xfe.0xa9.0xfe", "169.254.43518", "[FE80::1]", "169.254.169.254."] {
            #expect(WebPushSubscription.endpointProblem("http://\(host)/x", allowPrivate: true) != nil, "\(host)")
        }
        #expect(WebPushSubscription.endpointProblem("http://192.168.1.9:2586/up?up=1", allowPrivate: true) == nil)
    }

    @Test("a session kept off link-local addresses still reaches this machine and its network")
    func notLinkLocalReachesPrivate() throws {
        let service = try WebPushStandIn()
        let session = CurlSession(timeoutSeconds: 5, reach: .notLinkLocal)
        guard case .success(let answer) = session.perform("http://127.0.0.1:\(service.port)/messages") else {
            Issue.record("a session kept off link-local addresses did not reach loopback")
            return
        }
        #expect(answer.status == 200)
    }

    @Test("a session that posts to strangers' URLs opens no socket to this machine, however the URL names it")
    func session() throws {
        let service = try WebPushStandIn()
        let open = CurlSession(timeoutSeconds: 5)
        guard case .success(let answer) = open.perform("http://127.0.0.1:\(service.port)/messages") else {
            Issue.record("the stand-in did not answer an ordinary session")
            return
        }
        #expect(answer.status == 200)
        var hosts = ["127.0.0.1", "localhost", "2130706433", "[::ffff:127.0.0.1]", "127.1"]
        // The machine's own name, which no spelling check sees through, where it resolves to
        // the listener (as /etc/hosts has it on Debian and in most containers).
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count)
        let hostname = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #expect(!NetworkAddress.isPrivate(host: hostname), "its spelling says nothing")
        if case .success = open.perform("http://\(hostname):\(service.port)/messages") { hosts.append(hostname) }
        let strict = CurlSession(timeoutSeconds: 5, reach: .publicOnly)
        for host in hosts {
            guard case .failure = strict.perform("http://\(host):\(service.port)/messages") else {
                Issue.record("a public-only session reached \(host)")
                continue
            }
        }
    }

    @Test("a push service that never answers holds at most its share of the requests in flight: the others' go at once")
    func slowServiceShare() throws {
        let service = try WebPushStandIn()
        let silent = try RecordingListener(behaviour: .blackhole)
        let multi = try CurlMulti(timeoutSeconds: 5, reach: .anywhere, inFlight: 4, perOrigin: 2)
        // The silent service's requests first, more of them than there are places in flight.
        let requests =
            (0..<6).map { CurlMulti.Request(url: silent.url + "/push/\($0)", headers: [], body: Data("x".utf8)) }
            + (0..<4).map {
                CurlMulti.Request(
                    url: "http://127.0.0.1:\(service.port)/push/none\($0)", headers: [], body: Data("x".utf8))
            }
        // No request starts after a second: behind six silent ones, the others would never start.
        let answers = multi.perform(requests, deadline: ContinuousClock.now + .seconds(1))
        for answer in answers.suffix(4) {
            guard case .success(let reply) = answer else {
                Issue.record("a request to the answering service did not go: \(answer)")
                continue
            }
            #expect(reply.status == 404)
        }
        let silentFailures = answers.prefix(6).compactMap { answer -> CurlSession.Failure? in
            if case .failure(let failure) = answer { return failure }
            return nil
        }
        #expect(silentFailures.count == 6, "the silent service's requests time out or never start")
        #expect(silentFailures.filter(\.started).count == 2, "two held the service's places and timed out")
        #expect(silentFailures.filter { !$0.started }.count == 4, "four never started, and say so")
    }
}
