/// A UUID's text as Homeport reads it: 36 bytes, hyphens after the 8th, 12th, 16th and 20th
/// hex digit, digits in either case, nothing else. Foundation's `UUID(uuidString:)` on Linux
/// also takes a sign, a space or `0x` before a group (it reads `+f1c2b7e-…` as 0f1c2b7e-…),
/// which APNs refuses and by which no peer should be named.
package enum UUIDText {
    /// Whether `text` is a UUID in its canonical spelling (either case).
    package static func isCanonical(_ text: String) -> Bool {
        // A megabyte of text is refused before a byte of it is read.
        guard text.utf8.count == 36 else { return false }
        // A gateway checks a thousand a batch: read from the string's own bytes where it has them.
        return text.utf8.withContiguousStorageIfAvailable(isCanonical) ?? isCanonical(Array(text.utf8))
    }

    private static func isCanonical(_ bytes: some Collection<UInt8>) -> Bool {
        var position = 0
        for byte in bytes {
            switch position {
            case 8, 13, 18, 23: guard byte == UInt8(ascii: "-") else { return false }
            default: guard HexDigit.either(byte) else { return false }
            }
            position += 1
        }
        return position == 36
    }
}
