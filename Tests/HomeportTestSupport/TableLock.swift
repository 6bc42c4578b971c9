import Foundation
import HomeportStorage

/// Holds an exclusive lock on a table from another connection until ``release()``:
/// SQLite `BEGIN EXCLUSIVE` (the whole file), PostgreSQL `LOCK TABLE … ACCESS EXCLUSIVE`.
package final class TableLock: @unchecked Sendable {
    private let holder: any Database
    private let release_ = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Takes the lock on `table` of the database at `url`; returns once it is held.
    package init(_ url: DatabaseURL, table: String) throws {
        holder = try url.open(options: DatabaseOptions(maximumConnections: 1))
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
                    _ = try connection.execute("LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE", [])
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

    /// Releases the lock and waits until the holder has rolled back.
    package func release() {
        release_.signal()
        _ = finished.wait(timeout: .now() + 10)
        holder.close()
    }
}
