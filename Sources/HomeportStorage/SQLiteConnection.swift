import CSQLite
import Foundation

/// One SQLite connection in WAL mode, with a per-connection cache of prepared statements.
final class SQLiteConnection: DatabaseConnection {
    let dialect = SQLDialect.sqlite
    private var handle: OpaquePointer?
    /// How long a statement outside a transaction keeps trying while the database is locked.
    private let lockTimeout: Duration
    private var statements: [String: (statement: OpaquePointer, columns: [String])] = [:]

    /// Configures SQLite once per process, before the first connection.
    private static let configured: Void = {
        _ = homeport_sqlite_disable_memstatus()
    }()
    private(set) var isBroken = false
    let commitHooks = CommitHooks()
    /// The statements this connection keeps prepared, as written.
    var preparedStatements: [String] { Array(statements.keys) }

    /// The file, as ``StatementLog`` names this database.
    private let source: String

    init(path: String, lockTimeout: Duration) throws {
        Self.configured
        self.lockTimeout = lockTimeout
        self.source = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw StorageError.connectionFailed("\(path): \(message)")
        }
        handle = db
        let millis = lockTimeout.components.seconds * 1000 + lockTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(db, Int32(clamping: millis))
        do {
            _ = try execute("PRAGMA journal_mode = WAL", [])
            _ = try execute("PRAGMA synchronous = NORMAL", [])
            _ = try execute("PRAGMA foreign_keys = ON", [])
        } catch {
            close()
            throw error
        }
    }

    deinit {
        close()
    }

    func close() {
        for prepared in statements.values { sqlite3_finalize(prepared.statement) }
        statements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
        isBroken = true
    }

    /// Runs one statement. Outside a transaction, a statement SQLite refuses at once as locked
    /// (the busy handler is not asked in every case: while another process sets up a new WAL
    /// database or changes the schema, a prepare or a step can fail at once) is tried again,
    /// until the lock timeout: nothing of it took effect. Inside a transaction the refusal goes to
    /// the caller, whose transaction must start over.
    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> [Row] {
        StatementLog.note(source: source, sql, parameters)
        do {
            return try executeOnce(sql, parameters)
        } catch StorageError.busy where handle.map(sqlite3_get_autocommit) != 0 {
            // The clock is read only once a statement was refused: not on every statement.
            let deadline = ContinuousClock.now.advanced(by: lockTimeout)
            while true {
                usleep(10_000)
                do {
                    return try executeOnce(sql, parameters)
                } catch StorageError.busy where ContinuousClock.now < deadline {
                    continue
                }
            }
        }
    }

    private func executeOnce(_ sql: String, _ parameters: [SQLValue]) throws -> [Row] {
        guard let handle else { throw StorageError.connectionFailed("connection closed") }
        let (statement, columns) = try prepared(sql, handle)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (offset, value) in parameters.enumerated() {
            try bind(value, at: Int32(offset + 1), statement, handle)
        }
        var rows: [Row] = []
        let columnCount = Int32(columns.count)
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw error(status, handle) }
            rows.append(Row(columns: columns, values: (0..<columnCount).map { column(statement, $0) }))
        }
        return rows
    }

    private func prepared(_ sql: String, _ handle: OpaquePointer) throws -> (OpaquePointer, [String]) {
        if let cached = statements[sql] { return cached }
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, Self.sqlitePlaceholders(sql), -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw error(status, handle) }
        let columns = (0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_name(statement, $0)) }
        statements[sql] = (statement, columns)
        return (statement, columns)
    }

    private func bind(_ value: SQLValue, at index: Int32, _ statement: OpaquePointer, _ handle: OpaquePointer) throws {
        let status: Int32
        switch value {
        case .null: status = sqlite3_bind_null(statement, index)
        case .integer(let number): status = sqlite3_bind_int64(statement, index, number)
        case .real(let number): status = sqlite3_bind_double(statement, index, number)
        case .text(let text):
            guard !text.containsNUL else { throw StorageError.invalidValue("text with a NUL character") }
            status = sqlite3_bind_text(statement, index, text, -1, homeport_sqlite_transient())
        case .blob(let bytes):
            status = bytes.withUnsafeBytes {
                sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), homeport_sqlite_transient())
            }
        }
        guard status == SQLITE_OK else { throw error(status, handle) }
    }

    private func column(_ statement: OpaquePointer, _ index: Int32) -> SQLValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT: return .text(String(cString: sqlite3_column_text(statement, index)))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard count > 0, let bytes = sqlite3_column_blob(statement, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default: return .null
        }
    }

    private func error(_ status: Int32, _ handle: OpaquePointer) -> StorageError {
        let message = String(cString: sqlite3_errmsg(handle))
        let primary = status & 0xFF
        if primary == SQLITE_BUSY || primary == SQLITE_LOCKED { return .busy(message) }
        if primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_IOERR { isBroken = true }
        return .statementFailed(code: "SQLITE_\(sqlite3_extended_errcode(handle))", message: message)
    }

    /// `$1` → `?1`: SQLite reads `$1` as a named parameter, `?1` as the numbered one we mean.
    static func sqlitePlaceholders(_ sql: String) -> String {
        var result = ""
        result.reserveCapacity(sql.utf8.count)
        var previous: Character = " "
        for character in sql {
            if previous == "$", character.isNumber {
                result.removeLast()
                result.append("?")
            }
            result.append(character)
            previous = character
        }
        return result
    }
}

/// A SQLite database file shared by a pool of WAL connections.
package final class SQLiteDatabase: Database {
    /// `.sqlite`.
    package let dialect = SQLDialect.sqlite
    /// The database file.
    package let path: String
    private let pool: ConnectionPool<SQLiteConnection>
    /// Held by this process's writer: SQLite takes one writer at a time, and one that finds the
    /// write lock taken sleeps in steps of up to 100 ms (its busy handler) instead of starting as
    /// soon as the lock is free. So this process's writers wait here, in turn, and only another
    /// process's writer meets the busy handler.
    private let writer = NSLock()
    private let lockTimeout: Duration

    /// Opens (creating if needed) the file at `path` and its parent directory.
    package init(path: String, options: DatabaseOptions = DatabaseOptions()) throws {
        self.path = path
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty && !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw StorageError.connectionFailed("cannot create \(directory): \(error.localizedDescription)")
            }
        }
        let lockTimeout = options.lockTimeout
        self.lockTimeout = lockTimeout
        pool = ConnectionPool(
            maximum: options.maximumConnections, waitTimeout: options.poolWaitTimeout,
            open: { try SQLiteConnection(path: path, lockTimeout: lockTimeout) },
            close: { $0.close() })
        // Open one connection now so a bad path fails at start, not at the first request.
        try pool.withConnection { _ in }
    }

    /// Lends a pooled connection.
    package func withConnection<T>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        try pool.withConnection { try body($0) }
    }

    /// Callers that had to wait for a pooled connection, since the database opened.
    package var poolWaits: Int { pool.waits.load(ordering: .relaxed) }

    /// Runs `body` in one write transaction (`BEGIN IMMEDIATE`), after this process's writers
    /// before it; ``StorageError/busy(_:)`` when the wait outlasts the lock timeout.
    package func transaction<T>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        let seconds = Double(lockTimeout.components.seconds) + Double(lockTimeout.components.attoseconds) / 1e18
        guard writer.lock(before: Date().addingTimeInterval(seconds)) else {
            throw StorageError.busy("another write transaction of this process held the database")
        }
        defer { writer.unlock() }
        return try transactionOnPooledConnection(body)
    }

    /// Closes idle connections.
    package func close() {
        pool.drain()
    }
}
