import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportStorage
import Synchronization

/// The APNs provider token, shared by every replica through the `apns_provider_token` row.
///
/// The token is a bearer credential for an hour (anyone holding it can push to the app's
/// devices), so the row keeps it sealed (AES-256-GCM) with a key derived from the APNs auth key,
/// which every sending replica holds and the database never does: a copy of the database opens
/// nothing. A row from an older build (the token in clear) is read once and replaced.
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
    /// The sealing key, derived from the auth key.
    private let sealing: [UInt8]
    /// The prefix of a sealed row.
    static let sealedPrefix = "sealed:v1:"

    init(database: any Database, key: ES256Key, keyID: String, teamID: String, clock: any WallClock) throws {
        self.database = database
        self.sealing = try key.derivedSecret("homeport apns provider token")
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
        if let token = stored?.token, token.keyID == keyID, token.teamID == teamID,
            now - token.issuedAt < Self.refreshAge
        {
            cached.withLock { $0 = token }
            return token
        }
        return try replace(stored?.raw, now: now)
    }

    /// After Apple refused `rejected` as expired: a newer token if another replica made one, else
    /// a new one (unless `rejected` is younger than ``minimumAge``, when minting again would only
    /// trip Apple's limit: then `nil`).
    func refresh(after rejected: ProviderToken) throws -> ProviderToken? {
        let now = clock.unixSeconds
        let stored = try read()
        if let token = stored?.token, token.jwt != rejected.jwt, token.keyID == keyID, token.teamID == teamID {
            cached.withLock { $0 = token }
            return token
        }
        guard now - rejected.issuedAt >= Self.minimumAge else { return nil }
        return try replace(stored?.raw, now: now)
    }

    /// Mints a token and stores it, sealed, unless another replica stored one since the row
    /// `stored` (as the column held it) was read; returns whichever is stored.
    private func replace(_ stored: String?, now: Int64) throws -> ProviderToken {
        let minted = try ProviderToken.mint(key: key, keyID: keyID, teamID: teamID, issuedAt: now)
        let sealed = try seal(minted)
        let values: [SQLValue] = [.text(minted.keyID), .text(minted.teamID), .text(sealed), .integer(now)]
        if let stored {
            try database.execute(
                """
                UPDATE apns_provider_token SET key_id = $1, team_id = $2, token = $3, issued_at = $4
                WHERE id = 1 AND token = $5
                """, values + [.text(stored)])
        } else {
            try database.execute(
                """
                INSERT INTO apns_provider_token (id, key_id, team_id, token, issued_at) VALUES (1, $1, $2, $3, $4)
                ON CONFLICT (id) DO NOTHING
                """, values)
        }
        // Another replica's token wins the race; one this key cannot open (another auth key) is ours.
        let winner = try read()?.token ?? minted
        cached.withLock { $0 = winner }
        return winner
    }

    /// The row: the column as stored, and the token when this key opens it (or it is an older
    /// build's token in clear).
    private func read() throws -> (raw: String, token: ProviderToken?)? {
        guard
            let row = try database.execute(
                "SELECT key_id, team_id, token, issued_at FROM apns_provider_token WHERE id = 1"
            ).first, let keyID = row.string("key_id"), let teamID = row.string("team_id"),
            let raw = row.string("token"), let issued = row.int("issued_at")
        else { return nil }
        let jwt: String?
        if raw.hasPrefix(Self.sealedPrefix) {
            jwt = Data(base64Encoded: String(raw.dropFirst(Self.sealedPrefix.count))).flatMap { box in
                try? AESGCM.open(Array(box), key: sealing, associatedData: Self.associatedData(keyID, teamID))
            }.map { String(decoding: $0, as: UTF8.self) }
        } else {
            jwt = raw
        }
        return (raw, jwt.map { ProviderToken(jwt: $0, keyID: keyID, teamID: teamID, issuedAt: issued) })
    }

    private func seal(_ token: ProviderToken) throws -> String {
        let box = try AESGCM.seal(
            Array(token.jwt.utf8), key: sealing, associatedData: Self.associatedData(token.keyID, token.teamID))
        return Self.sealedPrefix + Data(box).base64EncodedString()
    }

    /// What a sealed token is bound to: its key and team, as the row names them.
    static func associatedData(_ keyID: String, _ teamID: String) -> [UInt8] {
        Array("apns-provider-token\u{0}\(keyID)\u{0}\(teamID)".utf8)
    }
}
