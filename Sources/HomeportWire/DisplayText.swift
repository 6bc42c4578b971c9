/// Text a server shows a person (a notification's title and body, a catalogue code's title):
/// what it may not hold. Controls (C0, DEL, C1), line and paragraph separators, bidirectional
/// overrides, embeddings, isolates and marks, and invisible spaces either act on a terminal or
/// hide or reorder what a person reads ("Your password was changed" spelled backwards).
public enum DisplayText {
    /// Whether `scalar` is hidden or reorders text.
    public static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x061C, 0x200B, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2060,
            0x2066...0x2069, 0xFEFF:
            true
        default: false
        }
    }

    /// Whether `text` holds nothing hidden (a line feed is allowed with `newlines`: a body's).
    public static func isShown(_ text: String, newlines: Bool = false) -> Bool {
        !text.unicodeScalars.contains { isHidden($0) && !(newlines && $0 == "\n") }
    }
}
