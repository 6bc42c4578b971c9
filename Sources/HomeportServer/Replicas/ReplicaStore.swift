import Foundation
import HomeportStorage

/// One running `homeport-server serve` process, as its heartbeat row says.
public struct ReplicaInfo: Sendable, Hashable {
    /// A random id the process chose at start.
    public var id: String
    /// The host name it runs on.
    public var host: String
    /// Its process id.
    public var pid: Int64
    /// The address it listens on.
    public var listen: String
    /// When it started.
    public var startedAt: Date
    /// Its last heartbeat.
    public var seenAt: Date
}

/// The `replicas` table: a row per serving process, refreshed by its heartbeat, removed when it
/// stops gracefully. A row whose heartbeat is older than ``freshness`` belongs to a process that
/// died (or lost its database).
struct ReplicaStore {
    let db: any SQLExecutor

    /// How often a replica refreshes its row.
    static let interval: TimeInterval = 5
    /// A heartbeat younger than this means the replica is serving.
    static let freshness: TimeInterval = 15

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    func register(_ replica: ReplicaInfo) throws {
        try db.execute(
            """
            INSERT INTO replicas (id, host, pid, listen, started_at, seen_at) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (id) DO UPDATE SET seen_at = $6
            """,
            [
                .text(replica.id), .text(replica.host), .integer(replica.pid), .text(replica.listen),
                .integer(Int64(replica.startedAt.timeIntervalSince1970)),
                .integer(Int64(replica.seenAt.timeIntervalSince1970)),
            ])
    }

    func remove(id: String) throws {
        try db.execute("DELETE FROM replicas WHERE id = $1", [.text(id)])
    }

    /// Replicas whose heartbeat is fresh at `now`.
    func live(at now: Date) throws -> [ReplicaInfo] {
        try db.execute(
            "SELECT id, host, pid, listen, started_at, seen_at FROM replicas WHERE seen_at > $1 ORDER BY started_at",
            [.integer(Int64(now.timeIntervalSince1970 - Self.freshness))]
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
    func pruneDead(at now: Date) throws {
        try db.execute(
            "DELETE FROM replicas WHERE seen_at < $1", [.integer(Int64(now.timeIntervalSince1970 - 86400))])
    }
}
