import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportStorage
import Synchronization

/// The APNs provider token, shared by every replica through the `apns_provider_token` row.
///
/// Apple answers `TooManyProviderTokenUpdates` when a team's token changes too often, so replicas
/// must not each mint their own: the first that needs one (none stored, another key, or older than
/// ``refreshAge``) mints it and stores it with a compare-and-swap; the others read it.
final class ProviderTokenSource: Sendable {
    /// A token is replaced once it is this old (Apple: reuse 20–60 minutes).
    static let refreshAge: Int64 = 40 * 60
    /// A token younger than this is never replaced, even when Apple calls it expired.
    static let minimumAge: Int64 = 20 * 60

    private let database: any Database
    private let key: ES256Key
    private let keyID: String
    private let teamID: String
    private let clock: any WallClock
    private let cached = Mutex<ProviderToken?>(nil)

    init(database: any Database, key: ES256Key, keyID: String, teamID: String, clock: any WallClock) {
        self.database = database
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.clock = clock
    }

    /// The token to send with.
    func current() throws -> ProviderToken {
        let now = clock.unixSeconds
        if let token = cached.withLock({ $0 }), now - token.issuedAt < Self.refreshAge { return token }
        let stored = try read()
        if let stored, stored.keyID == keyID, stored.teamID == teamID, now - stored.issuedAt < Self.refreshAge {
            cached.withLock { $0 = stored }
            return stored
        }
        return try replace(stored, now: now)
    }

    /// After Apple refused `rejected` as expired: a newer token if another replica made one, else
    /// a new one (unless `rejected` is younger than ``minimumAge``, when minting again would only
    /// trip Apple's limit: then `nil`).
    func refresh(after rejected: ProviderToken) throws -> ProviderToken? {
        let now = clock.unixSeconds
        let stored = try read()
        if let stored, stored.jwt != rejected.jwt, stored.keyID == keyID, stored.teamID == teamID {
            cached.withLock { $0 = stored }
            return stored
        }
        guard now - rejected.issuedAt >= Self.minimumAge else { return nil }
        return try replace(stored, now: now)
    }

    /// Mints a token and stores it unless another replica stored one since `stored` was read;
    /// returns whichever is stored.
    private func replace(_ stored: ProviderToken?, now: Int64) throws -> ProviderToken {
        let minted = try ProviderToken.mint(key: key, keyID: keyID, teamID: teamID, issuedAt: now)
        let values: [SQLValue] = [.text(minted.keyID), .text(minted.teamID), .text(minted.jwt), .integer(now)]
        if let stored {
            try database.execute(
                """
                UPDATE apns_provider_token SET key_id = $1, team_id = $2, token = $3, issued_at = $4
                WHERE id = 1 AND token = $5
                """, values + [.text(stored.jwt)])
        } else {
            try database.execute(
                """
                INSERT INTO apns_provider_token (id, key_id, team_id, token, issued_at) VALUES (1, $1, $2, $3, $4)
                ON CONFLICT (id) DO NOTHING
                """, values)
        }
        guard let winner = try read() else {
            throw StorageError.statementFailed(code: "apns", message: "the provider token could not be read back")
        }
        cached.withLock { $0 = winner }
        return winner
    }

    private func read() throws -> ProviderToken? {
        guard
            let row = try database.execute(
                "SELECT key_id, team_id, token, issued_at FROM apns_provider_token WHERE id = 1"
            ).first, let keyID = row.string("key_id"), let teamID = row.string("team_id"),
            let jwt = row.string("token"), let issued = row.int("issued_at")
        else { return nil }
        return ProviderToken(jwt: jwt, keyID: keyID, teamID: teamID, issuedAt: issued)
    }
}
