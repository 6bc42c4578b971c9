import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real SMTP server (`interop/smtp/relay.py`, aiosmtpd) that keeps every message it accepts;
/// recipients at `refused.example` are refused with 550. `scripts/test` installs it and exports
/// `HOMEPORT_TEST_SMTP_DIR` and `HOMEPORT_TEST_SMTP_PYTHON`.
public final class SMTPRelay: @unchecked Sendable {
    private let process: Process
    /// Where the messages are kept (`1.eml`, `2.eml`, …).
    public let directory: TemporaryDirectory
    /// Its port.
    public let port: Int

    /// Starts it on `port` (a free one by default) and waits until it answers.
    public init(port wanted: Int? = nil) throws {
        let peer = try TestPeer.smtp()
        let (source, python) = (peer.source, peer.python)
        directory = try TemporaryDirectory()
        port = try wanted ?? RawHTTP.freePort()
        process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [source + "/relay.py", String(port), directory.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.spawn()
        if RawHTTP.waitUntilListening(port: port, seconds: 6) { return }
        process.stop()
        throw RawHTTPError("the SMTP relay did not start on \(port)")
    }

    deinit {
        stop()
        directory.remove()
    }

    /// Stops it (SIGKILL: a child spawned from a test thread inherits its blocked SIGTERM).
    public func stop() {
        process.stop()
    }

    /// The messages kept so far, as text, oldest first.
    public var messages: [String] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { $0.hasSuffix(".eml") }
            .sorted { Int($0.dropLast(4)) ?? 0 < Int($1.dropLast(4)) ?? 0 }
        return names.compactMap { try? String(contentsOfFile: directory.file($0), encoding: .utf8) }
    }

    /// Waits up to `timeout` seconds for at least `count` messages.
    public func waitForMessages(_ count: Int, timeout: Double = 10) -> [String] {
        eventually(timeout: .milliseconds(Int(timeout * 1000))) { messages.count >= count }
        return messages
    }
}
