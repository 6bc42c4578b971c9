import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A header's value in a message's head.
private func header(_ name: String, in message: String) -> String? {
    let head = message.components(separatedBy: "\r\n\r\n").first ?? ""
    return head.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
        .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
}

@Suite("Mail over SMTP: really sent, off the request, kept across a restart", .serialized, .tags(.process, .postgres))
struct SMTPMailTests {
    private func serve(
        _ data: TemporaryDirectory, relayPort: Int, signup: String = "open", extra: [String] = [],
        database: String? = nil
    ) throws -> ServerProcess {
        try ServerProcess(
            serve: [
                "--database", database ?? "sqlite:" + data.file("h.sqlite"), "--signup", signup,
                "--password-iterations", "1000",
                "--mail-url", "smtp://127.0.0.1:\(relayPort)", "--mail-from", "books@example.net",
                "--public-url", "https://books.example.net",
            ] + extra)
    }

    /// Whether the pre-login session's standing becomes `expected` within five seconds (the mail
    /// sender tries once a second).
    private func standing(of token: String, on server: ServerProcess, becomes expected: String) throws -> Bool {
        try eventually(timeout: .seconds(5), every: .milliseconds(50)) {
            let answer = try RawHTTP.request(
                port: server.port, path: HomeportPath.authStanding, headers: [("X-Session-Token", token)])
            return answer.jsonObject?["standing"] as? String == expected
        }
    }

    private func post(_ server: ServerProcess, _ path: String, _ json: String, token: String? = nil) throws
        -> RawResponse
    {
        try RawHTTP.request(
            port: server.port, method: "POST", path: AllauthAppPath.base + "/" + path,
            headers: [("Content-Type", "application/json")] + (token.map { [("X-Session-Token", $0)] } ?? []),
            body: Data(json.utf8))
    }

    @Test("a reset mail arrives with To, From, Date, Message-ID and a link that works", arguments: Backend.allCases)
    func resetMailArrives(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let relay = try SMTPRelay()
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let server = try serve(data, relayPort: relay.port, database: url.rawText)
        #expect(
            try post(server, AllauthAppPath.signup, #"{"email":"ada@example.com","password":"correct horse battery"}"#)
                .status == 200)
        #expect(try post(server, AllauthAppPath.passwordResetRequest, #"{"email":"ada@example.com"}"#).status == 200)
        let message = try #require(relay.waitForMessages(1).first)
        #expect(header("To", in: message) == "ada@example.com")
        #expect(header("From", in: message) == "books@example.net")
        #expect(header("X-Envelope-To", in: message) == "ada@example.com")
        #expect(header("X-Envelope-From", in: message) == "books@example.net")
        let date = try #require(header("Date", in: message))
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        #expect(formatter.date(from: date).map { abs($0.timeIntervalSinceNow) < 120 } == true, "\(date)")
        #expect(header("Message-ID", in: message)?.hasSuffix("@books.example.net>") == true)
        // The link's key resets the password.
        let key = try #require(
            message.components(separatedBy: "/account/password/reset/key/").dropFirst().first?
                .prefix { !$0.isWhitespace })
        let reset = try post(
            server, AllauthAppPath.passwordReset, #"{"key":"\#(key)","password":"a brand new password"}"#)
        #expect([200, 401].contains(reset.status), "\(reset.text)")
        #expect(
            try post(server, AllauthAppPath.login, #"{"email":"ada@example.com","password":"a brand new password"}"#)
                .status == 200)
        #expect(server.stop() == 0)
    }

    @Test("a refused recipient becomes mail_failed in standing, and nothing else")
    func refusedRecipient() throws {
        let relay = try SMTPRelay()
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let server = try serve(data, relayPort: relay.port, signup: "approval")
        let signup = try post(
            server, AllauthAppPath.signup, #"{"email":"bo@refused.example","password":"correct horse battery"}"#)
        #expect(signup.status == 401, "waiting for approval")
        let token = try #require(signup.sessionToken)
        #expect(try standing(of: token, on: server, becomes: "mail_failed"))
        #expect(relay.messages.isEmpty)
        #expect(!server.standardError.contains("bo@refused.example"), "the address is never logged")
        #expect(server.stop() == 0)
    }

    @Test("a relay that never answers holds no request; the queued mail survives a restart")
    func silentRelayAndRestart() throws {
        // A port that accepts connections and never says a word.
        let silent = try RecordingListener(behaviour: .blackhole)
        let port = silent.port
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let server = try serve(data, relayPort: port)
        #expect(
            try post(server, AllauthAppPath.signup, #"{"email":"cy@example.com","password":"correct horse battery"}"#)
                .status == 200)
        for _ in 0..<3 {
            let started = ContinuousClock.now
            #expect(try post(server, AllauthAppPath.passwordResetRequest, #"{"email":"cy@example.com"}"#).status == 200)
            #expect(ContinuousClock.now - started < .seconds(2), "the request does not wait for the relay")
            #expect(try RawHTTP.request(port: server.port, path: HomeportPath.serverIdentity).status == 200)
        }
        #expect(server.stop() == 0)
        silent.stop()

        // The relay comes up on that port; the server restarts: the mail queued before goes out.
        let relay = try SMTPRelay(port: port)
        let again = try serve(data, relayPort: port)
        let messages = relay.waitForMessages(1, timeout: 20)
        #expect(messages.count >= 1 && messages.allSatisfy { header("To", in: $0) == "cy@example.com" })
        #expect(again.stop() == 0)
    }

    @Test("--mail-starttls required refuses a relay that offers no STARTTLS: the mail fails, it is not sent in clear")
    func startTLSRequired() throws {
        let relay = try SMTPRelay()
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let server = try serve(data, relayPort: relay.port, signup: "approval", extra: ["--mail-starttls", "required"])
        let signup = try post(
            server, AllauthAppPath.signup, #"{"email":"di@example.com","password":"correct horse battery"}"#)
        let token = try #require(signup.sessionToken)
        #expect(try standing(of: token, on: server, becomes: "mail_failed"))
        #expect(relay.messages.isEmpty, "nothing crossed in clear")
        #expect(server.stop() == 0)
    }
}
