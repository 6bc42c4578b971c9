import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

@Suite("Identity probe and request rules, against scripted listeners", .tags(.process))
struct ProbeAndRetryTests {
    static let id = InstanceID(UUID())
    static var identity: ServerIdentity { ServerIdentity(product: "homeport", instanceId: id) }
    static var identityBody: String { #"{"product":"homeport","protocolVersion":1,"instanceId":"\#(id)"}"# }
    static let json = ["Content-Type": "application/json"]

    @Test("a probe follows a same-origin redirect, refuses an off-host one, and sends no credential")
    func redirects() async throws {
        let target = try RecordingListener(
            behaviour: .respond(status: 200, headers: Self.json, body: Self.identityBody))
        let sameOrigin = try RecordingListener(
            behaviour: .routes([
                "/api/v1/server-identity": .init(302, ["Location": "/identity/current"]),
                "/identity/current": .init(200, Self.json, Self.identityBody),
            ]))
        let offHost = try RecordingListener(
            host: "127.0.0.2",
            behaviour: .respond(status: 301, headers: ["Location": target.url + "/api/v1/server-identity"], body: ""))
        let probe = IdentityProbe(transport: HomeportClient.defaultTransport())
        let followed = await probe.probe(
            try ServerAddress(parsing: sameOrigin.url, allowHTTP: true), expected: Self.identity)
        #expect(followed.isMatch)
        #expect(sameOrigin.requests.count == 2)
        let refused = await probe.probe(
            try ServerAddress(parsing: offHost.url, allowHTTP: true), expected: Self.identity)
        #expect(refused == .offHostRedirect("http://127.0.0.1:\(target.port)"))
        #expect(target.requests.isEmpty, "the off-host target got nothing")
        for listener in [sameOrigin, offHost] { #expect(!listener.sawCredential) }
    }

    @Test(
        "probe outcomes: older server, HTML page, not Homeport, mismatch, oversized, a key named twice",
        arguments: [
            (RecordingListener.Canned(404, [:], "Not Found"), "olderServer"),
            (
                RecordingListener.Canned(200, ["Content-Type": "text/html"], "<html><form>login</form></html>"),
                "notAnAPI"
            ),
            (RecordingListener.Canned(200, ["Content-Type": "application/json"], #"{"hello":"world"}"#), "notHomeport"),
            (
                RecordingListener.Canned(
                    200, ["Content-Type": "application/json"],
                    #"{"product":"x","protocolVersion":1,"instanceId":"0b5e5a3e-6f2a-4a7e-9a61-2f0c3d1b2a10"}"#),
                "mismatch"
            ),
            (
                RecordingListener.Canned(
                    200, ["Content-Type": "application/json"], String(repeating: " ", count: 40000)), "unreachable"
            ),
            // The enrolled id and another, one after the other: either could be read as the answer.
            (
                RecordingListener.Canned(
                    200, ["Content-Type": "application/json"],
                    #"{"product":"homeport","protocolVersion":1,"instanceId":"0b5e5a3e-6f2a-4a7e-9a61-2f0c3d1b2a10","instanceId":"\#(id)"}"#
                ), "notHomeport"
            ),
        ])
    func outcomes(answer: RecordingListener.Canned, expected: String) async throws {
        let listener = try RecordingListener(behaviour: .routes(["/api/v1/server-identity": answer]))
        let outcome = await IdentityProbe(transport: HomeportClient.defaultTransport())
            .probe(try ServerAddress(parsing: listener.url, allowHTTP: true), expected: Self.identity)
        #expect(outcome.description.lowercased().contains(Self.word[expected]!), "\(outcome)")
    }

    static let word = [
        "olderServer": "older", "notAnAPI": "html", "notHomeport": "not a homeport", "mismatch": "another installation",
        "unreachable": "unreachable",
    ]

    @Test(
        "a redirect is a move to check only from http to https on the same host, or from https to another https origin; anything else stays an off-host redirect, never followed"
    )
    func movesToHTTPS() async throws {
        let cases: [(from: String, to: String, moved: String?)] = [
            (
                "http://books.example.net:8080", "https://books.example.net/api/v1/server-identity",
                "https://books.example.net"
            ),
            (
                "http://books.example.net", "https://BOOKS.example.net:8443/base/api/v1/server-identity",
                "https://books.example.net:8443/base"
            ),
            ("http://books.example.net/lib", "https://books.example.net/", "https://books.example.net/lib"),
            // A plain-HTTP answer can be anyone's on the path: it names no other host.
            ("http://books.example.net", "https://evil.example.net/api/v1/server-identity", nil),
            ("http://192.168.1.20:8080", "https://books.example.net/api/v1/server-identity", nil),
            ("http://books.example.net", "http://books.example.net:9000/api/v1/server-identity", nil),
            ("http://192.168.1.20:8080", "http://books.example.net/api/v1/server-identity", nil),
            // An HTTPS primary's own word: a candidate, which must answer the probe as the installation.
            (
                "https://192.168.1.20:8443", "https://books.example.net/api/v1/server-identity",
                "https://books.example.net"
            ),
            (
                "https://books.example.net", "https://books.example.net:8443/api/v1/server-identity",
                "https://books.example.net:8443"
            ),
            ("https://books.example.net", "http://books.example.net/api/v1/server-identity", nil),
            ("http://127.0.0.1:8080", "https://127.0.0.2/api/v1/server-identity", nil),
            ("https://127.0.0.1:8443", "https://127.0.0.2/api/v1/server-identity", "https://127.0.0.2"),
            ("http://books.example.net", "https://user:pw@books.example.net/api/v1/server-identity", nil),
            ("http://books.example.net", "ftp://books.example.net/api/v1/server-identity", nil),
        ]
        for (from, to, moved) in cases {
            let address = try ServerAddress(parsing: from, allowHTTP: true)
            let result = IdentityProbe.movedToHTTPS(from: address, to: try #require(URL(string: to)))
            #expect(result?.url == moved, "\(from) → \(to)")
        }
        // A live listener that redirects to HTTPS on its host: the probe says so, and goes no further.
        let redirecting = try RecordingListener(
            behaviour: .respond(
                status: 308, headers: ["Location": "https://127.0.0.1:1/api/v1/server-identity"], body: ""))
        let outcome = await IdentityProbe(transport: HomeportClient.defaultTransport()).probe(
            try ServerAddress(parsing: redirecting.url, allowHTTP: true), expected: Self.identity)
        #expect(outcome == .movedToHTTPS(try ServerAddress(parsing: "https://127.0.0.1:1")))
        #expect(redirecting.requests.count == 1 && !redirecting.sawCredential)
    }

    @Test("only a server-declared csrf_invalid earns one retry; other refusals are not retried")
    func csrfRetry() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let csrf = #"{"status":403,"errors":[{"code":"csrf_invalid","param":null,"message":"CSRF failed"}]}"#
        let forbidden = #"{"status":403,"errors":[{"code":"forbidden","param":null,"message":"no"}]}"#
        let identity = RecordingListener.Canned(200, Self.json, Self.identityBody)
        for (answers, expectedStatus, expectedCalls) in [
            ([RecordingListener.Canned(403, Self.json, csrf), .init(200, Self.json, #"{"ok":true}"#)], 200, 2),
            ([RecordingListener.Canned(403, Self.json, forbidden), .init(200, Self.json, #"{"ok":true}"#)], 403, 1),
            ([RecordingListener.Canned(403, Self.json, csrf)], 403, 2),
        ] {
            let combined = try ScriptedServer(identity: identity, api: answers)
            let vault = MemoryVault()
            let directory = try ServerDirectory(directory: home.file(UUID().uuidString))
            let address = try ServerAddress(parsing: combined.listener.url, allowHTTP: true)
            let record = ServerRecord(
                instanceID: Self.id, product: "homeport", email: "ada@example.com", primary: address, alternatives: [],
                lastWinner: nil, signedOut: false, signedInPath: "default")
            try directory.save(record)
            try vault.store(token: "t0ken", for: record.key)
            let client = HomeportClient(directory: directory, vault: vault)
            let answer = try await client.send("POST", "/api/v1/things", to: record.key, json: Data("{}".utf8))
            #expect(answer.response.status == expectedStatus)
            #expect(combined.apiCalls == expectedCalls)
        }
    }
}

/// One listener answering the identity route itself and the API from a script.
final class ScriptedServer {
    let listener: RecordingListener
    init(identity: RecordingListener.Canned, api: [RecordingListener.Canned]) throws {
        // Requests alternate identity probes and API calls; route identity by path, script the rest.
        listener = try RecordingListener(behaviour: .routesThenSequence(["/api/v1/server-identity": identity], api))
    }
    var apiCalls: Int { listener.requests.filter { !$0.contains("/api/v1/server-identity") }.count }
}

@Suite("Client safety rules found in review", .tags(.process))
struct ClientSafetyTests {
    static let json = ["Content-Type": "application/json"]

    func client(_ home: TemporaryDirectory, record: ServerRecord, path: String = "default") throws -> (
        HomeportClient, MemoryVault
    ) {
        let vault = MemoryVault()
        let directory = try ServerDirectory(directory: home.file(UUID().uuidString))
        try directory.save(record)
        try vault.store(token: "t0ken", for: record.key)
        return (HomeportClient(directory: directory, vault: vault, networkPath: path), vault)
    }

    @Test("a plain-HTTP primary without an identity route gets no token on another network")
    func httpPrimaryWithoutIdentity() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let listener = try RecordingListener(behaviour: .respond(status: 200, headers: Self.json, body: "{}"))
        let record = ServerRecord(
            instanceID: nil, product: nil, email: "ada@example.com",
            primary: try ServerAddress(parsing: listener.url, allowHTTP: true), alternatives: [], lastWinner: nil,
            signedOut: false, signedInPath: "home")
        let (client, _) = try client(home, record: record, path: "cafe")
        await #expect(throws: ClientError.self) { try await client.send("GET", "/api/v1/things", to: record.key) }
        #expect(!listener.sawCredential)
        // On the network it was signed in on, the primary keeps its trust.
        client.networkPathChanged(to: "home")
        _ = try await client.send("GET", "/api/v1/things", to: record.key)
        #expect(listener.sawCredential)
    }

    @Test("the same address as primary and alternative, both down, is a clear refusal, not a crash")
    func duplicateCandidates() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        // A port held bound without listening: refused, and no other test's server can take it.
        let deadPort = try DeadPort()
        let dead = try ServerAddress(parsing: "http://127.0.0.1:\(deadPort.port)", allowHTTP: true)
        let record = ServerRecord(
            instanceID: InstanceID(UUID()), product: nil, email: "ada@example.com", primary: dead,
            alternatives: [.init(address: dead, verifiedPaths: ["default": Date()])], lastWinner: dead.url,
            signedOut: false, signedInPath: "default")
        let (client, _) = try client(home, record: record)
        await #expect(throws: ClientError.self) { try await client.send("GET", "/api/v1/things", to: record.key) }
        withExtendedLifetime(deadPort) {}
    }

    @Test("a write that is redirected is not sent again")
    func writesDoNotFollowRedirects() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let listener = try RecordingListener(
            behaviour: .routes([
                "/api/v1/server-identity": .init(
                    200, Self.json, #"{"product":"homeport","protocolVersion":1,"instanceId":"\#(id)"}"#),
                "/api/v1/things": .init(302, ["Location": "/api/v1/elsewhere"]),
            ]))
        let record = ServerRecord(
            instanceID: id, product: nil, email: "ada@example.com",
            primary: try ServerAddress(parsing: listener.url, allowHTTP: true), alternatives: [], lastWinner: nil,
            signedOut: false, signedInPath: "default")
        let (client, _) = try client(home, record: record)
        await #expect(throws: ClientError.self) {
            try await client.send("POST", "/api/v1/things", to: record.key, json: Data("{}".utf8))
        }
        #expect(!listener.requests.contains { $0.contains("/api/v1/elsewhere") })
        #expect(listener.requests.filter { $0.hasPrefix("POST") }.count == 1)
    }

    @Test("logout erases the local session even when the stored token cannot be read")
    func logoutWithDamagedVault() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let vault = try FileVault(directory: home.file("vault"))
        let directory = try ServerDirectory(directory: home.path)
        let deadPort = try DeadPort()
        defer { withExtendedLifetime(deadPort) {} }
        let record = ServerRecord(
            instanceID: InstanceID(UUID()), product: nil, email: "ada@example.com",
            primary: try ServerAddress(parsing: "http://127.0.0.1:\(deadPort.port)", allowHTTP: true),
            alternatives: [], lastWinner: nil, signedOut: false, signedInPath: "default")
        try directory.save(record)
        try vault.store(token: "t0ken", for: record.key)
        try Data("damaged".utf8).write(to: URL(fileURLWithPath: vault.path(record.key)))
        let client = HomeportClient(directory: directory, vault: vault)
        #expect(try await client.logout(record.key) != .revoked)
        #expect(!FileManager.default.fileExists(atPath: vault.path(record.key)))
        #expect(try directory.find(record.key).signedOut)
    }
}

@Suite("TLS trust", .tags(.process))
struct TLSTrustTests {
    @Test("an HTTPS address with an untrusted certificate is refused, and no request gets through")
    func untrustedCertificate() async throws {
        let id = InstanceID(UUID())
        let listener = try TLSListener(body: #"{"product":"homeport","protocolVersion":1,"instanceId":"\#(id)"}"#)
        let outcome = await IdentityProbe(transport: HomeportClient.defaultTransport())
            .probe(
                try ServerAddress(parsing: listener.url), expected: ServerIdentity(product: "homeport", instanceId: id))
        guard case .unreachable(let reason) = outcome else {
            Issue.record("an untrusted certificate was accepted: \(outcome)")
            return
        }
        #expect(reason.contains("TLS"))
        #expect(listener.requests.isEmpty, "nothing got past the handshake")

        // The same server is trusted when the request is made without verification — proving the
        // listener works and that it is the trust check, not the listener, that refused.
        let insecure = Process()
        insecure.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        insecure.arguments = ["curl", "-sk", listener.url + "/api/v1/server-identity"]
        let output = Pipe()
        insecure.standardOutput = output
        try insecure.spawn()
        insecure.waitForExit()
        #expect(
            String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains(id.description))
    }
}

@Suite("Identity collisions", .tags(.process))
struct IdentityCollisionTests {
    @Test("a server that starts answering as another enrolled server's id is refused, and neither record is lost")
    func collision() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = InstanceID(UUID())
        let theirs = InstanceID(UUID())
        let json = ["Content-Type": "application/json"]
        let listener = try RecordingListener(
            behaviour: .routes([
                "/api/v1/server-identity": .init(
                    200, json, #"{"product":"homeport","protocolVersion":1,"instanceId":"\#(mine)"}"#),
                "/api/v1/app-info": .init(
                    200, json,
                    #"{"product":"homeport","version":"1","protocolVersion":1,"features":[],"instanceId":"\#(theirs)"}"#
                ),
            ]))
        let directory = try ServerDirectory(directory: home.path)
        let vault = MemoryVault()
        let a = ServerRecord(
            instanceID: mine, product: nil, email: "ada@example.com",
            primary: try ServerAddress(parsing: listener.url, allowHTTP: true), alternatives: [], lastWinner: nil,
            signedOut: false, signedInPath: "default")
        let b = ServerRecord(
            instanceID: theirs, product: nil, email: "bob@example.com",
            primary: try ServerAddress(parsing: "https://other.example.net"), alternatives: [], lastWinner: nil,
            signedOut: false, signedInPath: "default")
        try directory.save(a)
        try directory.save(b)
        try vault.store(token: "token-a", for: a.key)
        try vault.store(token: "token-b", for: b.key)
        let client = HomeportClient(directory: directory, vault: vault)
        await #expect(throws: ClientError.self) { try await client.appInfo(a.key) }
        #expect(directory.all.count == 2)
        #expect(try vault.token(for: b.key) == "token-b")
        #expect(try vault.token(for: a.key) == "token-a")
    }
}
