import Foundation
import HomeportStorage

/// One running `homeport-server serve` process, as its heartbeat row says.
package struct ReplicaInfo: Sendable, Hashable {
    /// A random id the process chose at start.
    package var id: String
    /// The host name it runs on.
    package var host: String
    /// Its process id.
    package var pid: Int64
    /// The address it listens on.
    package var listen: String
    /// When it started.
    package var startedAt: Date
    /// Its last heartbeat.
    package var seenAt: Date
}

/// The `replicas` table: a row per serving process, refreshed by its heartbeat, removed when it
/// stops gracefully. A row whose heartbeat is older than ``freshness`` belongs to a process that
/// died (or lost its database).
///
/// Every time here is the database's clock, never a process's: a replica whose clock runs behind
/// the operator's would otherwise look dead while it serves.
struct ReplicaStore {
    let db: any SQLExecutor
    let dialect: SQLDialect

    /// How often a replica refreshes its row.
    static let interval: TimeInterval = 5
    /// A heartbeat younger than this (seconds) means the replica is serving.
    static let freshness: Int64 = 15

    init(_ db: any SQLExecutor, dialect: SQLDialect) {
        self.db = db
        self.dialect = dialect
    }

    /// The database's clock, in whole seconds since 1970.
    private var now: String {
        dialect == .postgres
            ? "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS BIGINT)" : "CAST(strftime('%s', 'now') AS INTEGER)"
    }

    /// Writes a heartbeat: the row's `seen_at` becomes the database's now (its `started_at` too,
    /// the first time).
    func beat(id: String, host: String, pid: Int64, listen: String) throws {
        try db.execute(
            """
            INSERT INTO replicas (id, host, pid, listen, started_at, seen_at) VALUES ($1, $2, $3, $4, \(now), \(now))
            ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at
            """,
            [.text(id), .text(host), .integer(pid), .text(listen)])
    }

    func remove(id: String) throws {
        try db.execute("DELETE FROM replicas WHERE id = $1", [.text(id)])
    }

    /// Replicas whose heartbeat is fresh.
    func live() throws -> [ReplicaInfo] {
        try db.execute(
            """
            SELECT id, host, pid, listen, started_at, seen_at FROM replicas
            WHERE seen_at > \(now) - \(Self.freshness) ORDER BY started_at
            """
        ).compactMap { row in
            guard let id = row.string("id"), let host = row.string("host"), let pid = row.int("pid"),
                let listen = row.string("listen"), let started = row.int("started_at"), let seen = row.int("seen_at")
            else { return nil }
            return ReplicaInfo(
                id: id, host: host, pid: pid, listen: listen,
                startedAt: Date(timeIntervalSince1970: TimeInterval(started)),
                seenAt: Date(timeIntervalSince1970: TimeInterval(seen)))
        }
    }

    /// Deletes rows whose heartbeat stopped long ago (a day).
    func pruneDead() throws {
        try db.execute("DELETE FROM replicas WHERE seen_at < \(now) - 86400")
    }
}
