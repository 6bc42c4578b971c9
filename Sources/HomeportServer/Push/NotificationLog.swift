import Foundation
import HomeportHTTP
import HomeportStorage
import HomeportWire

/// One notification in an account's log.
package struct NotificationRecord: Sendable, Hashable {
    /// Its place in the account's log (1, 2, 3, …): the stream's event id.
    package var seq: Int64
    /// The account.
    package var userID: Int64
    /// The catalogue code.
    package var code: String
    /// The title.
    package var title: String
    /// The body, when there is one.
    package var body: String?
    /// The thread, as this server names it (`chat:42`).
    package var thread: String?
    /// The object it is about.
    package var objectID: Int64?
    /// The catalogue version when it was made.
    package var catalogueVersion: String?
    /// When, in Unix seconds.
    package var createdAt: Int64
    /// The product's own string values (`NotificationData`), when it sent any.
    package var data: [String: String]? = nil
}

/// The `notifications` table: every account's notifications, numbered per account.
///
/// Numbers are handed out under the account row's lock, so they commit in order: a reader that
/// has seen number n of an account never later finds a smaller number appear (which is what lets
/// `Last-Event-ID` resume without loss on every backend).
package struct NotificationLog {
    let db: any SQLExecutor

    package init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Appends a notification and returns it; `nil` when the account does not exist. Call it
    /// inside a transaction.
    func append(
        userID: Int64, code: String, title: String, body: String?, thread: String?, objectID: Int64?,
        catalogueVersion: String, data: [String: String]? = nil, now: Int64
    ) throws -> NotificationRecord? {
        // The account's row first: it serialises the account's sequence numbers.
        guard try AccountStore(db).lock(id: userID) else { return nil }
        let row = try db.execute(
            """
            INSERT INTO notifications (user_id, seq, code, title, body, thread, object_id, catalogue_version, created_at)
            SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5, $6, $7, $8 FROM notifications WHERE user_id = $1
            RETURNING id, seq
            """,
            [
                .integer(userID), .text(code), .text(title), body.map(SQLValue.text) ?? .null,
                thread.map(SQLValue.text) ?? .null, objectID.map(SQLValue.integer) ?? .null,
                .text(catalogueVersion), .integer(now),
            ]
        ).first
        guard let seq = row?.int("seq"), let id = row?.int("id") else { return nil }
        if let data {
            try db.execute(
                "INSERT INTO notification_data (notification_id, data) VALUES ($1, $2)",
                [.integer(id), .text(Self.encode(data))])
        }
        return NotificationRecord(
            seq: seq, userID: userID, code: code, title: title, body: body, thread: thread, objectID: objectID,
            catalogueVersion: catalogueVersion, createdAt: now, data: data)
    }

    /// An account's notifications after `seq`, oldest first.
    package func after(userID: Int64, seq: Int64, limit: Int = 500) throws -> [NotificationRecord] {
        try db.execute(
            """
            SELECT n.seq, n.user_id, n.code, n.title, n.body, n.thread, n.object_id, n.catalogue_version,
                n.created_at, d.data
            FROM notifications n LEFT JOIN notification_data d ON d.notification_id = n.id
            WHERE n.user_id = $1 AND n.seq > $2 ORDER BY n.seq LIMIT $3
            """, [.integer(userID), .integer(seq), .integer(Int64(limit))]
        ).compactMap(Self.record)
    }

    /// The latest number of each of these accounts (accounts with none are left out).
    func latest(userIDs: [Int64]) throws -> [Int64: Int64] {
        guard !userIDs.isEmpty else { return [:] }
        var result: [Int64: Int64] = [:]
        for (chunk, placeholders) in SQLList.chunks(userIDs) {
            for row in try db.execute(
                "SELECT user_id, MAX(seq) AS seq FROM notifications WHERE user_id IN (\(placeholders)) GROUP BY user_id",
                chunk.map(SQLValue.integer))
            {
                if let user = row.int("user_id"), let seq = row.int("seq") { result[user] = seq }
            }
        }
        return result
    }

    /// Keeps each account's log to notifications younger than `before` (Unix seconds).
    func prune(before: Int64) throws {
        try db.execute("DELETE FROM notifications WHERE created_at < $1", [.integer(before)])
    }

    private static func record(_ row: Row) -> NotificationRecord? {
        guard let seq = row.int("seq"), let user = row.int("user_id"), let code = row.string("code"),
            let title = row.string("title"), let created = row.int("created_at")
        else { return nil }
        return NotificationRecord(
            seq: seq, userID: user, code: code, title: title, body: row.string("body"), thread: row.string("thread"),
            objectID: row.int("object_id"), catalogueVersion: row.string("catalogue_version"), createdAt: created,
            data: row.string("data").flatMap(Self.decode))
    }

    /// `data` as the column keeps it: JSON as every answer writes it (sorted keys).
    static func encode(_ data: [String: String]) -> String {
        (try? HTTPResponse.encode(data)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    static func decode(_ text: String) -> [String: String]? {
        try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))
    }
}
