import Foundation
import HomeportWire

/// The test account the session checks sign in with.
struct ConformanceAccount: Sendable {
    /// Its address.
    let email: String
    /// Its password (never printed).
    let password: String
    /// With `--change-password`: the password changed to and back from (never printed).
    let temporaryPassword: String?
}

/// What a check says: a result and a sentence.
struct ConformanceOutcome: Sendable {
    /// The result.
    let result: ConformanceResult
    /// What was seen.
    let detail: String

    /// A pass.
    static func pass(_ detail: String) -> Self { Self(result: .pass, detail: detail) }
    /// A failure.
    static func fail(_ detail: String) -> Self { Self(result: .fail, detail: detail) }
    /// An older server.
    static func olderServer(_ detail: String) -> Self { Self(result: .olderServer, detail: detail) }
    /// Not run.
    static func skipped(_ detail: String) -> Self { Self(result: .skipped, detail: detail) }

    /// Passes when `problems` is empty, else fails with them.
    static func judge(_ problems: [String], passing detail: String) -> Self {
        problems.isEmpty ? .pass(detail) : .fail(problems.joined(separator: "; "))
    }
}

/// Runs every check against one server, in order, and keeps a row for each. Later checks use what
/// earlier ones learned (the identity, the session tokens). A check never stops the run: whatever
/// the server answers, its row says so.
final class ConformanceRun {
    /// Where the requests go.
    let http: ConformanceHTTP
    /// The test account, when one was given.
    let account: ConformanceAccount?
    /// The directory the server's mail lands in (`--mailbox`), for verification by code.
    let mailbox: String?
    private(set) var rows: [ConformanceRow] = []

    /// The identity route's answer without credentials, once asked.
    var identityAnswer: ConformanceAnswer?
    /// Its fields, when they were well formed.
    var identity: (product: String, instanceID: String)?
    /// The identity route answered 404: an older server, without Homeport's API prefix.
    var olderServer = false
    /// The test account's live session token.
    var token: String?
    /// Other tokens this run was given (logged out at the end).
    var otherTokens: [String] = []
    /// Browser sessions this run signed in at the web door (signed out at the end).
    var webSessions: [ConformanceWebSession] = []
    /// What must never be printed: the passwords and every token seen.
    private var secrets: [String] = []

    init(http: ConformanceHTTP, account: ConformanceAccount?, mailbox: String? = nil) {
        self.http = http
        self.account = account
        self.mailbox = mailbox
        if let account { secrets = [account.password] + (account.temporaryPassword.map { [$0] } ?? []) }
    }

    /// Runs every check, then ends the sessions it opened.
    func run() async -> [ConformanceRow] {
        await record(.identityShape, identityShape)
        await record(.identityHeaders, identityHeaders)
        await record(.identityCredentialBlind, identityCredentialBlind)
        await record(.identityProof, identityProof)
        await record(.appInfoAnonymous, appInfoAnonymous)
        await record(.standingStranger, standingStranger)
        await record(.appDoorConfig, appDoorConfig)
        await record(.appDoorInvalidToken, appDoorInvalidToken)
        await record(.appDoorNoToken, appDoorNoToken)
        await record(.appDoorEmptyToken, appDoorEmptyToken)
        await record(.handoff, handoff)
        await record(.login, login)
        await record(.sessionStatus, sessionStatus)
        await record(.appInfoSignedIn, appInfoSignedIn)
        await record(.apiHeaderOnly, apiHeaderOnly)
        await record(.pushRegistration, pushRegistration)
        await record(.catalogueETag, catalogueETag)
        await record(.mutes, mutes)
        await record(.stream, stream)
        await record(.loginWhileSignedIn, loginWhileSignedIn)
        await record(.secondLogin, secondLogin)
        await record(.passwordChange, passwordChange)
        await record(.household, household)
        await record(.logout, logout)
        await record(.wrongPassword, wrongPassword)
        await record(.invitationRefused, invitationRefused)
        await record(.verificationByCode, verificationByCode)
        await endSessions()
        return rows
    }

    /// Runs one check; whatever it throws is its failure.
    private func record(_ check: ConformanceCheck, _ body: () async throws -> ConformanceOutcome) async {
        let outcome: ConformanceOutcome
        do {
            outcome = try await body()
        } catch let failure as ProbeFailure {
            outcome = .fail(failure.description)
        } catch {
            outcome = .fail("\(error)")
        }
        rows.append(ConformanceRow(check: check, result: outcome.result, detail: redacted(outcome.detail)))
    }

    /// Remembers a token as a secret; returns it.
    @discardableResult
    func keep(_ token: String) -> String {
        secrets.append(token)
        return token
    }

    /// `text` with every secret replaced: a server that echoes a token or a password cannot make
    /// this command print it.
    func redacted(_ text: String) -> String {
        secrets.filter { $0.count >= 4 }.reduce(text) { $0.replacingOccurrences(of: $1, with: "[redacted]") }
    }

    /// Ends, as best it can, every session this run still holds.
    private func endSessions() async {
        for token in (token.map { [$0] } ?? []) + otherTokens {
            _ = try? await http.send(
                "DELETE", AllauthAppPath.path(AllauthAppPath.session), headers: [HomeportHeader.sessionToken: token])
        }
        for session in webSessions { await webSignOut(session) }
        token = nil
        otherTokens = []
        webSessions = []
    }

    /// The outcome of a check that needs the identity route, on an older server.
    static let noPrefix = ConformanceOutcome.olderServer(
        "no identity route (404), so no Homeport API prefix: a client keeps this server single-address")

    /// The outcome of a session check run without an account.
    static let noAccount = ConformanceOutcome.skipped(
        "needs a test account: --email EMAIL --password-stdin (an account that exists and is approved)")

    /// The outcome of a session check after login gave no token.
    static let noSession = ConformanceOutcome.skipped("login gave no session token (see login)")
}
