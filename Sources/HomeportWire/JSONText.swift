/// JSON's text as every Homeport answer writes it: strings with `"`, `\` and the control
/// characters escaped and everything else as its UTF-8 (slashes as they are), integers in
/// decimal — the bytes of Foundation's `JSONEncoder` with `.sortedKeys` and
/// `.withoutEscapingSlashes`, for the writers that do without it.
package enum JSONText {
    private static let hex = Array("0123456789abcdef".utf8)

    /// Appends `string` as a JSON string.
    package static func append(_ string: String, to bytes: inout [UInt8]) {
        var string = string
        string.withUTF8 { utf8 in
            bytes.append(UInt8(ascii: "\""))
            // Most strings need no escape: copied whole.
            var clean = true
            for byte in utf8 where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                clean = false
                break
            }
            if clean {
                bytes.append(contentsOf: utf8)
            } else {
                for byte in utf8 { escape(byte, to: &bytes) }
            }
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// Appends an integer.
    package static func append(_ integer: some BinaryInteger, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: String(integer).utf8)
    }

    /// One byte of a string, escaped when JSON needs it.
    private static func escape(_ byte: UInt8, to bytes: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
        case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
        case 0..<0x20:
            bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30])
            bytes.append(hex[Int(byte >> 4)])
            bytes.append(hex[Int(byte & 0x0F)])
        default: bytes.append(byte)
        }
    }
}
