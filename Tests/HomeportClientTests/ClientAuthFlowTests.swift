import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

/// The client's auth flows against a real django-allauth headless server and against homeport-server.
@Suite("Client auth flows on django-allauth and homeport-server", .tags(.process, .interop))
struct ClientAuthFlowTests {
    enum Peer: String, CaseIterable, Sendable {
        case allauth, homeport
    }

    /// A running server of `peer`'s kind (verifying addresses by code when asked): its address,
    /// its mail so far, and what keeps it running.
    struct Running {
        var address: ServerAddress
        var mail: () -> String
        var keepAlive: Any
    }

    static func start(_ peer: Peer, verifyByCode: Bool = false) throws -> Running {
        switch peer {
        case .allauth:
            let allauth = try AllauthPeer(verifyByCode: verifyByCode)
            return Running(
                address: try ServerAddress(parsing: "http://127.0.0.1:\(allauth.port)", allowHTTP: true),
                mail: { allauth.mail }, keepAlive: allauth)
        case .homeport:
            let homeport = try Installation(
                hosts: ["127.0.0.1"], extra: verifyByCode ? ["--email-verification", "code"] : [])
            let outbox = homeport.directory.file("outbox")
            return Running(
                address: try homeport.address("127.0.0.1"), mail: { mailText(in: outbox) }, keepAlive: homeport)
        }
    }

    @Test("signup, login, session, password change with rotation, logout, reset request", arguments: Peer.allCases)
    func flows(peer: Peer) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try Self.start(peer)
        defer { withExtendedLifetime(server.keepAlive) {} }
        let address = server.address
        let spy = SpyTransport()
        let client = try makeClient(home, spy)
        let vault = try FileVault(directory: home.file("vault"))

        guard
            case .signedIn(let record) = try await client.signup(
                at: address, email: "flow@example.com", password: password)
        else { throw RawHTTPError("signup did not sign in") }
        let first = try #require(try vault.token(for: record.key))
        if peer == .allauth {
            #expect(record.instanceID == nil, "allauth has no identity: single-address behaviour")
        }

        // Wrong password: a clear refusal with allauth's code; nothing stored.
        await #expect {
            try await client.login(at: address, email: "flow@example.com", password: "not the password")
        } throws: { error in
            guard case ClientError.rejected(400, let errors) = error else { return false }
            return errors.map(\.code) == ["email_password_mismatch"]
        }

        // Password change: the server rotates the token and the vault keeps the new one.
        try await client.changePassword(record.key, current: password, new: "a second good password")
        let rotated = try #require(try vault.token(for: record.key))
        #expect(rotated != first)
        let session = try await client.send("GET", "/_allauth/app/v1/auth/session", to: record.key)
        #expect(session.response.status == 200)

        // Logout revokes on the server and erases the local session.
        #expect(try await client.logout(record.key) == .revoked)
        #expect(try vault.token(for: record.key) == nil)
        let reuse = try RawHTTP.request(
            port: Int(address.url.split(separator: ":").last!)!, path: "/_allauth/app/v1/auth/session",
            headers: [("X-Session-Token", rotated)])
        #expect(reuse.status == 410)

        // Login again with the new password, then a reset request (no credential involved).
        guard
            case .signedIn = try await client.login(
                at: address, email: "flow@example.com", password: "a second good password")
        else { throw RawHTTPError("login failed") }
        try await client.requestPasswordReset(at: address, email: "flow@example.com")
        // The password itself was sent only to auth endpoints, and never stored.
        let stored = try String(contentsOfFile: client.directory.path, encoding: .utf8)
        #expect(!stored.contains("good password"))
    }

    @Test("a sign-up that must verify the address: a wrong code, then the mailed one", arguments: Peer.allCases)
    func verificationByCode(peer: Peer) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try Self.start(peer, verifyByCode: true)
        defer { withExtendedLifetime(server.keepAlive) {} }
        let address = server.address
        let mail = server.mail
        let client = try makeClient(home, SpyTransport())
        let vault = try FileVault(directory: home.file("vault"))

        guard
            case .verificationRequired(let pending) = try await client.signup(
                at: address, email: "verify@example.com", password: password)
        else { throw RawHTTPError("signup did not ask for a code") }
        #expect(pending.email == "verify@example.com")
        #expect(client.directory.all.isEmpty, "nothing is enrolled before the code")

        await #expect {
            try await client.verifyEmail(pending, code: "AAAA-AAAA")
        } throws: { error in
            guard case ClientError.rejected(400, let errors) = error else { return false }
            return errors.map(\.code) == ["incorrect_code"]
        }
        let code = try #require(mail().matches(of: /[A-Z]{4}-[A-Z]{4}/).last.map { String($0.output) })
        guard case .signedIn(let record) = try await client.verifyEmail(pending, code: code.lowercased()) else {
            throw RawHTTPError("the mailed code did not sign in")
        }
        #expect(record.email == "verify@example.com")
        #expect(try vault.token(for: record.key) != nil)
        let session = try await client.send("GET", "/_allauth/app/v1/auth/session", to: record.key)
        #expect(session.response.status == 200)
        if peer == .homeport { #expect(record.instanceID != nil) }
        // The pending sign-in is spent: its token was replaced at verification.
        await #expect(throws: ClientError.self) { try await client.verifyEmail(pending, code: code) }
    }
}
