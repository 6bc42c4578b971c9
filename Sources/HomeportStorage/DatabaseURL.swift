/// Where the data lives: `sqlite:PATH` or `postgres://…` (also `postgresql://…`).
package enum DatabaseURL: Sendable, Equatable, CustomStringConvertible {
    /// A SQLite file.
    case sqlite(path: String)
    /// A PostgreSQL connection URL, passed to libpq as it is.
    case postgres(url: String)

    /// Parses a database URL, or throws ``StorageError/invalidURL(_:)`` with a message for the user.
    package init(parsing text: String) throws {
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            self = .postgres(url: text)
        } else if text.hasPrefix("sqlite:") {
            var path = String(text.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path = String(path.dropFirst(2)) }
            guard !path.isEmpty else {
                throw StorageError.invalidURL(
                    "'\(text)' names no file; use sqlite:PATH, such as sqlite:data/homeport.sqlite")
            }
            self = .sqlite(path: path)
        } else {
            throw StorageError.invalidURL(
                "'\(Self.redacted(text))' is not a database URL Homeport supports; use sqlite:PATH or postgres://USER@HOST/DB"
            )
        }
    }

    /// The URL with any password replaced by `***`, fit for logs.
    package var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let url): Self.redacted(url)
        }
    }

    /// Opens the database this URL names.
    package func open(options: DatabaseOptions = DatabaseOptions()) throws -> any Database {
        switch self {
        case .sqlite(let path): try SQLiteDatabase(path: path, options: options)
        case .postgres(let url): try PostgresDatabase(url: url, options: options)
        }
    }

    /// Hides the password of `scheme://user:password@host`, and a `password=` query value.
    static func redacted(_ url: String) -> String {
        var result = url
        if let schemeEnd = result.range(of: "://"), let at = result[schemeEnd.upperBound...].firstIndex(of: "@") {
            let userInfo = result[schemeEnd.upperBound..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                result.replaceSubrange(result.index(after: colon)..<at, with: "***")
            }
        }
        if let range = result.range(of: "password=") {
            let end = result[range.upperBound...].firstIndex(of: "&") ?? result.endIndex
            result.replaceSubrange(range.upperBound..<end, with: "***")
        }
        return result
    }
}
