/// Hexadecimal digits, told byte by byte without a branch: the digits and letters of an id or a
/// device token come at random, and a branch between the two is guessed wrong about every other
/// byte (a gateway reads two a push, a thousand pushes a batch).
///
/// Compared with wrapping arithmetic, not matched against ranges (a range's `~=` is a call a
/// byte). A byte is never both a digit and a letter, so `!=` says "either" without `||`'s branch.
package enum HexDigit {
    /// Whether `byte` is `0-9`, `a-f` or `A-F`. `| 0x20` is the lowercase of a letter, and leaves
    /// a digit a digit.
    @inline(__always)
    package static func either(_ byte: UInt8) -> Bool {
        (byte &- 0x30 < 10) != ((byte | 0x20) &- 0x61 < 6)
    }

    /// Whether `byte` is `0-9` or `a-f`.
    @inline(__always)
    package static func lowercase(_ byte: UInt8) -> Bool {
        (byte &- 0x30 < 10) != (byte &- 0x61 < 6)
    }
}
