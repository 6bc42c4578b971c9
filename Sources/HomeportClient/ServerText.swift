/// Text that came from a server (a product name, a version, an error message, a `Location`),
/// made safe to print and to store.
public enum ServerText {
    /// Longest text kept; the rest is cut, so a server cannot flood a terminal or the state file.
    public static let maximumLength = 512

    /// `text` without C0 controls (U+0000–U+001F), DEL (U+007F) and C1 controls (U+0080–U+009F),
    /// which a terminal would act on (`ESC ]0;…` retitles the window, `ESC [2J` clears it, U+009B
    /// is a one-character CSI), and at most `limit` characters long (``maximumLength`` unless told).
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
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
