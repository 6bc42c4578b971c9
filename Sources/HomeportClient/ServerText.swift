/// Text that came from a server (a product name, a version, an error message, a `Location`),
/// made safe to print and to store.
public enum ServerText {
    /// Longest text kept; the rest is cut, so a server cannot flood a terminal or the state file.
    public static let maximumLength = 512

    /// `text` without C0 controls (U+0000–U+001F), DEL (U+007F) and C1 controls (U+0080–U+009F),
    /// which a terminal would act on (`ESC ]0;…` retitles the window, `ESC [2J` clears it, U+009B
    /// is a one-character CSI), without the bidirectional controls that make text read otherwise
    /// than it is stored (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C: a product named
    /// "moc.elpmaxe\u{202E}" shows as another name) and the line and paragraph separators (U+2028,
    /// U+2029, which break a line where none is expected), and at most `limit` characters long
    /// (``maximumLength`` unless told).
    public static func clean(_ text: String, limit: Int? = maximumLength) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars where !isControl(scalar) {
            scalars.append(scalar)
        }
        let cleaned = String(scalars)
        guard let limit, cleaned.count > limit else { return cleaned }
        return String(cleaned.prefix(limit)) + "…"
    }

    /// Whether a terminal may act on `scalar`.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C, 0x2028, 0x2029: true
        default: false
        }
    }
}
