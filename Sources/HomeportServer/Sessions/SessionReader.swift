import HomeportCrypto
import HomeportStorage

/// Turns a session token into the caller, in one query: the only code that reads a session
/// token. The API prefix, the app door, the web door and standing all get their caller from it.
struct SessionReader: Sendable {
    let database: any Database
    let clock: any WallClock

    /// The caller a token names at `kind`'s door. `nil` or blank is no credential; anything
    /// else that is not a live session of that door is `.invalid`.
    func caller(token: String?, kind: SessionKind) throws -> Caller {
        guard let token, token.contains(where: { $0 != " " && $0 != "\t" }) else { return .none }
        guard SecretToken.isWellFormed(token),
            let (session, account) = try SessionStore(database).lookup(
                keyHash: SecretToken.storedForm(of: token), kind: kind, now: clock.unixSeconds)
        else { return .invalid }
        guard session.userID != nil else { return .preLogin(session, token: token) }
        // An account that left `approved` has no sessions (they end in the same transaction);
        // one found here anyway is refused.
        guard let account, account.approval == .approved else { return .invalid }
        return .signedIn(session, account)
    }
}
