import Foundation
import HomeportWire

/// Encodes a value as JSON the way every answer is written — keys sorted, `/` as it is, the
/// same bytes Foundation's `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` writes —
/// in a fraction of its time: a product's handler encodes its answer on every request.
///
/// `Data` is written as base64 and `URL` as its absolute string, as `JSONEncoder` does; a
/// non-finite number throws.
struct JSONWriter {
    /// Thrown for what JSON cannot hold (an infinite or NaN number).
    struct InvalidValue: Error, CustomStringConvertible {
        var description: String
    }

    func encode<T: Encodable>(_ value: T) throws -> Data {
        let root = try JSONNode.encode(value, codingPath: [])
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        try root.write(to: &bytes)
        return Data(bytes)
    }
}

/// A value on its way to JSON: a leaf, or a container the encoder may still add to.
private enum JSONNode {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array(ArrayBox)
    case object(ObjectBox)

    final class ArrayBox {
        var items: [JSONNode] = []
    }

    final class ObjectBox {
        /// In the order encoded; a key encoded twice keeps its last value when written.
        var members: [(key: String, node: JSONNode)] = []

        subscript(key: String) -> JSONNode? {
            get { members.last { $0.key == key }?.node }
            set { if let newValue { members.append((key, newValue)) } }
        }
    }

    /// `value` as a node, with Foundation's special cases.
    static func encode<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws -> JSONNode {
        // Comparing metatypes first: a cast that fails costs more than the whole of a small value.
        if T.self == String.self, let string = value as? String { return .string(string) }
        if T.self == Int.self, let int = value as? Int { return .number(String(int)) }
        if T.self == Int64.self, let int = value as? Int64 { return .number(String(int)) }
        if T.self == Bool.self, let bool = value as? Bool { return .bool(bool) }
        if T.self == Double.self, let double = value as? Double { return try number(double, codingPath) }
        if T.self == Float.self, let float = value as? Float { return try number(float, codingPath) }
        if T.self == Data.self, let data = value as? Data { return .string(data.base64EncodedString()) }
        if T.self == URL.self, let url = value as? URL { return .string(url.absoluteString) }
        let encoder = NodeEncoder(codingPath: codingPath)
        try value.encode(to: encoder)
        return encoder.node ?? .object(ObjectBox())
    }

    /// A number as `JSONEncoder` writes it: integral values without `.0`, exponents as `1e+21`.
    static func number<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F, _ codingPath: [any CodingKey])
        throws -> JSONNode
    {
        guard value.isFinite else {
            throw JSONWriter.InvalidValue(
                description: "\(value) at \(codingPath.map(\.stringValue)) is not a JSON number")
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return .number(text)
    }

    func write(to bytes: inout [UInt8]) throws {
        switch self {
        case .null: bytes.append(contentsOf: "null".utf8)
        case .bool(let value): bytes.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): bytes.append(contentsOf: text.utf8)
        case .string(let text): JSONText.append(text, to: &bytes)
        case .array(let box):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in box.items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                try item.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let box):
            bytes.append(UInt8(ascii: "{"))
            // Stable: of a key encoded twice, the later one comes last and is the one written.
            let sorted = box.members.enumerated().sorted {
                $0.element.key != $1.element.key ? $0.element.key < $1.element.key : $0.offset < $1.offset
            }
            var first = true
            for (index, member) in sorted.enumerated() {
                if index + 1 < sorted.count && sorted[index + 1].element.key == member.element.key { continue }
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                JSONText.append(member.element.key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                try member.element.node.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}

/// The `Encoder` a value's `encode(to:)` writes into; it holds the node the value became.
private final class NodeEncoder: Encoder {
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var node: JSONNode?

    init(codingPath: [any CodingKey]) {
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let box: JSONNode.ObjectBox
        if case .object(let existing) = node {
            box = existing
        } else {
            box = JSONNode.ObjectBox()
            node = .object(box)
        }
        return KeyedEncodingContainer(KeyedContainer<Key>(box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let box: JSONNode.ArrayBox
        if case .array(let existing) = node {
            box = existing
        } else {
            box = JSONNode.ArrayBox()
            node = .array(box)
        }
        return UnkeyedContainer(box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleContainer(encoder: self)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: JSONNode.ObjectBox
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { box[key.stringValue] = .null }
    mutating func encode(_ value: Bool, forKey key: Key) throws { box[key.stringValue] = .bool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { box[key.stringValue] = .string(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        box[key.stringValue] = .number(String(value))
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        box[key.stringValue] = .number(String(value))
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        box[key.stringValue] = try JSONNode.number(value, codingPath + [key])
    }

    mutating func encode(_ value: Int8, forKey key: Key) throws {
        box[key.stringValue] = .number(String(value))
    }
    mutating func encode(_ value: Int16, forKey key: Key) throws {
        box[key.stringValue] = .number(String(value))
    }
    mutating func encode(_ value: Int32, forKey key: Key) throws {
        box[key.stringValue] = .number(String(value))
    }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        box[key.stringValue] = .number(String(value))
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws {
        box[key.stringValue] = .number(String(value))
    }
    mutating func encode(_ value: UInt16, forKey key: Key) throws {
        box[key.stringValue] = .number(String(value))
    }
    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        box[key.stringValue] = .number(String(value))
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        box[key.stringValue] = .number(String(value))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        box[key.stringValue] = try JSONNode.number(value, codingPath + [key])
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        box[key.stringValue] = try JSONNode.encode(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = JSONNode.ObjectBox()
        box[key.stringValue] = .object(nested)
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = JSONNode.ArrayBox()
        box[key.stringValue] = .array(nested)
        return UnkeyedContainer(box: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let encoder = NodeEncoder(codingPath: codingPath + [key])
        let nested = JSONNode.ObjectBox()
        encoder.node = .object(nested)
        box[key.stringValue] = .object(nested)
        return encoder
    }
}

private struct IndexKey: CodingKey {
    var stringValue: String { String(intValue ?? 0) }
    var intValue: Int?
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let box: JSONNode.ArrayBox
    let codingPath: [any CodingKey]
    var count: Int { box.items.count }

    mutating func encodeNil() throws { box.items.append(.null) }
    mutating func encode(_ value: Bool) throws { box.items.append(.bool(value)) }
    mutating func encode(_ value: String) throws { box.items.append(.string(value)) }
    mutating func encode(_ value: Int) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: Double) throws {
        box.items.append(try JSONNode.number(value, codingPath + [IndexKey(count)]))
    }

    mutating func encode(_ value: Int8) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: Float) throws {
        box.items.append(try JSONNode.number(value, codingPath + [IndexKey(count)]))
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        box.items.append(try JSONNode.encode(value, codingPath: codingPath + [IndexKey(count)]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = JSONNode.ObjectBox()
        let path = codingPath + [IndexKey(count)]
        box.items.append(.object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = JSONNode.ArrayBox()
        let path = codingPath + [IndexKey(count)]
        box.items.append(.array(nested))
        return UnkeyedContainer(box: nested, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = NodeEncoder(codingPath: codingPath + [IndexKey(count)])
        let nested = JSONNode.ObjectBox()
        encoder.node = .object(nested)
        box.items.append(.object(nested))
        return encoder
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let encoder: NodeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.node = .null }
    mutating func encode(_ value: Bool) throws { encoder.node = .bool(value) }
    mutating func encode(_ value: String) throws { encoder.node = .string(value) }
    mutating func encode(_ value: Int) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: Int64) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: Double) throws { encoder.node = try JSONNode.number(value, codingPath) }
    mutating func encode(_ value: Int8) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: Int16) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: Int32) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: UInt) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: UInt8) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: UInt16) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: UInt32) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: UInt64) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: Float) throws { encoder.node = try JSONNode.number(value, codingPath) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        encoder.node = try JSONNode.encode(value, codingPath: codingPath)
    }
}

extension JSONWriter {
    /// Thrown for a value that is not JSON: neither a dictionary with string keys, an array, a
    /// string, a number, a `Bool` nor `NSNull`.
    struct NotJSON: Error, CustomStringConvertible {
        var description: String
    }

    /// Writes an untyped value — what `JSONSerialization` reads, or a literal of the same kinds —
    /// the way ``encode(_:)`` writes a typed one: keys sorted, slashes as they are, numbers as
    /// `JSONEncoder` writes them. An optional is its value, or `null`.
    ///
    /// On Linux an `NSNumber` holding 1 casts to `Bool` too, so a boolean is told by its type:
    /// Swift's `Bool`, or the `NSNumber` class `JSONSerialization` reads `true` and `false` as.
    func encode(untyped value: Any) throws -> Data {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        try JSONNode.untyped(value, path: []).write(to: &bytes)
        return Data(bytes)
    }
}

extension JSONNode {
    /// The class of `NSNumber(value: true)`, which `JSONSerialization` reads booleans as.
    private static let booleanClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    /// `value` as a node; `path` names where it sits, for the error.
    static func untyped(_ value: Any, path: [String]) throws -> JSONNode {
        switch value {
        case let string as String: return .string(string)
        case let bool as Bool where type(of: value) == Bool.self: return .bool(bool)
        case let int as Int where type(of: value) == Int.self: return .number(String(int))
        case let int as Int64 where type(of: value) == Int64.self: return .number(String(int))
        case let double as Double where type(of: value) == Double.self:
            return try number(double, path.map { PathKey(step: $0) })
        case let number as NSNumber: return try untyped(number, path: path)
        case is NSNull: return .null
        case let object as [String: Any]:
            let box = ObjectBox()
            box.members.reserveCapacity(object.count)
            for (key, member) in object { box.members.append((key, try untyped(member, path: path + [key]))) }
            return .object(box)
        case let array as [Any]:
            let box = ArrayBox()
            box.items.reserveCapacity(array.count)
            for (index, item) in array.enumerated() { box.items.append(try untyped(item, path: path + ["\(index)"])) }
            return .array(box)
        default:
            let mirror = Mirror(reflecting: value)
            if mirror.displayStyle == .optional {
                guard let wrapped = mirror.children.first?.value else { return .null }
                return try untyped(wrapped, path: path)
            }
            throw JSONWriter.NotJSON(description: "\(type(of: value)) at \(path) is not a JSON value")
        }
    }

    /// A number of Foundation's: a boolean by its class, a decimal (what `JSONSerialization` on
    /// Linux reads a long number as) by its exact digits, a fraction as a `Double` or `Float`, an
    /// integer whole (an unsigned one above `Int64.max` too).
    private static func untyped(_ number: NSNumber, path: [String]) throws -> JSONNode {
        if ObjectIdentifier(type(of: number)) == booleanClass { return .bool(number.boolValue) }
        if let decimal = number as? NSDecimalNumber {
            // Through a Double, -1234567890123456789 would come back as ...800.
            guard !decimal.decimalValue.isNaN else {
                throw JSONWriter.InvalidValue(description: "NaN at \(path) is not a JSON number")
            }
            return .number(decimal.description)
        }
        switch String(cString: number.objCType) {
        case "d": return try self.number(number.doubleValue, path.map { PathKey(step: $0) })
        case "f": return try self.number(number.floatValue, path.map { PathKey(step: $0) })
        case "Q", "L", "I", "S", "C": return .number(String(number.uint64Value))
        default: return .number(String(number.int64Value))
        }
    }
}

/// A step of an untyped value's path, for the error that names where a number is not JSON.
private struct PathKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(step: String) { stringValue = step }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
