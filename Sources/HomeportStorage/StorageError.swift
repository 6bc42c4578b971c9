/// Why a storage operation failed. Messages never contain bound values.
public enum StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database URL is not one Homeport understands.
    case invalidURL(String)
    /// The database could not be opened or reached.
    case connectionFailed(String)
    /// A statement failed; `code` is the SQLite result code or PostgreSQL SQLSTATE.
    case statementFailed(code: String, message: String)
    /// The database stayed locked or busy past the lock timeout.
    case busy(String)
    /// No pooled connection became free in time.
    case poolExhausted
    /// A migration failed; nothing after it was applied.
    case migrationFailed(version: Int, message: String)
    /// A bound value the database cannot store faithfully (such as text with a NUL).
    case invalidValue(String)

    /// A sentence for logs and operators.
    public var description: String {
        switch self {
        case .invalidURL(let message): message
        case .connectionFailed(let message): "cannot open the database: \(message)"
        case .statementFailed(let code, let message): "database error \(code): \(message)"
        case .busy(let message): "the database is locked: \(message)"
        case .poolExhausted: "no database connection became free in time"
        case .migrationFailed(let version, let message): "migration \(version) failed: \(message)"
        case .invalidValue(let what): "the database cannot store \(what)"
        }
    }
}
