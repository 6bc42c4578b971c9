/// A CBOR (RFC 8949) data item, as WebAuthn's attestation objects and COSE keys use them:
/// integers, byte and text strings, arrays, maps, booleans and null.
public indirect enum CBOR: Sendable, Hashable {
    /// A non-negative integer.
    case unsigned(UInt64)
    /// A negative integer: `-1 - n`.
    case negative(UInt64)
    /// A byte string.
    case bytes([UInt8])
    /// A UTF-8 text string.
    case text(String)
    /// An array.
    case array([CBOR])
    /// A map, each key once.
    case map([CBOR: CBOR])
    /// `true` or `false`.
    case bool(Bool)
    /// `null` (and `undefined`).
    case null

    /// The value as a signed integer, when it is one that fits.
    public var integer: Int64? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int64.max) ? Int64(value) : nil
        case .negative(let value): value <= UInt64(Int64.max) ? -1 - Int64(value) : nil
        default: nil
        }
    }

    /// The bytes of a byte string.
    public var bytes: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }

    /// The text of a text string.
    public var text: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    /// The entries of a map.
    public var map: [CBOR: CBOR]? {
        if case .map(let map) = self { return map }
        return nil
    }

    /// The value of `key` in a map.
    public subscript(key: CBOR) -> CBOR? { map?[key] }

    /// The value of the text key `key` in a map.
    public subscript(key: String) -> CBOR? { map?[.text(key)] }

    /// The value of the integer key `key` in a map (COSE's labels).
    public subscript(label label: Int64) -> CBOR? {
        map?[label >= 0 ? .unsigned(UInt64(label)) : .negative(UInt64(-1 - label))]
    }
}

/// Why bytes are not the CBOR item they should be.
public struct CBORError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, in a few words.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Reads CBOR items from bytes, strictly: definite lengths only, no tags, no floats, text that
/// is UTF-8, each map key once, nesting at most ``maximumDepth`` deep, and no length larger than
/// what is left (so that nothing is allocated for bytes that are not there).
public struct CBORReader {
    /// The deepest nesting read.
    public static let maximumDepth = 16

    private let bytes: [UInt8]
    /// Where the next item starts.
    public private(set) var offset: Int

    /// A reader of `bytes` from `offset`.
    public init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    /// Whether every byte was read.
    public var isAtEnd: Bool { offset == bytes.count }

    /// `bytes` as exactly one item, nothing after it.
    public static func decode(_ bytes: [UInt8]) throws -> CBOR {
        var reader = CBORReader(bytes)
        let item = try reader.read()
        guard reader.isAtEnd else { throw CBORError("\(bytes.count - reader.offset) bytes after the item") }
        return item
    }

    /// The next item.
    public mutating func read() throws -> CBOR {
        try read(depth: 0)
    }

    private mutating func read(depth: Int) throws -> CBOR {
        guard depth <= Self.maximumDepth else { throw CBORError("nested deeper than \(Self.maximumDepth)") }
        let initial = try byte()
        let major = initial >> 5
        let additional = initial & 0x1F
        if major == 7 {
            switch additional {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22, 23: return .null
            default: throw CBORError("a simple value or float (\(additional)), which WebAuthn does not use")
            }
        }
        let argument = try self.argument(additional)
        switch major {
        case 0: return .unsigned(argument)
        case 1: return .negative(argument)
        case 2: return .bytes(try take(argument))
        case 3:
            guard let text = String(validating: try take(argument), as: UTF8.self) else {
                throw CBORError("a text string that is not UTF-8")
            }
            return .text(text)
        case 4:
            // Each item takes at least a byte.
            guard argument <= UInt64(bytes.count - offset) else {
                throw CBORError("an array longer than the bytes left")
            }
            var items: [CBOR] = []
            items.reserveCapacity(Int(argument))
            for _ in 0..<argument { items.append(try read(depth: depth + 1)) }
            return .array(items)
        case 5:
            guard argument <= UInt64(bytes.count - offset) / 2 else {
                throw CBORError("a map longer than the bytes left")
            }
            var entries: [CBOR: CBOR] = [:]
            for _ in 0..<argument {
                let key = try read(depth: depth + 1)
                let value = try read(depth: depth + 1)
                guard entries.updateValue(value, forKey: key) == nil else { throw CBORError("a map key twice") }
            }
            return .map(entries)
        default:
            throw CBORError("a tag, which WebAuthn does not use")
        }
    }

    private mutating func byte() throws -> UInt8 {
        guard offset < bytes.count else { throw CBORError("it ends inside an item") }
        defer { offset += 1 }
        return bytes[offset]
    }

    private mutating func argument(_ additional: UInt8) throws -> UInt64 {
        switch additional {
        case 0..<24: return UInt64(additional)
        case 24...27:
            var value: UInt64 = 0
            for _ in 0..<(1 << (additional - 24)) { value = value << 8 | UInt64(try byte()) }
            return value
        case 31: throw CBORError("an indefinite length, which WebAuthn does not use")
        default: throw CBORError("a reserved additional value (\(additional))")
        }
    }

    private mutating func take(_ count: UInt64) throws -> [UInt8] {
        guard count <= UInt64(bytes.count - offset) else { throw CBORError("a string longer than the bytes left") }
        defer { offset += Int(count) }
        return Array(bytes[offset..<offset + Int(count)])
    }
}
