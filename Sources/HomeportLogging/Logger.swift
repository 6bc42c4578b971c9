/// A small structured logger in the manner of swift-log: libraries take one, nothing global.
///
/// A line reads `2026-11-29T19:50:00.123Z info homeport.http: message key=value`.
/// Callers must never pass a secret (token, password, cookie) in a message or metadata.
public struct Logger: Sendable {
    /// How serious a line is.
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        /// Detail for developers.
        case debug
        /// Normal operation, such as one access-log line per request.
        case info
        /// Something an operator should see but that needs no action.
        case notice
        /// Something went wrong and was handled.
        case warning
        /// Something failed.
        case error

        /// The lowercase name written in a line.
        public var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            }
        }

        /// Parses a level name such as `info`.
        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.name == name.lowercased() }) else {
                return nil
            }
            self = level
        }

        /// Orders levels from `debug` to `error`.
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// A dotted name of the part that logs, such as `homeport.http`.
    public var label: String
    /// Lines below this level are dropped.
    public var minimumLevel: Level
    /// Where lines go.
    public let sink: any LogSink

    /// Creates a logger writing to `sink`.
    public init(label: String, minimumLevel: Level = .info, sink: any LogSink = StandardErrorSink()) {
        self.label = label
        self.minimumLevel = minimumLevel
        self.sink = sink
    }

    /// A logger with the same sink and level under another label.
    public func withLabel(_ label: String) -> Logger {
        Logger(label: label, minimumLevel: minimumLevel, sink: sink)
    }

    /// Writes one line when `level` is at or above ``minimumLevel``.
    ///
    /// Metadata keys are written sorted, so lines are stable for tests and greps. Neither the
    /// message nor the metadata is built when the level is below ``minimumLevel``.
    public func log(
        _ level: Level, _ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]
    ) {
        guard level >= minimumLevel else { return }
        var line = Timestamp.now()
        line += " "
        line += level.name
        line += " "
        line += label
        line += ": "
        line += Self.escaped(message())
        let metadata = metadata()
        for key in metadata.keys.sorted() {
            line += " \(Self.escaped(key))=\(Self.escaped(metadata[key] ?? ""))"
        }
        line += "\n"
        sink.write(line)
    }

    /// `text` on one line: a line break as `\n`, a tab as `\t`, any other control character as `?`,
    /// so that nothing a message carries (a database's multi-line error, a client's bytes) can
    /// start a line of its own.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            return text
        }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value): result += "?"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Logs at `debug`.
    public func debug(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.debug, message(), metadata: metadata())
    }

    /// Logs at `info`.
    public func info(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.info, message(), metadata: metadata())
    }

    /// Logs at `notice`.
    public func notice(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.notice, message(), metadata: metadata())
    }

    /// Logs at `warning`.
    public func warning(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.warning, message(), metadata: metadata())
    }

    /// Logs at `error`.
    public func error(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.error, message(), metadata: metadata())
    }
}
