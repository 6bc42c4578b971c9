/// A value bound to, or read from, a SQL statement.
public enum SQLValue: Sendable, Hashable {
    /// SQL NULL.
    case null
    /// A 64-bit integer (also booleans, as 0 and 1).
    case integer(Int64)
    /// A double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Raw bytes.
    case blob([UInt8])
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    /// A text value.
    public init(stringLiteral value: String) { self = .text(value) }
    /// An integer value.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// NULL.
    public init(nilLiteral: ()) { self = .null }
}

/// One result row: values by column name.
public struct Row: Sendable, Hashable {
    /// Column names in select order.
    public let columns: [String]
    /// Values in select order.
    public let values: [SQLValue]

    /// Creates a row.
    public init(columns: [String], values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    /// The value of `column`, or `.null` when there is no such column.
    public subscript(column: String) -> SQLValue {
        guard let index = columns.firstIndex(of: column) else { return .null }
        return values[index]
    }

    /// The value of `column` as text, or `nil` when it is NULL or missing.
    public func string(_ column: String) -> String? {
        switch self[column] {
        case .text(let text): text
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .blob(let bytes): String(decoding: bytes, as: UTF8.self)
        case .null: nil
        }
    }

    /// The value of `column` as an integer, or `nil` when it is NULL, missing or not a number.
    public func int(_ column: String) -> Int64? {
        switch self[column] {
        case .integer(let value): value
        case .text(let text): Int64(text)
        case .real(let value): Int64(exactly: value)
        default: nil
        }
    }
}
