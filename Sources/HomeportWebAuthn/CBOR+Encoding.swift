extension CBOR {
    /// The item's bytes, map keys in CTAP2's canonical order (shorter encodings first, then
    /// bytewise): what an authenticator writes.
    public var encoded: [UInt8] {
        switch self {
        case .unsigned(let value): Self.head(0, value)
        case .negative(let value): Self.head(1, value)
        case .bytes(let bytes): Self.head(2, UInt64(bytes.count)) + bytes
        case .text(let text): Self.head(3, UInt64(text.utf8.count)) + Array(text.utf8)
        case .array(let items): items.reduce(Self.head(4, UInt64(items.count))) { $0 + $1.encoded }
        case .map(let entries):
            entries.map { ($0.key.encoded, $0.value.encoded) }
                .sorted { $0.0.count != $1.0.count ? $0.0.count < $1.0.count : $0.0.lexicographicallyPrecedes($1.0) }
                .reduce(Self.head(5, UInt64(entries.count))) { $0 + $1.0 + $1.1 }
        case .bool(let value): [value ? 0xF5 : 0xF4]
        case .null: [0xF6]
        }
    }

    /// An integer item.
    public static func int(_ value: Int64) -> CBOR {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-1 - value))
    }

    private static func head(_ major: UInt8, _ argument: UInt64) -> [UInt8] {
        let type = major << 5
        switch argument {
        case 0..<24: return [type | UInt8(argument)]
        case 24...0xFF: return [type | 24, UInt8(argument)]
        case 0x100...0xFFFF: return [type | 25] + bigEndian(argument, 2)
        case 0x1_0000...0xFFFF_FFFF: return [type | 26] + bigEndian(argument, 4)
        default: return [type | 27] + bigEndian(argument, 8)
        }
    }

    private static func bigEndian(_ value: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }
}
