import HomeportWire

/// Why a client operation failed. Every description says what happened, and whether anything
/// was sent where it matters; text that came from a server is cleaned of terminal controls.
public enum ClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text is not an address the client accepts.
    case invalidAddress(String)
    /// Plain HTTP was not explicitly allowed for this address.
    case plainHTTPNotAllowed(String)
    /// The address answered as another installation; no credential was sent.
    case identityMismatch(address: String, seen: InstanceID)
    /// The address answered the probe, but not as the enrolled installation (`outcome` says how).
    case probeFailed(address: String, outcome: String)
    /// The address cannot be used that way (it is already the primary, it is not an alternative).
    case addressNotApplicable(String)
    /// The address did not answer as a Homeport server.
    case notHomeport(address: String, detail: String)
    /// The address answered with something that is not the API (an HTML page, say), described by `answer`.
    case notAnAPI(address: String, answer: String)
    /// The address refused the session with an answer that cannot end it (not the API's own
    /// refusal, or from an address that did not answer as the enrolled installation): the session
    /// was kept.
    case sessionKept(address: String, detail: String)
    /// A verified alternative's app-info reports another installation: the alternative lost its
    /// verification (only the primary's app-info can change the enrolled id).
    case alternativeDisowned(address: String, seen: InstanceID)
    /// A sign-in at a new address that says it is an enrolled installation could not be confirmed
    /// through that installation's own addresses; nothing was changed.
    case claimNotConfirmed(address: String, server: String, detail: String)
    /// A sign-in got a session but the client did not keep it, for the reason `error`; the client
    /// asked the server to end that session again, and says whether it confirmed.
    indirect case signInNotKept(ClientError, sessionEnded: Bool)
    /// The state directory (or the vault inside it) is not one only this user can write.
    case unsafeDirectory(path: String, reason: String)
    /// The address redirected to another origin; nothing was sent there.
    case offHostRedirect(address: String, target: String)
    /// No address answered in time, or the connection failed.
    case unreachable(address: String, reason: String)
    /// The answer was larger than the limit.
    case tooLarge(address: String, limit: Int)
    /// No address of the server could be verified on the current network path; nothing was sent.
    case noVerifiedAddress(server: String, detail: String)
    /// The server refused the credential with the API's own answer (401/410): the account is signed out.
    case signedOut(server: String)
    /// The server answered the auth API with an error envelope.
    case rejected(status: Int, errors: [AuthFieldError])
    /// The server refused an API request with its JSON error (`code`, and the request `field` it is
    /// about, when it says).
    case refused(address: String, status: Int, code: String, message: String, field: String?)
    /// A value given to the client is not one it can send (a device token, a thread name).
    case invalidInput(String)
    /// The server answered something the client cannot read.
    case badAnswer(address: String, detail: String)
    /// No enrolled server matches.
    case unknownServer(String)
    /// Several servers match a prefix.
    case ambiguousServer(String, candidates: [String])
    /// The vault could not store or read a credential.
    case vault(String)

    /// A sentence for people, free of terminal controls.
    public var description: String { ServerText.clean(sentence, limit: nil) }

    private var sentence: String {
        switch self {
        case .invalidAddress(let text): "'\(text)' is not an address: a server's address is https://HOST[:PORT]"
        case .plainHTTPNotAllowed(let text): "\(text) is plain HTTP, which was not allowed for this address"
        case .identityMismatch(let address, let seen):
            "\(address) answered as a different installation (id \(seen)); nothing was sent"
        case .probeFailed(let address, let outcome):
            "\(address) did not answer as the installation: \(outcome); nothing was sent"
        case .addressNotApplicable(let text): text
        case .notHomeport(let address, let detail): "\(address) is not a Homeport server (\(detail)); nothing was sent"
        case .notAnAPI(let address, let answer):
            "\(address) answered with \(answer), not the Homeport API (a sign-in proxy?)"
        case .sessionKept(let address, let detail):
            "\(address) \(detail); the session was kept on this device (sign in again if it really ended)"
        case .alternativeDisowned(let address, let seen):
            "\(address) was a verified address, but its app-info reports another installation (id \(seen)); "
                + "it is no longer verified, and only the primary's app-info can change the server's id"
        case .claimNotConfirmed(let address, let server, let detail):
            "\(address) says it is \(server), but that could not be confirmed through the addresses "
                + "\(server) is enrolled with (\(detail)); nothing was changed"
        case .signInNotKept(let error, let ended):
            error.sentence + "; the session this sign-in opened "
                + (ended ? "was ended again" : "could not be ended, and may stay valid until it expires")
        case .unsafeDirectory(let path, let reason):
            "refusing to keep credentials in \(path): \(reason); use a directory only you can write"
        case .offHostRedirect(let address, let target):
            "\(address) redirected to another address (\(target)); nothing was sent there"
        case .unreachable(let address, let reason): "\(address) did not answer: \(reason)"
        case .tooLarge(let address, let limit): "\(address) answered more than \(limit) bytes"
        case .noVerifiedAddress(let server, let detail):
            "no address of \(server) answered as that installation on this network (\(detail)); nothing was sent"
        case .signedOut(let server): "\(server) signed this account out; sign in again"
        case .rejected(let status, let errors):
            errors.isEmpty ? "the server refused (\(status))" : errors.map(\.message).joined(separator: " ")
        case .refused(let address, let status, let code, let message, let field):
            "\(address) refused the request (\(status) \(code)\(field.map { ", field \($0)" } ?? "")): \(message)"
        case .invalidInput(let text): text
        case .badAnswer(let address, let detail): "\(address) answered something unreadable: \(detail)"
        case .unknownServer(let text): "no server matches '\(text)'"
        case .ambiguousServer(let text, let candidates):
            "'\(text)' matches several servers: \(candidates.joined(separator: ", "))"
        case .vault(let detail): "the credential vault failed: \(detail)"
        }
    }

    /// Whether the exchange failed in transport (no answer in time, no connection), the one failure
    /// after which a read may be tried on another address.
    var isUnreachable: Bool {
        if case .unreachable = self { return true }
        return false
    }

    /// Whether the exchange ran out of its time, rather than failing at once (refused, a TLS
    /// failure): the address may still be there and slow. Transports word a timeout with
    /// ``deadlineReason(seconds:sent:)``, so that this can tell.
    var isTimeout: Bool {
        guard case .unreachable(_, let reason) = self else { return false }
        return reason.hasPrefix(Self.noAnswer) || reason.hasPrefix(Self.noConnection)
    }

    private static let noAnswer = "no answer within "
    private static let noConnection = "no connection within "

    /// What every transport says of a request that used up its deadline of `seconds`: whether it
    /// had been sent (`sent`), had not (`false`), or may have been (`nil`).
    static func deadlineReason(seconds: Int, sent: Bool?) -> String {
        switch sent {
        case true?: noAnswer + "\(seconds) s after the request was sent"
        case false?: noConnection + "\(seconds) s; nothing was sent"
        case nil: noAnswer + "\(seconds) s (the request may have been sent)"
        }
    }
}
