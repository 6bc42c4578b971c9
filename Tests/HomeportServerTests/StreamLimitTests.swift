import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Notification streams are capped per session, account and address", .tags(.postgres))
struct StreamLimitTests {
    @Test("the census: a session's newest replaces its oldest; an account or an address at its cap is refused")
    func census() {
        var census = StreamCensus(limits: StreamLimits(perSession: 2, perAccount: 3, perClient: 4))
        #expect(census.admit(1, session: "s1", account: 1, client: "a") == .admitted(replacing: []))
        #expect(census.admit(2, session: "s1", account: 1, client: "a") == .admitted(replacing: []))
        #expect(census.admit(3, session: "s1", account: 1, client: "a") == .admitted(replacing: [1]))
        #expect(census.count == 2)
        #expect(census.admit(4, session: "s2", account: 1, client: "a") == .admitted(replacing: []))
        // The account holds 3: another session of it is refused, while a session at its share still replaces.
        #expect(census.admit(5, session: "s3", account: 1, client: "a") == .accountFull)
        #expect(census.admit(6, session: "s1", account: 1, client: "b") == .admitted(replacing: [2]))
        // The address "a" holds 2 (3 and 4); other accounts fill it to 4, then it is full.
        #expect(census.admit(7, session: "t1", account: 2, client: "a") == .admitted(replacing: []))
        #expect(census.admit(8, session: "t2", account: 3, client: "a") == .admitted(replacing: []))
        #expect(census.admit(9, session: "t3", account: 4, client: "a") == .clientFull)
        #expect(census.admit(10, session: "t3", account: 4, client: "c") == .admitted(replacing: []))
        // An end frees its place; forgetting twice changes nothing.
        census.remove(7)
        census.remove(7)
        #expect(census.admit(11, session: "t3", account: 4, client: "a") == .admitted(replacing: []))
        #expect(census.admit(12, session: "t4", account: 5, client: "a") == .clientFull)
        // Full, but a session that holds a stream there reconnects: its oldest makes room.
        // (t3 holds 10 on "c" and 11 on "a": its share, and the address's place, both make room.)
        #expect(census.admit(13, session: "t3", account: 4, client: "a") == .admitted(replacing: [10, 11]))
        #expect(census.admit(14, session: "s2", account: 1, client: "a") == .admitted(replacing: [4]))
        #expect(census.admit(15, session: "t9", account: 9, client: "a") == .clientFull, "a session holding nothing")
    }

    @Test("0 is no cap")
    func uncapped() {
        var census = StreamCensus(limits: StreamLimits(perSession: 0, perAccount: 0, perClient: 0))
        for id in 0..<500 {
            #expect(census.admit(id, session: "s", account: 1, client: "a") == .admitted(replacing: []))
        }
        #expect(census.count == 500)
    }

    @Test(
        "one token, many streams: the newest two live; one account or one address past its cap gets 429 with Retry-After; another address is not affected",
        arguments: Backend.allCases)
    func hub(backend: Backend) throws {
        var push = PushSettings()
        push.streamLimits = StreamLimits(perSession: 2, perAccount: 3, perClient: 5)
        try withAccounts(backend, push: push) { server in
            let ada = try server.signIn("ada@example.com")
            let first = try server.openStream(ada)
            let second = try server.openStream(ada)
            let third = try server.openStream(ada)
            #expect(first.wait(for: "0\r\n\r\n"), "the session's oldest stream ended, as a finished response")
            #expect(!second.text.contains("0\r\n\r\n") && !third.text.contains("0\r\n\r\n"))

            // Another session of ada's makes three; a third session is refused.
            let adaAgain = try server.signIn("ada@example.com")
            let fourth = try server.openStream(adaAgain)
            let refused = try server.app(
                "GET", "/api/v1/notifications/stream", token: try server.signIn("ada@example.com"))
            #expect(refused.status == 429)
            #expect(
                refused.jsonObject.flatMap { ($0["error"] as? [String: Any])?["code"] as? String }
                    == APIErrorCode.tooManyStreams)
            #expect(refused.header("Retry-After") == "30")

            // The address holds 3; bob's two fill it to 5; carol is refused from it, not from 127.0.0.2.
            let bob = try server.signIn("bob@example.com")
            let bobs = [try server.openStream(bob), try server.openStream(bob)]
            let carol = try server.signIn("carol@example.com")
            let full = try server.app("GET", "/api/v1/notifications/stream", token: carol)
            #expect(full.status == 429, "\(full.text)")
            let elsewhere = try RawHTTP.connect(port: server.port, source: "127.0.0.2", timeout: 10)
            defer { close(elsewhere) }
            RawHTTP.send(
                elsewhere, "GET /api/v1/notifications/stream HTTP/1.1\r\nHost: x\r\nX-Session-Token: \(carol)\r\n\r\n")
            #expect(StreamReader(fd: elsewhere).wait(for: ": connected"), "another address keeps its own share")

            // A stream that ends gives its place back.
            close(bobs[0].fd)
            let reopened = try eventually(timeout: .seconds(20), every: .milliseconds(100)) {
                let attempt = try RawHTTP.connect(port: server.port, timeout: 10)
                defer { close(attempt) }
                RawHTTP.send(
                    attempt, "GET /api/v1/notifications/stream HTTP/1.1\r\nHost: x\r\nX-Session-Token: \(carol)\r\n\r\n"
                )
                return StreamReader(fd: attempt).wait(for: ": connected", timeout: 2)
            }
            #expect(reopened, "the place bob's closed stream held is free again")
            for reader in [second, third, fourth, bobs[1]] { close(reader.fd) }
        }
    }
}
