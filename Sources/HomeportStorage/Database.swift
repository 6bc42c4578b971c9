/// The SQL dialect of a backend, for the few statements that differ.
public enum SQLDialect: String, Sendable {
    /// SQLite 3.
    case sqlite
    /// PostgreSQL.
    case postgres
}

/// Something that runs SQL: a ``Database`` (each statement on a pooled connection, committed on
/// its own) or a ``DatabaseConnection`` (inside a ``Database/transaction(_:)``, for instance).
///
/// Stores take one, so the same store code runs alone or as part of a transaction.
/// Statements use `$1`, `$2`, … placeholders on every backend.
public protocol SQLExecutor {
    /// The backend's dialect.
    var dialect: SQLDialect { get }
    /// Runs one statement with bound parameters and returns its rows (none for writes).
    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> [Row]
}

extension SQLExecutor {
    /// Runs one statement without parameters.
    @discardableResult
    public func execute(_ sql: String) throws -> [Row] {
        try execute(sql, [])
    }
}

/// One open connection. Used by one thread at a time; a ``Database`` lends them out.
public protocol DatabaseConnection: SQLExecutor, AnyObject {
    /// Whether the connection is unusable and must be discarded rather than reused.
    var isBroken: Bool { get }
    /// What waits for the connection's transaction to commit (``afterCommit(_:)``).
    var commitHooks: CommitHooks { get }
}

/// A database: a pool of connections to one SQLite file or PostgreSQL database.
///
/// Implementations are safe to share between threads.
public protocol Database: SQLExecutor, Sendable {
    /// Lends a connection for the duration of `body`.
    func withConnection<T>(_ body: (any DatabaseConnection) throws -> T) throws -> T
    /// Callers that had to wait for a pooled connection, since the database opened (a pool too
    /// small for the threads that use it).
    var poolWaits: Int { get }
    /// Closes every idle connection; the database stays usable and reopens on demand.
    func close()
    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    func transaction<T>(_ body: (any DatabaseConnection) throws -> T) throws -> T
}

extension Database {
    /// Runs one statement on a pooled connection and returns its rows.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [SQLValue]) throws -> [Row] {
        try withConnection { try $0.execute(sql, parameters) }
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    ///
    /// On SQLite the transaction takes the write lock at once (`BEGIN IMMEDIATE`), so two writers
    /// wait for each other instead of failing mid-way.
    public func transaction<T>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        try transactionOnPooledConnection(body)
    }

    /// The transaction itself, on a connection from the pool: what ``transaction(_:)`` does
    /// unless a backend adds to it.
    func transactionOnPooledConnection<T>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        try withConnection { connection in
            _ = try connection.execute(dialect == .sqlite ? "BEGIN IMMEDIATE" : "BEGIN", [])
            connection.commitHooks.begin()
            do {
                let result = try body(connection)
                _ = try connection.execute("COMMIT", [])
                for action in connection.commitHooks.committed() { action() }
                return result
            } catch {
                connection.commitHooks.ended()
                if !connection.isBroken { _ = try? connection.execute("ROLLBACK", []) }
                throw error
            }
        }
    }
}
