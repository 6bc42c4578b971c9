import Dispatch
import HomeportLifecycle
import Synchronization

/// Lines gathered and written to another sink together: a busy server's access log makes one
/// `write(2)` for many requests instead of one each (a sixth of a small request's cost).
///
/// A line is written at most ``delay`` after the first line of its batch, at once when
/// ``limit`` bytes wait, and at ``flush()`` (a server flushes when it stops). Lines keep their
/// order, and each reaches `base` whole: a batch is written in pieces of at most 4 KiB (what a
/// pipe takes in one piece), cut at line ends. What a killed process had gathered, up to ``delay``
/// of lines, is lost.
package final class BufferedLogSink: LogSink {
    private struct Batch {
        var bytes: [UInt8] = []
        /// A flush is on its way for these bytes.
        var scheduled = false
    }

    /// Where batches go.
    package let base: any LogSink
    /// How long the first line of a batch waits at most.
    package let delay: Duration
    /// Bytes that are written at once, without waiting for ``delay``.
    package let limit: Int
    private let batch = Mutex(Batch())
    /// Held while a batch is taken and written, so that batches reach ``base`` in order.
    private let writing = Mutex(())
    private let timer = DispatchQueue(label: "homeport.log.flush")

    /// Gathers lines for `base`.
    package init(_ base: any LogSink, delay: Duration = .milliseconds(100), limit: Int = 32 << 10) {
        self.base = base
        self.delay = delay
        self.limit = limit
    }

    /// Adds the line to the batch.
    package func write(_ line: String) {
        write(bytes: Array(line.utf8))
    }

    /// Adds the line's bytes to the batch.
    package func write(bytes line: [UInt8]) {
        let (full, schedule) = batch.withLock { batch in
            batch.bytes.append(contentsOf: line)
            let schedule = !batch.scheduled
            batch.scheduled = true
            return (batch.bytes.count >= limit, schedule)
        }
        if full {
            flush()
        } else if schedule {
            runOnce(after: delay, on: timer) { [weak self] in self?.flush() }
        }
    }

    deinit {
        flush()
    }

    /// Writes what is gathered now.
    package func flush() {
        writing.withLock { _ in
            let bytes = batch.withLock { batch in
                defer { batch = Batch() }
                return batch.bytes
            }
            Self.chunks(of: bytes).forEach { base.write(bytes: Array($0)) }
        }
    }

    /// A pipe takes a write of at most this many bytes whole (Linux's `PIPE_BUF`): a larger one
    /// may be interleaved with another thread's line when standard error is a pipe (docker,
    /// journald).
    package static let atomicWrite = 4096

    /// `bytes` cut at line ends into pieces of at most ``atomicWrite`` bytes (a longer line is
    /// a piece of its own).
    package static func chunks(of bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        while start < bytes.count {
            var end = min(start + atomicWrite, bytes.count)
            if end < bytes.count {
                if let lineEnd = bytes[start..<end].lastIndex(of: 10) {
                    end = lineEnd + 1
                } else {
                    end = bytes[start...].firstIndex(of: 10).map { $0 + 1 } ?? bytes.count
                }
            }
            pieces.append(bytes[start..<end])
            start = end
        }
        return pieces
    }
}
