import HomeportStorage
import HomeportWire

/// One notification to one device, waiting in the outbox.
package struct OutboxItem: Sendable, Hashable {
    /// The row.
    package var id: Int64
    /// The `apns-id` header (a UUID), the same on every attempt.
    package var apnsID: String
    /// The device token.
    package var deviceToken: String
    /// Which APNs host.
    package var environment: PushEnvironment
    /// The `apns-topic` (the app's bundle id).
    package var topic: String
    /// The payload, as sent.
    package var payload: String
    /// The `apns-collapse-id`, when there is one.
    package var collapseID: String?
    /// The `apns-priority` (10 at once, 5 when convenient).
    package var priority: Int
    /// The `apns-expiration`, in Unix seconds (0: now or never).
    package var expiration: Int64
    /// Attempts made so far.
    package var attempts: Int
    /// Which push service carries it.
    package var provider: PushProvider = .apns
    /// For Web Push: where it goes and the keys that encrypt it.
    package var webPush: WebPushTarget?
    /// For FCM: the app's registration token.
    package var fcmToken: String?
}

extension OutboxItem {
    /// A push that is no row of this server's outbox (a push gateway's, sent as it arrived).
    package init(
        apnsID: String, deviceToken: String, environment: PushEnvironment, topic: String, payload: String,
        collapseID: String?, priority: Int, expiration: Int64, provider: PushProvider, webPush: WebPushTarget?,
        fcmToken: String?
    ) {
        self.init(
            id: 0, apnsID: apnsID, deviceToken: deviceToken, environment: environment, topic: topic, payload: payload,
            collapseID: collapseID, priority: priority, expiration: expiration, attempts: 0, provider: provider,
            webPush: webPush, fcmToken: fcmToken)
    }
}

/// The `push_outbox` table. Every replica's sender claims rows for a lease, so two replicas never
/// send the same row (PostgreSQL skips rows another claim has locked; SQLite has one writer).
struct PushOutbox {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    func enqueue(_ item: OutboxItem, now: Int64) throws {
        try db.execute(
            """
            INSERT INTO push_outbox (apns_id, device_token, environment, topic, payload, collapse_id, priority,
                expiration, attempts, next_attempt_at, state, created_at, provider, endpoint, p256dh, auth)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, 'pending', $9, $10, $11, $12, $13)
            """,
            [
                .text(item.apnsID), .text(item.deviceToken), .text(item.environment.rawValue), .text(item.topic),
                .text(item.payload), item.collapseID.map(SQLValue.text) ?? .null, .integer(Int64(item.priority)),
                .integer(item.expiration), .integer(now), .text(item.provider.rawValue),
                (item.webPush?.endpoint ?? item.fcmToken).map(SQLValue.text) ?? .null,
                item.webPush.map { .text($0.p256dh) } ?? .null,
                item.webPush.map { .text($0.auth) } ?? .null,
            ])
    }

    /// Claims up to `limit` rows for `providers` for `claimant`, until `now + lease`: first those
    /// whose earlier claim's lease ran out (oldest first), then those due (most overdue first,
    /// then oldest).
    ///
    /// Two statements, each of which reads its rows in the order of an index (`push_outbox_due`:
    /// state, next attempt, id) and stops at its limit; one statement with both conditions made
    /// SQLite gather every due row and sort them all for each batch, which was most of a drain.
    ///
    /// On SQLite it must run in a transaction (one writer at a time: the rows it reads are the
    /// rows it sets). With `lapsed` false it looks only for due rows: a sender asks for lapsed
    /// leases once a second, not with each batch (the rows in flight are read to tell).
    func claim(
        _ claimant: String, limit: Int, now: Int64, lease: Int64, dialect: SQLDialect,
        providers: Set<PushProvider> = [.apns], lapsed: Bool = true
    ) throws -> [OutboxItem] {
        // The names are the enum's own words, never text from outside.
        let kinds = providers.map { "'\($0.rawValue)'" }.sorted().joined(separator: ", ")
        guard !kinds.isEmpty, limit > 0 else { return [] }
        // Every row claimed counts against the limit, one that does not read as an item too.
        func claim(_ condition: String, order: String, limit: Int) throws -> [Row] {
            guard dialect == .sqlite else {
                return try db.execute(
                    """
                    UPDATE push_outbox SET state = 'sending', claimed_by = $1, claimed_until = $2
                    WHERE id IN (
                        SELECT id FROM push_outbox WHERE \(condition) AND provider IN (\(kinds))
                        ORDER BY \(order) LIMIT $4 FOR UPDATE SKIP LOCKED)
                    RETURNING \(Self.itemColumns)
                    """, [.text(claimant), .integer(now + lease), .integer(now), .integer(Int64(limit))])
            }
            // Read, then set by id. SQLite's UPDATE … RETURNING of the whole row copies every row it
            // returns into a table of its own before the first is read, and its IN (SELECT …)
            // another. In a transaction nobody writes between the two; the UPDATE asks again all
            // the same, so that a row set meanwhile (by a caller without one) is not claimed twice.
            // NOT INDEXED: by the ids, not by the condition's index, which spans every due row.
            let rows = try db.execute(
                """
                SELECT \(Self.itemColumns) FROM push_outbox WHERE \(condition) AND provider IN (\(kinds))
                ORDER BY \(order) LIMIT $4
                """, [.null, .null, .integer(now), .integer(Int64(limit))])  // $1 and $2 are the UPDATE's
            var claimed: Set<Int64> = []
            for (chunk, placeholders) in SQLList.chunks(rows.compactMap { $0.int(at: 0) }, first: 4) {
                let set = try db.execute(
                    """
                    UPDATE push_outbox NOT INDEXED SET state = 'sending', claimed_by = $1, claimed_until = $2
                    WHERE id IN (\(placeholders)) AND \(condition) RETURNING id
                    """, [.text(claimant), .integer(now + lease), .integer(now)] + chunk.map(SQLValue.integer))
                claimed.formUnion(set.compactMap { $0.int(at: 0) })
            }
            return claimed.count == rows.count ? rows : rows.filter { $0.int(at: 0).map(claimed.contains) == true }
        }
        let expired = lapsed ? try claim("state = 'sending' AND claimed_until < $3", order: "id", limit: limit) : []
        guard expired.count < limit else { return expired.compactMap(Self.item) }
        let due = try claim(
            "state = 'pending' AND next_attempt_at <= $3", order: "next_attempt_at, id", limit: limit - expired.count)
        return (expired + due).compactMap(Self.item)
    }

    /// What a claim reads of each row, in ``item(_:)``'s order.
    private static let itemColumns = """
        id, apns_id, device_token, environment, topic, payload, collapse_id, priority, expiration, attempts, provider,
        endpoint, p256dh, auth
        """

    /// Deletes rows that were delivered (or whose device is gone).
    func delete(_ ids: [Int64]) throws {
        for (chunk, placeholders) in SQLList.chunks(ids) {
            try db.execute("DELETE FROM push_outbox WHERE id IN (\(placeholders))", chunk.map(SQLValue.integer))
        }
    }

    /// Holds `ids` for `claimant` until `until` (a batch claimed while the one before was out,
    /// about to go), and returns those it still held: a row whose lease ran out and that another
    /// sender claimed meanwhile is that sender's now, and is not sent here.
    func renew(_ ids: [Int64], for claimant: String, until: Int64) throws -> Set<Int64> {
        var held: Set<Int64> = []
        for (chunk, placeholders) in SQLList.chunks(ids, first: 3) {
            let rows = try db.execute(
                """
                UPDATE push_outbox SET claimed_until = $1
                WHERE claimed_by = $2 AND state = 'sending' AND id IN (\(placeholders)) RETURNING id
                """, [.integer(until), .text(claimant)] + chunk.map(SQLValue.integer))
            held.formUnion(rows.compactMap { $0.int(at: 0) })
        }
        return held
    }

    /// Gives back rows `claimant` claimed and did not send (a stop came first): due again at
    /// once, for any sender.
    func release(_ ids: [Int64], by claimant: String) throws {
        for (chunk, placeholders) in SQLList.chunks(ids, first: 2) {
            try db.execute(
                """
                UPDATE push_outbox SET state = 'pending', claimed_by = NULL, claimed_until = NULL
                WHERE claimed_by = $1 AND state = 'sending' AND id IN (\(placeholders))
                """, [.text(claimant)] + chunk.map(SQLValue.integer))
        }
    }

    /// Deletes the pushes waiting for these devices (an account that is deleted, a device that
    /// is unregistered, signed out, let go or moved to another account): a push to be tried again
    /// later is for the account it was made for, not for whoever holds the device by then. One
    /// a sender claimed goes too: on its way it cannot be recalled, but a failure does not bring
    /// it back to be tried again (the sender's writes name rows by id, and find none). The outbox
    /// has no index by device (each push would pay for it): one pass over it per chunk of
    /// devices, at these rare events.
    func deletePending(deviceTokens: [String]) throws {
        for (chunk, placeholders) in SQLList.chunks(deviceTokens) {
            try db.execute(
                "DELETE FROM push_outbox WHERE device_token IN (\(placeholders))", chunk.map(SQLValue.text))
        }
    }

    /// Puts a row back to be tried again at `at`.
    func retry(_ id: Int64, attempts: Int, at: Int64, error: String) throws {
        try db.execute(
            """
            UPDATE push_outbox SET state = 'pending', attempts = $2, next_attempt_at = $3, claimed_by = NULL,
                claimed_until = NULL, last_error = $4 WHERE id = $1
            """, [.integer(id), .integer(Int64(attempts)), .integer(at), .text(error)])
    }

    /// Gives a row up, keeping why for operators.
    func fail(_ id: Int64, attempts: Int, error: String) throws {
        try db.execute(
            """
            UPDATE push_outbox SET state = 'failed', attempts = $2, claimed_by = NULL, claimed_until = NULL,
                last_error = $3 WHERE id = $1
            """, [.integer(id), .integer(Int64(attempts)), .text(error)])
    }

    /// What the outbox holds, for operators: rows by state and provider, the oldest row still
    /// to send, and the commonest reasons of the failed (never a token or a payload).
    func summary() throws -> OutboxSummary {
        var summary = OutboxSummary()
        for row in try db.execute("SELECT state, provider, COUNT(*) AS count FROM push_outbox GROUP BY state, provider")
        {
            guard let state = row.string("state"), let provider = row.string("provider"), let count = row.int("count")
            else { continue }
            summary.counts[state, default: [:]][provider] = count
        }
        summary.oldestWaiting = try db.execute(
            "SELECT MIN(created_at) AS oldest FROM push_outbox WHERE state IN ('pending', 'sending')"
        ).first?.int("oldest")
        summary.failedReasons = try db.execute(
            """
            SELECT COALESCE(last_error, '') AS reason, COUNT(*) AS count FROM push_outbox WHERE state = 'failed'
            GROUP BY COALESCE(last_error, '') ORDER BY count DESC, reason LIMIT 5
            """
        ).compactMap { row in row.string("reason").flatMap { reason in row.int("count").map { (reason, $0) } } }
        return summary
    }

    /// Deletes failed rows older than `before`.
    func pruneFailed(before: Int64) throws {
        try db.execute("DELETE FROM push_outbox WHERE state = 'failed' AND created_at < $1", [.integer(before)])
    }

    /// A row as ``itemColumns`` reads it, by position (a thousand rows a batch: a column found by
    /// its name is a search of the names).
    private static func item(_ row: Row) -> OutboxItem? {
        guard let id = row.int(at: 0), let apnsID = row.string(at: 1), let token = row.string(at: 2),
            let environment = row.string(at: 3).flatMap(PushEnvironment.init), let topic = row.string(at: 4),
            let payload = row.string(at: 5), let priority = row.int(at: 7), let expiration = row.int(at: 8),
            let attempts = row.int(at: 9)
        else { return nil }
        let provider = row.string(at: 10).flatMap(PushProvider.init(rawValue:)) ?? .apns
        var webPush: WebPushTarget?
        if provider == .webpush, let endpoint = row.string(at: 11), let p256dh = row.string(at: 12),
            let auth = row.string(at: 13)
        {
            webPush = WebPushTarget(endpoint: endpoint, p256dh: p256dh, auth: auth)
        }
        return OutboxItem(
            id: id, apnsID: apnsID, deviceToken: token, environment: environment, topic: topic, payload: payload,
            collapseID: row.string(at: 6), priority: Int(priority), expiration: expiration, attempts: Int(attempts),
            provider: provider, webPush: webPush, fcmToken: provider == .fcm ? row.string(at: 11) : nil)
    }
}

/// What the outbox holds (``PushOutbox/summary()``).
struct OutboxSummary {
    /// The states a row passes through.
    static let states = ["pending", "sending", "failed"]
    /// Rows by state, then by provider (`apns`, `webpush`, `fcm`).
    var counts: [String: [String: Int64]] = [:]
    /// When the oldest row still to send (pending or sending) was queued, in Unix seconds.
    var oldestWaiting: Int64?
    /// The failed rows' commonest reasons, with how many each.
    var failedReasons: [(reason: String, count: Int64)] = []

    /// The rows in `state`, every provider together.
    func total(_ state: String) -> Int64 { counts[state]?.values.reduce(0, +) ?? 0 }
}
