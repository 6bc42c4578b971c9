import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real django-allauth headless server (app client) under gunicorn on loopback: the
/// reference Homeport's app door is compared with. `scripts/test` installs it into a
/// virtualenv and exports `HOMEPORT_TEST_ALLAUTH_DIR` and `HOMEPORT_TEST_ALLAUTH_PYTHON`.
public final class AllauthPeer: @unchecked Sendable {
    private let process = Process()
    private let directory: TemporaryDirectory
    private let python: String
    private let source: String
    private let environment: [String: String]
    /// Its port.
    public let port: Int

    /// Migrates a fresh SQLite database and starts gunicorn with `workers` workers; with
    /// `verifyByCode`, addresses must be verified by a mailed code
    /// (`ACCOUNT_EMAIL_VERIFICATION_BY_CODE_ENABLED`, two resends allowed); with `mfa` (the
    /// default, as homeport-server offers it), allauth's MFA app is on: TOTP with one step of
    /// skew, recovery codes shown once; with `webAuthn` too, it serves WebAuthn and recovery
    /// codes instead, passkey sign-in on, any origin taken.
    /// With `oidcIssuer`, allauth's socialaccount app signs people in with ID tokens of that
    /// OpenID Connect provider (`household`, client `homeport-app`).
    public init(
        workers: Int = 1, fastHasher: Bool = true, verifyByCode: Bool = false, mfa: Bool = true,
        webAuthn: Bool = false, oidcIssuer: String? = nil
    ) throws {
        let environment = ProcessInfo.processInfo.environment
        let peer = try TestPeer.allauth()
        let (source, python) = (peer.source, peer.python)
        directory = try TemporaryDirectory()
        self.python = python
        self.source = source
        var peerEnvironment = environment
        peerEnvironment["ALLAUTH_DB"] = directory.file("allauth.sqlite3")
        peerEnvironment["ALLAUTH_MAIL"] = directory.file("mail")
        if fastHasher { peerEnvironment["ALLAUTH_FAST_HASHER"] = "1" }
        if verifyByCode { peerEnvironment["ALLAUTH_VERIFY_BY_CODE"] = "1" }
        if mfa { peerEnvironment["ALLAUTH_MFA"] = "1" }
        if webAuthn { peerEnvironment["ALLAUTH_WEBAUTHN"] = "1" }
        if let oidcIssuer { peerEnvironment["ALLAUTH_OIDC_URL"] = oidcIssuer }
        self.environment = peerEnvironment

        let migrate = Process()
        migrate.executableURL = URL(fileURLWithPath: python)
        migrate.arguments = ["manage.py", "migrate", "-v0"]
        migrate.currentDirectoryURL = URL(fileURLWithPath: source)
        migrate.environment = peerEnvironment
        try migrate.spawn()
        guard migrate.waitForExit() == 0 else { throw RawHTTPError("allauth migrate failed") }

        port = try RawHTTP.freePort()
        process.executableURL = URL(fileURLWithPath: python)
        // The test runner blocks some signals and children inherit the mask: unblock them so that
        // gunicorn's own handlers (and so a quick SIGINT shutdown) work.
        let arguments = [
            "gunicorn", "--workers", String(workers), "--bind", "127.0.0.1:\(port)", "--log-level", "warning",
            "wsgi_app:application",
        ]
        process.arguments =
            [
                "-c",
                "import signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); sys.argv = sys.argv[1:]; "
                    + "from gunicorn.app.wsgiapp import run; run()",
            ] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: source)
        process.environment = peerEnvironment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.spawn()
        let port = port
        let answered = eventually(timeout: .seconds(10), every: .milliseconds(50)) {
            (try? RawHTTP.request(port: port, path: "/_allauth/app/v1/config", timeout: 2))?.status == 200
        }
        if answered { return }
        process.stop()
        throw RawHTTPError("gunicorn with django-allauth did not start on port \(port)")
    }

    deinit {
        process.stop(signal: SIGINT)  // gunicorn's quick shutdown
        directory.remove()
    }

    /// The peer's own SQLite database.
    public var databasePath: String { directory.file("allauth.sqlite3") }

    /// Runs Python in the peer's Django (`manage.py shell -c CODE`); throws with its error output
    /// when it fails.
    @discardableResult
    public func shell(_ code: String) throws -> String {
        let run = try ServerProcess.runProgram(
            python, ["manage.py", "shell", "-c", code], directory: source, environment: environment, timeout: 120)
        guard run.status == 0 else { throw RawHTTPError("manage.py shell failed: \(run.error)") }
        return run.output
    }

    /// The mails allauth wrote (file backend), concatenated.
    public var mail: String {
        mailText(in: directory.file("mail"))
    }
}

/// Every mail file in `folder` (an outbox, or allauth's file backend), in name order, concatenated.
public func mailText(in folder: String) -> String {
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    return names.compactMap { try? String(contentsOfFile: folder + "/" + $0, encoding: .utf8) }.joined(separator: "\n")
}

extension RawHTTP {
    /// A TCP port that was free a moment ago on 127.0.0.1 and 127.0.0.2, for a server a test starts
    /// on it.
    ///
    /// It is drawn below the kernel's ephemeral range (`ip_local_port_range`): the kernel hands out
    /// ports from that range to every connection's own end and every server bound to port 0, so a
    /// port let go there can be taken by another test before the server binds it ("Address
    /// already in use"). Past 200 draws that are all taken, a port from the kernel, as before.
    public static func freePort() throws -> Int {
        let lowest = ephemeralRangeStart()
        if lowest > 10_001 {
            for _ in 0..<200 {
                let port = Int.random(in: 10_000..<lowest)
                if (try? DeadPort(host: "127.0.0.1", port: port)) != nil,
                    (try? DeadPort(host: "127.0.0.2", port: port)) != nil
                {
                    return port
                }
            }
        }
        return try DeadPort().port
    }

    /// The first port of the kernel's ephemeral range (32768 when it cannot be read).
    private static func ephemeralRangeStart() -> Int {
        let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        return text?.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
    }

    /// Waits until something accepts connections on `port` of 127.0.0.1: true, or false after
    /// about `seconds`.
    public static func waitUntilListening(port: Int, seconds: Double = 4) -> Bool {
        eventually(timeout: .milliseconds(Int(seconds * 1000))) {
            guard let fd = try? connect(port: port, timeout: 1) else { return false }
            close(fd)
            return true
        }
    }
}
