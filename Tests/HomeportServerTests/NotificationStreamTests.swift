import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The in-app notification stream", .tags(.process, .postgres))
struct NotificationStreamTests {
    private func notify(_ server: AccountsHarness, _ email: String, _ title: String, thread: String? = nil) throws {
        try server.application.push.notify(
            ProductNotification(code: ServerCatalogue.testCode, title: title, thread: thread), email: email)
    }

    @Test("an account's notifications arrive in order, once each, and no other account's", arguments: Backend.allCases)
    func events(backend: Backend) throws {
        try withAccounts(backend) { server in
            let ada = try server.signIn("ada@example.com")
            _ = try server.signIn("bob@example.com")
            try notify(server, "ada@example.com", "before the stream")
            let stream = try server.openStream(ada)
            defer { close(stream.fd) }
            try notify(server, "ada@example.com", "first", thread: "chat:1")
            try notify(server, "bob@example.com", "bob's")
            try notify(server, "ada@example.com", "second")
            #expect(stream.wait(for: #""title":"second""#))
            #expect(
                !stream.text.contains("before the stream"), "a stream without Last-Event-ID starts with what is new")
            #expect(!stream.text.contains("bob's"))
            #expect(stream.count(of: #""title":"first""#) == 1)
            let first = try #require(stream.text.range(of: "id: 2\nevent: notification\ndata: "))
            let second = try #require(stream.text.range(of: "id: 3\nevent: notification\ndata: "))
            #expect(first.lowerBound < second.lowerBound)
            let line = stream.text[first.upperBound...].prefix { $0 != "\n" }
            let event = try JSONDecoder().decode(StreamNotification.self, from: Data(line.utf8))
            #expect(event.id == 2 && event.thread == "chat:1" && event.c == ServerCatalogue.testCode)
            #expect(event.s != nil && event.mv == server.application.push.catalogue.version)
        }
    }

    @Test("Last-Event-ID resumes after the last event seen, without loss or duplicates", arguments: Backend.allCases)
    func resume(backend: Backend) throws {
        try withAccounts(backend) { server in
            let ada = try server.signIn("ada@example.com")
            let first = try server.openStream(ada)
            for index in 1...3 { try notify(server, "ada@example.com", "event \(index)") }
            #expect(first.wait(for: #""title":"event 3""#))
            close(first.fd)
            // While the app is away, more arrive.
            for index in 4...5 { try notify(server, "ada@example.com", "event \(index)") }
            let second = try server.openStream(ada, lastEventID: 3)
            defer { close(second.fd) }
            #expect(second.wait(for: #""title":"event 5""#))
            try notify(server, "ada@example.com", "event 6")
            #expect(second.wait(for: #""title":"event 6""#))
            for index in 1...3 { #expect(!second.text.contains(#""title":"event \#(index)""#)) }
            for index in 4...6 { #expect(second.count(of: #""title":"event \#(index)""#) == 1) }
            let bad = try server.app(
                "GET", "/api/v1/notifications/stream", token: ada, headers: [("Last-Event-ID", "yesterday")])
            #expect(bad.status == 400)
        }
    }

    @Test(
        "streams of one account opened at different events each get every later event once, in order",
        arguments: Backend.allCases)
    func manyStreamsOfOneAccount(backend: Backend) throws {
        try withAccounts(backend) { server in
            // Three sessions (phone, tablet, laptop): a session's own streams replace each other.
            let fromTheStart = try server.openStream(try server.signIn("ada@example.com"))
            defer { close(fromTheStart.fd) }
            for index in 1...3 { try notify(server, "ada@example.com", "event \(index)") }
            #expect(fromTheStart.wait(for: #""title":"event 3""#))
            let resumed = try server.openStream(try server.signIn("ada@example.com"), lastEventID: 1)
            defer { close(resumed.fd) }
            let fresh = try server.openStream(try server.signIn("ada@example.com"))
            defer { close(fresh.fd) }
            #expect(resumed.wait(for: #""title":"event 3""#) && fresh.wait(for: ": connected"))
            for index in 4...6 { try notify(server, "ada@example.com", "event \(index)") }
            for stream in [fromTheStart, resumed, fresh] { #expect(stream.wait(for: #""title":"event 6""#)) }
            func seen(_ stream: StreamReader) -> [Int] {
                (1...6).flatMap { index in
                    Array(repeating: index, count: stream.count(of: #""title":"event \#(index)""#))
                }
            }
            #expect(seen(fromTheStart) == [1, 2, 3, 4, 5, 6])
            #expect(seen(resumed) == [2, 3, 4, 5, 6])
            #expect(seen(fresh) == [4, 5, 6])
            for stream in [fromTheStart, resumed, fresh] {
                let ids = stream.text.split(separator: "\n").filter { $0.hasPrefix("id: ") }.compactMap {
                    Int($0.dropFirst(4))
                }
                #expect(ids == ids.sorted() && Set(ids).count == ids.count, "in order, once each: \(ids)")
            }
        }
    }

    @Test(
        "a Last-Event-ID past the account's newest event (a restored database, a made-up number) starts with what is new, not silence",
        arguments: Backend.allCases)
    func resumePastTheNewest(backend: Backend) throws {
        try withAccounts(backend) { server in
            let ada = try server.signIn("ada@example.com")
            try notify(server, "ada@example.com", "already seen")
            let stream = try server.openStream(ada, lastEventID: Int64.max)
            defer { close(stream.fd) }
            try notify(server, "ada@example.com", "new")
            #expect(stream.wait(for: #""title":"new""#))
            #expect(!stream.text.contains("already seen"))
        }
    }

    @Test(
        "ending the session ends its streams: logout, password change, hold", arguments: ["logout", "change", "hold"])
    func sessionEnd(how: String) throws {
        try withAccounts(.sqlite) { server in
            let ada = try server.signIn("ada@example.com")
            let stream = try server.openStream(ada)
            defer { close(stream.fd) }
            switch how {
            case "logout": _ = try server.app("DELETE", "auth/session", token: ada)
            case "change":
                _ = try server.app(
                    "POST", "account/password/change", token: ada,
                    json: ["current_password": "correct horse battery", "new_password": "a brand new password"])
            default: _ = try server.application.accounts.setApproval(.held, email: "ada@example.com")
            }
            #expect(stream.wait(for: "0\r\n\r\n"), "the stream ends, as a finished response")
        }
    }

    @Test("the stream takes the header token only, like the rest of the prefix")
    func credentials() throws {
        try withAccounts(.sqlite) { server in
            let ada = try server.signIn("ada@example.com")
            #expect(try server.app("GET", "/api/v1/notifications/stream", token: nil).status == 401)
            let cookie = try RawHTTP.request(
                port: server.port, path: "/api/v1/notifications/stream",
                headers: [("Cookie", "homeport_session=\(ada)")])
            #expect(cookie.status == 401)
            #expect(
                try server.app("GET", "/api/v1/notifications/stream", token: ada.withFirstCharacterChanged).status
                    == 401)
        }
    }

    @Test("heartbeats keep an idle stream talking")
    func heartbeat() throws {
        try withAccounts(.sqlite, push: PushSettings(streamHeartbeat: 0.3)) { server in
            let stream = try server.openStream(try server.signIn("ada@example.com"))
            defer { close(stream.fd) }
            #expect(stream.wait(for: ": keepalive"))
        }
    }
}

@Suite("Notifications across processes", .tags(.process, .postgres))
struct NotificationProcessTests {
    @Test(
        "a notification sent by `homeport-server push send` reaches a stream of the running server",
        arguments: Backend.allCases)
    func crossProcess(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ServerProcess(serve: [
            "--database", url.rawText, "--signup", "open", "--password-iterations", "1000", "--outbox",
            directory.file("outbox"),
        ])
        defer { server.stop() }
        let signup = try RawHTTP.request(
            port: server.port, method: "POST", path: "/_allauth/app/v1/auth/signup",
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        let token = try #require(signup.sessionToken)
        let stream = try openNotificationStream(port: server.port, token: token)
        defer { close(stream.fd) }
        let sent = try ServerProcess.run([
            "push", "send", "--database", url.rawText, "--email", "ada@example.com", "--code",
            "homeport/core:push.test",
            "--title", "From the command line", "--thread", "chat:9", "--id", "9",
        ])
        #expect(sent.status == 0, "\(sent.error)")
        #expect(sent.output.contains("no push: the server has pushes off"), "the serving process has no topic")
        #expect(stream.wait(for: #""title":"From the command line""#))
        let refused = try ServerProcess.run([
            "push", "send", "--database", url.rawText, "--email", "ada@example.com", "--code", "unknown:code",
            "--title", "x",
        ])
        #expect(refused.status == 1 && refused.error.contains("not in this server's notification catalogue"))
    }
}
