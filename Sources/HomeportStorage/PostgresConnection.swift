import CLibPQ
import Foundation

/// One libpq connection. Parameters travel in text format; results are typed by column OID.
///
/// A statement with parameters is prepared once per connection (`PQprepare`) and then only
/// executed (`PQexecPrepared`), so PostgreSQL parses and plans it once, not on every request; the
/// prepared statements go with the connection.
final class PostgresConnection: DatabaseConnection {
    let dialect = SQLDialect.postgres
    private var handle: OpaquePointer?
    private(set) var isBroken = false
    let commitHooks = CommitHooks()
    /// Names of the statements prepared on this connection, by SQL text.
    private var prepared: [String: String] = [:]
    /// Statements prepared so far (never reused as a name, even for one forgotten).
    private var preparedCount = 0
    /// Statements prepared on one connection at most; further ones run unprepared. (Homeport's
    /// statements are fixed texts, a few dozen of them.)
    static let preparedLimit = 256

    /// The URL, as ``StatementLog`` names this database.
    private let source: String

    init(url: String, options: DatabaseOptions) throws {
        self.source = url
        let keywords = ["connect_timeout", "application_name", "dbname"]
        let values = [String(options.connectTimeoutSeconds), "homeport-server", url]
        let connection = Self.withCStrings(keywords) { keywordPointers in
            Self.withCStrings(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let message = connection.map { Self.trimmed(PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(connection)
            throw StorageError.connectionFailed(message)
        }
        handle = connection
        let lockMillis =
            options.lockTimeout.components.seconds * 1000 + options.lockTimeout.components.attoseconds
            / 1_000_000_000_000_000
        do {
            _ = try execute("SET client_min_messages = warning", [])
            _ = try execute("SET lock_timeout = \(max(1, lockMillis))", [])
        } catch {
            close()
            throw error
        }
    }

    deinit {
        close()
    }

    func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        isBroken = true
    }

    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> [Row] {
        StatementLog.note(source: source, sql, parameters)
        guard let handle else { throw StorageError.connectionFailed("connection closed") }
        let texts: [String?] = parameters.map(Self.text)
        // libpq takes C strings: a NUL would silently cut the value, so refuse it.
        guard !texts.contains(where: { $0?.containsNUL ?? false }) else {
            throw StorageError.invalidValue("text with a NUL character")
        }
        let name = texts.isEmpty ? nil : try statementName(for: sql, parameterCount: texts.count)
        let result = Self.withOptionalCStrings(texts) { pointers in
            if let name { return PQexecPrepared(handle, name, Int32(texts.count), pointers, nil, nil, 0) }
            return PQexecParams(handle, sql, Int32(texts.count), nil, pointers, nil, nil, 0)
        }
        defer { PQclear(result) }
        do {
            try check(result)
        } catch StorageError.statementFailed(let code, let message) where code == "0A000" && name != nil {
            // "cached plan must not change result type": the schema changed under the prepared
            // statement (a migration by another replica). It is prepared afresh: now, outside a
            // transaction (which the failure did not spoil); on the next call, inside one.
            prepared[sql] = nil
            if PQtransactionStatus(handle) == PQTRANS_IDLE { return try execute(sql, parameters) }
            throw StorageError.statementFailed(code: code, message: message)
        }
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        guard rowCount > 0 else { return [] }
        let columns = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
        let types = (0..<columnCount).map { PQftype(result, $0) }
        return (0..<rowCount).map { row in
            Row(
                columns: columns,
                values: (0..<columnCount).map { column in
                    Self.value(result, row, column, type: types[Int(column)])
                })
        }
    }

    /// The name `sql` is prepared under on this connection, preparing it first if need be;
    /// `nil` once the connection holds ``preparedLimit`` statements.
    private func statementName(for sql: String, parameterCount: Int) throws -> String? {
        if let name = prepared[sql] { return name }
        guard prepared.count < Self.preparedLimit, let handle else { return nil }
        let name = "homeport_\(preparedCount + 1)"
        let result = PQprepare(handle, name, sql, Int32(parameterCount), nil)
        defer { PQclear(result) }
        try check(result)
        preparedCount += 1
        prepared[sql] = name
        return name
    }

    /// Throws the error a result carries (and marks the connection broken when it is).
    private func check(_ result: OpaquePointer?) throws {
        let status = PQresultStatus(result)
        guard status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK else { return }
        if let handle, PQstatus(handle) != CONNECTION_OK {
            isBroken = true
            throw StorageError.connectionFailed(Self.trimmed(PQerrorMessage(handle)))
        }
        let state = homeport_pq_sqlstate(result).map { String(cString: $0) } ?? "?????"
        let message = Self.trimmed(PQresultErrorMessage(result))
        if state == "55P03" || state == "40P01" { throw StorageError.busy(message) }
        throw StorageError.statementFailed(code: state, message: message)
    }

    private static func value(_ result: OpaquePointer?, _ row: Int32, _ column: Int32, type: Oid) -> SQLValue {
        guard PQgetisnull(result, row, column) == 0, let raw = PQgetvalue(result, row, column) else { return .null }
        let text = String(cString: raw)
        switch type {
        case 16: return .integer(text == "t" ? 1 : 0)
        case 20, 21, 23: return Int64(text).map(SQLValue.integer) ?? .text(text)
        case 700, 701: return Double(text).map(SQLValue.real) ?? .text(text)
        case 17:
            var length = 0
            guard let bytes = PQunescapeBytea(raw, &length) else { return .null }
            defer { PQfreemem(bytes) }
            return .blob(Array(UnsafeBufferPointer(start: bytes, count: length)))
        default: return .text(text)
        }
    }

    private static func text(_ value: SQLValue) -> String? {
        switch value {
        case .null: nil
        case .integer(let number): String(number)
        case .real(let number): String(number)
        case .text(let text): text
        case .blob(let bytes): "\\x" + bytes.map { String(format: "%02x", $0) }.joined()
        }
    }

    private static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown error" }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        withOptionalCStrings(strings) { pointers in body(pointers + [nil]) }
    }

    private static func withOptionalCStrings<T>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        let copies = strings.map { $0.flatMap { strdup($0) } }
        defer { copies.forEach { free($0) } }
        return body(copies.map { $0.map { UnsafePointer($0) } })
    }
}

/// A PostgreSQL database reached through libpq, shared by a pool of connections.
package final class PostgresDatabase: Database {
    /// `.postgres`.
    package let dialect = SQLDialect.postgres
    private let pool: ConnectionPool<PostgresConnection>

    /// Connects to `url` (`postgres://user@host:port/db?…`); fails now if it cannot.
    package init(url: String, options: DatabaseOptions = DatabaseOptions()) throws {
        pool = ConnectionPool(
            maximum: options.maximumConnections, waitTimeout: options.poolWaitTimeout,
            open: { try PostgresConnection(url: url, options: options) },
            close: { $0.close() })
        try pool.withConnection { _ in }
    }

    /// Lends a pooled connection; a connection that broke is replaced on the next call.
    package func withConnection<T>(_ body: (any DatabaseConnection) throws -> T) throws -> T {
        try pool.withConnection { try body($0) }
    }

    /// Callers that had to wait for a pooled connection, since the database opened.
    package var poolWaits: Int { pool.waits.load(ordering: .relaxed) }

    /// Closes idle connections.
    package func close() {
        pool.drain()
    }
}
