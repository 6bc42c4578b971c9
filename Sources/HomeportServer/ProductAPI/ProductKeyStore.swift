import HomeportCrypto
import HomeportStorage

/// A key a product in another language sends to the product API (`Authorization: Bearer KEY`).
struct ProductKey: Sendable, Hashable {
    /// Its row id.
    var id: Int64
    /// The name the operator gave it (the product's, say).
    var name: String
    /// When it was made, in Unix seconds.
    var createdAt: Int64
    /// When it was revoked, in Unix seconds; `nil` while it works.
    var revokedAt: Int64?
}

/// The `product_keys` table: product API keys, stored as their SHA-256 only, and the
/// `product_notifications` table that remembers each key's idempotency keys.
struct ProductKeyStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Stores a new key's digest under `name`; `nil` when the name is taken.
    func create(name: String, keyHash: String, now: Int64) throws -> ProductKey? {
        let row = try db.execute(
            """
            INSERT INTO product_keys (name, key_hash, created_at) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO NOTHING RETURNING id
            """, [.text(name), .text(keyHash), .integer(now)]
        ).first
        return row?.int("id").map { ProductKey(id: $0, name: name, createdAt: now, revokedAt: nil) }
    }

    /// Every key, oldest first.
    func all() throws -> [ProductKey] {
        try db.execute("SELECT id, name, created_at, revoked_at FROM product_keys ORDER BY id").compactMap(Self.key)
    }

    /// The working key whose digest is `keyHash`, if any.
    func live(keyHash: String) throws -> ProductKey? {
        try db.execute(
            "SELECT id, name, created_at, revoked_at FROM product_keys WHERE key_hash = $1 AND revoked_at IS NULL",
            [.text(keyHash)]
        ).first.flatMap(Self.key)
    }

    /// Revokes the key named `name` and frees the codes it declared (another key may declare
    /// them); false when no working key has that name. Call it inside a transaction.
    func revoke(name: String, now: Int64) throws -> Bool {
        guard
            let id = try db.execute(
                "UPDATE product_keys SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL RETURNING id",
                [.text(name), .integer(now)]
            ).first?.int("id")
        else { return false }
        try db.execute("DELETE FROM product_codes WHERE key_id = $1", [.integer(id)])
        return true
    }

    /// Gives the working key named `name` a new secret, `keyHash`: the old one is refused from
    /// then on, and the key keeps its codes and its idempotency keys. False when no working key
    /// has that name.
    func rotate(name: String, keyHash: String) throws -> Bool {
        !(try db.execute(
            "UPDATE product_keys SET key_hash = $2 WHERE name = $1 AND revoked_at IS NULL RETURNING id",
            [.text(name), .text(keyHash)]
        ).isEmpty)
    }

    /// What `key` sent under `idempotencyKey`: the digest of that request's body, the
    /// notification's number and how many pushes it queued; `nil` for nothing yet.
    func sent(key: Int64, idempotencyKey: String) throws -> (requestHash: String, seq: Int64, queued: Int)? {
        guard
            let row = try db.execute(
                """
                SELECT request_hash, seq, queued FROM product_notifications
                WHERE key_id = $1 AND idempotency_key = $2 AND seq > 0
                """, [.integer(key), .text(idempotencyKey)]
            ).first, let hash = row.string("request_hash"), let seq = row.int("seq"), let queued = row.int("queued")
        else { return nil }
        return (hash, seq, Int(queued))
    }

    /// Claims `idempotencyKey` for `key`, in the transaction that makes the notification and
    /// records it (``complete(key:idempotencyKey:userID:seq:queued:)``); false when a request
    /// with it made its notification already. On PostgreSQL a claim made by a transaction still
    /// at work waits for it. A claim with no notification (`seq = 0`: a crash between two
    /// statements, before both were one transaction) is no claim: it is taken over.
    func claim(key: Int64, idempotencyKey: String, requestHash: String, now: Int64) throws -> Bool {
        try db.execute(
            "DELETE FROM product_notifications WHERE key_id = $1 AND idempotency_key = $2 AND seq = 0",
            [.integer(key), .text(idempotencyKey)])
        return
            !(try db.execute(
                """
                INSERT INTO product_notifications (key_id, idempotency_key, request_hash, seq, queued, created_at)
                VALUES ($1, $2, $3, 0, 0, $4) ON CONFLICT (key_id, idempotency_key) DO NOTHING RETURNING key_id
                """, [.integer(key), .text(idempotencyKey), .text(requestHash), .integer(now)]
            ).isEmpty)
    }

    /// Records what the claimed request made, and for which account.
    func complete(key: Int64, idempotencyKey: String, userID: Int64, seq: Int64, queued: Int) throws {
        try db.execute(
            "UPDATE product_notifications SET seq = $3, queued = $4 WHERE key_id = $1 AND idempotency_key = $2",
            [.integer(key), .text(idempotencyKey), .integer(seq), .integer(Int64(queued))])
        try db.execute(
            """
            INSERT INTO product_notification_accounts (key_id, idempotency_key, user_id) VALUES ($1, $2, $3)
            ON CONFLICT (key_id, idempotency_key) DO NOTHING
            """, [.integer(key), .text(idempotencyKey), .integer(userID)])
    }

    /// Forgets every Idempotency-Key that notified `userID` (the account is being deleted).
    func forgetNotifications(userID: Int64) throws {
        try db.execute(
            """
            DELETE FROM product_notifications WHERE (key_id, idempotency_key) IN (
                SELECT key_id, idempotency_key FROM product_notification_accounts WHERE user_id = $1)
            """, [.integer(userID)])
    }

    private static func key(_ row: Row) -> ProductKey? {
        guard let id = row.int("id"), let name = row.string("name"), let created = row.int("created_at") else {
            return nil
        }
        return ProductKey(id: id, name: name, createdAt: created, revokedAt: row.int("revoked_at"))
    }
}
