import Foundation

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
            // The runs between escapes are copied whole: most strings are one run, and a payload
            // (JSON in a string) an escape every few bytes.
            var run = 0
            for position in utf8.indices {
                let byte = utf8[position]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<position]))
                escape(byte, to: &bytes)
                run = position + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// Whether two strings are written with the same bytes: `==` holds for two spellings Unicode
    /// counts as one (a precomposed `é` and an `e` with its accent), whose bytes differ.
    package static func sameBytes(_ first: String, _ second: String) -> Bool {
        let count = first.utf8.count
        guard count == second.utf8.count else { return false }
        let compared = first.utf8.withContiguousStorageIfAvailable { first in
            second.utf8.withContiguousStorageIfAvailable { second in
                guard let first = first.baseAddress, let second = second.baseAddress else { return true }
                return memcmp(first, second, count) == 0
            }
        }
        return (compared ?? nil) ?? first.utf8.elementsEqual(second.utf8)
    }

    /// Appends an integer in decimal, digit by digit: no string is made for it (a batch writes
    /// two a push).
    package static func append(_ integer: some BinaryInteger, to bytes: inout [UInt8]) {
        if integer < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = integer.magnitude
        let start = bytes.count
        repeat {
            let (rest, digit) = magnitude.quotientAndRemainder(dividingBy: 10)
            bytes.append(UInt8(ascii: "0") + UInt8(digit))
            magnitude = rest
        } while magnitude != 0
        bytes[start...].reverse()
    }

    /// The byte a one-letter escape stands for (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`,
    /// given the letter after the backslash), or `nil` for any other letter (`u` among them).
    package static func unescaped(_ letter: UInt8) -> UInt8? {
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): letter
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
    }

    /// One byte of a string that JSON needs escaped (a quote, a backslash or a control
    /// character), escaped.
    private static func escape(_ byte: UInt8, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        default:
            bytes.append(UInt8(ascii: "u"))
            bytes.append(0x30)
            bytes.append(0x30)
            bytes.append(hex[Int(byte >> 4)])
            bytes.append(hex[Int(byte & 0x0F)])
        }
    }
}
