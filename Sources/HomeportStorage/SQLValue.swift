import Foundation

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
        Self.string(self[column])
    }

    /// The value of `column` as an integer, or `nil` when it is NULL, missing or not a number.
    public func int(_ column: String) -> Int64? {
        Self.int(self[column])
    }

    /// The value of `column` as a floating-point number (an integer one too), or `nil`.
    public func double(_ column: String) -> Double? {
        switch self[column] {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    /// The value at a position of the select list, or `.null` past its end (for hot statements,
    /// where looking a column up by name costs more than reading it).
    public subscript(position: Int) -> SQLValue {
        values.indices.contains(position) ? values[position] : .null
    }

    /// The value at `position` as text, or `nil`.
    public func string(at position: Int) -> String? {
        Self.string(self[position])
    }

    /// The value at `position` as an integer, or `nil`.
    public func int(at position: Int) -> Int64? {
        Self.int(self[position])
    }

    private static func string(_ value: SQLValue) -> String? {
        switch value {
        case .text(let text): text
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .blob(let bytes): String(decoding: bytes, as: UTF8.self)
        case .null: nil
        }
    }

    private static func int(_ value: SQLValue) -> Int64? {
        switch value {
        case .integer(let value): value
        case .text(let text): Int64(text)
        case .real(let value): Int64(exactly: value)
        default: nil
        }
    }
}

extension String {
    /// Whether the text holds a NUL, which C strings (libpq's, SQLite's `-1` length) would cut at.
    var containsNUL: Bool {
        var copy = self
        return copy.withUTF8 { bytes in
            bytes.baseAddress.map { memchr($0, 0, bytes.count) != nil } ?? false
        }
    }
}
