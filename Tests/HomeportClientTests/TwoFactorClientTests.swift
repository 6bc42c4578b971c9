import Foundation
import HomeportClient
import HomeportCrypto
import HomeportTestSupport
import HomeportWire
import Testing

/// Two-factor sign-in from the library and from the command line, against django-allauth (its MFA
/// app) and against homeport-server: the code is asked for, passed in and forgotten; nothing of
/// it, nor the key or the recovery codes, is ever in the client's state on disk.
@Suite("Two-factor sign-in from the client, on django-allauth and homeport-server", .tags(.process))
struct TwoFactorClientTests {
    typealias Peer = ClientAuthFlowTests.Peer

    /// The TOTP code of the current step plus `steps`.
    static func code(_ secret: String, steps: Int64 = 0) throws -> String {
        try #require(AuthenticatorApp.code(secret: secret, steps: steps))
    }

    /// Every file under `directory`, read as text, concatenated.
    static func everything(under directory: String) -> String {
        let files = FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String } ?? []
        return files.compactMap { try? String(contentsOfFile: directory + "/" + $0, encoding: .utf8) }
            .joined(separator: "\n")
    }

    /// The JSON objects a command printed one after another (each pretty-printed, ending with a
    /// line `}`), as far as they are complete.
    static func jsonObjects(in output: String) -> [[String: Any]] {
        var objects: [[String: Any]] = []
        var current = ""
        for line in output.split(separator: "\n", omittingEmptySubsequences: false) {
            current += line + "\n"
            if line == "}" {
                if let object = try? JSONSerialization.jsonObject(with: Data(current.utf8)) as? [String: Any] {
                    objects.append(object)
                }
                current = ""
            }
        }
        return objects
    }

    /// Waits, when the current 30-second step ends within `margin` seconds, for the next one: a
    /// flow that uses the code of "the next step" must not see the step change under it.
    static func awayFromStepEnd(margin: Int = 8) {
        while 30 - Int(Date().timeIntervalSince1970) % 30 <= margin { usleep(200_000) }
    }

    @Test(
        "the library turns TOTP on, signs in with a code it is given and forgets, and with a recovery code; nothing reaches disk",
        arguments: Peer.allCases)
    func library(peer: Peer) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try ClientAuthFlowTests.start(peer)
        defer { withExtendedLifetime(server.keepAlive) {} }
        let client = try makeClient(home, SpyTransport())
        let email = "second@example.com"
        guard case .signedIn(let record) = try await client.signup(at: server.address, email: email, password: password)
        else { throw RawHTTPError("signup did not sign in") }
        #expect(try await client.authenticators(record.key).isEmpty)

        Self.awayFromStepEnd()
        let setup = try #require(try await client.beginTOTPSetup(record.key))
        #expect(setup.url.hasPrefix("otpauth://totp/") && setup.url.contains(setup.secret))
        await #expect {
            _ = try await client.enableTOTP(record.key, code: "000000", password: password)
        } throws: { error in
            guard case ClientError.rejected(400, let errors) = error else { return false }
            return errors.map(\.code) == ["incorrect_code"]
        }
        await #expect {
            _ = try await client.enableTOTP(record.key, code: try Self.code(setup.secret), password: "not the password")
        } throws: { error in
            guard case ClientError.rejected(400, let errors) = error else { return false }
            return errors.map(\.code) == ["incorrect_password"]
        }
        let recovery = try await client.enableTOTP(record.key, code: try Self.code(setup.secret), password: password)
        #expect(recovery.count == 10)
        #expect(try await client.beginTOTPSetup(record.key) == nil, "on already")
        #expect(try await client.authenticators(record.key).map(\.type) == ["totp", "recovery_codes"])

        #expect(try await client.logout(record.key) == .revoked)
        guard
            case .secondFactorRequired(let pending) = try await client.login(
                at: server.address, email: email, password: password)
        else { throw RawHTTPError("login did not ask for a second factor") }
        #expect(pending.types == ["recovery_codes", "totp"])
        #expect(
            try FileVault(directory: home.file("vault")).token(for: record.key) == nil, "no session before the code")
        await #expect {
            _ = try await client.completeSecondFactor(pending, code: "999999")
        } throws: { error in
            guard case ClientError.rejected(400, let errors) = error else { return false }
            return errors.map(\.code) == ["incorrect_code"]
        }
        let next = try Self.code(setup.secret, steps: 1)
        guard case .signedIn(let again) = try await client.completeSecondFactor(pending, code: next) else {
            throw RawHTTPError("the code did not sign in")
        }
        #expect(try await client.send("GET", "/_allauth/app/v1/auth/session", to: again.key).response.status == 200)

        #expect(try await client.logout(again.key) == .revoked)
        guard
            case .secondFactorRequired(let byRecovery) = try await client.login(
                at: server.address, email: email, password: password)
        else { throw RawHTTPError("login did not ask for a second factor") }
        guard case .signedIn(let third) = try await client.completeSecondFactor(byRecovery, code: recovery[4]) else {
            throw RawHTTPError("the recovery code did not sign in")
        }
        let fresh = try await client.regenerateRecoveryCodes(third.key, password: password)
        #expect(fresh.count == 10 && Set(fresh).isDisjoint(with: recovery))
        try await client.disableTOTP(third.key, password: password)
        #expect(try await client.authenticators(third.key).isEmpty)

        let state = Self.everything(under: home.path)
        #expect(!state.isEmpty)
        for secret in [setup.secret, next, password] + recovery + fresh {
            #expect(!state.contains(secret), "a second-factor secret, code or the password reached the client's state")
        }
    }

    @Test(
        "the command line: mfa totp enable reads the code after showing the key, login reads the code on the next line, recovery codes, mfa totp disable",
        arguments: Peer.allCases)
    func commandLine(peer: Peer) throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try ClientAuthFlowTests.start(peer)
        defer { withExtendedLifetime(server.keepAlive) {} }
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        func run(_ arguments: [String], input: String = "") throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.runClient(arguments, environment: environment, input: input)
        }
        let url = server.address.url
        let signup = try signUpWithCommandLine(url, environment: environment)
        #expect(signup.status == 0, "\(signup.error)")
        let key = try #require(
            (try JSONSerialization.jsonObject(with: Data(try run(["servers", "--json"]).output.utf8))
                as? [[String: Any]])?.first?["server"] as? String)
        #expect(try run(["mfa", "totp", "enable", key]).status == 2, "no --password-stdin")

        Self.awayFromStepEnd()
        let enabled = try Interactive.run(
            ServerProcess.clientPath, ["mfa", "totp", "enable", key, "--password-stdin", "--json"],
            environment: environment, first: password + "\n"
        ) { output in
            guard let shown = Self.jsonObjects(in: output).first?["secret"] as? String else { return nil }
            return ((try? Self.code(shown)) ?? "") + "\n"
        }
        #expect(enabled.status == 0, "\(enabled.error)")
        let objects = Self.jsonObjects(in: enabled.output)
        let offer = try #require(objects.first)
        let secret = try #require(offer["secret"] as? String)
        #expect((offer["url"] as? String)?.hasPrefix("otpauth://totp/") == true)
        let result = try #require(objects.last)
        let recovery = try #require(result["recoveryCodes"] as? [String])
        #expect(result["totp"] as? Bool == true && recovery.count == 10)
        let status = try run(["mfa", "status", key, "--json"])
        #expect(status.status == 0 && Self.jsonObjects(in: status.output).first?["totp"] as? Bool == true)

        #expect(try run(["logout", key]).status == 0)
        let login = ["login", url, "--email", "ada@example.com", "--password-stdin", "--allow-http", "--json"]
        let noCode = try run(login, input: password + "\n")
        #expect(noCode.status == 1 && noCode.error.contains("no code given"), "\(noCode.error)")
        let wrongThenRight = try run(login, input: password + "\n123456\n" + (try Self.code(secret, steps: 1)) + "\n")
        #expect(wrongThenRight.status == 0, "\(wrongThenRight.error)")
        #expect(wrongThenRight.error.contains("Incorrect code"), "\(wrongThenRight.error)")
        if peer == .homeport { #expect(try run(["whoami", key]).status == 0, "signed in (allauth has no app-info)") }

        #expect(try run(["logout", key]).status == 0)
        let withRecovery = try run(login, input: password + "\n" + recovery[0] + "\n")
        #expect(withRecovery.status == 0, "\(withRecovery.error)")
        let fresh = try run(["mfa", "recovery-codes", key, "--password-stdin", "--json"], input: password + "\n")
        let codes = Self.jsonObjects(in: fresh.output).first?["recoveryCodes"] as? [String] ?? []
        #expect(fresh.status == 0 && codes.count == 10, "\(fresh.error)")
        let disabled = try run(["mfa", "totp", "disable", key, "--password-stdin"], input: password + "\n")
        #expect(disabled.status == 0 && disabled.output.contains("off"), "\(disabled.error)")

        let state = Self.everything(under: home.path)
        for value in [secret, password] + recovery + codes {
            #expect(!state.contains(value), "a second-factor secret, code or the password reached the client's state")
        }
    }
}

/// A program run with a conversation on its standard input: `first` at once, then, once, whatever
/// `answer` makes of its standard output so far (`nil`: not yet).
enum Interactive {
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String], first: String,
        answer: @escaping @Sendable (String) -> String?
    ) throws -> (status: Int32, output: String, error: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        let error = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = input
        try process.spawn()
        input.fileHandleForWriting.write(Data(first.utf8))
        var collected = Data()
        var answered = false
        let reader = output.fileHandleForReading
        while true {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            collected.append(chunk)
            if !answered, let reply = answer(String(decoding: collected, as: UTF8.self)) {
                input.fileHandleForWriting.write(Data(reply.utf8))
                try? input.fileHandleForWriting.close()
                answered = true
            }
        }
        if !answered { try? input.fileHandleForWriting.close() }
        let errors = error.fileHandleForReading.readDataToEndOfFile()
        let status = process.waitForExit()
        return (
            status, String(decoding: collected, as: UTF8.self),
            String(decoding: errors, as: UTF8.self)
        )
    }
}
