/// A UUID's text as Homeport reads it: 36 bytes, hyphens after the 8th, 12th, 16th and 20th
/// hex digit, digits in either case, nothing else. Foundation's `UUID(uuidString:)` on Linux
/// also takes a sign, a space or `0x` before a group (it reads `+f1c2b7e-…` as 0f1c2b7e-…),
/// which APNs refuses and by which no peer should be named.
package enum UUIDText {
    /// Whether `text` is a UUID in its canonical spelling (either case).
    package static func isCanonical(_ text: String) -> Bool {
        // A megabyte of text is refused before a byte of it is read.
        guard text.utf8.count == 36 else { return false }
        for (position, byte) in text.utf8.enumerated() {
            switch position {
            case 8, 13, 18, 23: guard byte == UInt8(ascii: "-") else { return false }
            default:
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                    UInt8(ascii: "A")...UInt8(ascii: "F"):
                    break
                default: return false
                }
            }
        }
        return true
    }
}
