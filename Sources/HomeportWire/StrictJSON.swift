/// Checks that a JSON text is one value in which no object names a key twice.
///
/// Every JSON body Homeport reads from outside passes it first (the app door, a product's
/// routes through `HTTPRequest.decodeJSON`, the product API, the push gateway, `users import`,
/// and the client's identity probe): `{"email": "bo@…", "email": "ada@…"}` is refused rather
/// than read as one of the two, since Foundation takes the first and Python and JavaScript the
/// last.
///
/// Parsers disagree about a repeated key (the first wins in one, the last in another), so a
/// payload `{"homeport": {"s": "A"}, "homeport": {"s": "B"}}` could pass the gateway's check of
/// `s` with one reading and reach the phone with the other. The gateway refuses such a payload,
/// and compares keys as Swift does (canonical equivalence: `K` and the Kelvin sign `\u212A` are
/// one key to Foundation's parser, two to a literal one), so no two parsers can read it apart.
public enum StrictJSON {
    /// Whether `bytes` is one JSON value, with no key twice in any object (keys compared after
    /// their escapes are decoded, by canonical equivalence), nested at most 64 deep.
    public static func isValidWithoutRepeatedKeys(_ bytes: [UInt8]) -> Bool {
        var parser = Parser(bytes: bytes)
        guard parser.value(depth: 0) else { return false }
        parser.skipSpace()
        return parser.index == bytes.count
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) -> Bool {
            guard depth <= 64 else { return false }
            skipSpace()
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return skipString()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number()
            }
        }

        mutating func object(depth: Int) -> Bool {
            index += 1
            var keys: Set<String> = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return true
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string(),
                    keys.insert(key).inserted
                else { return false }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
                index += 1
                guard value(depth: depth + 1) else { return false }
                skipSpace()
                guard index < bytes.count else { return false }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return true
                } else {
                    return false
                }
            }
        }

        mutating func array(depth: Int) -> Bool {
            index += 1
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return true
            }
            while true {
                guard value(depth: depth + 1) else { return false }
                skipSpace()
                guard index < bytes.count else { return false }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return true
                } else {
                    return false
                }
            }
        }

        /// Moves past a string, refusing what ``string()`` refuses (no closing quote, a control
        /// byte, an unknown escape, a `\u` without four hex digits), without decoding it: a value's
        /// text is compared with nothing.
        mutating func skipString() -> Bool {
            index += 1
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return true
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return false }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                        UInt8(ascii: "f"),
                        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        continue
                    case UInt8(ascii: "u"):
                        guard index + 4 <= bytes.count, bytes[index..<index + 4].allSatisfy(HexDigit.either) else {
                            return false
                        }
                        index += 4
                    default: return false
                    }
                case 0x00..<0x20: return false
                default: continue
                }
            }
            return false
        }

        /// A string with its escapes decoded (a lone surrogate or a byte that is not UTF-8 reads
        /// as U+FFFD: two such keys count as one, which refuses rather than lets through).
        mutating func string() -> String? {
            // Most keys have no escape: their bytes, as UTF-8, are the key.
            var end = index + 1
            while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"),
                bytes[end] >= 0x20
            {
                end += 1
            }
            if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
                defer { index = end + 1 }
                return String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
            }
            index += 1
            var units: [UInt16] = []
            var run: [UInt8] = []
            func flush() {
                guard !run.isEmpty else { return }
                units.append(contentsOf: String(decoding: run, as: UTF8.self).utf16)
                run.removeAll(keepingCapacity: true)
            }
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    flush()
                    return String(decoding: units, as: UTF16.self)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    if let unescaped = JSONText.unescaped(escape) {
                        run.append(unescaped)
                    } else if escape == UInt8(ascii: "u") {
                        guard index + 4 <= bytes.count,
                            bytes[index..<index + 4].allSatisfy(HexDigit.either),
                            let unit = UInt16(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
                        else { return nil }
                        index += 4
                        flush()
                        units.append(unit)
                    } else {
                        return nil
                    }
                case 0x00..<0x20: return nil
                default: run.append(byte)
                }
            }
            return nil
        }

        mutating func literal(_ word: String) -> Bool {
            let expected = Array(word.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected
            else { return false }
            index += expected.count
            return true
        }

        mutating func number() -> Bool {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let digitsStart = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
            guard index > digitsStart else { return false }
            if bytes[digitsStart] == 0x30, index - digitsStart > 1 { return false }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                let fraction = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                guard index > fraction else { return false }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                let exponent = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                guard index > exponent else { return false }
            }
            return index > start
        }
    }
}
