import HomeportCrypto
import HomeportStorage

/// Turns a session token into the caller, in one query: the only code that reads a session
/// token. The API prefix, the app door, the web door and standing all get their caller from it.
struct SessionReader: Sendable {
    let database: any Database
    let clock: any WallClock
    /// Signed-in callers read within the last second (see ``SessionCache``); `nil` reads every time.
    let cache: SessionCache?

    /// The caller a token names at `kind`'s door. `nil` or blank is no credential; anything
    /// else that is not a live session of that door is `.invalid`.
    func caller(token: String?, kind: SessionKind) throws -> Caller {
        guard let token, token.contains(where: { $0 != " " && $0 != "\t" }) else { return .none }
        guard SecretToken.isWellFormed(token) else { return .invalid }
        let now = clock.unixSeconds
        if let cache, let (session, account) = cache.lookup(token: token, kind: kind, now: now) {
            return .signedIn(session, account)
        }
        let keyHash = SecretToken.storedForm(of: token)
        // Read before the row: a session that ends while the row is read is not kept.
        let generation = SessionCache.currentGeneration
        guard let (session, account) = try SessionStore(database).lookup(keyHash: keyHash, kind: kind, now: now)
        else { return .invalid }
        guard session.userID != nil else { return .preLogin(session, token: token) }
        // An account that left `approved` has no sessions (they end in the same transaction);
        // one found here anyway is refused.
        guard let account, account.approval == .approved else { return .invalid }
        cache?.store(session, account, token: token, generation: generation)
        return .signedIn(session, account)
    }
}
