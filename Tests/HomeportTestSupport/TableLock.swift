import Foundation
import HomeportStorage

/// Holds a lock on a table from another connection until ``release()``: by default an exclusive
/// one (SQLite `BEGIN EXCLUSIVE`, the whole file; PostgreSQL `LOCK TABLE … ACCESS EXCLUSIVE`),
/// or with ``Mode/writes`` one that stops writes and lets reads through (PostgreSQL `SHARE`): two
/// transactions that read, then write, both read before either writes.
package final class TableLock: @unchecked Sendable {
    /// What the lock stops.
    package enum Mode {
        /// Everything (SQLite: the whole file).
        case everything
        /// Writes only (PostgreSQL only).
        case writes
    }

    private let holder: any Database
    private let table: String
    private let release_ = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Takes the lock on `table` of the database at `url`; returns once it is held.
    package init(_ url: DatabaseURL, table: String, stopping mode: Mode = .everything) throws {
        // A second connection, for ``waitForWaiters(_:)`` while the first holds the lock.
        holder = try url.open(options: DatabaseOptions(maximumConnections: 2))
        self.table = table
        let locked = DispatchSemaphore(value: 0)
        let holder = self.holder
        let release = release_
        let finished = self.finished
        Thread.detachNewThread {
            try? holder.withConnection { connection in
                if holder.dialect == .sqlite {
                    _ = try connection.execute("BEGIN EXCLUSIVE", [])
                } else {
                    _ = try connection.execute("BEGIN", [])
                    let lock = mode == .writes ? "SHARE" : "ACCESS EXCLUSIVE"
                    _ = try connection.execute("LOCK TABLE \(table) IN \(lock) MODE", [])
                }
                locked.signal()
                release.wait()
                _ = try connection.execute("ROLLBACK", [])
            }
            finished.signal()
        }
        guard locked.wait(timeout: .now() + 10) == .success else {
            throw RawHTTPError("could not lock \(table) within 10 s")
        }
    }

    /// Whether `count` transactions wait for a lock on the table, within `timeout` (PostgreSQL).
    package func waitForWaiters(_ count: Int, timeout: Duration = .seconds(4)) throws -> Bool {
        try eventually(timeout: timeout, every: .milliseconds(10)) {
            try holder.execute(
                """
                SELECT count(*) AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                WHERE c.relname = $1 AND NOT l.granted
                """, [.text(table)]
            ).first?.int("n") == Int64(count)
        }
    }

    /// Releases the lock and waits until the holder has rolled back.
    package func release() {
        release_.signal()
        _ = finished.wait(timeout: .now() + 10)
        holder.close()
    }
}
