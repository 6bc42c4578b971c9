import HomeportLogging
import Synchronization

/// Keeps every line in memory; for tests that check what was (and was not) logged.
public final class MemoryLogSink: LogSink {
    private let storage = Mutex<[String]>([])

    /// Creates an empty sink.
    public init() {}

    /// Appends the line.
    public func write(_ line: String) {
        storage.withLock { $0.append(line) }
    }

    /// Every line written so far.
    public var lines: [String] { storage.withLock { $0 } }
}
