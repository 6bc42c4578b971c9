import Foundation
import HomeportClient

/// A JSON value read without trusting its shape: every accessor answers `nil` for the wrong type,
/// and a boolean is never taken for a number (or the other way round).
enum JSONValue: Decodable, Equatable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// The value `data` holds, or `nil` when it is not JSON.
    static func parse(_ data: Data) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: data)
    }

    /// The member `key` of an object.
    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The members of an object.
    var object: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements of an array.
    var array: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// A string.
    var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// An integer (not a boolean, not a fraction).
    var integer: Int64? {
        if case .integer(let number) = self { return number }
        return nil
    }

    /// A boolean.
    var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// A few words for a message: the value when it is short and simple, else its type.
    var shown: String {
        switch self {
        case .null: "null"
        case .bool(let value): String(value)
        case .integer(let number): String(number)
        case .number(let number): String(number)
        case .string(let text): "\"" + ServerText.clean(text, limit: 60) + "\""
        case .array: "an array"
        case .object: "an object"
        }
    }
}
