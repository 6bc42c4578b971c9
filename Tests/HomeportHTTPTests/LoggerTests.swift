import HomeportLogging
import HomeportTestSupport
import Testing

@Suite("Log lines")
struct LoggerTests {
    @Test("a message or metadata value with line breaks or control characters stays on one line")
    func oneLinePerEntry() {
        let log = MemoryLogSink()
        let logger = Logger(label: "test", sink: log)
        logger.error(
            "database said: ERROR:  deadlock\nDETAIL:  forged\r\n2026-01-01 info forged",
            metadata: ["error": "line one\nline two\u{1B}[31m", "key\nforged": "\tvalue"])
        #expect(log.lines.count == 1)
        let line = log.lines.first ?? ""
        #expect(line.unicodeScalars.filter { $0 == "\n" || $0 == "\r" }.count == 1, "only the line's own end")
        #expect(line.hasSuffix("\n"))
        #expect(line.contains(#"deadlock\nDETAIL:  forged\r\n2026-01-01 info forged"#))
        #expect(line.contains(#"error=line one\nline two?[31m"#), "an escape sequence loses its ESC")
        #expect(line.contains(#"key\nforged=\tvalue"#))
    }
}
