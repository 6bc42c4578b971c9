import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

/// What the client says and prints: true, and free of terminal controls (issue 8, findings 6 and 10).
@Suite("Messages say what happened, and server text cannot drive the terminal", .tags(.process))
struct HonestMessagesTests {
    /// Scalars a terminal acts on: C0 controls other than newline and tab, DEL, and C1 controls.
    static func controls(_ text: String) -> [UInt32] {
        text.unicodeScalars.map(\.value).filter {
            ($0 < 0x20 && $0 != 0x0A && $0 != 0x09) || (0x7F...0x9F).contains($0)
        }
    }

    static let hostile = #"evil\u001b]0;owned\u0007\u009b2J\u001b[2J"#

    @Test("product, version, e-mail, error messages and Location headers reach neither the terminal nor the store raw")
    func serverTextIsCleaned() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let appInfo = RecordingListener.Canned(
            200, Peer.json,
            #"{"features":[],"product":"\#(Self.hostile)","protocolVersion":1,"version":"\#(Self.hostile)","#
                + #""instanceId":"\#(id)"}"#)
        let server = try RecordingListener(
            behaviour: .routes([
                "POST " + AllauthAppPath.path(AllauthAppPath.login): .init(
                    200, Peer.json,
                    #"{"data":{"user":{"display":"x","email":"ada\#(Self.hostile)@example.com","id":1,"#
                        + #""has_usable_password":true}},"meta":{"is_authenticated":true,"session_token":"t"},"#
                        + #""status":200}"#),
                HomeportPath.serverIdentity: .init(
                    200, Peer.json,
                    #"{"instanceId":"\#(id)","product":"\#(Self.hostile)","protocolVersion":1}"#),
                HomeportPath.appInfo: appInfo,
            ]))
        let refuser = try RecordingListener(
            behaviour: .respond(
                status: 400, headers: Peer.json,
                body: #"{"status":400,"errors":[{"code":"invalid","param":null,"message":"\#(Self.hostile)"}]}"#))
        let redirector = try RecordingListener(
            behaviour: .respond(status: 302, headers: ["Location": "http://127.0.0.2:1/\u{1b}]0;owned\u{07}"], body: "")
        )
        let hostRedirector = try RecordingListener(
            behaviour: .respond(status: 302, headers: ["Location": "http://evil\u{1b}[2J.example/"], body: ""))
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        func login(_ url: String) throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.runClient(
                ["login", url, "--email", "ada@example.com", "--password-stdin", "--allow-http"],
                environment: environment, input: password + "\n")
        }
        var runs = [try login(server.url)]
        #expect(runs[0].status == 0, "\(runs[0].error)")
        runs.append(try ServerProcess.runClient(["servers"], environment: environment))
        runs.append(try ServerProcess.runClient(["servers", "--json"], environment: environment))
        runs.append(try ServerProcess.runClient(["whoami", id.description], environment: environment))
        runs.append(try ServerProcess.runClient(["whoami", id.description, "--json"], environment: environment))
        runs.append(try login(refuser.url))
        runs.append(try login(redirector.url))
        for target in [redirector, hostRedirector] {
            runs.append(
                try ServerProcess.runClient(
                    ["address", "add", id.description, target.url, "--allow-http"], environment: environment))
        }
        for (index, run) in runs.enumerated() {
            #expect(Self.controls(run.output).isEmpty, "run \(index) printed controls: \(run.output)")
            #expect(Self.controls(run.error).isEmpty, "run \(index) printed controls: \(run.error)")
        }
        #expect(runs[3].output.contains("evil"), "the text is shown, without its controls: \(runs[3].output)")
        let stored = try String(contentsOfFile: home.file("servers.json"), encoding: .utf8)
        #expect(!stored.lowercased().contains("u001b") && !stored.lowercased().contains("u009b"), "\(stored)")
        #expect(Self.controls(stored).isEmpty)
    }

    @Test("the app door's error messages reach the app without terminal controls")
    func refusalsAreCleaned() async throws {
        let refuser = try RecordingListener(
            behaviour: .respond(
                status: 400, headers: Peer.json,
                body: #"{"status":400,"errors":[{"code":"invalid","param":"email","message":"\#(Self.hostile)"}]}"#))
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let client = try makeClient(home, SpyTransport())
        await #expect {
            try await client.login(
                at: try ServerAddress(parsing: refuser.url, allowHTTP: true), email: "ada@example.com",
                password: password)
        } throws: { error in
            guard case ClientError.rejected(400, let errors) = error else { return false }
            return errors.map(\.code) == ["invalid"] && errors.allSatisfy { Self.controls($0.message).isEmpty }
                && errors.first?.message.contains("evil") == true
        }
    }

    @Test("re-adding an existing alternative probes it again; one that no longer matches is refused")
    func readdingProbesAgain() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try RecordingListener(behaviour: .routes([HomeportPath.serverIdentity: Peer.identity(id)]))
        let alternative = try RecordingListener(
            host: "127.0.0.2", behaviour: .routes([HomeportPath.serverIdentity: Peer.identity(id)]))
        let address = try ServerAddress(parsing: alternative.url, allowHTTP: true)
        let (client, _) = try scriptedClient(home, record: try record(id, primary: primary.url))
        try await client.addAddress(address, to: id.description)
        alternative.behaviour = .routes([HomeportPath.serverIdentity: Peer.identity(InstanceID(UUID()))])
        let probesBefore = alternative.requests.count
        await #expect(throws: ClientError.self) { try await client.addAddress(address, to: id.description) }
        #expect(alternative.requests.count > probesBefore, "it was probed again")
        let stored = try client.directory.find(id.description)
        #expect(stored.alternatives.first { $0.address == address }?.verifiedPaths["home"] == nil)
    }

    @Test("a request that timed out after it was sent is not reported as 'nothing was sent'")
    func timeoutAfterSending() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try RecordingListener(
            behaviour: .routes([HomeportPath.serverIdentity: Peer.identity(id), HomeportPath.appInfo: .never]))
        let enrolled = try record(id, primary: primary.url)
        let (client, _) = try scriptedClient(home, record: enrolled)
        do {
            _ = try await client.appInfo(enrolled.key)
            Issue.record("a request that got no answer succeeded")
        } catch let error as ClientError {
            #expect(!error.description.contains("nothing was sent"), "\(error)")
            #expect(error.description.contains("was sent"), "\(error)")
        }
        #expect(primary.sawCredential)
    }

    @Test("an off-host redirect to an IPv6 address is shown with brackets")
    func ipv6Brackets() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let target = try RecordingListener(host: "::1", behaviour: .respond(status: 404, headers: [:], body: ""))
        let redirector = try RecordingListener(
            behaviour: .respond(
                status: 302, headers: ["Location": target.url + HomeportPath.serverIdentity], body: ""))
        let primary = try RecordingListener(
            host: "127.0.0.2", behaviour: .routes([HomeportPath.serverIdentity: Peer.identity(id)]))
        let (client, _) = try scriptedClient(home, record: try record(id, primary: primary.url))
        await #expect(throws: ClientError.offHostRedirect(address: redirector.url, target: target.url)) {
            try await client.addAddress(try ServerAddress(parsing: redirector.url, allowHTTP: true), to: id.description)
        }
        #expect(try ServerAddress(parsing: "http://[::1]:81", allowHTTP: true).origin == "http://[::1]:81")
    }

    @Test("a sign-in whose app-info fails is not enrolled, and the session it opened is given back")
    func signInWithBrokenAppInfo() async throws {
        for broken in [
            RecordingListener.Canned(500, Peer.json, #"{"error":{"code":"internal_error","message":"x"}}"#),
            Peer.notAuthenticated, .init(200, Peer.json, #"{"product":1}"#),
        ] {
            let server = try RecordingListener(
                behaviour: .routes([
                    "POST " + AllauthAppPath.path(AllauthAppPath.login): Peer.signedIn(
                        token: "fresh", email: "ada@example.com"),
                    "DELETE " + AllauthAppPath.path(AllauthAppPath.session): Peer.signedOutEnvelope,
                    HomeportPath.appInfo: broken,
                ]))
            let home = try TemporaryDirectory()
            defer { home.remove() }
            let client = try makeClient(home, SpyTransport())
            await #expect(throws: ClientError.self, "\(broken.status)") {
                try await client.login(
                    at: try ServerAddress(parsing: server.url, allowHTTP: true), email: "ada@example.com",
                    password: password)
            }
            #expect(client.directory.all.isEmpty, "\(broken.body)")
            #expect(server.requests.contains { $0.hasPrefix("DELETE ") }, "\(broken.body)")
        }
    }

    @Test(
        "a pinned server reset answers as another installation: the command says how to take it on; logout with a credential that does not open says so"
    )
    func commandLineMessages() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        let primary = try mine.address("127.0.0.1").url
        let login = try signUpWithCommandLine(primary, environment: environment)
        #expect(login.status == 0, "\(login.error)")
        let old = try #require(try mine.identity())
        _ = try ServerProcess.runClient(
            ["address", "add", primary, try mine.address("127.0.0.2").url, "--allow-http"], environment: environment)

        mine.stop()
        #expect(
            try ServerProcess.run(["identity", "reset", "--replicas-stopped", "--database", mine.database]).status == 0)
        try mine.start()
        let new = try #require(try mine.identity())
        // Its key is pinned: another id at its addresses gets nothing, and the person is told
        // how to take the new installation on.
        let whoami = try ServerProcess.runClient(["whoami", primary], environment: environment)
        #expect(whoami.status != 0, "\(whoami.output)")
        #expect(whoami.error.contains("homeport remove \(old.description)"), "\(whoami.error)")
        #expect(whoami.error.contains(new.description) && whoami.error.contains(primary), "\(whoami.error)")
        #expect(try ServerProcess.runClient(["remove", old.description], environment: environment).status == 0)
        let again = try ServerProcess.runClient(
            ["login", primary, "--email", "ada@example.com", "--password-stdin", "--allow-http"],
            environment: environment, input: password + "\n")
        #expect(again.status == 0, "\(again.error)")

        let vault = try FileVault(directory: home.file("vault"))
        try Data("damaged".utf8).write(to: URL(fileURLWithPath: vault.path(new.description)))
        let logout = try ServerProcess.runClient(["logout", primary], environment: environment)
        #expect(logout.status == 0)
        #expect(!logout.output.contains("could not be reached"), "\(logout.output)")
        #expect(logout.output.contains("could not be read"), "\(logout.output)")
    }
}
