/// Text a server shows a person (a notification's title and body, a catalogue code's title):
/// what it may not hold. Controls (C0, DEL, C1), line and paragraph separators, and every
/// format character (Unicode's Cf: bidirectional overrides, embeddings, isolates and marks,
/// invisible spaces and operators, the soft hyphen, tag characters) but the zero-width joiner
/// and non-joiner that emoji and some scripts need, and the fillers that show as nothing
/// (U+034F, the Hangul fillers): each either acts on a terminal or hides or reorders what a
/// person reads ("Your password was changed" spelled backwards).
public enum DisplayText {
    /// Whether `scalar` is hidden or reorders text.
    public static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029, 0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0: return true
        case 0x200C, 0x200D: return false
        default: return scalar.properties.generalCategory == .format
        }
    }

    /// Whether `text` holds nothing hidden (a line feed is allowed with `newlines`: a body's).
    public static func isShown(_ text: String, newlines: Bool = false) -> Bool {
        !text.unicodeScalars.contains { isHidden($0) && !(newlines && $0 == "\n") }
    }
}
