import Foundation
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

    /// Every line the sink received, batches split.
    private func lines(_ log: MemoryLogSink) -> [String] {
        log.lines.joined().split(separator: "\n").map(String.init)
    }

    @Test("a buffered sink holds lines until a batch is full or flushed, and keeps every thread's order")
    func bufferedBatches() {
        let log = MemoryLogSink()
        let sink = BufferedLogSink(log, delay: .seconds(3600), limit: 1000)
        for index in 0..<10 { sink.write("line \(index) " + String(repeating: "x", count: 40) + "\n") }
        #expect(log.lines.isEmpty, "under the limit, nothing is written before the delay")
        for index in 10..<30 { sink.write("line \(index) " + String(repeating: "x", count: 40) + "\n") }
        #expect(!log.lines.isEmpty, "a full batch is written at once")
        // Four threads at once: nothing lost, and each thread's lines in its order.
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for thread in 0..<4 {
            done.enter()
            Thread.detachNewThread {
                start.wait()
                for index in 0..<500 { sink.write(bytes: Array("t\(thread) \(index)\n".utf8)) }
                done.leave()
            }
        }
        for _ in 0..<4 { start.signal() }
        #expect(done.wait(timeout: .now() + 30) == .success)
        sink.flush()
        // Each write is whole lines, and no larger than a pipe takes at once.
        #expect(log.lines.allSatisfy { $0.utf8.count <= BufferedLogSink.atomicWrite && $0.hasSuffix("\n") })
        #expect(log.lines.count > 4)
        let all = lines(log)
        #expect(all.count == 30 + 2000)
        #expect(all.prefix(30).map { $0.split(separator: " ")[1] } == (0..<30).map { Substring(String($0)) })
        for thread in 0..<4 {
            let mine = all.filter { $0.hasPrefix("t\(thread) ") }.compactMap { Int($0.split(separator: " ")[1]) }
            #expect(mine == Array(0..<500), "thread \(thread)")
        }
    }

    @Test("a batch is cut at line ends into pieces a pipe takes whole; a longer line is a piece of its own")
    func batchPieces() {
        let short = Array(String(repeating: "a", count: 99).utf8) + [10]
        let long = Array(String(repeating: "b", count: 5000).utf8) + [10]
        let batch = Array(repeating: short, count: 50).flatMap { $0 } + long + short + Array("tail".utf8)
        let pieces = BufferedLogSink.chunks(of: batch)
        #expect(pieces.flatMap { $0 } == batch, "nothing lost, nothing reordered")
        #expect(pieces.map(\.count) == [4000, 1000, 5001, 104])
        #expect(BufferedLogSink.chunks(of: []).isEmpty)
    }

    @Test("a buffered sink writes a lone line by itself once its delay has passed")
    func bufferedDelay() {
        let log = MemoryLogSink()
        let sink = BufferedLogSink(log, delay: .milliseconds(50))
        sink.write("alone\n")
        eventually(every: .milliseconds(5)) { !log.lines.isEmpty }
        #expect(log.lines == ["alone\n"])
    }
}
