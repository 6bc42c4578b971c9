import Foundation
import HomeportClient
import HomeportTestSupport
import Testing

/// Every `homeport` command that reaches a server, run as a person runs it, against every kind of
/// listener that lies: no listener that did not answer as the enrolled installation ever receives
/// one byte of a credential (the session token, the password, a new password, a device token).
///
/// Each case signs a fresh account up at a real server, registers a push token, then points the
/// enrolled record at the scenario's listeners: a primary that answers as another installation,
/// a proxy's HTML page, an off-host redirect or a certificate for another name, beside a verified
/// alternative (a relay to the real server) that is late, hangs or drops its connections.
// Three lanes, each one scenario at a time (a scenario runs five CLI processes at once): all nine
// at once would starve the rest of the suite on a small machine, and one at a time made the
// matrix, which mostly waits on its listeners' delays, the last of the suite to end.
@Suite(
    "The hostile-listener matrix: no credential byte at any listener that did not answer as the installation",
    .tags(.process))
struct HostileListenerMatrixTests {
    /// What the listeners do.
    enum Scenario: String, CaseIterable, Sendable {
        /// The primary answers as another installation; the verified alternative answers 0.1 s late.
        case alternativeLate100ms
        /// The same, 1 s late.
        case alternativeLate1s
        /// The same, 5 s late: past the probe deadline, so no answer at all.
        case alternativeLate5s
        /// The primary answers as another installation; the verified alternative answered 5 s late
        /// (no answer) while `address verify` and `address add` of it ran, then answers in time for
        /// the command: silence at a verify never hands the primary back its trust.
        case alternativeLateWhenVerified
        /// The primary answers as another installation; the alternative answers the probe, then
        /// holds every API request forever.
        case alternativeHangsOnAPI
        /// The same, but the alternative closes the connection on every API request.
        case alternativeDropsAPI
        /// The primary is a proxy answering every request with an HTML page; the alternative is fine.
        case primaryHTMLProxy
        /// The primary redirects every request to another host that claims the installation's
        /// (public) id; the alternative is fine.
        case primaryRedirectsOffHost
        /// The primary redirects every request to an HTTPS address with a certificate the command
        /// trusts, for its name, which answers the probe as another installation: a canonical name
        /// that is not the installation's, so nothing moves there; the alternative is fine.
        case primaryRedirectsToHTTPSImpostor
        /// The primary is HTTPS with a certificate from a CA the command trusts, for another name;
        /// the alternative is fine.
        case primaryWrongNameTLS
        /// The primary is fine; the four alternatives, each verified earlier on this network, now
        /// answer as another installation, with HTML, with an off-host redirect and with a
        /// certificate for another name.
        case everyAlternativeHostile
        /// The primary replays the installation's identity (its id, its public key and a signature
        /// it saw for another challenge); the alternative is fine.
        case primaryReplays
        /// The installation's own address is down; the alternative, verified earlier on this
        /// network, replays the installation's identity.
        case alternativeReplaysWhileTheInstallationIsDown

        /// Whether the impostor replays the installation's identity rather than another's.
        var replays: Bool { self == .primaryReplays || self == .alternativeReplaysWhileTheInstallationIsDown }

        /// Whether a command that needs the installation gets its answer through some address.
        var commandsSucceed: Bool {
            switch self {
            case .alternativeLate5s, .alternativeHangsOnAPI, .alternativeDropsAPI,
                .alternativeReplaysWhileTheInstallationIsDown:
                false
            default: true
            }
        }

        /// The test that runs the scenario: the lanes run side by side, each scenario of a lane
        /// after the other.
        var lane: Lane {
            switch self {
            case .alternativeLate100ms, .alternativeLate1s, .alternativeLate5s, .alternativeLateWhenVerified: .late
            case .alternativeHangsOnAPI, .alternativeDropsAPI: .failingAPI
            case .primaryHTMLProxy, .primaryRedirectsOffHost, .primaryRedirectsToHTTPSImpostor, .primaryWrongNameTLS,
                .everyAlternativeHostile, .primaryReplays, .alternativeReplaysWhileTheInstallationIsDown:
                .hostile
            }
        }

        /// Whether the session token goes to the address that answered as the installation (when
        /// it then hangs or drops the request, the command fails; past the probe deadline it is
        /// no answer, and nothing goes anywhere).
        var tokenGoesToTheInstallation: Bool {
            self != .alternativeLate5s && self != .alternativeReplaysWhileTheInstallationIsDown
        }
    }

    /// One command of the matrix.
    struct Command: Sendable, CustomStringConvertible {
        /// The arguments after `homeport`; `SERVER`, `PRIMARY`, `HOSTILE`, `EMAIL` and
        /// `OTHER_DEVICE` are replaced by the record's key, its primary URL, one hostile listener's
        /// URL, the account's address and a device token of the account's own.
        var arguments: [String]
        /// Standard input; `PASSWORD` and `NEW_PASSWORD` are replaced by the account's.
        var input = ""
        /// Whether it sends the session token (then the relay to the installation must see it
        /// exactly when the scenario lets it through, which shows the command did not just fail
        /// early).
        var sendsCredential = true
        /// Whether it exits 0 when the installation answers it, and not 0 when it cannot.
        var exitSaysWhetherItReached = true
        /// Whether the password is a credential here: `login` sends it where the person said.
        var passwordIsSecret = true
        /// Seconds after which it is stopped (a watch runs until stopped).
        var timeout: Double = 60

        var description: String { arguments.prefix(2).joined(separator: " ") }
    }

    /// Every command of the CLI that reaches a server.
    static let commands: [Command] = [
        Command(arguments: ["whoami", "SERVER"]),
        Command(arguments: ["api", "SERVER", "GET", "/api/v1/app-info"]),
        Command(
            arguments: [
                "api", "SERVER", "POST", "/api/v1/push/devices", "--data",
                #"{"token":"OTHER_DEVICE","environment":"sandbox"}"#,
            ]),
        Command(arguments: ["password", "change", "SERVER", "--password-stdin"], input: "PASSWORD\nNEW_PASSWORD\n"),
        Command(arguments: ["push", "register", "SERVER", "OTHER_DEVICE", "--environment", "sandbox"]),
        Command(arguments: ["push", "unregister", "SERVER"]),
        Command(arguments: ["push", "catalogue", "SERVER"]),
        Command(arguments: ["push", "test", "SERVER"], exitSaysWhetherItReached: false),
        Command(arguments: ["mute", "SERVER", "chat:1"]),
        Command(arguments: ["unmute", "SERVER", "chat:1"]),
        Command(arguments: ["mutes", "SERVER"]),
        Command(
            arguments: ["notifications", "watch", "SERVER", "--count", "1"], exitSaysWhetherItReached: false,
            timeout: 8),
        Command(arguments: ["logout", "SERVER"], exitSaysWhetherItReached: false),
        Command(arguments: ["remove", "SERVER"], exitSaysWhetherItReached: false),
        Command(arguments: ["address", "verify", "SERVER"], sendsCredential: false, exitSaysWhetherItReached: false),
        Command(
            arguments: ["address", "add", "SERVER", "HOSTILE", "--allow-http"], sendsCredential: false,
            exitSaysWhetherItReached: false),
        Command(
            arguments: ["login", "PRIMARY", "--email", "EMAIL", "--password-stdin", "--allow-http"],
            input: "PASSWORD\n", sendsCredential: false, exitSaysWhetherItReached: false, passwordIsSecret: false),
        Command(
            arguments: ["password", "reset", "PRIMARY", "--email", "EMAIL", "--allow-http"], sendsCredential: false,
            exitSaysWhetherItReached: false),
        Command(
            arguments: ["conformance", "PRIMARY", "--allow-http", "--timeout", "2"], sendsCredential: false,
            exitSaysWhetherItReached: false),
    ]

    /// The groups of scenarios that run side by side.
    enum Lane: Sendable { case late, failingAPI, hostile }

    /// The scenarios of `lane`.
    static func scenarios(_ lane: Lane) -> [Scenario] { Scenario.allCases.filter { $0.lane == lane } }

    @Test(
        "beside a verified alternative that answers late, no command sends a credential byte to a primary that answers as another installation",
        .serialized, .timeLimit(.minutes(5)), arguments: scenarios(.late))
    func lateAlternative(scenario: Scenario) async throws { try await Self.matrix(scenario: scenario) }

    @Test(
        "beside a verified alternative that hangs or drops every API request, no command sends a credential byte to a primary that answers as another installation",
        .serialized, .timeLimit(.minutes(5)), arguments: scenarios(.failingAPI))
    func failingAlternative(scenario: Scenario) async throws { try await Self.matrix(scenario: scenario) }

    @Test(
        "a primary, or every alternative, that answers HTML, redirects off the host, holds a certificate for another name or answers as another installation gets no credential byte from any command",
        .serialized, .timeLimit(.minutes(5)), arguments: scenarios(.hostile))
    func hostileListeners(scenario: Scenario) async throws { try await Self.matrix(scenario: scenario) }

    @Test("every scenario is in a lane that runs")
    func everyScenarioRuns() {
        #expect(Set([Lane.late, .failingAPI, .hostile].flatMap(Self.scenarios)) == Set(Scenario.allCases))
    }

    /// Every command against `scenario`'s listeners, five at a time.
    static func matrix(scenario: Scenario) async throws {
        let installation = try Installation(hosts: ["127.0.0.1"])
        let stage = try Stage(scenario, installationPort: try #require(installation.ports["127.0.0.1"]))
        defer { stage.stop() }

        // A few at a time: each command has its own account and state directory.
        var results: [(Command, Outcome)] = []
        for batch in stride(from: 0, to: Self.commands.count, by: 5) {
            let commands = Self.commands[batch..<min(batch + 5, Self.commands.count)]
            try await withThrowingTaskGroup(of: (Command, Outcome).self) { group in
                for (offset, command) in commands.enumerated() {
                    group.addTask { (command, try await stage.play(command, account: batch + offset)) }
                }
                for try await result in group { results.append(result) }
            }
        }

        for (command, outcome) in results {
            let context = "\(scenario) · homeport \(command) → exit \(outcome.status): \(outcome.error.prefix(300))"
            #expect(
                outcome.credentialBytesAtHostileListeners == 0,
                "\(outcome.credentialBytesAtHostileListeners) credential bytes reached a listener that did not answer as the installation: \(context)"
            )
            if command.sendsCredential {
                #expect(
                    outcome.tokenAtTheInstallation == scenario.tokenGoesToTheInstallation,
                    "the token \(outcome.tokenAtTheInstallation ? "went" : "did not go") to the installation: \(context)"
                )
            }
            if command.exitSaysWhetherItReached {
                #expect((outcome.status == 0) == scenario.commandsSucceed, "\(context)")
            }
        }
        // No request got past the handshake of a certificate for another name; the impostor with a
        // certificate for its own name got probes, which carry nothing secret (counted above).
        if scenario != .primaryRedirectsToHTTPSImpostor { #expect(stage.tls?.requests ?? [] == []) }
    }
}

/// What one command did.
struct Outcome: Sendable {
    var status: Int32
    var error: String
    var credentialBytesAtHostileListeners: Int
    var tokenAtTheInstallation: Bool
}

/// One scenario's listeners around one real installation.
final class Stage: @unchecked Sendable {
    let scenario: HostileListenerMatrixTests.Scenario
    let installationPort: Int
    /// Relays to the installation: the record's verified alternative (or its primary, when the
    /// alternatives are the hostile ones).
    let relay: RecordingListener
    /// Plain-HTTP listeners that must get nothing.
    let hostile: [RecordingListener]
    /// The HTTPS listener with a certificate for another name, and the CA the commands trust.
    let tls: TLSListener?
    /// The primary that redirects to the HTTPS impostor, in that scenario.
    let canonicalRedirector: RecordingListener?
    let certificates: TestCertificates?
    let id = UUID().uuidString.prefix(8).lowercased()

    init(_ scenario: HostileListenerMatrixTests.Scenario, installationPort: Int) throws {
        self.scenario = scenario
        self.installationPort = installationPort
        let fault: RecordingListener.RelayFault =
            switch scenario {
            case .alternativeLate100ms: .late(0.1)
            case .alternativeLate1s: .late(1)
            case .alternativeLate5s: .late(5)
            case .alternativeHangsOnAPI: .hangsOnAPI
            case .alternativeDropsAPI: .dropsAPI
            default: .none
            }
        relay = try RecordingListener(
            host: scenario == .everyAlternativeHostile ? "127.0.0.1" : "127.0.0.2",
            // Down: it accepts connections and never answers (a closed port could be taken by
            // another test's listener meanwhile).
            behaviour: scenario == .alternativeReplaysWhileTheInstallationIsDown
                ? .blackhole : .relay(port: installationPort, fault: fault))
        let impostor = try RecordingListener(
            host: "127.0.0.3",
            behaviour: .respond(
                status: 200, headers: Peer.json,
                body: scenario.replays
                    ? try Self.replayed(installationPort)
                    : #"{"instanceId":"\#(UUID())","product":"homeport","protocolVersion":1}"#))
        let html = try RecordingListener(
            host: "127.0.0.4",
            behaviour: .respond(
                status: 200, headers: ["Content-Type": "text/html"],
                body: "<html><body>Sign in to the Wi-Fi</body></html>"))
        // The redirect's target claims the installation's id, which is public.
        let claimant = try RecordingListener(host: "127.0.0.5", behaviour: .blackhole)
        let redirector = try RecordingListener(
            host: "127.0.0.6", behaviour: .respond(status: 302, headers: ["Location": claimant.url + "/"], body: ""))
        switch scenario {
        case .alternativeLate100ms, .alternativeLate1s, .alternativeLate5s, .alternativeLateWhenVerified,
            .alternativeHangsOnAPI, .alternativeDropsAPI, .primaryReplays,
            .alternativeReplaysWhileTheInstallationIsDown:
            hostile = [impostor]
        case .primaryHTMLProxy: hostile = [html]
        case .primaryRedirectsOffHost: hostile = [redirector, claimant]
        case .primaryRedirectsToHTTPSImpostor: hostile = []
        case .primaryWrongNameTLS: hostile = []
        case .everyAlternativeHostile: hostile = [impostor, html, redirector, claimant]
        }
        if scenario == .primaryRedirectsToHTTPSImpostor {
            let certificates = try TestCertificates()
            self.certificates = certificates
            let impostorTLS = try TLSListener(
                body: #"{"instanceId":"\#(UUID())","product":"homeport","protocolVersion":1}"#,
                certificates: certificates)
            tls = impostorTLS
            canonicalRedirector = try RecordingListener(
                host: "127.0.0.7",
                behaviour: .respond(
                    status: 301, headers: ["Location": impostorTLS.url + "/api/v1/server-identity"], body: ""))
        } else if scenario == .primaryWrongNameTLS || scenario == .everyAlternativeHostile {
            canonicalRedirector = nil
            let certificates = try TestCertificates(names: "DNS:other.invalid")
            self.certificates = certificates
            tls = try TLSListener(
                body: #"{"instanceId":"\#(UUID())","product":"homeport","protocolVersion":1}"#,
                certificates: certificates)
        } else {
            canonicalRedirector = nil
            certificates = nil
            tls = nil
        }
    }

    /// The installation's answer to a challenge of the stage's own: what a listener that copies
    /// the installation can replay (its id, its public key and a signature for another challenge).
    static func replayed(_ port: Int) throws -> String {
        let response = try RawHTTP.request(
            port: port, path: HomeportPath.serverIdentity + "?challenge=" + InstallationKeyCheck.challenge())
        guard response.status == 200, response.text.contains("signature") else {
            throw RawHTTPError("the installation proved no key: \(response.text)")
        }
        return response.text
    }

    func stop() {
        relay.stop()
        canonicalRedirector?.stop()
        hostile.forEach { $0.stop() }
        certificates?.directory.remove()
    }

    /// The record's primary and alternatives.
    var addresses: (primary: String, alternatives: [String]) {
        switch scenario {
        case .everyAlternativeHostile:
            return (relay.url, hostile.filter { $0.host != "127.0.0.5" }.map(\.url) + [tls!.url])
        case .primaryWrongNameTLS: return (tls!.url, [relay.url])
        case .primaryRedirectsToHTTPSImpostor: return (canonicalRedirector!.url, [relay.url])
        // The installation's own address, its relay, is down (stopped once everyone signed up).
        case .alternativeReplaysWhileTheInstallationIsDown: return (relay.url, [hostile[0].url])
        default: return (hostile[0].url, [relay.url])
        }
    }

    /// Signs `account` up at the installation itself, registers a push token, points the record
    /// at the scenario's addresses, then runs `command` as a person would. Every secret is the
    /// account's own, so that bytes found anywhere belong to this command.
    func play(_ command: HostileListenerMatrixTests.Command, account: Int) async throws -> Outcome {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let email = "m\(id)-\(account)@example.com"
        let secret = String(format: "%08x", account)
        let (password, newPassword) = ("correct horse \(secret)", "a new password, never astray \(secret)")
        let (device, otherDevice) = (
            String(repeating: "5e1ec7ed", count: 7) + secret, String(repeating: "0badc0de", count: 7) + secret
        )
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        let signup = try await Self.homeport(
            [
                "login", "http://127.0.0.1:\(installationPort)", "--email", email, "--password-stdin", "--allow-http",
                "--signup",
            ], environment, input: password + "\n")
        guard signup.status == 0 else { throw RawHTTPError("sign-up failed: \(signup.error)") }
        let directory = try ServerDirectory(directory: home.path)
        let key = try #require(directory.all.first?.key)
        let token = try #require(try FileVault(directory: home.file("vault")).token(for: key))
        let registered = try await Self.homeport(
            ["push", "register", key, device, "--environment", "sandbox"], environment)
        guard registered.status == 0 else { throw RawHTTPError("push register failed: \(registered.error)") }

        // The installation's own address for this command: the stage's relay, or one of its own
        // when the relay's behaviour changes in the middle of the command's setup.
        let relay = scenario == .alternativeLateWhenVerified ? try lateRelay() : self.relay
        defer { if relay !== self.relay { relay.stop() } }
        let (primaryURL, stagedAlternatives) = addresses
        let alternativeURLs = relay === self.relay ? stagedAlternatives : [relay.url]
        let primary = try ServerAddress(parsing: primaryURL, allowHTTP: true)
        let alternatives = try alternativeURLs.map { try ServerAddress(parsing: $0, allowHTTP: true) }
        _ = try directory.update(key) { record in
            record.primary = primary
            record.alternatives = alternatives.map { .init(address: $0, verifiedPaths: ["home": Date()]) }
            record.lastWinner = nil
        }
        if scenario == .alternativeLateWhenVerified {
            // Verified again while it answers past the probe deadline: no answer, so nothing changes.
            for verify in [["address", "verify", key], ["address", "add", key, relay.url, "--allow-http"]] {
                let run = try await Self.homeport(verify, environment)
                guard run.status != 0 else { throw RawHTTPError("\(verify[1]) took a late answer: \(run.output)") }
                // Silence withdraws nothing: the relay is still verified here.
                let kept = try directory.find(key).alternatives.first { $0.address.url == relay.url }
                guard kept?.verifiedPaths["home"] != nil else {
                    throw RawHTTPError(
                        "address \(verify[1]) withdrew the silent relay's verification: \(run.output) \(run.error)")
                }
            }
            relay.behaviour = .relay(port: installationPort, fault: .none)
        }
        let tokenAtRelayBefore = relay.credentialBytes([token])

        let fill = { (text: String) -> String in
            text.replacingOccurrences(of: "NEW_PASSWORD", with: newPassword)
                .replacingOccurrences(of: "PASSWORD", with: password)
                .replacingOccurrences(of: "OTHER_DEVICE", with: otherDevice)
        }
        var arguments = command.arguments.map { argument in
            switch argument {
            case "SERVER": key
            case "PRIMARY": primaryURL
            case "HOSTILE": hostile.first?.url ?? tls!.url
            case "EMAIL": email
            default: fill(argument)
            }
        }
        if let certificates { arguments += ["--ca-file", certificates.caFile] }
        let run = try await Self.homeport(arguments, environment, input: fill(command.input), timeout: command.timeout)

        let secrets = [token, device, otherDevice] + (command.passwordIsSecret ? [password, newPassword] : [])
        return Outcome(
            status: run.status, error: run.error,
            credentialBytesAtHostileListeners: (hostile + [canonicalRedirector].compactMap { $0 }).reduce(0) {
                $0 + $1.credentialBytes(secrets)
            } + (tls.map { listener in secrets.filter { listener.requests.joined().contains($0) }.count } ?? 0),
            tokenAtTheInstallation: relay.credentialBytes([token]) > tokenAtRelayBefore)
    }

    /// A relay of its own to the installation, 5 s late (past the probe deadline) until told otherwise.
    func lateRelay() throws -> RecordingListener {
        try RecordingListener(host: "127.0.0.2", behaviour: .relay(port: installationPort, fault: .late(5)))
    }

    /// Runs `homeport` on a thread of its own, so that waiting for it blocks no task.
    static func homeport(
        _ arguments: [String], _ environment: [String: String], input: String = "", timeout: Double = 60
    ) async throws -> (status: Int32, output: String, error: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        try ServerProcess.runClient(arguments, environment: environment, input: input, timeout: timeout)
                    })
            }
        }
    }
}
