#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a ``Logger`` writes its lines.
public protocol LogSink: Sendable {
    /// Writes one complete line, newline included.
    func write(_ line: String)
    /// Writes one complete line of UTF-8 bytes, newline included (the access log's fast path).
    func write(bytes line: [UInt8])
}

extension LogSink {
    /// Decodes the bytes and writes them as a string.
    public func write(bytes line: [UInt8]) {
        write(String(decoding: line, as: UTF8.self))
    }
}

/// Writes each line to standard error with one `write(2)`, so lines from threads never interleave.
public struct StandardErrorSink: LogSink {
    /// Creates the sink.
    public init() {}

    /// Writes the line to file descriptor 2.
    public func write(_ line: String) {
        var line = line
        line.withUTF8 { Self.writeAll($0) }
    }

    /// Writes the bytes to file descriptor 2.
    public func write(bytes line: [UInt8]) {
        line.withUnsafeBufferPointer { Self.writeAll($0) }
    }

    private static func writeAll(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(2, base + offset, bytes.count - offset)
            if written <= 0 { return }
            offset += written
        }
    }
}

private func systemWrite(_ fd: Int32, _ buffer: UnsafePointer<UInt8>, _ count: Int) -> Int {
    #if canImport(Glibc)
        return Glibc.write(fd, buffer, count)
    #else
        return Darwin.write(fd, buffer, count)
    #endif
}
