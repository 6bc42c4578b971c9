import HomeportCommandLine
import Testing

/// Durations as `--session-lifetime` and `--expires` take them.
@Suite("Durations on the command lines")
struct DurationTextTests {
    @Test("a number with s, m, h or d, or plain seconds; anything else, a sign or an overflow is refused")
    func parse() {
        for (text, seconds) in [
            ("45s", 45), ("30m", 1800), ("12h", 43200), ("7d", 604_800), ("90", 90), ("0", 0), ("0d", 0),
        ] as [(String, Int64)] {
            #expect(DurationText.seconds(text) == seconds, "\(text)")
        }
        for text in [
            "", "d", "-5", "-5d", "+5", "5 d", " 5d", "5w", "5dd", "1.5h", "٣d", "9223372036854775807d",
            "99999999999999999999",
        ] {
            #expect(DurationText.seconds(text) == nil, "\(text)")
        }
        #expect(DurationText.seconds("9223372036854775807") == Int64.max)
    }
}
