import Foundation
import HomeportLogging
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import Testing

/// A mailer that keeps mail in memory, or fails every send.
final class MemoryMailer: Mailer, @unchecked Sendable {
    private let lock = NSLock()
    private var sent: [Mail] = []
    let fails: Bool

    init(fails: Bool = false) { self.fails = fails }

    struct Failure: Error, CustomStringConvertible {
        var description: String { "the mail relay refused the message" }
    }

    func send(_ mail: Mail) throws {
        if fails { throw Failure() }
        lock.withLock { sent.append(mail) }
    }

    var mails: [Mail] { lock.withLock { sent } }

    /// The code in the last verification mail to `email`.
    func verificationCode(for email: String) -> String? {
        guard let mail = mails.last(where: { $0.to == email && $0.kind == "verification_code" }) else { return nil }
        return mail.body.firstMatch(of: /[A-Z]{4}-[A-Z]{4}/).map { String($0.output) }
    }

    /// The reset key in the last reset mail to `email`.
    func resetKey(for email: String) -> String? {
        guard let mail = mails.last(where: { $0.to == email && $0.kind == "password_reset" }) else { return nil }
        return mail.body.components(separatedBy: "key: ").last?.prefix(43).description
    }
}

/// A running in-process server with accounts, a manual clock and a memory mailer.
struct AccountsHarness {
    let application: HomeportApplication
    let clock: ManualWallClock
    let mailer: MemoryMailer
    let log: MemoryLogSink
    let url: DatabaseURL
    var port: Int { application.port }

    /// Sends a JSON request to the app door (`path` relative to `/_allauth/app/v1/`) or any path.
    func app(
        _ method: String, _ path: String, token: String? = nil, json: [String: Any]? = nil,
        headers: [(String, String)] = []
    ) throws -> RawResponse {
        var all = headers
        if let token { all.append(("X-Session-Token", token)) }
        var body: Data?
        if let json {
            all.append(("Content-Type", "application/json"))
            body = try JSONSerialization.data(withJSONObject: json)
        }
        let full = path.hasPrefix("/") ? path : "/_allauth/app/v1/" + path
        return try RawHTTP.request(port: port, method: method, path: full, headers: all, body: body)
    }

    /// Asks a password reset for `email` and sets `password` with the key mailed; the reset's
    /// answer (401 once it is set: every session ended).
    @discardableResult
    func resetPassword(_ email: String, to password: String) throws -> RawResponse {
        #expect(try app("POST", "auth/password/request", json: ["email": email]).status == 200)
        let key = try #require(mailer.resetKey(for: email))
        return try app("POST", "auth/password/reset", json: ["key": key, "password": password])
    }

    /// Signs up (open signup) or logs in, and returns the session token.
    func signIn(_ email: String, _ password: String = "correct horse battery") throws -> String {
        var response = try app("POST", "auth/signup", json: ["email": email, "password": password])
        if response.errorCodes == ["email_taken"] {
            response = try app("POST", "auth/login", json: ["email": email, "password": password])
        }
        guard response.status == 200, let token = response.sessionToken else {
            throw RawHTTPError("could not sign in \(email): \(response.status) \(response.text)")
        }
        return token
    }

    /// `GET /api/v1/app-info` with the token.
    func appInfo(_ token: String?) throws -> RawResponse {
        try RawHTTP.request(
            port: port, path: "/api/v1/app-info", headers: token.map { [("X-Session-Token", $0)] } ?? [])
    }

    /// `GET /api/v1/auth/standing` with the token.
    func standing(_ token: String?) throws -> RawResponse {
        try RawHTTP.request(
            port: port, path: "/api/v1/auth/standing", headers: token.map { [("X-Session-Token", $0)] } ?? [])
    }
}

extension RawResponse {
    /// `meta.session_token` of an allauth envelope.
    var sessionToken: String? {
        (jsonObject?["meta"] as? [String: Any])?["session_token"] as? String
    }

    /// The `code`s of an allauth 400 envelope.
    var errorCodes: [String] {
        ((jsonObject?["errors"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
    }

    /// The `code` of Homeport's own error shape (`{"error": {"code": …}}`).
    var apiErrorCode: String? {
        (jsonObject?["error"] as? [String: Any])?["code"] as? String
    }
}

/// The secrets key file of every PostgreSQL test server of this process: replicas of one
/// database must share one (SQLite servers use the file beside their database).
let testSecretsKeyFile: String = {
    let path = NSTemporaryDirectory() + "homeport-test-secrets-\(getpid()).key"
    _ = FileManager.default.createFile(
        atPath: path, contents: Data(String(repeating: "5e", count: 32).utf8), attributes: [.posixPermissions: 0o600])
    return path
}()

/// Runs `body` against a fresh in-process server with accounts.
func withAccounts<T>(
    _ backend: Backend, signup: SignupPolicy = .open, emailVerification: EmailVerificationPolicy = .none,
    rateLimits: RateLimitPolicy = RateLimitPolicy(),
    publicURL: String? = nil, failingMailer: Bool = false, hasher: GatedHasher? = nil,
    push: PushSettings = PushSettings(), clockStart: Date = Date(timeIntervalSince1970: 1_800_000_000),
    workerThreads: Int = 2, poolThreads: Int = 4, product: Product = .homeport, database: DatabaseURL? = nil,
    invitations: InvitationPolicy = .admins, _ body: (AccountsHarness) throws -> T
) throws -> T {
    // Unless the caller brings a database, a copy of one already migrated: the server's start then
    // finds Homeport's migrations applied.
    let (url, cleanUp): (DatabaseURL, @Sendable () -> Void) =
        try database.map { ($0, {}) } ?? backend.makeMigratedDatabaseURL()
    defer { cleanUp() }
    var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: url)
    configuration.http.workerThreads = workerThreads
    // Enough pool threads that requests held at a gated hash on purpose do not queue behind
    // one another.
    configuration.http.poolThreads = poolThreads
    configuration.accounts = AccountSettings(
        signup: signup, passwordIterations: 1000, rateLimits: rateLimits, publicURL: publicURL,
        emailVerification: emailVerification)
    configuration.accounts.invitations = invitations
    configuration.push = push
    if case .postgres = url { configuration.secretsKeyFile = testSecretsKeyFile }
    let clock = ManualWallClock(clockStart)
    let mailer = MemoryMailer(fails: failingMailer)
    let log = MemoryLogSink()
    let application = try HomeportApplication(
        configuration: configuration, product: product,
        logger: Logger(label: "test", minimumLevel: .debug, sink: log), mailer: mailer, clock: clock, hasher: hasher)
    try application.start()
    defer { application.shutdown() }
    return try body(AccountsHarness(application: application, clock: clock, mailer: mailer, log: log, url: url))
}

extension String {
    /// The same token with its first character replaced: well-formed, but never issued.
    var withFirstCharacterChanged: String {
        (first == "x" ? "y" : "x") + dropFirst()
    }
}
