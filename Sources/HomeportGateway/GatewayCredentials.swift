import Foundation
import HomeportStorage
import Synchronization

/// The digests of the live servers' credentials, as the gateway last read them: what a request's
/// head is checked against on the HTTP library's own threads, so that a working server's
/// requests cost no database round trip there.
///
/// A digest that is not among them is looked up once in the database (an indexed lookup: a
/// stranger costs that, instead of the 8 MiB body it may announce), and kept when it is live,
/// so a server enrolled a moment ago is known at once. The whole set is read again at most once
/// a second, so a revoked credential may pass the head check for as long; the handler, which
/// reads the database with the body, refuses it at once.
final class GatewayCredentials: Sendable {
    private struct State {
        var digests: Set<String> = []
        var readAt: ContinuousClock.Instant?
    }

    /// How long the set is used before it is read again.
    static let freshness: Duration = .seconds(1)

    private let database: any Database
    private let state = Mutex(State())

    init(database: any Database) {
        self.database = database
    }

    /// Whether `digest` names a live server: `true` also when the database cannot say (the
    /// handler then answers as it would have).
    func isLive(_ digest: String) -> Bool {
        let now = ContinuousClock.now
        let (known, stale) = state.withLock { state in
            (state.digests.contains(digest), state.readAt.map { now - $0 >= Self.freshness } ?? true)
        }
        if stale, let digests = try? GatewayServerStore(database).liveCredentialHashes() {
            state.withLock { state in
                state.digests = digests
                state.readAt = now
            }
            return digests.contains(digest)
        }
        if known { return true }
        let found: GatewayServer?
        do {
            found = try GatewayServerStore(database).live(credentialHash: digest)
        } catch {
            return true
        }
        guard found != nil else { return false }
        _ = state.withLock { $0.digests.insert(digest) }
        return true
    }
}
