/// RFC 3986's percent-encoding, byte by byte: what a request target's reader and an endpoint's
/// normal form both need.
package enum PercentEncoding {
    /// The value of one hex digit, either case; `nil` for any other byte.
    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Whether every `%` in `text` starts a percent-encoding (`%` and two hex digits).
    package static func isWellFormed(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return !bytes.indices.contains { index in
            bytes[index] == UInt8(ascii: "%")
                && (index + 2 >= bytes.count || hexValue(bytes[index + 1]) == nil || hexValue(bytes[index + 2]) == nil)
        }
    }

    /// `text` in RFC 3986's normal form (§6.2.2.2): each percent-encoded unreserved character
    /// (`A-Z a-z 0-9 - . _ ~`) written as itself, the hex digits of every other percent-encoding
    /// in uppercase.
    package static func normalized(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                let byte = high << 4 | low
                if isUnreserved(byte) {
                    out.append(byte)
                } else {
                    out += [UInt8(ascii: "%"), hexDigit(high), hexDigit(low)]
                }
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }
}
